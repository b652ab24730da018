# SPDX-License-Identifier: Apache-2.0
# Integration: hostile BMCs (issue 17, finding 3 and the hostile-peers test). Nine nodes whose
# BMCs (tests/integration/hostile_bmc.py) answer the System with a 100 MB body, an endless
# chunked body, 200,000 levels of nesting, 15 MB of "{}," (two), 300 kB of "{}," (two: parsed,
# under the caps, through the parse budget), a redirect to another host, or 401 to every
# request, polled every 5 s beside two healthy simulated BMCs. Bounds: kilnd's RSS at most idle
# + 256 MB during the hostile reads and idle + 64 MB ten seconds after they stop; the healthy
# nodes' live power reads answer within 2 s and GET /health within 500 ms throughout; the
# redirect's other host is never asked; the 401 BMC is not asked again and again.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
for tool in python3 "$BMCSIM"; do
	command -v "$tool" >/dev/null 2>&1 || { echo "skipped: $tool is missing"; exit 77; }
done
FAILS=0
T=$KILN_TEST_TMP
# The sanitizer build's allocator keeps freed memory in its quarantine (256 MB by default) and
# gives pages back only on a timer: small and quick here, so that RSS says what kilnd holds.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=16:allocator_release_to_os_interval_ms=500"
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
EOF
HOSTILE_PID=
on_exit() {
	[ -n "$HOSTILE_PID" ] && kill "$HOSTILE_PID" 2>/dev/null && wait "$HOSTILE_PID" 2>/dev/null
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$SRC/tests/sim/fixtures/generic" --count 2 || exit 1
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/bmc.pw"
add() {
	"$KILN" node add "$1" --bmc "redfish+http://127.0.0.1:$2" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add $1 failed" >&2; exit 1; }
}
add ok01 "${BMCSIM_PORTS[0]}"
add ok02 "${BMCSIM_PORTS[1]}"
rss_mb() { awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$KILND_PID/status"; }
power_on() { [ "$("$KILN" status -o json | jq -r '[.[] | select(.power == "on")] | length')" = 2 ]; }
wait_for "the healthy BMCs are read" 30 power_on || exit 1
sleep 4
IDLE=$(rss_mb)
echo "idle RSS: $IDLE MB"

MODES=(big chunked deep flood flood wide wide redirect 401)
python3 "$HERE/hostile_bmc.py" "$T/hostile.ports" "${MODES[@]}" 2>"$T/hostile.log" &
HOSTILE_PID=$!
for ((i = 0; i < 100; i++)); do
	[ -s "$T/hostile.ports" ] && break
	sleep 0.1
done
[ -s "$T/hostile.ports" ] || { echo "hostile_bmc.py did not start:" >&2; cat "$T/hostile.log" >&2; exit 1; }
OTHER_PORT=$(awk '$1 == "other" { print $2 }' "$T/hostile.ports")
k=0
while read -r mode port; do
	[ "$mode" = other ] && continue
	k=$((k + 1))
	if [ "$mode" = 401 ]; then
		# node add's BMC check is its one retry: the 401 BMC is refused there, not added
		"$KILN" node add "bad$(printf %02d $k)-$mode" --bmc "redfish+http://127.0.0.1:$port" \
			--bmc-user admin --bmc-password-file "$T/bmc.pw" >/dev/null 2>"$T/add401.err"
		same "node add of the 401 BMC is refused (exit 2)" "$?" 2
		continue
	fi
	add "bad$(printf %02d $k)-$mode" "$port"
done <"$T/hostile.ports"
P401=$(awk '$1 == "401" { print $2 }' "$T/hostile.ports")

# 24 s of hostile reads (about 5 poller sweeps): RSS, /health and the healthy nodes' live reads
peak=$IDLE health_max=0 live_max=0 live_bad=0
for ((i = 0; i < 24; i++)); do
	r=$(rss_mb)
	[ "$r" -gt "$peak" ] && peak=$r
	h=$(curl -s -o /dev/null -m 5 -w '%{time_total}' "$KILND_URL/api/v1/health")
	health_max=$(awk -v a="$health_max" -v b="$h" 'BEGIN { print (b > a) ? b : a }')
	if ((i % 3 == 0)); then
		t0=$(date +%s%N)
		out=$("$KILN" power status ok01,ok02 -o json 2>&1)
		t1=$(date +%s%N)
		ms=$(((t1 - t0) / 1000000))
		[ "$ms" -gt "$live_max" ] && live_max=$ms
		[ "$(jq -r '[.[] | select(.power == "on")] | length' <<<"$out" 2>/dev/null)" = 2 ] ||
			{ live_bad=$((live_bad + 1)); echo "live read: $out" >&2; }
	fi
	sleep 0.5
done
echo "hostile reads: RSS peak $peak MB (idle $IDLE MB), /health at most ${health_max}s," \
	"live power reads at most ${live_max} ms"
[ "$peak" -le $((IDLE + 256)) ]
check "RSS stays within idle + 256 MB during the hostile reads" $? "peak $peak MB, idle $IDLE MB"
awk -v h="$health_max" 'BEGIN { exit !(h < 0.5) }'
check "GET /health answers within 500 ms" $? "${health_max}s"
[ "$live_max" -lt 2000 ] && [ "$live_bad" = 0 ]
check "the healthy nodes' live reads answer within 2 s" $? "${live_max} ms, $live_bad failed"
bmc_error() { "$KILN" status -o json | jq -r ".[] | select(.node | startswith(\"$1\")) | .bmc_error" 2>/dev/null; }
bmc_error bad01 | grep -q 'over the 1048576-byte cap for a resource'
check "the 100 MB body stops at the resource cap" $? "$(bmc_error bad01)"
bmc_error bad02 | grep -q 'over the 1048576-byte cap for a resource'
check "the endless chunked body stops at the resource cap" $? "$(bmc_error bad02)"
bmc_error bad04 | grep -q 'over the 1048576-byte cap for a resource'
check "15 MB of {} stops at the resource cap" $? "$(bmc_error bad04)"
hits=$(curl -s -m 2 "http://127.0.0.1:$P401/_hits")
same "the redirect's other host is never asked" "$(jq -r '.other // 0' <<<"$hits")" 0
n401=$(jq -r '."401" // 0' <<<"$hits")
[ "$n401" -le 6 ]
check "the 401 BMC is asked a few times, not at every sweep" $? "$n401 requests in 24 s"
[ "$n401" -le 4 ]
check "... its service root and two refused logins at node add, no more" $? "$n401 requests"

# the hostile BMCs go away: what their reads took goes back
kill "$HOSTILE_PID" 2>/dev/null
wait "$HOSTILE_PID" 2>/dev/null
HOSTILE_PID=
sleep 10
after=$(rss_mb)
echo "RSS ten seconds after: $after MB"
[ "$after" -le $((IDLE + 64)) ]
check "RSS is within idle + 64 MB ten seconds after" $? "$after MB, idle $IDLE MB"

kiln_test_stop_kilnd
check "kilnd stops cleanly (no sanitizer report)" $? "$(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || exit 1
echo "all passed"
