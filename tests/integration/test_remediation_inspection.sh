# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd never power-cycles a node whose verdict needs hardware inspection (issue
# 34). n1's agent reports GPU 4's row remapping failed (a GPU to service), then falls silent:
# with [health] hung_intervals = 1 the node is flagged hung, and the automatic cycle that
# would follow is held, one event naming the GPU; nothing reaches the BMC. n2, hung with
# healthy GPUs, is cycled by the same kilnd (the hold is the inspection's, not a broken
# remediation). Once n2 is back from its cycle (a new boot) and hangs again, the hang back
# after a reboot needs inspection too: not cycled a second time.
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
	'hung_intervals = 2' '[remediation]' 'enabled = yes' 'grace = 0s' 'max_per_hour = 10' \
	'[work]' 'report_fresh = 1s' >"$T/kilnd.conf"
on_exit() {
	fleet_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim1" "$MOCKUP" || exit 1
SIM1=$BMCSIM_URL P1=$BMCSIM_PORT
bmcsim_start "$T/sim2" "$MOCKUP" || exit 1
SIM2=$BMCSIM_URL P2=$BMCSIM_PORT
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
fleet_node_add n1 "$P1" || exit 1
fleet_node_add n2 "$P2" || exit 1
{
	cat "$T/fleet-nvml.conf"
	echo "gpu.4.remap_failure = 1"
} >"$T/remap-nvml.conf"
fleet_agent_start n1 "$T/remap-nvml.conf"
fleet_agent_start n2
field() { "$KILN" status "$1" -o json | jq -r ".[0].$2"; }
judged() {
	[ "$(field n1 repair)" = inspection ] && [ "$(field n2 agent_last_seen)" != null ] &&
		[ "$(field n2 power)" = on ]
}
wait_for "n1's remap failure judged, n2 reporting" 30 judged || exit 1
same "n1's reason names GPU 4 and the inspection it needs" \
	"$(field n1 'reasons | any(startswith("gpu 4 (") and endswith("[needs hardware inspection]"))')" true
same "its repairs list the class" "$(field n1 'repairs | index("inspection") != null')" true

fleet_agents_stop
resets() { curl -s "$1/_sim/state" | jq '.resets | length'; }
held() {
	"$KILN" events n1 --since 1h -o json | jq -e 'any(.[]; .kind == "remediation" and
		(.message | startswith("hung, but no automatic power cycle: needs hardware inspection: gpu 4 (")))' >/dev/null
}
wait_for "n1's cycle is held for the inspection" 30 held
n2_cycled() { [ "$(resets "$SIM2")" -ge 1 ]; }
wait_for "n2, hung with healthy GPUs, is cycled" 30 n2_cycled
same "nothing reached n1's BMC" "$(resets "$SIM1")" 0
hung() { "$KILN" status n1 -o json | jq -e '.[0].reasons | any(startswith("hung:"))' >/dev/null; }
check "n1 is flagged hung meanwhile" "$(hung; echo $?)" "$(field n1 reasons)"

# n2 comes back from its cycle (a new boot id), then hangs again: a hang back after a reboot
# needs inspection, and kilnd cycles it no more
cycle_done() {
	"$KILN" events n2 --since 1h -o json | jq -e 'any(.[]; .kind == "remediation" and
		(.message | startswith("automatic power cycle done")))' >/dev/null
}
wait_for "n2's cycle is done" 20 cycle_done
cat /proc/sys/kernel/random/uuid >"$T/roots/n2/proc/sys/kernel/random/boot_id"
fleet_agent_start n2
back() { [ "$(field n2 health)" = ok ]; }
wait_for "n2 reports again after its cycle" 30 back
fleet_agent_stop n2
again() {
	"$KILN" events n2 --since 1h -o json | jq -e 'any(.[]; .kind == "remediation" and
		(.message | startswith("hung, but no automatic power cycle: needs hardware inspection: hung: ")) and
		(.message | contains("(back after a reboot)")))' >/dev/null
}
wait_for "n2's second hang, back after a reboot, is held for inspection" 30 again
same "n2 was cycled once only" "$(resets "$SIM2")" 1
same "its status says it needs inspection" "$(field n2 repair)" inspection

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
