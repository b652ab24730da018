#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln-agent --print --once against fixture roots and the fake NVML: each driver situation.
set -euo pipefail
BIN=${KILN_BIN:?KILN_BIN is not set}
LIB=${KILN_LIB:?KILN_LIB is not set}
SRC=${KILN_SRC:?KILN_SRC is not set}
command -v jq >/dev/null || { echo "skip: jq is not installed"; exit 77; }
AGENT=$BIN/kiln-agent
ROOTS=$SRC/tests/fixtures/agent/roots
CONF=$SRC/tests/fake-nvml/configs
NEW=$LIB/fake-nvml/libnvidia-ml.so.1
OLD=$LIB/fake-nvml-old/libnvidia-ml.so.1
[ -x "$AGENT" ] && [ -f "$NEW" ] && [ -f "$OLD" ] || { echo "FAIL: build kiln-agent and the fake NVML first"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0

# run NAME ROOT CONFIG LIB [extra args]: the report lands in $TMP/NAME.json
run() {
	local name=$1 root=$2 conf=$3 lib=$4
	shift 4
	if ! FAKE_NVML_CONFIG=$CONF/$conf timeout 60 "$AGENT" --print --once --root "$ROOTS/$root" \
		--nvml-lib "$lib" "$@" >"$TMP/$name.json" 2>"$TMP/$name.err"; then
		echo "FAIL $name: kiln-agent exited non-zero"; cat "$TMP/$name.err"; fails=$((fails + 1))
		return 1
	fi
}

# check NAME 'jq expression that must be true' DESCRIPTION
check() {
	if jq -e "$2" "$TMP/$1.json" >/dev/null; then
		echo "ok   $1: $3"
	else
		echo "FAIL $1: $3"; echo "     jq: $2"; fails=$((fails + 1))
	fi
}

common_checks() {
	local n=$1 host=$2
	check "$n" '.schema == "kiln.agent.report/1"' "schema"
	check "$n" '.report_id | test("^[0-9a-f]{32}$")' "report_id is 128-bit hex"
	check "$n" ".host.hostname == \"$host\"" "hostname from /proc/sys/kernel/hostname"
	check "$n" '.host | has("machine_id") and has("boot_id") and has("os") and has("kernel") and has("dmi_serial")' "host facts"
	check "$n" '(.disks | type == "array") and (.gpus | type == "array") and (.xid_events | type == "array") and (.cuda_toolkits | type == "array")' "arrays"
}

# 8-GPU H100 node
run h100 h100 h100-8gpu.conf "$NEW"
common_checks h100 gpu-h100-07
check h100 '.nvidia.status == "ok" and .nvidia.driver_version == "550.54.15" and .nvidia.cuda_driver_version == "12.4"' "driver and CUDA versions"
check h100 '.nvidia.kernel_module_version == "550.54.15" and .nvidia.kernel_module_type == "proprietary" and .nvidia.driver_module_mismatch == false' "kernel module"
check h100 '.nvidia.nvml_version == "12.550.54.15" and .nvidia.fabric_manager_version == "550.54.15"' "NVML and fabric manager versions"
check h100 '.gpus | length == 8' "8 GPUs"
check h100 '[.gpus[].index] == [0,1,2,3,4,5,6,7]' "indexes"
check h100 '[.gpus[].uuid] | unique | length == 8' "distinct UUIDs"
check h100 '.gpus[0] | .pci_bus_id == "00000000:18:00.0" and .memory_total_bytes == 85520809984 and .memory_reserved_bytes == 565182464 and .power_draw_w == 612.345 and .power_limit_w == 700 and .temperature_c == 41' "GPU 0 values (memory v2)"
check h100 '.gpus[0].clock_event_reason_names == ["sw_power_cap","hw_thermal_slowdown"]' "clock event reasons"
check h100 '.gpus[0] | .clock_sm_max_mhz == 1980 and .clock_mem_max_mhz == 2619 and .pcie_replay_count == 0 and (has("nvlink_errors") or has("aer_fatal") | not)' "max clocks, PCIe replays; no NVLink or AER counters where none answer"
check h100 '.gpus[0].processes == [{"pid":4242,"used_memory_bytes":42949672960},{"pid":4243,"used_memory_bytes":1073741824}]' "compute processes (v3)"
check h100 '.gpus[4] | .ecc_volatile_uncorrected == 2 and .ecc_aggregate_uncorrected == 3 and .remapped_rows_pending == true and .nvlink_links == 18 and .nvlink_active == 16' "GPU 4 ECC, remap, NVLink"
check h100 '[.gpus[] | has("fan_speed_pct")] | any | not' "no fan on SXM (NOT_SUPPORTED -> omitted)"
check h100 '[.gpus[] | has("errors")] | any | not' "no errors recorded"
check h100 '.cuda_toolkits == [{"version":"12.2.2","path":"/usr/local/cuda-12.2","default":false},{"version":"12.4.1","path":"/usr/local/cuda-12.4","default":true}]' "CUDA toolkits (version.json, /usr/local/cuda link)"
check h100 '.cudnn_version == "8.9.7"' "cuDNN"
check h100 '[.xid_events[] | select(.source == "kmsg")] | length == 2' "2 kmsg Xids"
check h100 '.xid_events[] | select(.source == "kmsg" and .xid == 79) | .pci_bus_id == "00000000:1B:00.0" and (has("gpu_index") | not)' "Xid 79 on a bus without a GPU in NVML"
check h100 '.xid_events[] | select(.source == "kmsg" and .xid == 48) | .gpu_index == 4 and .gpu_uuid == "GPU-00000000-1111-2222-3333-000000000004"' "Xid 48 tied to GPU 4 by PCI bus id"
check h100 '[.xid_events[] | select(.source == "nvml")] == [{"xid":48,"message":"","source":"nvml","pci_bus_id":"00000000:9A:00.0","gpu_index":4,"gpu_uuid":"GPU-00000000-1111-2222-3333-000000000004"}]' "NVML Xid event"
check h100 '.disks | map(.name) == ["nvme0n1","nvme1n1"] and (.[0] | .nvme == true and .rotational == false and .size_bytes == 3840755982336)' "disks (loop0 skipped)"
check h100 '.host | .os == "Ubuntu 22.04.4 LTS" and .cpu_sockets == 2 and .cpu_cores == 8 and .cpu_threads == 16 and .memory_total_bytes == 2164197949440' "OS, CPU, memory"
check h100 '.host.dmi_serial == "SN7X4K2Q19" and .host.dmi_product == "PowerEdge XE9680"' "DMI"

# consumer GPU: many NOT_SUPPORTED fields are left out, never an error
run consumer consumer consumer.conf "$NEW"
common_checks consumer ws-rtx4090
check consumer '.nvidia.status == "ok" and .nvidia.kernel_module_type == "open" and .nvidia.kernel_module_version == "560.35.03"' "open kernel module"
check consumer '.gpus | length == 1' "one GPU"
check consumer '.gpus[0] | (has("serial") or has("ecc_enabled") or has("ecc_volatile_corrected") or has("retired_pages_sbe") or has("remapped_rows_pending") or has("mig_mode") or has("nvlink_links")) | not' "unsupported fields omitted"
check consumer '.gpus[0] | .fan_speed_pct == 30 and .name == "NVIDIA GeForce RTX 4090" and (has("errors") | not)' "present fields"
check consumer '.cuda_toolkits == [{"version":"12.6.1","path":"/usr/local/cuda-12.6","default":true}]' "toolkit through /etc/alternatives"
check consumer '.cudnn_version == "9.3.0"' "cuDNN in the toolkit"
check consumer '.disks | map(.name) == ["nvme0n1","sda"] and .[1].rotational == true' "disks (dm-0 skipped)"

# old driver: no _v2/_v3 symbols, everything through the unversioned fallbacks
run old old old-driver.conf "$OLD"
common_checks old gpu-k80-03
check old '.nvidia.status == "ok" and .nvidia.driver_version == "470.239.06" and .nvidia.cuda_driver_version == "11.4"' "versions through unversioned symbols"
check old '.gpus | length == 2 and .[1].pci_bus_id == "00000000:84:00.0"' "PCI info v1"
check old '.gpus[0] | .memory_total_bytes == 12884901888 and (has("memory_reserved_bytes") | not)' "memory v1"
check old '.gpus[0].processes == [{"pid":777,"used_memory_bytes":104857600}]' "processes v1"
check old '.gpus[0] | (has("remapped_rows_pending") or has("mig_mode")) | not' "functions the old driver lacks are omitted"
check old '.cuda_toolkits | map(.version) == ["10.2.89","11.0.207"] and .[0].default == true' "version.txt toolkits"
check old '.cudnn_version == "7.6.5"' "cuDNN from cudnn.h"
check old '[.xid_events[] | {xid, pci_bus_id, gpu_index}] == [{"xid":13,"pci_bus_id":"00000000:83:00.0","gpu_index":0},{"xid":31,"pci_bus_id":"00000000:84:00.0","gpu_index":1},{"xid":62,"pci_bus_id":null,"gpu_index":null}]' "Xid lines without PCI: and without a bus"
check old '.host.os == "CentOS Linux 7 (Core)"' "os"

# no driver at all: host facts still there
run nodriver nodriver h100-8gpu.conf "$TMP/no-such-dir/libnvidia-ml.so.1"
common_checks nodriver cpu-node-11
check nodriver '.nvidia.status == "no_driver" and (.nvidia.error | length > 0)' "status no_driver"
check nodriver '.gpus == [] and .cuda_toolkits == [] and .cudnn_version == null and (.nvidia | has("kernel_module_version") | not)' "nothing NVIDIA"
check nodriver '.host.os == "Rocky Linux 9.3 (Blue Onyx)" and .disks[0].name == "sda"' "host facts and disks"

# the library and the loaded module differ (reboot pending)
run mismatch h100 mismatch.conf "$NEW"
check mismatch '.nvidia.status == "mismatch" and (.nvidia.error | test("18"))' "status mismatch"
check mismatch '.nvidia.kernel_module_version == "550.54.15" and .gpus == []' "module version still read"
check mismatch '.host.hostname == "gpu-h100-07"' "host facts present"

# FUNCTION_NOT_FOUND answers fall back or leave the field out
run missing h100 missing.conf "$NEW"
check missing '.nvidia.status == "ok" and (.nvidia | has("nvml_version") | not)' "missing NVML version omitted"
check missing '.gpus[0] | .memory_total_bytes == 42949672960 and (has("memory_reserved_bytes") | not)' "memory falls back to v1"
check missing '.gpus[0].processes == [{"pid":99,"used_memory_bytes":1048576}]' "processes fall back to v1"
check missing '.nvidia.driver_module_mismatch == true' "library 535 vs module 550 flagged"

# nvmlInit that hangs: the report still comes, within the timeout
start=$(date +%s)
run hang h100 hang.conf "$NEW" --nvml-timeout 2
elapsed=$(( $(date +%s) - start ))
check hang '.nvidia.status == "error" and (.nvidia.error | test("did not return"))' "status error after the timeout"
check hang '.host.hostname == "gpu-h100-07" and (.disks | length == 2)' "host facts present"
if [ "$elapsed" -le 10 ]; then echo "ok   hang: finished in ${elapsed}s"; else echo "FAIL hang: took ${elapsed}s"; fails=$((fails + 1)); fi

# the report matches the JSON Schema's required fields and types (checked with jq, no validator needed)
for n in h100 consumer old nodriver mismatch missing hang; do
	check "$n" '(.nvidia.status | IN("ok","no_driver","mismatch","error")) and (.xid_events | all(.source | IN("kmsg","nvml"))) and (.gpus | all(has("index")))' "enums and required fields"
done

# every report validates against schema/agent-report.schema.json where python3-jsonschema is there
if python3 -c 'import jsonschema' 2>/dev/null; then
	for n in h100 consumer old nodriver mismatch missing hang; do
		if python3 - "$SRC/schema/agent-report.schema.json" "$TMP/$n.json" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(json.load(open(sys.argv[2])))
PY
		then echo "ok   $n: valid against the JSON Schema"; else echo "FAIL $n: schema"; fails=$((fails + 1)); fi
	done
else
	echo "note: python3-jsonschema not installed, JSON Schema validation skipped (jq checks above still ran)"
fi

# a usage error is one line and exit status 2
set +e
"$AGENT" --interval 0 >/dev/null 2>"$TMP/usage.err"; rc=$?
set -e
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TMP/usage.err")" -eq 1 ]; then echo "ok   usage: --interval 0 -> exit 2, one line"; else echo "FAIL usage: rc=$rc"; cat "$TMP/usage.err"; fails=$((fails + 1)); fi

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all agent --print checks passed"
