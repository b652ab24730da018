# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd killed (-9) right after its automatic power cycle of a hung node reached
# the BMC (issue 15: a power action already sent is never sent again). The cycle's audit row
# and the node's remediated_at are stored before the BMC hears of it, so the restarted kilnd
# knows this silence run was answered: the simulator's reset count stays 1, and the cut
# cycle's row says interrupted, with the power read back.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
# shellcheck source=agent_fleet.sh
. "$HERE/agent_fleet.sh"
FAILS=0
T=$KILN_TEST_TMP
printf '%s\n' '[poller]' 'interval = 5s' 'health_every = 1s' '[health]' 'agent_interval = 2s' \
	'hung_intervals = 3' '[remediation]' 'enabled = yes' 'grace = 1s' 'max_per_hour = 10' \
	>"$T/kilnd.conf"
on_exit() {
	fleet_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" --power-delay-ms 3000 --settle-ms 0 || exit 1
SIM=$BMCSIM_URL
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
PORT=${KILND_URL##*:}
fleet_node_add n1 "$BMCSIM_PORT" && fleet_agent_start n1 || exit 1
seen() { [ "$("$KILN" status -o json | jq -r '.[0].agent_last_seen')" != null ] &&
	[ "$("$KILN" status -o json | jq -r '.[0].power')" = on ]; }
wait_for "the agent reported and the BMC was read" 30 seen || exit 1

fleet_agents_stop # hung: on, and its agent silent
resets() { curl -s "$SIM/_sim/state" | jq '.resets | length'; }
sent() { [ "$(resets)" -ge 1 ]; }
wait_for "the automatic cycle reaches the BMC" 40 sent || exit 1
kill -KILL "$KILND_PID"
wait "$KILND_PID" 2>/dev/null
pass "kilnd killed (SIGKILL) right after the cycle was sent"
kiln_test_start_kilnd "$KILND_DIR" --config "$T/kilnd.conf" --listen "127.0.0.1:$PORT" || exit 1
# Past the hung threshold again (3 x 2 s from the restart) and the grace, several sweeps.
sleep 15
same "the node was cycled once" "$(resets)" 1
rows() { "$KILN" audit log -o json | jq '[.[] | select(.action == "power.cycle" and .actor == "kilnd")]'; }
same "one automatic power.cycle row" "$(rows | jq length)" 1
read_back() { rows | jq -e '.[0].outcome | test("^interrupted: kilnd stopped; power read back: (on|off) at ")' >/dev/null; }
wait_for "its row says interrupted, with the power read back" 20 read_back ||
	echo "  its row: $(rows | jq -c '.[0]')" >&2

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -30 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
