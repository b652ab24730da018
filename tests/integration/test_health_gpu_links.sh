# SPDX-License-Identifier: Apache-2.0
# Integration: GPU clocks held down and link error counters rising. An H100 node's agent (the
# fake NVML, AER files staged in its root) first reports healthy counters: its health is ok.
# Then its GPU 3 is held down by a thermal slowdown at 97% busy, GPU 2's PCIe replays and
# AER correctable errors rise and GPU 5's NVLink 3 counts CRC errors, in two reports in a row:
# kiln status names each GPU, its bus id and the counts, a warning of class inspection.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"

KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
BASE=$SRC/tests/fake-nvml/configs/h100-8gpu.conf
ROOT=$SRC/tests/fixtures/agent/roots/h100
for f in "$AGENT" "$NVML" "$BASE" "$ROOT"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent and the fake NVML)" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "skip: jq is not installed"; exit 77; }
FAILS=0
T=$KILN_TEST_TMP
cat >"$T/kilnd.conf" <<EOF2
[poller]
health_every = 1s
EOF2
trap kiln_test_cleanup EXIT
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1

# The fixture's H100 node without its sick GPU 4, Xids and throttled GPU 0; every active
# NVLink answers its error counters.
grep -Ev 'xid_events|^gpu\.4\.(ecc|remap)_|^gpu\.0\.clock_event_reasons' "$BASE" >"$T/healthy.conf"
for l in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17; do
	echo "gpu.*.nvlink_errors.$l = 0,0,0,0" >>"$T/healthy.conf"
done
cp "$T/healthy.conf" "$T/sick.conf"
cat >>"$T/sick.conf" <<'EOF2'
gpu.3.clock_sm_mhz = 1005
gpu.3.clock_event_reasons = 0x48
gpu.2.pcie_replay_count = 57
gpu.5.nvlink_errors.3 = 0,0,100,20
EOF2

r=$T/roots/gpu01
mkdir -p "$T/roots"
cp -r "$ROOT" "$r"
: >"$r/dev/kmsg"
# aer NAME COR: GPU 2's (0000:3a:00.0) AER statistics as the kernel writes them.
aer() {
	local d=$r/sys/bus/pci/devices/0000:3a:00.0
	mkdir -p "$d"
	printf 'RxErr 0\nBadTLP %s\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR %s\n' \
		"$1" "$1" >"$d/aer_dev_correctable"
	printf 'Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nTOTAL_ERR_NONFATAL 0\n' >"$d/aer_dev_nonfatal"
	printf 'Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nTOTAL_ERR_FATAL 0\n' >"$d/aer_dev_fatal"
}
aer 0
"$KILN" node add gpu01 >/dev/null || fail "node add gpu01"
"$KILN" agent token gpu01 >"$T/gpu01.token" 2>/dev/null || fail "agent token gpu01"

# report CONF: one agent run with fake NVML config CONF.
report() {
	FAKE_NVML_CONFIG=$1 timeout 30 "$AGENT" --server "$KILND_URL" --root "$r" --nvml-lib "$NVML" \
		--state-dir "$T/agent" --token-file "$T/gpu01.token" --once >>"$T/agent.log" 2>&1 ||
		fail "agent with $(basename "$1"): $(tail -3 "$T/agent.log")"
}
status() { "$KILN" status gpu01 -o json | jq -r ".[0].$1"; }

# --- what the agent reads ------------------------------------------------------------------
FAKE_NVML_CONFIG=$T/sick.conf timeout 30 "$AGENT" --print --once --root "$r" --nvml-lib "$NVML" \
	>"$T/print.json" 2>"$T/print.err"
check "the agent prints its report" $? "$(tail -3 "$T/print.err")"
same "max SM clock, PCIe replays, AER totals of GPU 2" \
	"$(jq -c '.gpus[2] | [.clock_sm_max_mhz, .pcie_replay_count, .aer_correctable, .aer_nonfatal, .aer_fatal]' "$T/print.json")" \
	"[1980,57,0,0,0]"
same "GPU 5's NVLink 3 error counters" \
	"$(jq -c '.gpus[5].nvlink_errors[] | select(.link == 3)' "$T/print.json")" \
	'{"link":3,"replay":0,"recovery":0,"crc_flit":100,"crc_data":20}'
same "GPU 4's inactive links 16 and 17 are not read" "$(jq -c '[.gpus[4].nvlink_errors[].link] | length' "$T/print.json")" 16

# --- healthy counters, then rising ones ----------------------------------------------------
report "$T/healthy.conf"
reported() { [ "$(status gpus_seen)" = 8 ]; }
wait_for "the healthy report judged" 20 reported
sleep 1.5
same "the healthy node is ok" "$(status health)/$(status 'reasons | join(";")')" "ok/"

aer 19
report "$T/sick.conf"
report "$T/sick.conf"
MARK=' [needs hardware inspection]'
THROTTLE="throttle: gpu 3 (00000000:5D:00.0) hw_slowdown, hw_thermal_slowdown: SM 1005 of 1980 MHz at 97% busy$MARK"
PCIE="pcie: gpu 2 (00000000:3A:00.0) replays rose 0 -> 57, AER correctable errors rose 0 -> 19$MARK"
NVLINK="nvlink: gpu 5 (00000000:AB:00.0) link 3 CRC errors rose 0 -> 120$MARK"
judged() { status 'reasons[]' | grep -qxF -- "$THROTTLE"; }
wait_for "the throttled GPU judged" 20 judged
same "the reasons: GPU 3 held down, GPU 2's PCIe and GPU 5's NVLink errors rising" \
	"$(status 'reasons | join("\n")')" "$(printf '%s\n%s\n%s' "$THROTTLE" "$PCIE" "$NVLINK")"
same "a warning that needs hardware inspection" "$(status health)/$(status repair)" "warning/inspection"
"$KILN" status gpu01 >"$T/status.txt" 2>&1
grep -qF "hw_thermal_slowdown: SM 1005 of 1980 MHz at 97% busy" "$T/status.txt"
check "kiln status shows it" $? "$(cat "$T/status.txt")"

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
