# SPDX-License-Identifier: Apache-2.0
# Integration: no action is left pending by a crash (issue 15, its audit part). A power cycle
# is in flight (the simulated BMC takes 8 s a phase) when kilnd is killed with SIGKILL; at its
# next start the row says "interrupted: kilnd stopped" and, after the first poll, the power
# the BMC read back; no row is pending.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
MOCKUP=$SRC/tests/sim/fixtures/generic
FAILS=0
T=$KILN_TEST_TMP
on_exit() {
	[ -n "${CYCLE_PID:-}" ] && kill "$CYCLE_PID" 2>/dev/null
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
printf '[poller]\ninterval = 5s\n' >"$T/kilnd.conf"

bmcsim_start "$T/sim" "$MOCKUP" --power-delay-ms 8000 || exit 1
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/bmc.pw"
"$KILN" node add n1 --bmc "redfish+http://127.0.0.1:${BMCSIM_PORTS[0]}" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add failed" >&2; exit 1; }
rows() { "$KILN" audit log -o json | jq -r '[.[] | select(.action == "power.cycle")]'; }
pending() { [ "$(rows | jq -r '.[0].outcome // empty')" = pending ]; }
"$KILN" power cycle n1 --yes >"$T/cycle.out" 2>&1 &
CYCLE_PID=$!
wait_for "the cycle is in flight" 10 pending || exit 1
PORT=${KILND_URL##*:}
kill -KILL "$KILND_PID"
wait "$KILND_PID" 2>/dev/null
wait "$CYCLE_PID" 2>/dev/null
CYCLE_PID=
kiln_test_start_kilnd "$KILND_DIR" --config "$T/kilnd.conf" --listen "127.0.0.1:$PORT" || exit 1
same "no audit row is pending after the restart" \
	"$("$KILN" audit log -o json | jq '[.[] | select(.outcome == "pending")] | length')" 0
outcome() { rows | jq -r '.[0].outcome'; }
case "$(outcome)" in
"interrupted: kilnd stopped"*) pass "the cycle's row says it was interrupted" ;;
*) fail "the cycle's row: $(outcome)" ;;
esac
read_back() { outcome | grep -qE '^interrupted: kilnd stopped; power read back: (on|off) at [0-9-]+T[0-9:]+Z$'; }
wait_for "the row gains the power read back at the first poll" 30 read_back
grep -q "left pending by the last kilnd" "$KILND_LOG"
check "kilnd's log says it closed it" $? "$(tail -5 "$KILND_LOG")"

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
