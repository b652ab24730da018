# SPDX-License-Identifier: Apache-2.0
# Integration: webhooks. kilnd POSTs each event at or above webhook.min_severity as JSON with a
# Slack-compatible "text" to a local receiver on 127.0.0.1; a failed POST (a slow 503) is
# retried with backoff; a warning below the threshold is not sent; the agent ingest does not
# wait for the webhook while the receiver hangs.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

FAILS=0
command -v python3 >/dev/null || { echo "skipped: python3 (the test receiver) is missing"; exit 77; }

# The receiver: the first POST waits 3 s and answers 503, later ones 200; each body is kept.
cat >"$KILN_TEST_TMP/receiver.py" <<'PY'
import http.server, sys, time, threading
out, portfile = sys.argv[1], sys.argv[2]
lock = threading.Lock()
count = [0]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(min(n, 1 << 20))
        with lock:
            count[0] += 1
            first = count[0] == 1
            with open(out, "ab") as f:
                f.write(("%s %s " % ("503" if first else "200", self.headers.get("Content-Type"))).encode() + body + b"\n")
        if first:
            time.sleep(3)
        self.send_response(503 if first else 200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
python3 "$KILN_TEST_TMP/receiver.py" "$KILN_TEST_TMP/got" "$KILN_TEST_TMP/port" &
KILN_TEST_PIDS+=($!)
for ((i = 0; i < 100; i++)); do
	[ -s "$KILN_TEST_TMP/port" ] && break
	sleep 0.1
done
PORT=$(cat "$KILN_TEST_TMP/port") || { echo "the receiver did not start" >&2; exit 1; }
touch "$KILN_TEST_TMP/got"

printf '[webhook]\nurls = http://127.0.0.1:%s/hook\nmin_severity = critical\nretries = 3\ntimeout = 10s\n' \
	"$PORT" >"$KILN_TEST_TMP/kilnd.conf"
kiln_test_start_kilnd "" --config "$KILN_TEST_TMP/kilnd.conf" || exit 1

[ "$(kiln_api POST /nodes '{"name":"gpu23"}')" = 201 ] || fail "node"
[ "$(kiln_api POST /agent/tokens '{"node":"gpu23"}')" = 201 ] || fail "agent token"
TOKEN=$(jq -r .token "$KILN_BODY_FILE")

# report XID SEQ: one GPU, one kernel log Xid line.
report() {
	jq -cn --argjson xid "$1" --argjson seq "$2" --arg id "$(kiln_test_report_id)" \
		--arg now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '{
	  schema: "kiln.agent.report/1", report_id: $id, time: $now, agent: {version: "test"},
	  host: {hostname: "gpu23", boot_id: "boot-1"},
	  nvidia: {status: "ok", driver_version: "550.54.15"}, cuda_toolkits: [],
	  cudnn_version: null, disks: [],
	  gpus: [{index: 0, uuid: "GPU-0", name: "NVIDIA H100", pci_bus_id: "00000000:17:00.0"}],
	  xid_events: [{pci_bus_id: "00000000:17:00.0", xid: $xid, source: "kmsg", seq: $seq,
	    message: "NVRM: Xid (PCI:0000:17:00): \($xid), pid=1 <test> & more"}]}'
}

# A warning (Xid 13) is below the threshold; a critical one (Xid 79) is sent.
# (Other critical events, like a health change kilnd derives from the Xid, are sent too.)
ok2xx() { case $1 in 2??) return 0 ;; esac; return 1; }
ok2xx "$(kiln_api POST /agent/report "$(report 13 100)" "$TOKEN")" || fail "report 13: $(cat "$KILN_BODY_FILE")"
ok2xx "$(kiln_api POST /agent/report "$(report 79 101)" "$TOKEN")" || fail "report 79: $(cat "$KILN_BODY_FILE")"

# While the receiver holds the first POST, an agent report is still stored at once.
sleep 1.5
start=$(date +%s%N)
ok2xx "$(kiln_api POST /agent/report "$(report 31 102)" "$TOKEN")" || fail "report 31"
ms=$((($(date +%s%N) - start) / 1000000))
[ $ms -lt 1000 ] && pass "the ingest answered in ${ms} ms while the webhook waited" ||
	fail "the ingest took ${ms} ms"

# The first POST (the Xid event) got a slow 503; it is retried (2 s later) and delivered.
xid_lines() { grep "^$1 " "$KILN_TEST_TMP/got" | grep -c '"kind":"xid"'; }
for ((i = 0; i < 150; i++)); do
	[ "$(xid_lines 200)" -ge 1 ] && break
	sleep 0.1
done
sleep 1
[ "$(grep -c '^503 ' "$KILN_TEST_TMP/got")" = 1 ] && [ "$(xid_lines 503)" = 1 ] && [ "$(xid_lines 200)" = 1 ] &&
	pass "a failed POST is retried and then delivered once" || fail "deliveries: $(cat "$KILN_TEST_TMP/got")"
line=$(grep '^200 ' "$KILN_TEST_TMP/got" | grep '"kind":"xid"' | head -1)
ctype=$(echo "$line" | cut -d' ' -f2)
body=$(echo "$line" | cut -d' ' -f3-)
[ "$ctype" = application/json ] && pass "sent as application/json" || fail "content type '$ctype'"
echo "$body" | jq -e '.event.severity == "critical" and .event.node == "gpu23" and .event.kind == "xid"' >/dev/null &&
	pass "the event object" || fail "event: $body"
echo "$body" | jq -r .text | grep -q '^\[critical\] gpu23: Xid 79 .*&lt;test&gt; &amp; more' &&
	pass "the Slack text, with <, > and & escaped" || fail "text: $(echo "$body" | jq -r .text)"
if grep -q '"xid":13\|Xid 13\|Xid 31' "$KILN_TEST_TMP/got"; then
	fail "a warning was sent: $(cat "$KILN_TEST_TMP/got")"
else
	pass "warnings below min_severity are not sent"
fi

# A bad URL stops kilnd with a message naming the key.
printf '[webhook]\nurls = ftp://example\n' >"$KILN_TEST_TMP/bad.conf"
"$KILND" --state-dir "$KILN_TEST_TMP/bad" --listen 127.0.0.1:0 --config "$KILN_TEST_TMP/bad.conf" \
	>"$KILN_TEST_TMP/bad.log" 2>&1 &
bad=$!
KILN_TEST_PIDS+=($bad)
for ((i = 0; i < 100; i++)); do
	kill -0 $bad 2>/dev/null || break
	sleep 0.1
done
if kill -0 $bad 2>/dev/null; then
	fail "kilnd started with an ftp:// webhook"
else
	grep -q 'webhook.urls' "$KILN_TEST_TMP/bad.log" && pass "a bad webhook URL names the key" ||
		fail "bad URL log: $(cat "$KILN_TEST_TMP/bad.log")"
fi

kiln_test_stop_kilnd || fail "kilnd did not stop cleanly: $(tail -5 "$KILND_LOG")"
[ $FAILS = 0 ] || { echo "$FAILS failures" >&2; exit 1; }
echo "all passed"
