#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Redfish as vendors ship it (issue 16): the driver against kiln-bmcsim serving the small
# trees of tests/sim/fixtures/vendor/ (make-vendor-fixtures.py), one case per defect.
set -u

. "$KILN_SRC/tests/integration/lib.sh"
RF="$KILN_BIN/kiln-rfdrive"
FIX="$KILN_SRC/tests/sim/fixtures/vendor"
for b in "$KILN_BIN/kiln-bmcsim" "$RF"; do
	[ -x "$b" ] || { echo "SKIP: $b is not built"; exit 77; }
done
FAILS=0

# start_sim TREE [simulator options...]: sets PORT, URL and CTL
start_sim() {
	local tree=$1
	shift
	kiln_test_start_bmcsim sim --mockup "$FIX/$tree" --power-delay-ms 100 "$@" || exit 1
	PORT=$SIM_PORT
	URL="redfish+http://127.0.0.1:$PORT"
	CTL=$SIM_CTL
}
stop_sim() { kiln_test_stop_bmcsim; }
WORK=$KILN_TEST_TMP
rf() { "$RF" --url "$URL" --timeout-ms 3000 --action-timeout-ms 20000 "$@" 2>>"$WORK/rf.err"; }
get_status() { curl -s -o /dev/null -w '%{http_code}' -u admin:password "http://127.0.0.1:$PORT$1"; }

# 1. A Chassis member that is a captured 404 and one that is not there: power, boot, sensors
# and inventory work with the chassis that reads; inventory names the two it skipped. The
# simulator serves the stored error bodies with their status, a stored Success as a resource,
# and guesses the ilo7 profile for an iLO 7 tree (defect 11).
start_sim ilo7-dead-chassis
check "bmcsim: a stored ResourceMissingAtURI body is a 404" \
	"$([ "$(get_status /redfish/v1/Chassis/RackMount)" = 404 ] && echo 0 || echo 1)" \
	"status $(get_status /redfish/v1/Chassis/RackMount)"
check "bmcsim: ServiceTemporarilyUnavailable is a 503, iLO's stored Success a 200" \
	"$([ "$(get_status /redfish/v1/Systems/1/Busy)" = 503 ] &&
		[ "$(get_status /redfish/v1/Systems/1/Actions/Oem/Noop)" = 200 ] && echo 0 || echo 1)" \
	"$(get_status /redfish/v1/Systems/1/Busy) and $(get_status /redfish/v1/Systems/1/Actions/Oem/Noop)"
check "bmcsim: an iLO 7 tree gets the ilo7 profile" \
	"$([ "$(curl -s "$CTL/state" | jq -r .profile)" = ilo7 ] && echo 0 || echo 1)" "$(curl -s "$CTL/state" | jq -r .profile)"
out=$(rf power cycle)
resets=$(curl -s "$CTL/requests" | jq '[.[] | select(.method == "POST" and (.path | test("Reset")))] | length')
check "dead chassis: power cycle sends its Reset" \
	"$([ "$(echo "$out" | jq -r '.[0].result')" = ok ] && [ "$resets" -ge 1 ] && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '.[0]'), $resets Reset POSTs"
out=$(rf boot pxe)
check "dead chassis: boot override set" "$([ "$(echo "$out" | jq -r '.[0].target')" = Pxe ] && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '.[0]')"
out=$(rf sensors)
check "dead chassis: the readable chassis' sensors" \
	"$([ "$(echo "$out" | jq '[.[0].sensors[]? | select(.name == "01-Inlet Ambient")] | length')" = 1 ] && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '.[0]')"
out=$(rf inventory)
check "dead chassis: inventory names both skipped chassis" \
	"$([ "$(echo "$out" | jq -r '.[0].serial')" = ILO7DEAD0001 ] &&
		echo "$out" | jq -e '.[0].chassis_skipped | length == 2 and (.[0] | test("RackMount: 404 .*ResourceMissingAtURI"))' >/dev/null && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '.[0] | {serial, chassis_skipped, error}')"
stop_sim

# 2, 10. A ConnectX NIC (NVIDIA's) and an H200 each listed under PCIeDevices and under iLO's
# OEM Devices: one GPU. An Absent socket and an FPGA are no CPUs.
start_sim ilo-nic-gpu
out=$(rf inventory)
check "NIC is no GPU; a GPU in two lists counted once" \
	"$([ "$(echo "$out" | jq '.[0].gpus | length')" = 1 ] &&
		[ "$(echo "$out" | jq -r '.[0].gpus[0].serial')" = 1654924007001 ] && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '.[0].gpus // .[0].error')"
check "absent socket and FPGA are not CPUs" \
	"$([ "$(echo "$out" | jq '[.[0].cpus[] | select(.model == "Invented CPU 64-Core")] | length')" = 2 ] &&
		[ "$(echo "$out" | jq '.[0].cpus | length')" = 2 ] && echo 0 || echo 1)" "$(echo "$out" | jq -c '.[0].cpus')"
stop_sim

