# The demo frontend (an HTTP function): a page with the backend's figures and a form
# that asks the backend (BACKEND_URL, its cluster-local address) to queue an e-mail.
import html, urllib.error, urllib.parse, urllib.request

BACKEND = os.environ["BACKEND_URL"]
PAGE = """<!doctype html><meta charset="utf-8"><title>RunR demo</title>
<h1>RunR demo</h1><p>Backend: <code>%s</code></p>
<form method="post"><input name="to" type="email" placeholder="you@example.com" required>
<button>Send a demo e-mail</button></form><p>%s</p>"""


class Frontend(Handler):
    def backend(self, data=None):
        req = urllib.request.Request(BACKEND, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                return res.read().decode()
        except urllib.error.HTTPError as e:
            return e.read().decode()
        except OSError as e:
            return "the backend did not answer: %s" % e

    def do_GET(self):
        self.reply(200, PAGE % (html.escape(self.backend()), ""), "text/html; charset=utf-8")

    def do_POST(self):
        to = urllib.parse.parse_qs(self.body().decode()).get("to", [""])[0]
        answer = self.backend(json.dumps({"to": to}).encode())
        self.reply(200, PAGE % (html.escape(self.backend()), html.escape(answer)), "text/html; charset=utf-8")


serve(Frontend)
