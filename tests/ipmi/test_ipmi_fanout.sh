#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Power status over 50 ipmi_sim BMCs runs in parallel: with three dead BMCs in the set
# (2 s timeout each) the whole run takes about one timeout, not their sum, and every live
# BMC answers.
. "$(dirname "$0")/lib.sh"
ipmisim_require
N=50
ipmisim_start $N || fail "could not start $N ipmi_sim"
T=$IPMISIM_WORK/targets
ipmisim_targets "$T" $(seq 0 $((N - 1)))

out=$(ipmisim_drive "$T" power-status) || fail "power status over $N: $out"
live_ms=$(echo "$out" | jq '.rounds[0].elapsed_ms')
slowest=$(echo "$out" | jq '[.rounds[0].results[].elapsed_ms] | max')
[ "$(echo "$out" | jq '[.rounds[0].results[] | select(.power == "off")] | length')" = $N ] ||
	fail "not every BMC answered: $out"

# serial reference: one worker
out1=$(ipmisim_drive "$T" --workers 1 power-status) || fail "serial power status: $out1"
serial_ms=$(echo "$out1" | jq '.rounds[0].elapsed_ms')

dead=$(ipmisim_pick_ports 3) || fail "no free ports for dead BMCs"
for d in 0 1 2; do printf 'dead%s 127.0.0.1 %s\n' $d $((dead + d)) >> "$T"; done
out=$(ipmisim_drive "$T" --timeout-ms 2000 power-status) && fail "dead BMCs answered"
total=$(echo "$out" | jq '.rounds[0].elapsed_ms')
[ "$(echo "$out" | jq '[.rounds[0].results[] | select(.power == "off")] | length')" = $N ] ||
	fail "live BMCs failed next to dead ones: $out"
[ "$(echo "$out" | jq '[.rounds[0].results[] | select(.code == "timeout")] | length')" = 3 ] ||
	fail "3 timeouts expected: $out"
[ "$total" -lt 3500 ] || fail "50 live + 3 dead took $total ms; the sum of 3 timeouts is 6000"
echo "measured: $N BMCs in parallel ${live_ms} ms (slowest node ${slowest} ms), one worker ${serial_ms} ms;"
echo "          with 3 dead BMCs (2000 ms timeout each) ${total} ms"
echo "ok: fan-out over $N simulated BMCs"
