# SPDX-License-Identifier: Apache-2.0
# Integration: an agent's report with hostile values (issue 17, findings 4-6). One node with a
# BMC simulator (its System's model hostile too) and remediation on. A report whose GPU reads
# 1.7e308 degC, whose version strings carry terminal escapes, a bidi override and a forged
# table line, and whose ECC counts sit at INT64_MAX is stored with those fields null and
# listed in rejected_fields: the node stays in GET /status (as many as the summary counts),
# its rack keeps power_peak_w in GET /report, the node warns of the refused fields, and no
# kiln table (status, gpus, inventory, sel, report, events) prints a control byte, a C1
# control or a bidi override from the agent's GPU name, the BMC's model or its log entry:
# each is shown escaped, and kilnd's log carries none either. Then every report it sends is
# refused whole (no gpus list): each answers 400 naming the field, the node shows it, and
# past the hung threshold it is never judged hung nor power-cycled (its agent is alive, only
# unreadable).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
NVML_CONF=$SRC/tests/fake-nvml/configs/h100-8gpu.conf
ROOT=$SRC/tests/fixtures/agent/roots/h100
FIX=$SRC/tests/sim/fixtures/generic
for f in "$AGENT" "$NVML" "$NVML_CONF" "$BMCSIM" "$FIX"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done
FAILS=0
T=$KILN_TEST_TMP
# Hung after 3 silent agent intervals of 2 s; remediation would cycle 1 s after that.
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
sel_every = 1
health_every = 1s
[health]
agent_interval = 2s
hung_intervals = 3
[remediation]
enabled = yes
grace = 1s
max_per_hour = 10
EOF
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

# the BMC's own strings are hostile too: its System's model
cp -r "$FIX" "$T/mock"
sysdoc=$T/mock/Systems/$(jq -r '.Members[0]."@odata.id"' "$FIX/Systems/index.json" | sed 's|.*/||')/index.json
jq '.Model = "XE9680\u001b]0;pwned\u0007\u009b2J\u202eevil"' "$sysdoc" >"$T/sys.json" && mv "$T/sys.json" "$sysdoc"
bmcsim_start "$T/sim" "$T/mock" || exit 1
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/bmc.pw"
"$KILN" node add gpu01 --bmc "redfish+http://127.0.0.1:$BMCSIM_PORT" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" --rack r1 >/dev/null || { echo "node add failed" >&2; exit 1; }
"$KILN" agent token gpu01 >"$T/gpu01.token" 2>/dev/null || { echo "agent token failed" >&2; exit 1; }
mkdir -p "$T/roots"
cp -r "$ROOT" "$T/roots/gpu01"
printf 'gpu01\n' >"$T/roots/gpu01/proc/sys/kernel/hostname"
bmcsim_serial "$FIX" >"$T/roots/gpu01/sys/class/dmi/id/product_serial"
: >"$T/roots/gpu01/dev/kmsg"
grep -v xid_events "$NVML_CONF" >"$T/clean-nvml.conf"
FAKE_NVML_CONFIG=$T/clean-nvml.conf "$AGENT" --print --once --root "$T/roots/gpu01" \
	--nvml-lib "$NVML" >"$T/report.json" 2>"$T/agent.log" || { cat "$T/agent.log" >&2; exit 1; }
status_json() { "$KILN" status -o json; }
field() { status_json | jq -r ".[] | select(.node == \"gpu01\") | .$1"; }
# post JQ_FILTER: the agent's report changed by the filter, with a new report id ("ECCMAX"
# strings become 9223372036854775807: jq's numbers are doubles)
post() {
	local id
	id=$(kiln_test_report_id)
	jq -c --arg id "$id" ".report_id = \$id | $1" "$T/report.json" |
		sed 's/"ECCMAX"/9223372036854775807/g' >"$T/post.json"
	kiln_api POST /agent/report "$(cat "$T/post.json")" "$(cat "$T/gpu01.token")"
}
on_now() { [ "$(field power)" = on ]; }
wait_for "the BMC's power is read" 30 on_now || exit 1

same "a clean report is stored" "$(post .)" 201
hostile='.gpus[0].temperature_c = 1.7e308 | .gpus[3].name = "H100\u001b[2J\u009b31m\u202e\u2066x"
	| .gpus[1].ecc_volatile_uncorrected = "ECCMAX" | .gpus[2].ecc_volatile_uncorrected = "ECCMAX"
	| .nvidia.driver_version = "550.54.15\u001b[2J\u001b]0;pwned\u0007"
	| .nvidia.cuda_driver_version = "12.4\u202e"
	| .nvidia.kernel_module_version = "550.54.15\u009b31m\n gpu99 | ok | ok"'
same "a report with hostile values is stored" "$(post "$hostile")" 201
same "the answer lists the refused fields" \
	"$(jq -c '.rejected_fields' "$KILN_BODY_FILE")" \
	'["nvidia.driver_version","nvidia.kernel_module_version","nvidia.cuda_driver_version","gpus[0].temperature_c"]'
