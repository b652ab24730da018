# SPDX-License-Identifier: Apache-2.0
# Integration: one agent cannot flood the events and the webhooks (issue 17, finding 8). It
# posts reports of 256 critical Xids each, several in a row: the node adds at most [events]
# per_node events a minute, and what was held back becomes one summary event (kind
# events-held, with the count) once the node is quiet; the webhook gets what the events
# table got, no more. An agent restarted within its boot (the same Xids again) spends no
# budget: those are stored already.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
command -v python3 >/dev/null || { echo "skipped: python3 (the webhook receiver) is missing"; exit 77; }
[ -n "${KILN_TEST_PG:-}" ] || command -v sqlite3 >/dev/null ||
	{ echo "skipped: the sqlite3 shell is missing"; exit 77; }
FAILS=0
T=$KILN_TEST_TMP
REPORTS=5
PER_NODE=20

cat >"$T/receiver.py" <<'PY'
import http.server, os, sys, threading
out, portfile = sys.argv[1], sys.argv[2]
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock, open(out, "ab") as f:
            f.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
touch "$T/hooks"
python3 "$T/receiver.py" "$T/hooks" "$T/port" &
KILN_TEST_PIDS+=($!)
for ((i = 0; i < 100; i++)); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || { echo "the receiver did not start" >&2; exit 1; }
cat >"$T/kilnd.conf" <<CONF
[events]
per_node = $PER_NODE
[webhook]
urls = http://127.0.0.1:$(cat "$T/port")/hook
min_severity = critical
CONF
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
sql() { kiln_test_sql "$1"; }
"$KILN_BIN/kiln" node add gpu01 >/dev/null || fail "node add"
"$KILN_BIN/kiln" agent token gpu01 >"$T/token" 2>/dev/null || fail "agent token"
NODE=$(sql "SELECT id FROM nodes WHERE name = 'gpu01'")

# A report of the fixture machine, its Xids replaced by 256 Xid 79s of kernel lines N*256..
ROOT=$T/root
cp -r "$SRC/tests/fixtures/agent/roots/h100" "$ROOT"
printf 'gpu01\n' >"$ROOT/proc/sys/kernel/hostname"
: >"$ROOT/dev/kmsg"
FAKE_NVML_CONFIG=$SRC/tests/fake-nvml/configs/h100-8gpu.conf "$KILN_BIN/kiln-agent" --print --once \
	--root "$ROOT" --nvml-lib "$KILN_LIB/fake-nvml/libnvidia-ml.so.1" >"$T/base.json" 2>"$T/agent.log" ||
	{ cat "$T/agent.log"; echo "FAIL: kiln-agent --print" >&2; exit 1; }
flood() { # flood N: report N's 256 Xids
	jq -c --argjson n "$1" '.report_id = (.report_id[0:24] + ("00000000" + ($n | tostring))[-8:])
		| .xid_events = [range(256) as $i | {pci_bus_id: "00000000:18:00.0", xid: 79,
		  message: "GPU has fallen off the bus.", source: "kmsg", seq: ($n * 256 + $i)}]' \
		"$T/base.json"
}
for ((n = 1; n <= REPORTS; n++)); do
	flood "$n" >"$T/r$n.json"
	same "report $n with 256 Xids is stored" \
		"$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$T/token")" \
			--data-binary "@$T/r$n.json" "$KILND_URL/api/v1/agent/report")" 201
done
XIDS=$(sql "SELECT count(*) FROM events WHERE node_id = $NODE AND kind = 'xid'")
[ "$XIDS" -le "$PER_NODE" ] && pass "$XIDS Xid events stored of $((REPORTS * 256)) (at most $PER_NODE a minute)" ||
	fail "$XIDS Xid events stored of $((REPORTS * 256)), more than $PER_NODE"
summary() { [ "$(sql "SELECT count(*) FROM events WHERE node_id = $NODE AND kind = 'events-held'")" = 1 ]; }
wait_for "one summary event of what was held back" 20 summary && pass "one summary event"
MSG=$(sql "SELECT message FROM events WHERE node_id = $NODE AND kind = 'events-held'")
HELD=$((REPORTS * 256 - XIDS))
# The Xids held back, and the node's health change: the first report's Xid 79 turns its health
# critical, and that change's event ("health ok -> critical: xid: critical Xid 79") comes after
# its Xids have spent the budget. The budget refills at one event per 60/PER_NODE s, so when the
# health sweep runs that late (a slow store, a loaded machine) the change is stored instead of
# held. Either way it is counted exactly once, and nothing else of the node's is held.
HEALTH_STORED=$(sql "SELECT count(*) FROM events WHERE node_id = $NODE AND kind = 'health'")
case "$HEALTH_STORED:$MSG" in
"0:$((HELD + 1)) event(s) held back "*"($((HELD + 1)) critical; "*"; by kind: xid $HELD, health 1; the last: xid: Xid 79"*)
	pass "it counts the $HELD Xids and the health change held back: $MSG" ;;
"1:$HELD event(s) held back "*"($HELD critical; "*"; by kind: xid $HELD; the last: xid: Xid 79"*)
	pass "it counts the $HELD Xids held back; the health change was stored after the budget refilled: $MSG" ;;
*) fail "the summary says '$MSG' with $HEALTH_STORED health event(s) stored (want $HELD Xids held, and the health change held or stored, once)" ;;
esac
same "... and is critical, as they were" \
	"$(sql "SELECT severity FROM events WHERE node_id = $NODE AND kind = 'events-held'")" 2
CRIT=$(sql "SELECT count(*) FROM events WHERE node_id = $NODE AND severity = 2")
delivered() { [ "$(wc -l <"$T/hooks")" -ge "$CRIT" ]; }
wait_for "the webhook got the $CRIT critical events" 20 delivered
sleep 1
same "the webhook got what the events table got, no more" "$(wc -l <"$T/hooks")" "$CRIT"
same "... the summary among them" "$(grep -c 'held back' "$T/hooks")" 1

# An agent restarted within its boot reports the Xids kilnd stored again (the first report's
# first PER_NODE): nothing is added, nothing spent, nothing to sum up.
jq -c --argjson k "$PER_NODE" '.report_id = "ffffffffffffffffffffffffffffffff"
	| .xid_events = .xid_events[0:$k]' "$T/r1.json" >"$T/again.json"
BEFORE=$(sql "SELECT count(*) FROM events WHERE node_id = $NODE")
curl -s -o /dev/null -H "Authorization: Bearer $(cat "$T/token")" --data-binary "@$T/again.json" \
	"$KILND_URL/api/v1/agent/report"
sleep 12
same "Xids already stored spend nothing and need no summary" \
	"$(sql "SELECT count(*) FROM events WHERE node_id = $NODE")" "$BEFORE"

kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
