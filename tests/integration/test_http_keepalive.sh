# SPDX-License-Identifier: Apache-2.0
# Integration: the connection guard tells a client that keeps its connection between requests
# (an agent between reports) from a slow or hostile one: a kept-alive connection idle past
# [http] request_timeout stays open until connection_timeout and is no "slow or hostile"
# warning (issue 37: kilnd warned every minute when it closed agents' idle connections); a
# connection that never sends its request is still closed at request_timeout, and said so.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

FAILS=0
T=$KILN_TEST_TMP
cat >"$T/kilnd.conf" <<CONF
[http]
request_timeout = 2s
connection_timeout = 20s
CONF
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1

# keepalive.py URL IDLE: two requests on one connection, IDLE seconds apart; prints
# "reused" when the second went over the first one's connection, else what happened.
cat >"$T/keepalive.py" <<'PY'
import http.client, ssl, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
if u.scheme == "https":
    c = http.client.HTTPSConnection(u.hostname, u.port, context=ssl._create_unverified_context())
else:
    c = http.client.HTTPConnection(u.hostname, u.port)
c.request("GET", "/api/v1/health")
r = c.getresponse(); r.read()
sock = c.sock
time.sleep(float(sys.argv[2]))
try:
    c.request("GET", "/api/v1/health")
    r = c.getresponse(); r.read()
    print("reused" if c.sock is sock and r.status == 200 else "status %d" % r.status)
except Exception as e:
    print("closed: %s" % type(e).__name__)
PY
same "a kept-alive connection idle past request_timeout still answers" \
	"$(timeout 30 python3 "$T/keepalive.py" "$KILND_URL" 4)" reused
same "... and is no slow or hostile client" "$(grep -c 'slow or hostile' "$KILND_LOG")" 0

# A connection that sends nothing is closed at request_timeout, and that is said.
python3 - "$KILND_URL" >"$T/silent.txt" <<'PY'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port))
s.settimeout(10)
t = time.time()
try:
    got = s.recv(1)
except OSError:
    got = b""
print("closed after %.0f s" % (time.time() - t) if got == b"" else "answered")
PY
grep -q "closed after [2-5] s" "$T/silent.txt" && pass "a silent connection is closed at request_timeout" ||
	fail "a silent connection: $(cat "$T/silent.txt")"
for _ in $(seq 70); do grep -q 'slow or hostile' "$KILND_LOG" && break; sleep 1; done
same "... and logged as a slow or hostile client" "$(grep -c 'slow or hostile' "$KILND_LOG")" 1

kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