kiln_api GET /nodes/gpu01 >/dev/null
same "the node's agent object lists them too" \
	"$(jq -r '.agent.rejected_fields | length' "$KILN_BODY_FILE" 2>/dev/null)" 4
same "the refused driver version is stored as null" "$(jq -r '.agent.driver_version' "$KILN_BODY_FILE")" null

# a node whose agent never reported (the GPU list's lookup had nothing to search)
"$KILN" node add gpu02 >/dev/null || fail "node add gpu02"
same "GET /gpus on a node that never reported answers" "$(kiln_api GET '/gpus?range=gpu02')" 200
same "it says so" "$(jq -r '.[0].error' "$KILN_BODY_FILE")" "no agent report yet"
kiln_api GET /status >/dev/null
same "the node stays in GET /status" "$(jq -r '[.nodes[] | select(.name == "gpu01" or .node == "gpu01")] | length' "$KILN_BODY_FILE")" 1
same "beside the one that never reported" "$(jq -r '.summary.nodes' "$KILN_BODY_FILE")" 2
same "the list has every node the summary counts" \
	"$(jq -r '(.nodes | length) == .summary.nodes' "$KILN_BODY_FILE")" true
kiln_api GET "/report?since=3600" >/dev/null
same "the rack keeps its GPU power peak" \
	"$(jq -r '.racks[] | select(.rack == "r1") | .power_peak_w | type' "$KILN_BODY_FILE")" number
same "and has a temperature peak, not inf" \
	"$(jq -r '.racks[] | select(.rack == "r1") | .temperature_peak_c | type' "$KILN_BODY_FILE")" number
# (reporting on, so that its silence is not what the node shows)
warned() {
	post "$hostile" >/dev/null
	field 'reasons[]' | grep -q '^agent reports fields kiln refused: nvidia.driver_version, nvidia.kernel_module_version, nvidia.cuda_driver_version, gpus\[0\].temperature_c$'
}
wait_for "the node warns of the refused fields" 10 warned
# a BMC log entry with a forged line and a title sequence: the node's health quotes it
curl -s -o /dev/null -X POST "$BMCSIM_URL/_sim/inject" \
	-d '{"log":{"message":"PSU lost\u001b]0;pwned\u0007\r\ngpu07  on  ok \u009b2J","severity":"Critical"}}'
quoted() { post "$hostile" >/dev/null; field 'reasons[]' | grep -q '^bmc log: .*PSU lost'; }
wait_for "the node's health quotes the BMC's log entry" 20 quoted || { field reasons; "$KILN" sel gpu01 -o json | tail -c 600; } >&2
# no control byte, C1 control (U+009B) or bidi override (U+202E, U+2066) on the terminal
hostile_bytes() { LC_ALL=C grep -c $'\x1b\|\x07\|\r\|\xc2\x9b\|\xe2\x80\xae\|\xe2\x81\xa6' "$1"; }
for cmd in "status" "gpus gpu01" "inventory gpu01" "sel gpu01" "report --since 1h" \
	"events gpu01 --since 1h"; do
	# shellcheck disable=SC2086
	"$KILN" $cmd >"$T/out.txt" 2>&1
	same "kiln $cmd prints no control byte" "$(hostile_bytes "$T/out.txt")" 0
done
grep -q 'XE9680\\x1b\]0;pwned\\x07\\u009b2J\\u202eevil' "$T/out.txt" ||
	"$KILN" inventory gpu01 | grep -q 'XE9680\\x1b\]0;pwned\\x07\\u009b2J\\u202eevil'
check "the BMC's model is shown escaped" $? "$("$KILN" inventory gpu01 2>&1)"
grep -q 'pwned' "$KILND_LOG" && LC_ALL=C grep -q $'\x1b]0;pwned' "$KILND_LOG"
same "kilnd's log carries no escape sequence" $? 1

# Every report refused whole from now on: the agent is alive, not silent.
same "a report without its gpus list is refused" "$(post 'del(.gpus)')" 400
same "the refusal names the field" "$(jq -r .field "$KILN_BODY_FILE")" gpus
# past the hung threshold (3 intervals of 2 s) and remediation's grace since the last
# report stored
hung_seen=none
until_s=$((SECONDS + 10))
while [ "$SECONDS" -lt "$until_s" ]; do
	post 'del(.gpus)' >/dev/null
	field 'reasons[]' | grep -q '^hung:' && hung_seen=hung
	sleep 0.5
done
same "a node whose reports are all refused is never judged hung" "$hung_seen" none
field 'reasons[]' | grep -q "^agent reports refused: report: field 'gpus' is required"
check "its health says its reports are refused" $? "$(field reasons)"
same "nor power-cycled" "$(curl -s -m 2 "$BMCSIM_URL/_sim/state" | jq -r '.resets | length')" 0

kiln_test_stop_kilnd
check "kilnd stops cleanly (no sanitizer report)" $? "$(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || exit 1
echo "all passed"
