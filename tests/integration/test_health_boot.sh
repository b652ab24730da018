# SPDX-License-Identifier: Apache-2.0
# Integration: a node rebooting by itself is not hung while its boot may last (issue 34). The
# host reboots with its power never off (a kernel panic's reboot, an admin's `reboot`): its
# agent falls silent and the BMC's BootProgress goes back to the firmware's states. With
# [health] boot_time = 30s, n1 spends 25 s in its boot and is never judged hung nor cycled
# (a kilnd before this judged it hung 10 s into the silence and cycled it in mid-boot); its
# agent comes back with a new boot id and n1 is ok. Then a boot that never ends: still in
# POST 30 s after it began, n1 is hung 2 intervals later (the reason says where the BMC saw
# the boot) and kilnd's remediation cycles it. A reset the BMC only logs (iDRAC's "System CPU
# Resetting.") begins a boot as well.
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
# reports every 5 s, hung after 10 s of silence, the BMC read every 5 s
printf '%s\n' '[poller]' 'interval = 5s' 'health_every = 1s' 'sel_every = 1' '[health]' 'agent_interval = 5s' \
	'hung_intervals = 2' 'boot_time = 30s' '[remediation]' 'enabled = yes' 'grace = 0s' \
	'max_per_hour = 10' '[work]' 'report_fresh = 1s' >"$T/kilnd.conf"
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
FLEET_AGENT_INTERVAL=5 fleet_agent_start n1
field() { "$KILN" status n1 -o json | jq -r ".[0].$1"; }
seen() { [ "$(field agent_last_seen)" != null ] && [ "$(field power)" = on ]; }
wait_for "the agent reported and the BMC was read" 30 seen || exit 1
resets() { curl -s "$SIM/_sim/state" | jq '.resets | length'; }
boot_progress() { curl -s -X POST -d "{\"boot_progress\":\"$1\"}" "$SIM/_sim/inject" >/dev/null; }

# 1. the host reboots by itself: the agent stops, the BMC shows the firmware's boot
fleet_agent_stop n1
boot_progress MemoryInitializationStarted
hung_seen=0 boot_said=0
for _ in $(seq 1 50); do # 25 s
	r=$(field 'reasons | join(";")')
	case $r in *hung:*) hung_seen=1 ;; esac
	case $r in *"boot: began "*"(BMC: MemoryInitializationStarted), agent not back yet"*) boot_said=1 ;; esac
	sleep 0.5
done
same "n1 was never judged hung during its 25 s boot" "$hung_seen" 0
same "its status said the boot was on" "$boot_said" 1
same "nothing reached the BMC" "$(resets)" 0
boot_event() {
	"$KILN" events n1 --since 1h -o json | jq -e 'any(.[]; .kind == "boot" and
		(.message == "boot began (BMC: MemoryInitializationStarted)"))' >/dev/null
}
check "an event says the boot began" "$(boot_event; echo $?)" "$("$KILN" events n1 --since 1h)"

# the OS is up: a new boot id, the agent reports again, n1 is ok
boot_progress OSRunning
cat /proc/sys/kernel/random/uuid >"$T/roots/n1/proc/sys/kernel/random/boot_id"
FLEET_AGENT_INTERVAL=5 fleet_agent_start n1
ok() { [ "$(field health)" = ok ] && [ "$(field 'reasons | length')" = 0 ]; }
wait_for "n1 is ok once its agent is back" 30 ok
same "still nothing reached the BMC" "$(resets)" 0

# 1b. a BMC that says nothing of BootProgress but logs the reset (iDRAC's SYS1003): the
# log's line begins the boot as well
fleet_agent_stop n1
curl -s -X POST -d '{"log":{"message":"System CPU Resetting.","severity":"OK"}}' "$SIM/_sim/inject" >/dev/null
hung_seen=0 boot_said=0
for _ in $(seq 1 30); do # 15 s
	r=$(field 'reasons | join(";")')
	case $r in *hung:*) hung_seen=1 ;; esac
	case $r in *"boot: began "*", agent not back yet"*) boot_said=1 ;; esac
	sleep 0.5
done
same "n1, its reset in the BMC's log, was never judged hung" "$hung_seen" 0
same "its status said the boot was on" "$boot_said" 1
same "nothing reached the BMC" "$(resets)" 0
cat /proc/sys/kernel/random/uuid >"$T/roots/n1/proc/sys/kernel/random/boot_id"
FLEET_AGENT_INTERVAL=5 fleet_agent_start n1
wait_for "n1 is ok once its agent is back again" 30 ok

# 2. a boot that never ends: hung once the boot should have ended, and cycled
fleet_agent_stop n1
boot_progress PCIResourceConfigStarted
stuck() { field 'reasons | any(startswith("hung: powered on") and contains("(BMC: PCIResourceConfigStarted)"))' | grep -q true; }
wait_for "n1, still in its firmware after boot_time, is hung" 60 stuck
cycled() { [ "$(resets)" -ge 1 ]; }
wait_for "and kilnd cycles it" 20 cycled

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
