# A minimal Redis client (RESP2 over one socket) for the demo programs: the demo image
# has Python's standard library only. REDIS_ADDRESS and REDIS_PASSWORD come from the
# project's Secret <slug>-redis, QUEUE_STREAM from its env.
import json, os, socket, sys, time


def redis():
    host, port = os.environ["REDIS_ADDRESS"].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    reader = sock.makefile("rb")

    def read():
        line = reader.readline()
        if not line:
            raise ConnectionError("Redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else reader.read(n + 2)[:-2].decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [read() for _ in range(n)]
        raise RuntimeError("unexpected Redis reply %r" % line)

    def call(*args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        sock.sendall(out)
        return read()

    if os.environ.get("REDIS_PASSWORD"):
        call("AUTH", os.environ["REDIS_PASSWORD"])
    return call


STREAM = os.environ["QUEUE_STREAM"]
STATS_KEY = STREAM + ":stats"
