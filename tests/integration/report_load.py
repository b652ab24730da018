#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Agent report load for kilnd's crash test: one thread per node posts reports (fresh
report ids) as fast as kilnd answers, across kilnd's restarts (a refused connection is
retried), and appends "NODE REPORT_ID" to OUT for every report kilnd acknowledged (2xx)
before it goes on. Runs until SIGTERM.

usage: report_load.py URL OUT NODE=TOKEN_FILE=REPORT_FILE...
"""
import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

stop = threading.Event()
lock = threading.Lock()


def worker(url, out, node, token, base):
    u = urllib.parse.urlparse(url)
    while not stop.is_set():
        report = dict(base)
        report["report_id"] = os.urandom(16).hex()
        body = json.dumps(report).encode()
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
            c.request("POST", "/api/v1/agent/report", body,
                      {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
            status = c.getresponse().status
            c.close()
        except OSError:
            time.sleep(0.05)
            continue
        if 200 <= status < 300:
            with lock:
                out.write(f"{node} {report['report_id']}\n")
                out.flush()
        else:
            time.sleep(0.05)


def main():
    url, path = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    out = open(path, "a")
    threads = []
    for spec in sys.argv[3:]:
        node, tokfile, repfile = spec.split("=")
        token = open(tokfile).read().strip()
        base = json.load(open(repfile))
        t = threading.Thread(target=worker, args=(url, out, node, token, base), daemon=True)
        t.start()
        threads.append(t)
    while not stop.is_set():
        time.sleep(0.1)
    for t in threads:
        t.join(timeout=15)
    out.close()


if __name__ == "__main__":
    main()
