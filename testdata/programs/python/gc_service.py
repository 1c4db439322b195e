"""A CPython service for memdoctor's runtime tests.

    python3 gc_service.py churn PORT    objects live a few hundred iterations
                                        (promoted to generation 2), then die
    python3 gc_service.py healthy PORT  garbage that dies at once

prometheus_client serves its default collectors (GC, process, platform) on
127.0.0.1:PORT/metrics; 127.0.0.1:PORT+1/stats answers with the
interpreter's own gc.get_stats() as JSON, for the test to compare.
"""
import collections
import gc
import http.server
import json
import sys
import threading
import time

import prometheus_client


class Node:
    def __init__(self, parent):
        self.parent = parent
        self.children = []


def tree(n):
    root = Node(None)
    for _ in range(n):
        c = Node(root)
        root.children.append(c)
    return root


class Stats(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"stats": gc.get_stats(), "time": time.time()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    prometheus_client.start_http_server(port, addr="127.0.0.1")
    srv = http.server.HTTPServer(("127.0.0.1", port + 1), Stats)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print("ready", flush=True)
    kept = collections.deque(maxlen=300)
    while True:
        for _ in range(20):
            t = tree(50)
            if mode == "churn":
                kept.append(t)  # lives 300 trees: survives two collections, then dies old
        time.sleep(0.001)


if __name__ == "__main__":
    main()
