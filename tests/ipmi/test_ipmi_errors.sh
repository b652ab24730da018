#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Errors name the node and carry FreeIPMI's reason: a wrong password (tried twice, then the
# node is left alone), a missing workaround, a bad workaround name, a dead port that costs
# only its timeout while the other BMCs answer.
. "$(dirname "$0")/lib.sh"
ipmisim_require
ipmisim_start 2 || fail "could not start ipmi_sim"
T=$IPMISIM_WORK/targets

ipmisim_targets "$T" 0
echo wrong-password > "$IPMISIM_WORK/bad"
printf 'badpw 127.0.0.1 %s %s\n' "${IPMISIM_PORTS[0]}" "$IPMISIM_WORK/bad" > "$T"
: > "${IPMISIM_DIRS[0]}/sim.log"
out=$(ipmisim_drive "$T" --rounds 2 power-status) && fail "wrong password accepted: $out"
echo "$out" | jq -e '.rounds[0].results[0] | (.error | test("^ipmi: badpw: .*password invalid"))
	and .code == "authentication failed"' > /dev/null || fail "wrong password error: $out"
echo "$out" | jq -e '.rounds[1].results[0] | (.error | test("not tried again"))
	and .elapsed_ms < 100' > /dev/null || fail "rejected node was tried again: $out"

ipmisim_targets "$T" 0
out=$("$KILN_BIN/kiln-ipmidrive" --state-dir "$IPMISIM_WORK" --targets "$T" \
	--password-file "$IPMISIM_WORK/password" power-status) && fail "no workaround accepted"
echo "$out" | jq -e '.rounds[0].results[0].error | test("sim0: .*privilege level cannot be obtained")' \
	> /dev/null || fail "missing workaround error: $out"
err=$("$KILN_BIN/kiln-ipmidrive" --state-dir "$IPMISIM_WORK" --targets "$T" \
	--password-file "$IPMISIM_WORK/password" --workarounds opensesspriv,bogus power-status 2>&1)
[ $? = 2 ] && echo "$err" | grep -q "unknown FreeIPMI workaround 'bogus'" ||
	fail "bad workaround name: $err"

# a dead port: an unused UDP port next to the simulators
dead=$(ipmisim_pick_ports 1)
ipmisim_targets "$T" 0 1
printf 'dead 127.0.0.1 %s\n' "$dead" >> "$T"
out=$(ipmisim_drive "$T" --timeout-ms 2000 power-status) && fail "dead port answered: $out"
echo "$out" | jq -e '.rounds[0].results[2] | (.error | test("^ipmi: dead: .*timeout"))
	and .code == "timeout" and .elapsed_ms >= 1500 and .elapsed_ms < 3500' > /dev/null ||
	fail "dead port error/time: $out"
echo "$out" | jq -e '[.rounds[0].results[0,1] | .power == "off" and .elapsed_ms < 1500] | all' \
	> /dev/null || fail "live BMCs were held up by the dead one: $out"
echo "ok: wrong password, missing workaround, bad workaround name, dead port"
