# SPDX-License-Identifier: Apache-2.0
# Integration: 10,000 client connections at once (issue 17, the hostile-peers test's client
# half; the slow loris half is test_http_slowloris). A python3 client
# opens 10,000 connections to kilnd, each sending half a request head, and holds them; while
# they are open GET /health answers within 500 ms each time (a connection of its own beside
# them) and kilnd's RSS stays within idle + 256 MB; once they close, an authenticated request
# is answered and kilnd stops cleanly.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

command -v python3 >/dev/null 2>&1 || { echo "skipped: python3 is missing"; exit 77; }
N=10000
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt $((N + 100)) ]; then
	echo "skipped: the open-file limit ($(ulimit -Hn)) is under $((N + 100))"
	exit 77
fi
ulimit -n $((N + 100))
FAILS=0
T=$KILN_TEST_TMP
kiln_test_start_kilnd || exit 1
rss_mb() { awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$KILND_PID/status"; }
IDLE=$(rss_mb)
PORT=${KILND_URL##*:}

cat >"$T/clients.py" <<'PY'
import socket, sys, time
port, n, ready, hold = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
socks = []
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    socks.append(s)
time.sleep(0.5)
sent = 0
for s in socks:
    try:
        s.send(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
        sent += 1
    except OSError:
        pass
open(ready, "w").write("%d\n" % sent)
time.sleep(hold)
PY
python3 "$T/clients.py" "$PORT" $N "$T/ready" 12 &
CLIENT_PID=$!
for ((i = 0; i < 200; i++)); do
	[ -s "$T/ready" ] && break
	sleep 0.1
done
[ -s "$T/ready" ] || { fail "the client did not open its connections"; exit 1; }
echo "connections with half a request sent: $(cat "$T/ready") of $N"
open_now=$(ss -Htn state established "( sport = :$PORT )" | wc -l)
echo "connections kilnd holds: $open_now"
max=0 peak=$IDLE bad=0
for ((i = 0; i < 16; i++)); do
	h=$(curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}' "$KILND_URL/api/v1/health")
	[ "${h%% *}" = 200 ] || bad=$((bad + 1))
	max=$(awk -v a="$max" -v b="${h##* }" 'BEGIN { print (b > a) ? b : a }')
	r=$(rss_mb)
	[ "$r" -gt "$peak" ] && peak=$r
	sleep 0.5
done
echo "with $N connections: /health at most ${max}s ($bad not answered), RSS $IDLE -> $peak MB"
same "GET /health answers every time" "$bad" 0
awk -v h="$max" 'BEGIN { exit !(h < 0.5) }'
check "GET /health answers within 500 ms" $? "${max}s"
[ "$peak" -le $((IDLE + 256)) ]
check "RSS stays within idle + 256 MB" $? "$peak MB, idle $IDLE MB"
kill "$CLIENT_PID" 2>/dev/null
wait "$CLIENT_PID" 2>/dev/null
same "an authenticated request is answered after" "$(kiln_api GET /nodes)" 200
kiln_test_stop_kilnd
check "kilnd stops cleanly (no sanitizer report)" $? "$(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || exit 1
echo "all passed"
