# SPDX-License-Identifier: Apache-2.0
# Integration: a slow-loris client (tests/integration/slowloris.py: connections that send
# their request head a byte a second and never finish it, each one reopened when kilnd closes
# it; three times as many as [http] max_connections) cannot take kilnd down (issue 17):
# [http] request_timeout closes each within the deadline, the connections still waiting for
# their request hold at most half of the listener, so health probes keep answering, and the
# log says so in one line rather than one per connection.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "skipped: python3 is not installed"; exit 77; }
FAILS=0
T=$KILN_TEST_TMP
cat >"$T/kilnd.conf" <<CONF
[http]
max_connections = 64
request_timeout = 3s
CONF
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
PORT=${KILND_URL##*:}

python3 "$HERE/slowloris.py" 127.0.0.1 "$PORT" 192 12 1 >"$T/loris.json" ||
	fail "slowloris.py failed"
cat "$T/loris.json"
j() { jq -r "$1" "$T/loris.json"; }
same "every health probe answered under the slow loris" "$(j '.answered == .probes and .probes >= 15')" true
[ "$(j '.probe_max_ms < 1000')" = true ] && pass "the slowest probe took $(j .probe_max_ms) ms" ||
	fail "a probe took $(j .probe_max_ms) ms"
# 3 s deadline, swept every 0.25 s; the oldest waiting ones go sooner to make room
[ "$(j '.max_held_s <= 4.5')" = true ] && pass "no slow connection was held past the deadline ($(j .max_held_s) s)" ||
	fail "a slow connection was held $(j .max_held_s) s (request_timeout 3 s)"
[ "$(j '.closed_by_server >= 192')" = true ] && pass "kilnd closed $(j .closed_by_server) slow connections" ||
	fail "kilnd closed only $(j .closed_by_server) slow connections"

# Fewer slow connections than may wait: the deadline alone closes each, at about 3 s.
python3 "$HERE/slowloris.py" 127.0.0.1 "$PORT" 20 8 1 >"$T/deadline.json" || fail "slowloris.py failed"
cat "$T/deadline.json"
d() { jq -r "$1" "$T/deadline.json"; }
[ "$(d '.max_held_s >= 2.5 and .max_held_s <= 4.5 and .closed_by_server >= 20')" = true ] &&
	pass "request_timeout closed each of 20 slow connections (held at most $(d .max_held_s) s)" ||
	fail "20 slow connections: $(d .closed_by_server) closed, held up to $(d .max_held_s) s"
same "... and the probes answered meanwhile" "$(d '.answered == .probes')" true

# A request that arrives whole, slowly but within the deadline, is answered; an answer and a
# console-like wait are not cut (a suspended report waits longer than the deadline in
# test_agent_ingest's batches; here: a plain request split over 2 s).
ANS=$( { printf 'GET /api/v1/health HTTP/1.1\r\nHost: k'; sleep 1; printf '\r\nConnection: close\r\n'; sleep 1; printf '\r\n'; sleep 1; } |
	timeout 10 python3 -c 'import socket,sys
s=socket.create_connection(("127.0.0.1",int(sys.argv[1])))
s.sendall(sys.stdin.buffer.read())
print(s.recv(64).split(b"\r\n")[0].decode())' "$PORT")
same "a request sent slowly within the deadline is answered" "$ANS" "HTTP/1.1 200 OK"

kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
LINES=$(grep -c 'http: ' "$KILND_LOG")
[ "$LINES" -le 10 ] && pass "$LINES http log lines for $(j .opened) slow connections" ||
	fail "$LINES http log lines for $(j .opened) slow connections: $(grep 'http: ' "$KILND_LOG" | sort | uniq -c | sort -rn | head -5)"
[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
