# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd's automatic power cycle obeys the operator's work guard (issue 34). n1's
# agent reports a training process, then falls silent; with [health] hung_intervals = 1 the
# node is flagged hung while its last report is still fresh. An operator's power off is
# refused for that work, so kilnd's own cycle waits too (one event says so, nothing reaches
# the BMC) until the report is no longer fresh ([work] report_fresh and two report
# intervals), as an operator's off would then go ahead.
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
# reports every 15 s: hung after 15 s of silence, the report fresh for 30 s (two intervals):
# a window of 15 s, wide enough for a loaded machine's late verdict
printf '%s\n' '[poller]' 'interval = 5s' 'health_every = 1s' '[health]' 'agent_interval = 15s' \
	'hung_intervals = 1' '[remediation]' 'enabled = yes' 'grace = 0s' 'max_per_hour = 10' \
	'[work]' 'report_fresh = 60s' >"$T/kilnd.conf"
on_exit() {
	fleet_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" || exit 1
SIM=$BMCSIM_URL
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
fleet_node_add n1 "$BMCSIM_PORT" || exit 1
{
	cat "$T/fleet-nvml.conf"
	echo "gpu.0.processes = 4242:42949672960"
} >"$T/busy-nvml.conf"
FLEET_AGENT_INTERVAL=15 fleet_agent_start n1 "$T/busy-nvml.conf"
seen() { [ "$("$KILN" status -o json | jq -r '.[0].agent_last_seen')" != null ] &&
	[ "$("$KILN" status -o json | jq -r '.[0].power')" = on ]; }
wait_for "the agent reported and the BMC was read" 30 seen || exit 1
resets() { curl -s "$SIM/_sim/state" | jq '.resets | length'; }

# the operator is refused for the work
out=$("$KILN" power off n1 --yes 2>&1)
same "an operator's power off is refused: exit 1" "$?" 1
check "the refusal names the training process" "$(grep -q 'gpu process 4242' <<<"$out"; echo $?)" "$out"

# the agent falls silent; the node is flagged hung while its report is fresh
fleet_agents_stop
waits() {
	"$KILN" events n1 --since 1h -o json | jq -e 'any(.[]; .kind == "remediation" and
		(.message | startswith("hung, but automatic power cycle waits: work running: gpu process 4242")))' >/dev/null
}
wait_for "kilnd's cycle waits for the work, as the operator's off did" 40 waits
same "nothing reached the BMC while the report was fresh" "$(resets)" 0
hung() { "$KILN" status -o json | jq -e '.[0].reasons | any(startswith("hung:"))' >/dev/null; }
check "the node is flagged hung meanwhile" "$(hung; echo $?)" "$("$KILN" status -o json | jq -c '.[0].reasons')"

# once the report is no longer fresh, the cycle goes ahead (an operator's off would too)
cycled() { [ "$(resets)" -ge 1 ]; }
wait_for "the cycle goes ahead once the report is stale" 45 cycled

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
