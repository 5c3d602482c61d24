# The demo backend (an HTTP function): POST {"to", "subject", "body"} queues an e-mail on
# the region's Redis stream; GET answers how many are queued and the last statistics.


class Backend(Handler):
    def do_GET(self):
        r = redis()
        stats = r("GET", STATS_KEY)
        self.reply(200, {"stream": STREAM, "entries": r("XLEN", STREAM), "stats": json.loads(stats) if stats else None})

    def do_POST(self):
        try:
            msg = json.loads(self.body() or b"{}")
        except ValueError:
            return self.reply(400, {"error": "send JSON: {\"to\": \"someone@example.com\"}"})
        to = str(msg.get("to", "")).strip()
        if "@" not in to or len(to) > 254:
            return self.reply(422, {"errors": {"to": "an e-mail address"}})
        entry = redis()("XADD", STREAM, "*", "to", to,
                        "subject", str(msg.get("subject") or "Hello from a RunR region")[:200],
                        "body", str(msg.get("body") or "Sent by the demo mailer, a queue worker.")[:10000])
        self.reply(202, {"queued": entry})


serve(Backend)
