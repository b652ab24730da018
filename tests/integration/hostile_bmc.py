#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile Redfish BMCs for tests/integration/test_hostile_bmc.sh: one listener per mode on
127.0.0.1 (kernel-chosen ports, written to PORTS_FILE as "mode port" lines), each serving a
plain service root and Systems collection and, for the System and everything else, what its
mode says. A listener on 127.0.0.2 (the "other host" a redirect points to) counts its hits.
GET /_hits on any port answers {"mode": requests seen}.

usage: hostile_bmc.py PORTS_FILE MODE...
modes: big (a 100 MB body, Content-Length sent), chunked (an endless chunked body), deep
(nesting 200,000 arrays deep), flood (15 MB of "{},"), wide (300 kB of "{},": parsed, under
the caps), redirect (302 to the other host), 401 (every authenticated request refused).
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HITS = {}
HITS_LOCK = threading.Lock()
ROOT = json.dumps({"@odata.id": "/redfish/v1/", "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
                   "Id": "RootService", "RedfishVersion": "1.6.0",
                   "Systems": {"@odata.id": "/redfish/v1/Systems"}}).encode()
SYSTEMS = json.dumps({"@odata.id": "/redfish/v1/Systems",
                      "@odata.type": "#ComputerSystemCollection.ComputerSystemCollection",
                      "Members": [{"@odata.id": "/redfish/v1/Systems/1"}],
                      "Members@odata.count": 1}).encode()
FLOOD = b'{"@odata.id":"/redfish/v1/Systems/1","Members":[' + b"{}," * 5_000_000 + b"{}]}"
WIDE = b'{"@odata.id":"/redfish/v1/Systems/1","PowerState":"On","Oem":[' + b"{}," * 100_000 + b"{}]}"
DEEP = b"[" * 200_000 + b"]" * 200_000
CHUNK = b'{"a":["' + b"x" * 65536 + b'"],'
OTHER_PORT = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_body(self, status, body, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def hostile(self, mode):
        if mode == "big":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(100_000_000))
            self.end_headers()
            block = b" " * 65536
            for _ in range(100_000_000 // len(block)):
                self.wfile.write(block)
        elif mode == "chunked":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            piece = b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n"
            while True:
                self.wfile.write(piece)
        elif mode == "deep":
            self.send_body(200, DEEP)
        elif mode == "flood":
            self.send_body(200, FLOOD)
        elif mode == "wide":
            self.send_body(200, WIDE)
        elif mode == "redirect":
            where = "http://127.0.0.2:%d%s" % (OTHER_PORT, self.path)
            self.send_body(302, b"{}", [("Location", where)])
        elif mode == "401":
            self.send_body(401, b'{"error":{"code":"Base.1.8.NoValidSession","message":"no"}}',
                           [("WWW-Authenticate", 'Basic realm="bmc"')])
        else:
            self.send_body(404, b"{}")

    def do_any(self):
        mode = self.server.mode
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.path == "/_hits":
            with HITS_LOCK:
                self.send_body(200, json.dumps(HITS).encode())
            return
        with HITS_LOCK:
            HITS[mode] = HITS.get(mode, 0) + 1
        try:
            if mode == "other":
                self.send_body(200, ROOT)
            elif self.path.rstrip("/") == "/redfish/v1":
                self.send_body(200, ROOT)
            elif mode == "401":
                self.hostile(mode)
            elif self.path.split("?")[0].rstrip("/") == "/redfish/v1/Systems":
                self.send_body(200, SYSTEMS)
            else:
                self.hostile(mode)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_DELETE = do_any


def serve(mode, host="127.0.0.1"):
    srv = ThreadingHTTPServer((host, 0), Handler)
    srv.daemon_threads = True
    srv.mode = mode
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


def main():
    global OTHER_PORT
    ports_file, modes = sys.argv[1], sys.argv[2:]
    OTHER_PORT = serve("other", "127.0.0.2")
    lines = ["other %d" % OTHER_PORT] + ["%s %d" % (m, serve(m)) for m in modes]
    with open(ports_file + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    import os
    os.rename(ports_file + ".tmp", ports_file)
    threading.Event().wait()


if __name__ == "__main__":
    main()
