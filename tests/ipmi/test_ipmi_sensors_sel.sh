#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Sensors (normalised) and SEL (incremental: an entry injected between two reads appears
# once, earlier entries are not repeated) through libipmimonitoring in the helper.
. "$(dirname "$0")/lib.sh"
ipmisim_require
ipmisim_start 2 || fail "could not start ipmi_sim"
T=$IPMISIM_WORK/targets
ipmisim_targets "$T" 0 1

out=$(ipmisim_drive "$T" sensors) || fail "sensors: $out"
for i in 0 1; do
	r=$(echo "$out" | jq -c ".rounds[0].results[$i].sensors")
	echo "$r" | jq -e 'any(.[]; .name == "CPU Temp" and .kind == "temperature" and .value == 45
		and .unit == "C" and .health == "ok")' > /dev/null || fail "sim$i temperature: $r"
	echo "$r" | jq -e 'any(.[]; .name == "Fan1" and .kind == "fan" and .value == 4800
		and .unit == "RPM")' > /dev/null || fail "sim$i fan: $r"
	echo "$r" | jq -e 'any(.[]; .name == "12V Rail" and .kind == "voltage" and .value == 12
		and .unit == "V")' > /dev/null || fail "sim$i voltage: $r"
done
ls "$IPMISIM_WORK"/kiln/ipmi/sdr/sim0/* > /dev/null 2>&1 || fail "no SDR cache for sim0"
ls "$IPMISIM_WORK"/kiln/ipmi/sdr/sim1/* > /dev/null 2>&1 || fail "no SDR cache for sim1"
# a second read uses the cache and gives the same answer
out2=$(ipmisim_drive "$T" sensors) || fail "sensors (cached): $out2"
[ "$(echo "$out" | jq -c '[.rounds[0].results[].sensors]')" = \
  "$(echo "$out2" | jq -c '[.rounds[0].results[].sensors]')" ] || fail "cached sensors differ"

# SEL: sim0 holds one entry before; round 1 reads everything since "1" (the first
# incremental read), an entry is injected into sim1, round 2 must show exactly that one,
# round 3 nothing new.
ipmisim_sel_inject 0 || fail "inject into sim0"
out=$(ipmisim_drive "$T" --since 1 --rounds 3 \
	--between "bash -c '. $IPMISIM_KIT/lib.sh; IPMISIM_PORTS=(${IPMISIM_PORTS[*]}); ipmisim_sel_inject 1'" \
	sel) || fail "sel: $out"
n() { echo "$out" | jq "$1"; }
[ "$(n '.rounds[0].results[0].entries | length')" = 1 ] || fail "round 1 sim0: $out"
[ "$(n '.rounds[0].results[1].entries | length')" = 0 ] || fail "round 1 sim1: $out"
[ "$(n '.rounds[1].results[0].entries | length')" = 0 ] || fail "round 2 sim0 repeated: $out"
[ "$(n '.rounds[1].results[1].entries | length')" = 1 ] || fail "round 2 sim1: $out"
echo "$out" | jq -e '.rounds[1].results[1].entries[0] | (.message | test("CPU Temp"))
	and .severity == "warning" and (.id | type) == "string"' > /dev/null ||
	fail "injected entry: $(n '.rounds[1].results[1].entries[0]')"
[ "$(n '[.rounds[2].results[].entries | length] | add')" = 0 ] || fail "round 3 repeated: $out"
echo "ok: sensors normalised; SEL entry injected mid-test appears exactly once"
