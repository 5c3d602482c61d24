# The demo statistics (a scheduled job): counts the stream's e-mails, those the mailer
# has not acknowledged yet, and stores the figures for the backend to show.
r = redis()
stats = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "entries": r("XLEN", STREAM), "pending": 0}
try:
    for group in r("XINFO", "GROUPS", STREAM) or []:
        info = dict(zip(group[::2], group[1::2]))
        stats["pending"] += int(info.get("pending") or 0)
except RuntimeError:
    pass  # no stream yet: nothing was queued
r("SET", STATS_KEY, json.dumps(stats))
print("stats:", json.dumps(stats), flush=True)
