# SPDX-License-Identifier: Apache-2.0
# Integration: a BMC answering 503 is busy, not dead. kiln-bmcsim answers every request as an
# iDRAC whose sessions are all taken (503, RAC0218, Retry-After): within one poll interval the
# node's BMC is "busy" in kiln status (reachable, a warning naming what the BMC said, never
# "unreachable" however long it lasts), and one interval after the BMC answers normally again
# the node is ok (a 503 counted as a failure took the backoff's intervals to come back).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
MOCKUP=$SRC/tests/sim/fixtures/idrac9
[ -x "$BMCSIM" ] || { echo "FAIL: $BMCSIM is missing (build kiln-bmcsim)" >&2; exit 1; }
FAILS=0
T=$KILN_TEST_TMP
INTERVAL=5
# A Retry-After longer than the read's time limit: the driver answers the poller at once.
cat >"$T/kilnd.conf" <<EOF
[bmc]
status_timeout = 2s
[poller]
interval = ${INTERVAL}s
health_every = 1s
EOF
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" --count 1 || exit 1
PORT=${BMCSIM_PORTS[0]}
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/bmc.pw"
"$KILN" node add idrac01 --bmc "redfish+http://127.0.0.1:$PORT" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add failed" >&2; exit 1; }
field() { "$KILN" status -o json | jq -r ".[] | select(.node == \"idrac01\") | $1"; }
inject() { curl -s -o /dev/null -X POST -d "$1" "http://127.0.0.1:$PORT/_sim/inject"; }
is_ok() { [ "$(field '.power + "/" + .health + "/" + (.bmc // "ok")')" = on/ok/ok ]; }
wait_for "idrac01 read on and ok" 30 is_ok || exit 1

inject '{"fault":"busy:retry=30"}'
start=$EPOCHREALTIME
# its BMC "busy" and the warning that says so
is_busy() { [ "$(field '.bmc + "/" + .health + "/" + (.reasons[0] // "" | .[0:10])')" = "busy/warning/bmc busy: " ]; }
if wait_for "idrac01 busy, with its warning" 30 is_busy; then
	took=$(echo "$EPOCHREALTIME - $start" | bc)
	# one interval for the next poll, a second for the health sweep, a little for the CLI
	check "busy within one interval (${took}s)" "$(echo "$took <= $INTERVAL + 2" | bc | grep -qx 1; echo $?)" \
		"took ${took}s"
fi
same "the reason says what the BMC said" "$(field '.reasons[0]')" \
	"bmc busy: 503 'IDRAC.2.8.RAC0218: The maximum number of user sessions is reached.' (Retry-After 30s)"
same "the BMC counts reachable" "$(field .bmc_reachable)" true
# Three intervals busy: busy all along, never unreachable, never its circuit (which would hold
# its polls).
seen=
for ((k = 0; k < 3 * INTERVAL * 2; k++)); do
	b=$(field '.bmc + "/" + (.reasons | join(";"))')
	case $b in busy/"bmc busy: "*) ;; *) seen=$b ;; esac
	case $b in *unreachable*) break ;; esac
	sleep 0.5
done
same "busy for 3 intervals, never anything else" "${seen:-busy}" busy
reads=$(curl -s "http://127.0.0.1:$PORT/_sim/state" | jq -r '.requests.GET')
[ "$reads" -ge 3 ] 2>/dev/null
check "it is still polled on its schedule ($reads GETs)" $? "$reads"

inject '{"fault":"none"}'
start=$EPOCHREALTIME
if wait_for "idrac01 ok again" 30 is_ok; then
	took=$(echo "$EPOCHREALTIME - $start" | bc)
	check "ok within one interval of the normal answer (${took}s)" \
		"$(echo "$took <= $INTERVAL + 2" | bc | grep -qx 1; echo $?)" "took ${took}s"
fi
same "no reason left" "$(field '.reasons | length')" 0
ev=$("$KILN" events idrac01 --since 1h -o json | jq -r '[.[] | select(.kind == "bmc") | .message] | join(";")')
case $ev in *"BMC busy: 503 "*) pass "one event says it was busy" ;; *) fail "events: $ev" ;; esac
case $ev in *unreachable*) fail "an event calls it unreachable: $ev" ;; *) pass "no event calls it unreachable" ;; esac

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