# 3, 11. Readings under a nested chassis (Contains) and in a Sensors collection; an iDRAC
# whose root names no Vendor is still Dell (its manager's id).
start_sim idrac-nested
out=$(rf sensors)
names=$(echo "$out" | jq -c '[.[0].sensors[]? | .name] | sort')
check "nested chassis and Sensors collection read" \
	"$(echo "$out" | jq -e '[.[0].sensors[] | select(.name == "Baseboard Inlet Temp" and .value == 21)] | length == 1' >/dev/null &&
		echo "$out" | jq -e '[.[0].sensors[] | select(.name == "DPU Temp" and .kind == "temperature" and .value == 57)] | length == 1' >/dev/null &&
		echo "$out" | jq -e '[.[0].sensors[] | select(.name == "DPU Power" and .kind == "power")] | length == 1' >/dev/null && echo 0 || echo 1)" \
	"sensors $names"
out=$(rf inventory)
check "iDRAC without Vendor gets the dell profile" \
	"$([ "$(echo "$out" | jq -r '.[0].vendor_profile')" = dell ] && echo 0 || echo 1)" "$(echo "$out" | jq -c '.[0].vendor_profile')"
stop_sim

# 10. A blade: its enclosure's inlet sensor and PSUs (ContainedBy, PoweredBy), not the
# other blade's sensors.
start_sim blade
out=$(rf --system Blade1 sensors)
check "blade: enclosure inlet and PSUs read, the other blade not" \
	"$(echo "$out" | jq -e '[.[0].sensors[] | select(.name == "Enclosure Inlet Temp")] | length == 1' >/dev/null &&
		[ "$(echo "$out" | jq '[.[0].sensors[] | select(.kind == "psu")] | length')" = 2 ] &&
		[ "$(echo "$out" | jq '[.[0].sensors[] | select(.name | test("Blade2"))] | length')" = 0 ] && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '[.[0].sensors[]? | .name]')"
stop_sim

# 5, 8, 9. AMI: a virtual CD known by its Id only; a second insert does not replace the
# image unless forced; no LogServices is an empty log.
start_sim ami-vcd
out=$(rf media-insert http://10.0.0.1/first.iso)
check "AMI virtual CD without MediaTypes used" \
	"$([ "$(echo "$out" | jq -r '.[0].media.device')" = /redfish/v1/Managers/Self/VirtualMedia/CD1 ] &&
		[ "$(echo "$out" | jq -r '.[0].media.image')" = http://10.0.0.1/first.iso ] && echo 0 || echo 1)" "$(echo "$out" | jq -c '.[0]')"
out=$(rf media-insert http://10.0.0.1/second.iso)
img=$(curl -s "$CTL/state" | jq -r '[.media[] | select(.Inserted)][0].Image')
check "insert over an inserted image refused, naming it" \
	"$(echo "$out" | jq -r '.[0].error // ""' | grep -q "first.iso" && [ "$img" = http://10.0.0.1/first.iso ] && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '.[0]'), simulator has $img"
out=$(rf --force media-insert http://10.0.0.1/second.iso)
img=$(curl -s "$CTL/state" | jq -r '[.media[] | select(.Inserted)][0].Image')
check "insert --force replaces it" \
	"$([ "$(echo "$out" | jq -r '.[0].result')" = ok ] && [ "$img" = http://10.0.0.1/second.iso ] && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '.[0]'), simulator has $img"
out=$(rf sel)
check "no LogServices: an empty log, not a failure" \
	"$([ "$(echo "$out" | jq -r '.[0].entries | length')" = 0 ] &&
		[ "$(echo "$out" | jq -r '.[0].note')" = "no event logs on this BMC" ] && echo 0 || echo 1)" "$(echo "$out" | jq -c '.[0]')"
stop_sim

# 4. A BMC that keeps a one-time override as Continuous: an error naming both values.
# (sushy: a virtual CD with an installer in it)
start_sim sushy --boot-quirk continuous
out=$(rf boot pxe)
err=$(echo "$out" | jq -r '.[0].error // ""')
check "boot persistence read back and compared" \
	"$(echo "$err" | grep -q "BootSourceOverrideEnabled reads back 'Continuous', not 'Once'" && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '.[0]')"
# 8. An image already inserted (an installer may be running from it) is not replaced.
out=$(rf media-insert http://10.0.0.1/other.iso)
img=$(curl -s "$CTL/state" | jq -r '[.media[] | select(.Inserted)][0].Image')
check "an inserted image is not silently replaced" \
	"$(echo "$out" | jq -r '.[0].error // ""' | grep -q "installer.iso" &&
		[ "$img" = http://10.0.0.9/installer.iso ] && echo 0 || echo 1)" \
	"$(echo "$out" | jq -c '.[0]'), simulator has $img"
out=$(rf --persistent boot pxe)
check "a persistent override that reads back Continuous is ok" \
	"$([ "$(echo "$out" | jq -r '.[0].enabled')" = Continuous ] && echo 0 || echo 1)" "$(echo "$out" | jq -c '.[0]')"
stop_sim

if [ "$FAILS" -gt 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all vendor cases passed"
