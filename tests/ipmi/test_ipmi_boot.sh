#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Boot device override through the IPMI helper, checked in the simulators' chassis state
# (ipmi_sim answers 0xCC to set-in-progress and cannot read the flags back; see lib.sh).
. "$(dirname "$0")/lib.sh"
ipmisim_require
ipmisim_start 2 || fail "could not start ipmi_sim"
T=$IPMISIM_WORK/targets
ipmisim_targets "$T" 0 1

boot_is() {
	local i v
	for i in 0 1; do
		v=$(cat "${IPMISIM_DIRS[$i]}/chassis/boot" 2> /dev/null)
		[ "$v" = "$1" ] || fail "sim$i boot is '$v', expected '$1'"
	done
}

out=$(ipmisim_drive "$T" boot pxe) || fail "boot pxe: $out"
echo "$out" | jq -e '[.rounds[0].results[] | .boot == "pxe" and .persistent == false] | all' \
	> /dev/null || fail "boot pxe result: $out"
boot_is pxe
out=$(ipmisim_drive "$T" --persistent boot cd) || fail "boot cd: $out"
echo "$out" | jq -e '[.rounds[0].results[] | .boot == "cd" and .persistent == true] | all' \
	> /dev/null || fail "boot cd result: $out"
boot_is cdrom
out=$(ipmisim_drive "$T" boot bios) || fail "boot bios: $out"
boot_is bios
# the simulator records "force hard drive" as its default device
out=$(ipmisim_drive "$T" boot disk) || fail "boot disk: $out"
boot_is default
grep -q "set boot default" "${IPMISIM_DIRS[0]}/chassis/calls" || fail "no boot set for disk"
echo "ok: boot pxe/cd/bios/disk reach the simulated chassis"
