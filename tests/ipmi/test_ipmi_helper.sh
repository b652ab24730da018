#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The helper process: the parent holding more than 1,100 descriptors (numbers above 1024)
# does not disturb IPMI power and sensor commands; killing the helper fails the requests
# in flight with a clear error and a fresh helper serves the next ones.
. "$(dirname "$0")/lib.sh"
ipmisim_require
ipmisim_start 3 || fail "could not start ipmi_sim"
T=$IPMISIM_WORK/targets
ipmisim_targets "$T" 0 1 2

out=$(ipmisim_drive "$T" --open-fds 1100 power-status) || fail "power status with 1100 fds: $out"
[ "$(echo "$out" | jq '.max_fd')" -gt 1024 ] || fail "descriptors not above 1024: $out"
echo "$out" | jq -e '[.rounds[0].results[] | .power == "off"] | all' > /dev/null ||
	fail "power status: $out"
out=$(ipmisim_drive "$T" --open-fds 1100 power on) || fail "power on with 1100 fds: $out"
[ "$(cat "${IPMISIM_DIRS[2]}/chassis/power")" = 1 ] || fail "power on did not reach sim2"
out=$(ipmisim_drive "$T" --open-fds 1100 sensors) || fail "sensors with 1100 fds: $out"
echo "$out" | jq -e '[.rounds[0].results[] | (.sensors | length) == 3] | all' > /dev/null ||
	fail "sensors: $out"

# kill the helper while a request to a dead port is in flight
dead=$(ipmisim_pick_ports 1)
printf 'dead 127.0.0.1 %s\n' "$dead" >> "$T"
out=$(ipmisim_drive "$T" --open-fds 1100 --timeout-ms 3000 --rounds 2 --kill-helper-ms 500 \
	power-status)
echo "$out" | jq -e '.rounds[0].results[3].error | test("^ipmi: dead: ipmi helper died")' \
	> /dev/null || fail "in-flight request after helper death: $out"
echo "$out" | jq -e '.rounds[0].results[3].elapsed_ms < 2000' > /dev/null ||
	fail "in-flight request waited for its timeout instead of failing: $out"
echo "$out" | jq -e '[.rounds[1].results[0,1,2] | .power == "on"] | all' > /dev/null ||
	fail "restarted helper does not serve: $out"
echo "$out" | jq -e '.helper_running' > /dev/null || fail "helper not running at the end: $out"
echo "ok: >1024 descriptors in the parent; helper restart"
