#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Everything the BMC says about the system (issue 32): the driver against kiln-bmcsim serving
# the platform trees of tests/sim/fixtures/vendor/ (one at a time), each checked against what
# its README.md says kiln should report: inventory, every physical reading once, every log
# entry once with count == the list, Xids tied to their GPU.
set -u

. "$KILN_SRC/tests/integration/lib.sh"
RF="$KILN_BIN/kiln-rfdrive"
FIX="$KILN_SRC/tests/sim/fixtures/vendor"
for b in "$KILN_BIN/kiln-bmcsim" "$RF"; do
	[ -x "$b" ] || { echo "SKIP: $b is not built"; exit 77; }
done
FAILS=0
WORK=$KILN_TEST_TMP
TREE=""

rf() { "$RF" --url "$URL" --timeout-ms 5000 "$@" 2>>"$WORK/rf.err"; }
# jqok DESC FILTER JSON: passes when FILTER is true of JSON, else fails showing DETAIL (the
# fourth argument, a jq filter, default the whole first object).
jqok() {
	if echo "$3" | jq -e "$2" >/dev/null 2>&1; then
		pass "$TREE: $1"
	else
		fail "$TREE: $1: $(echo "$3" | jq -c "${4:-.[0]}" 2>/dev/null | cut -c1-1500)"
	fi
}

# Serves one tree and reads it: INV, SENS and SEL hold kiln-rfdrive's answers.
read_tree() {
	TREE=$1
	kiln_test_start_bmcsim "$TREE" --mockup "$FIX/$TREE" || { fail "$TREE: simulator"; return 1; }
	URL="redfish+http://127.0.0.1:$SIM_PORT"
	INV=$(rf inventory)
	SENS=$(rf sensors)
	SEL=$(rf sel)
	kiln_test_stop_bmcsim
}

# inventory MANUFACTURER MODEL SERIAL CPUS CPU_MODEL GPUS GPU_MODEL [GPU_SERIALS...]
inventory() {
	local want_serials
	want_serials=$(printf '%s\n' "${@:8}" | jq -R . | jq -sc 'map(select(. != "")) | sort')
	jqok "identity $1 / $2 / $3" \
		".[0] | .manufacturer == \"$1\" and .model == \"$2\" and .serial == \"$3\"" "$INV" \
		'.[0] | {manufacturer, model, serial, error}'
	jqok "CPUs $4 x $5" ".[0] | (.cpu_count // 0) == $4 and ($4 == 0 or .cpu_model == \"$5\")" \
		"$INV" '.[0] | {cpu_count, cpu_model, cpus}'
	jqok "GPUs $6 x $7" \
		".[0] | (.gpus | length) == $6 and all(.gpus[]; .model == \"$7\") and
			([.gpus[].serial] | sort) == $want_serials" "$INV" '.[0].gpus'
}

