#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A slow-loris client for kilnd's tests: keeps N connections open that send an unfinished
request head a byte at a time, reopening each one the server closes, while probing
GET /api/v1/health on fresh connections. Prints one JSON object of what it saw.

usage: slowloris.py HOST PORT CONNECTIONS SECONDS TRICKLE_S
"""
import json
import selectors
import socket
import sys
import time

HEAD = b"GET /api/v1/health HTTP/1.1\r\nHost: kilnd\r\nX-Slow: "


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    count, seconds, trickle = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    sel = selectors.DefaultSelector()
    opened = closed = refused = 0
    held = []          # how long each connection the server closed was held
    conns = {}         # socket -> [opened_at, next_byte_at, sent]

    def open_one(now):
        nonlocal opened, refused
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect((host, port))
        except BlockingIOError:
            pass
        except OSError:
            refused += 1
            s.close()
            return
        conns[s] = [now, now, 0]
        sel.register(s, selectors.EVENT_READ)
        opened += 1

    def probe():
        t0 = time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=2) as s:
                s.settimeout(2)
                s.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: kilnd\r\nConnection: close\r\n\r\n")
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                ok = data.startswith(b"HTTP/1.1 200")
        except OSError:
            ok = False
        return ok, (time.monotonic() - t0) * 1000

    start = time.monotonic()
    for _ in range(count):
        open_one(start)
    probes = answered = 0
    probe_ms = []
    next_probe = start + 0.5
    while time.monotonic() - start < seconds:
        now = time.monotonic()
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:  # the server closed it
                held.append(now - conns[s][0])
                closed += 1
                sel.unregister(s)
                s.close()
                del conns[s]
                open_one(now)
        for s, st in list(conns.items()):
            if now >= st[1]:
                try:
                    s.send(HEAD[st[2]:st[2] + 1] if st[2] < len(HEAD) else b"x")
                    st[2] += 1
                except OSError:
                    pass
                st[1] = now + trickle
        if now >= next_probe:
            ok, ms = probe()
            probes += 1
            answered += ok
            probe_ms.append(ms)
            next_probe = time.monotonic() + 0.5
    end = time.monotonic()
    still = [end - st[0] for st in conns.values()]
    print(json.dumps({
        "opened": opened, "closed_by_server": closed, "refused": refused,
        "max_held_s": round(max(held + still), 2) if held or still else 0,
        "still_open": len(conns),
        "probes": probes, "answered": answered,
        "probe_max_ms": round(max(probe_ms), 1) if probe_ms else None,
    }))
    for s in conns:
        s.close()


if __name__ == "__main__":
    main()
