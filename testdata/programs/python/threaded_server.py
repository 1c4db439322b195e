"""A threaded HTTP server whose requests build and drop ~30 MB each.

usage: threaded_server.py PORT [KEEP]

Every request to http://127.0.0.1:PORT/work builds ~30 MB of bytes pieces of
1-16 KiB (above pymalloc's 512-byte limit, so glibc malloc serves them),
joins them into one bytes object and decodes it to a str, keeps a 4 KiB
record of the request (the last KEEP, 256 by default, are kept, as a
server keeps a log of recent requests), answers with the lengths and drops
the rest. Each request runs in its own thread (ThreadingHTTPServer), so
concurrent requests allocate in different malloc arenas; freeing a joined
object that glibc had mmapped raises its mmap and trim thresholds, and a
record allocated above a request's freed pieces keeps its arena's heap from
shrinking: every arena keeps tens of MiB of freed memory resident. With
KEEP 0 no record is kept: the heaps shrink back after each request and the
server holds little (a healthy threaded server). GET / answers "ok".
"""
import collections
import random
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TARGET = 30 << 20
recent = collections.deque(maxlen=int(sys.argv[2]) if len(sys.argv) > 2 else 256)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok\n"
        if self.path == "/work":
            rnd = random.Random()
            parts, total = [], 0
            while total < TARGET:
                n = rnd.randint(1024, 16384)
                parts.append(b"x" * n)
                total += n
            joined = b"".join(parts)
            text = joined.decode()
            if recent.maxlen:
                recent.append(b"%d " % total + b"r" * 4096)
            body = ("%d %d %d\n" % (len(parts), len(joined), len(text))).encode()
            del parts, joined, text
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
