#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Power status/on/off/soft/cycle/reset through the IPMI helper, checked against the
# simulators' chassis state files.
. "$(dirname "$0")/lib.sh"
ipmisim_require
ipmisim_start 3 || fail "could not start ipmi_sim"
T=$IPMISIM_WORK/targets
ipmisim_targets "$T" 0 1 2

# $1: JSON; $2: jq filter that must hold for every result of the first round
check_all() {
	echo "$1" | jq -e "[.rounds[0].results[] | ($2)] | all" > /dev/null ||
		fail "expected '$2' for every node: $1"
}
power_files() {
	local i v
	for i in 0 1 2; do
		v=$(cat "${IPMISIM_DIRS[$i]}/chassis/power")
		[ "$v" = "$1" ] || fail "sim$i chassis power is $v, expected $1"
	done
}

out=$(ipmisim_drive "$T" power-status) || fail "power status: $out"
check_all "$out" '.power == "off"'
[ "$(echo "$out" | jq '.rounds[0].results | length')" = 3 ] || fail "3 results expected: $out"

out=$(ipmisim_drive "$T" power on) || fail "power on: $out"
check_all "$out" '.power == "on" and .action == "on" and .result == "ok"'
power_files 1
out=$(ipmisim_drive "$T" power-status)
check_all "$out" '.power == "on"'
# on again: nothing sent, the same word as the Redfish driver's
: > "${IPMISIM_DIRS[0]}/chassis/history"
out=$(ipmisim_drive "$T" power on) || fail "power on of on nodes: $out"
check_all "$out" '.power == "on" and .result == "noop"'
[ ! -s "${IPMISIM_DIRS[0]}/chassis/history" ] || fail "power on of an on node reached the chassis"

# cycle: the simulator goes off, then on after a second; both must be seen
for i in 0 1 2; do : > "${IPMISIM_DIRS[$i]}/chassis/history"; done
out=$(ipmisim_drive "$T" power cycle) || fail "power cycle: $out"
check_all "$out" '.power == "on" and .action == "cycle" and .result == "ok"'
power_files 1
for i in 0 1 2; do
	[ "$(tr '\n' ' ' < "${IPMISIM_DIRS[$i]}/chassis/history")" = "power 0 power 1 " ] ||
		fail "sim$i history after cycle: $(cat "${IPMISIM_DIRS[$i]}/chassis/history")"
done

# reset: power stays on; the BMC's completion code and the chassis log are the evidence
out=$(ipmisim_drive "$T" power reset) || fail "power reset: $out"
check_all "$out" '.result == "acknowledged" and .completion_code == 0 and .power == "on"'
for i in 0 1 2; do
	grep -qx reset "${IPMISIM_DIRS[$i]}/chassis/history" || fail "sim$i saw no reset"
done

out=$(ipmisim_drive "$T" power off) || fail "power off: $out"
check_all "$out" '.power == "off" and .result == "ok"'
power_files 0

# a cycle of a node that is off sends nothing, unless on-if-off
: > "${IPMISIM_DIRS[0]}/chassis/history"
out=$(ipmisim_drive "$T" power cycle) && fail "cycle of off nodes should fail: $out"
check_all "$out" '.error | test("is off")'
[ ! -s "${IPMISIM_DIRS[0]}/chassis/history" ] || fail "cycle of an off node reached the chassis"
out=$(ipmisim_drive "$T" --on-if-off power cycle) || fail "cycle --on-if-off: $out"
check_all "$out" '.power == "on"'
power_files 1

# soft: the simulator's soft shutdown turns the power off
out=$(ipmisim_drive "$T" power soft) || fail "power soft: $out"
check_all "$out" '.power == "off" and .action == "soft" and .result == "ok"'
power_files 0
grep -qx shutdown "${IPMISIM_DIRS[1]}/chassis/history" || fail "no soft shutdown seen"
echo "ok: power status/on/off/soft/cycle/reset over 3 simulated BMCs"