# sensors READINGS [ALLOWED_SHARED_NAME...]: READINGS with a value; no physical sensor twice:
# a name is given once (NAME, NAME #2 only for the distinct sensors named)
sensors() {
	local allowed
	allowed=$(printf '%s\n' "${@:2}" | jq -R . | jq -sc 'map(select(. != ""))')
	jqok "$1 readings" "[.[0].sensors[] | select(.value != null)] | length == $1" "$SENS" \
		'.[0] | {n: ([.sensors[]? | select(.value != null)] | length), error, skipped,
			names: [.sensors[]? | select(.value != null) | .name]}'
	jqok "no reading twice" \
		"[.[0].sensors[].name | sub(\" #[0-9]+\$\"; \"\")] | group_by(.) |
			map(select(length > 1) | .[0]) | all(. as \$n | $allowed | index(\$n))" "$SENS" \
		"[.[0].sensors[].name] | group_by(sub(\" #[0-9]+\$\"; \"\")) | map(select(length > 1))"
}

# kinds KIND=N...: readings (with a value) per kind
kinds() {
	local kv k v
	for kv in "$@"; do
		k=${kv%=*} v=${kv#*=}
		jqok "$v $k" "[.[0].sensors[] | select(.kind == \"$k\" and .value != null)] | length == $v" \
			"$SENS" "[.[0].sensors[] | select(.kind == \"$k\") | {name, value}]"
	done
}

# logs N: N entries, the count says N, no two with one id
logs() {
	jqok "$1 log entries, count $1" \
		".[0] | (.entries | length) == $1 and .count == $1 and
			([.entries[].id] | unique | length) == $1" "$SEL" \
		'.[0] | {n: (.entries | length), count, ids: [.entries[]?.id], error, note, skipped}'
}

# xid DEVICE_FIELD DEVICE XID_FIELD N: one entry ties Xid N to the device
xid() {
	jqok "$3 $4 on $2, once" \
		"[.[0].entries[] | select(.$1 == \"$2\" and .$3 == $4)] | length == 1" "$SEL" \
		'[.[0].entries[] | select(.xid or .sxid) | {id, gpu, nvswitch, xid, sxid}]'
}

# --- NVIDIA DGX H100: three views of the board temperatures, the HGX EventLog and the XID
# logs that re-list it, the SEL under the chassis
read_tree dgx-h100 && {
	inventory NVIDIA DGXH100 1654723900417 2 "Intel(R) Xeon(R) Platinum 8480C" 8 "H100 80GB HBM3" \
		1654223019417 1654223020105 1654223019882 1654223021340 1654223018763 1654223020519 \
		1654223019006 1654223021977
	jqok "GPUs named by their ids (the baseboard names each \"Processor\"), GPU_SXM_5 critical" \
		".[0].gpus | ([.[].name] | sort) == [range(1; 9) | \"GPU_SXM_\\(.)\"] and
			([.[] | select(.health == \"Critical\") | .name] == [\"GPU_SXM_5\"]) and
			all(.[]; .source == \"hgx_baseboard\")" "$INV" '.[0].gpus'
	sensors 35
	kinds temperature=22 fan=4 voltage=5 power=2 psu=2
	# the README's "3 without a reading" counts TEMP_CPU1_IJKL, which is Absent: not listed
	jqok "TEMP_NIC_QSFP1 and TEMP_CX7_QSFP0 present without a reading" \
		"[.[0].sensors[] | select(.value == null) | .name] | sort == [\"TEMP_CX7_QSFP0\", \"TEMP_NIC_QSFP1\"]" \
		"$SENS" '[.[0].sensors[] | select(.value == null)]'
	jqok "the GPU die temperatures are the host's" \
		"[.[0].sensors[] | select(.name | test(\"GPU SXM [1-8] TEMP\"))] | length == 8" "$SENS" \
		'[.[0].sensors[].name]'
	logs 15
	jqok "6 SEL, 2 BIOS, 7 HGX EventLog (the XID logs re-list 4 of these)" \
		"[.[0].entries[].service] | (map(select(. == \"Chassis/DGX/Logs\")) | length) == 6 and
			(map(select(. == \"BIOS\")) | length) == 2 and
			(map(select(. == \"Systems/HGX_Baseboard_0/EventLog\")) | length) == 7" \
		"$SEL" '[.[0].entries[].id]'
	xid gpu GPU_SXM_2 xid 13
	xid gpu GPU_SXM_5 xid 48
	xid gpu GPU_SXM_5 xid 79
	xid nvswitch NVSwitch_1 sxid 20034
}

# --- NVIDIA GB200 compute tray: readings in chassis that name the system, past the 32nd
read_tree gb200 && {
	inventory NVIDIA "GB200 NVL" 1831324040518 2 Grace 4 "NVIDIA GB200" \
		1325224051739 1325224052011 1325224051802 1325224052390
	jqok "GPU_0..3, the System's identity and SKU from its chassis" \
		".[0] | ([.gpus[].name] | sort) == [\"GPU_0\", \"GPU_1\", \"GPU_2\", \"GPU_3\"] and
			.sku == \"965-24548-0000-000\" and (.from_chassis | index(\"serial\")) != null" \
		"$INV" '.[0] | {gpus: [.gpus[].name], sku, from_chassis}'
	sensors 37
	kinds temperature=32 power=5
	logs 7
	xid gpu GPU_1 xid 119
}

# --- GB200 NVLink switch tray: 42 chassis, the readings in those naming the system
read_tree gb200-switch-tray && {
	inventory NVIDIA P3809 1833124000417 0 "" 0 ""
	sensors 11
	kinds temperature=11
	logs 3
}

# --- GH200: Sensors collections only
read_tree gh200 && {
	inventory NVIDIA P4352 1790224007215 1 Grace 1 "NVIDIA GH200 480GB" 1652324013380
	sensors 8
	kinds temperature=7 power=1
	logs 3
}

# --- Supermicro HGX: two log services called Log1, numbering from 1 each
read_tree supermicro-hgx && {
	inventory Supermicro SYS-821GE-TNHR S934117X4A29861 2 "Intel(R) Xeon(R) Platinum 8462Y+" 8 \
		"H100 80GB HBM3" 1652923011871 1652923012044 1652923011562 1652923013307 \
		1652923012695 1652923011109 1652923012930 1652923013458
	sensors 22
	kinds temperature=13 fan=4 power=1 psu=4
	logs 10
	# the System's entries keep the ids kiln stored before (an upgrade raises nothing again)
	jqok "the Health Event Log keeps ids Log1/1..6, the Maintenance log has its own" \
		"[.[0].entries[].id] | (map(select(test(\"^Log1/[1-6]\$\"))) | length) == 6 and
			(map(select(test(\"^Managers/1/Log1/[1-4]\$\"))) | length) == 4" "$SEL" '[.[0].entries[].id]'
}

# --- Lenovo XCC: one log collection reached from the system, the manager and the chassis
read_tree lenovo-xcc && {
	inventory Lenovo "ThinkSystem SR675 V3" J90A1B2C 2 "AMD EPYC 9354 32-Core Processor" 8 \
		"NVIDIA L40" 1321723058417 1321723058940 1321723059121 1321723058006 1321723059388 \
		1321723058765 1321723059012 1321723058533
	sensors 13
	kinds temperature=6 fan=4 power=1 psu=2
	logs 4 # PlatformLog; the AuditLog of logins is no event log
}

# --- HPE Cray EX: no Links on the system, MCUs before the BMC, a dead Power link
read_tree cray-ex && {
	inventory HPE "HPE CRAY EX235n" GJ24080113 1 "AMD EPYC 7763 64-Core Processor" 4 \
		"NVIDIA A100-SXM4-40GB" 1321121042216 1321121042787 1321121041903 1321121042550
	sensors 14
	kinds temperature=9 voltage=5
	jqok "the unnamed voltage without a reading" \
		"[.[0].sensors[] | select(.value == null and .kind == \"voltage\")] | length == 1" "$SENS"
	jqok "the dead Power link is skipped and named" \
		"[.[0].skipped[] | select(test(\"Mezz0/Power: 404\"))] | length == 1" "$SENS" '.[0] | {skipped, error}'
	jqok "the BMC is the manager (not MCU0)" \
		".[0].bmc_firmware | startswith(\"nc.1.9.12\")" "$INV" '.[0] | {bmc_firmware, bmc_model}'
	logs 20
}

# --- Intel S2600BP: the system links a chassis that answers 404
read_tree intel-s2600bp && {
	inventory "Intel Corporation" S2600BPB BQBP93100411 2 "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz" 0 ""
	sensors 17
	kinds temperature=8 fan=4 power=1 voltage=4
	jqok "3 negative margins" "[.[0].sensors[] | select(.kind == \"temperature\" and .value < 0)] | length == 3" "$SENS"
	jqok "the dead chassis is named" \
		"[.[0].skipped[] | select(test(\"RackMount: 404\"))] | length == 1" "$SENS" '.[0] | {skipped, error}'
	logs 4
}

# --- HPE iLO 5 without a GPU: several PSUs named alike are several sensors
read_tree hpe-novideo && {
	inventory HPE "ProLiant DL325 Gen10 Plus v2" CZJ3120B7K 1 "AMD EPYC 7443P 24-Core Processor" 0 ""
	sensors 13 HpeServerPowerSupply
	kinds temperature=4 fan=6 power=1 psu=2
	logs 4
}

if [ "$FAILS" -gt 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all platform trees read as their READMEs say"
