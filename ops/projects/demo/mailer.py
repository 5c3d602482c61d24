# The demo mailer (a queue worker): reads the stream as the consumer group "mailer",
# sends each e-mail to the SMTP catcher (SMTP_HOST, SMTP_PORT) and acknowledges it; an
# e-mail that could not be sent stays pending and is retried on the next start.
import smtplib
from email.message import EmailMessage

GROUP = "mailer"
ME = os.environ.get("HOSTNAME", "mailer")


def send(fields):
    m = EmailMessage()
    m["From"] = os.environ.get("MAIL_FROM", "demo@runr.invalid")
    m["To"] = fields.get("to", "")
    m["Subject"] = fields.get("subject", "")
    m.set_content(fields.get("body", ""))
    with smtplib.SMTP(os.environ["SMTP_HOST"], int(os.environ.get("SMTP_PORT", "1025")), timeout=10) as smtp:
        smtp.send_message(m)


r = redis()
try:
    r("XGROUP", "CREATE", STREAM, GROUP, "0", "MKSTREAM")
except RuntimeError as e:
    if "BUSYGROUP" not in str(e):
        raise
print("mailer: consuming %s as %s/%s" % (STREAM, GROUP, ME), flush=True)
start = "0"  # first what this consumer left pending, then new entries
while True:
    got = r("XREADGROUP", "GROUP", GROUP, ME, "COUNT", "10", "BLOCK", "5000", "STREAMS", STREAM, start)
    entries = got[0][1] if got else []
    if start == "0" and not entries:
        start = ">"
    for entry, flat in entries:
        fields = dict(zip(flat[::2], flat[1::2]))
        try:
            send(fields)
        except (OSError, smtplib.SMTPException) as e:
            print("mailer: %s to %s failed: %s" % (entry, fields.get("to"), e), file=sys.stderr, flush=True)
            time.sleep(5)
            continue
        r("XACK", STREAM, GROUP, entry)
        print("mailer: sent %s to %s" % (entry, fields.get("to")), flush=True)
