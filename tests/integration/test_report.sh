# SPDX-License-Identifier: Apache-2.0
# Integration: `kiln report --since 1h` after a scripted incident: an agent report with Xid 79
# (GPU fallen off the bus) through the ingest endpoint and an audited change by a named token.
# The report lists the incident, the action and who took it, the node still needing attention,
# and per rack the temperature and power peaks and the energy (integrated from the agents'
# power readings) with its cost at kilnd.conf's price; text, markdown and -o json. A node with a
# kiln-bmcsim BMC gets its energy from the BMC's power readings (the poller's history, source
# "bmc") and its rack's inlet peak from the BMC's inlet sensor.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

FAILS=0
KILN="$KILN_BIN/kiln"
MOCKUP=$SRC/tests/sim/fixtures/idrac9
[ -x "$BMCSIM" ] || { echo "FAIL: $BMCSIM is missing (build kiln-bmcsim)" >&2; exit 1; }
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

# Sensors at every 5 s power reading; the event log never (its entries would be incidents).
printf '[report]\nenergy_price = 0.30\ncurrency = EUR\n[poller]\ninterval = 5s\nsensors_every = 1\nsel_every = 1000\n' \
	>"$KILN_TEST_TMP/kilnd.conf"
bmcsim_start "$KILN_TEST_TMP/sim" "$MOCKUP" || exit 1
kiln_test_start_kilnd "" --config "$KILN_TEST_TMP/kilnd.conf" || exit 1

NOW=$(date -u +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }

# report NODE TIME NGPUS WATTS_PER_GPU TEMP XIDS_JSON
report() {
	jq -cn --arg node "$1" --arg time "$(iso "$2")" --argjson n "$3" --argjson w "$4" \
		--argjson t "$5" --argjson xids "$6" --arg id "$(kiln_test_report_id)" '{
	  schema: "kiln.agent.report/1", report_id: $id, time: $time, agent: {version: "test"},
	  host: {hostname: $node, boot_id: "boot-\($node)", kernel: "6.1.0"},
	  nvidia: {status: "ok", driver_version: "550.54.15", kernel_module_version: "550.54.15",
	           cuda_driver_version: "12.4"},
	  cuda_toolkits: [], cudnn_version: null,
	  gpus: [range($n) | {index: ., uuid: "GPU-\($node)-\(.)", name: "NVIDIA H100 80GB HBM3",
	          pci_bus_id: "00000000:\(. + 16):00.0", memory_total_bytes: 85899345920,
	          power_draw_w: $w, temperature_c: (if . == 0 then $t else 40 end)}],
	  xid_events: $xids, disks: []}'
}

send() {
	local status
	status=$(kiln_api POST /agent/report "$2" "$(cat "$KILN_TEST_TMP/$1.token")")
	case $status in
	200 | 201 | 202) ;;
	*) fail "report of $1: $status $(cat "$KILN_BODY_FILE")" ;;
	esac
}

for n in gpu23:r1 gpu24:r1 gpu31:r2; do
	name=${n%:*}
	[ "$(kiln_api POST /nodes "{\"name\":\"$name\",\"rack\":\"${n#*:}\"}")" = 201 ] || fail "node $name"
	[ "$(kiln_api POST /agent/tokens "{\"node\":\"$name\"}")" = 201 ] || fail "agent token $name"
	jq -r .token "$KILN_BODY_FILE" >"$KILN_TEST_TMP/$name.token"
done

# Two readings 5 minutes apart per node: 8 GPUs x 500 W for 300 s = 0.333 kWh a node.
send gpu23 "$(report gpu23 $((NOW - 600)) 8 500 70 '[]')"
send gpu24 "$(report gpu24 $((NOW - 600)) 8 500 85 '[]')"
send gpu31 "$(report gpu31 $((NOW - 600)) 8 250 60 '[]')"
send gpu24 "$(report gpu24 $((NOW - 300)) 8 500 80 '[]')"
send gpu31 "$(report gpu31 $((NOW - 300)) 8 250 61 '[]')"
# The incident: gpu23 loses a GPU, Xid 79 in the kernel log.
xid='[{"pci_bus_id":"00000000:17:00.0","xid":79,"source":"kmsg","seq":4242,
  "message":"NVRM: Xid (PCI:0000:17:00): 79, pid=0, GPU has fallen off the bus."}]'
send gpu23 "$(report gpu23 $((NOW - 300)) 7 500 71 "$xid")"

# The action, taken by a token named alice.
alice=$(kiln_test_token admin alice) || fail "alice's token"
[ "$(kiln_api PATCH /nodes/gpu23 '{"groups":["quarantine"]}' "$alice")" = 200 ] ||
	fail "alice's change: $(cat "$KILN_BODY_FILE")"

"$KILN" report --since 1h -o json >"$KILN_TEST_TMP/r.json" 2>"$KILN_TEST_TMP/err" ||
	fail "kiln report -o json: $(cat "$KILN_TEST_TMP/err")"
j() { jq -r "$1" "$KILN_TEST_TMP/r.json"; }
[ "$(j '[.went_bad[] | "\(.node) \(.severity) \(.recovered)"] | join(",")')" = "gpu23 critical false" ] &&
	pass "gpu23 went bad and has not recovered" || fail "went_bad: $(j .went_bad)"
j '.critical_events[] | select(.node == "gpu23") | .message' | grep -q 'Xid.*79' &&
	pass "the Xid 79 is a critical event" || fail "critical events: $(j .critical_events)"
[ "$(j '[.actions[] | select(.actor == "alice" and .target == "gpu23") | .automatic] | join(",")')" = false ] &&
	pass "alice's action on gpu23, not automatic" || fail "actions: $(j .actions)"
[ "$(j '[.attention[].node] | join(",")')" = gpu23 ] && j '.attention[0].reasons | join(";")' | grep -q '7 of 8 GPUs' &&
	pass "gpu23 still needs attention (7 of 8 GPUs)" || fail "attention: $(j .attention)"
[ "$(j '.racks[] | select(.rack == "r1") | "\(.nodes) \(.temperature_peak_c) \(.temperature_peak_node) \(.power_peak_w)"')" = "2 85 gpu24 4000" ] &&
	pass "rack r1 peaks: 85 C on gpu24, 4000 W" || fail "r1: $(j '.racks')"
# gpu23 (4000 W then 3500 W) + gpu24 (4000 W) over 300 s = 0.3125 + 0.3333 kWh.
[ "$(j '.racks[] | select(.rack == "r1") | "\(.energy_kwh) \(.cost)"')" = "0.646 0.19" ] &&
	pass "rack r1 energy 0.646 kWh, 0.19 EUR" || fail "r1 energy: $(j '.racks')"
[ "$(j '.racks[] | select(.rack == "r2") | .energy_kwh')" = 0.167 ] && [ "$(j .energy.currency)" = EUR ] &&
	pass "rack r2 energy and the currency" || fail "r2 energy: $(j '.racks') $(j .energy)"

"$KILN" report --since 1h >"$KILN_TEST_TMP/r.txt" 2>&1 || fail "kiln report: $(cat "$KILN_TEST_TMP/r.txt")"
grep -q '^gpu23 .*critical.*still bad' "$KILN_TEST_TMP/r.txt" && grep -q 'gpu23 .*xid .*Xid 79' "$KILN_TEST_TMP/r.txt" &&
	grep -q 'alice .*node.set .*gpu23' "$KILN_TEST_TMP/r.txt" &&
	pass "text: the incident, the action and who took it" || fail "text: $(cat "$KILN_TEST_TMP/r.txt")"
"$KILN" report --since 1h --format markdown >"$KILN_TEST_TMP/r.md" 2>&1 || fail "markdown"
grep -q '^## Actions taken' "$KILN_TEST_TMP/r.md" && grep -q '^| .* | alice | node.set | gpu23 |' "$KILN_TEST_TMP/r.md" &&
	pass "markdown tables" || fail "markdown: $(cat "$KILN_TEST_TMP/r.md")"

# A bad duration is refused by kilnd and is a usage error for kiln.
[ "$(kiln_api GET '/report?since=soon')" = 400 ] && pass "since=soon is refused" || fail "since=soon"
"$KILN" report --since soon >/dev/null 2>&1
[ $? = 2 ] && pass "kiln report --since soon exits 2" || fail "--since soon exit"

# --- energy and inlet temperature from a BMC -------------------------------------------------
[ "$(j .energy.source)" = agent ] && pass "without BMC readings the energy comes from the agents" ||
	fail "energy source: $(j .energy)"
printf 'password\n' >"$KILN_TEST_TMP/bmc.pw"
"$KILN" node add bmc01 --rack r3 --bmc "redfish+http://127.0.0.1:$BMCSIM_PORT" --bmc-user admin \
	--bmc-password-file "$KILN_TEST_TMP/bmc.pw" >/dev/null || fail "node add bmc01"
r3() { "$KILN" report --since 1h -o json 2>/dev/null | jq -r ".racks[] | select(.rack == \"r3\") | $1"; }
# Two sensor reads 5 s apart make a trapezoid: the fixture's PowerConsumedWatts over 5 s.
bmc_energy() { [ "$(r3 .energy_source)" = bmc ] && r3 .energy_kwh | awk '{ exit !($1 > 0) }'; }
wait_for "rack r3's energy from its BMC" 40 bmc_energy &&
	pass "rack r3: $(r3 .energy_kwh) kWh from the BMC, system peak $(r3 .system_power_peak_w) W"
WATTS=$(jq '.PowerControl[0].PowerConsumedWatts' "$MOCKUP/Chassis/System.Embedded.1/Power/index.json")
same "the system power peak is the fixture's PowerConsumedWatts" "$(r3 .system_power_peak_w)" "$WATTS"
"$KILN" report --since 1h -o json >"$KILN_TEST_TMP/r2.json" 2>/dev/null
same "energy.source with BMC and agent nodes" "$(jq -r '"\(.energy.source) \(.energy.nodes_bmc) \(.energy.nodes_agent)"' "$KILN_TEST_TMP/r2.json")" \
	"bmc+agent 1 3"
same "rack r1 keeps its agent energy" \
	"$(jq -r '.racks[] | select(.rack == "r1") | "\(.energy_kwh) \(.energy_source)"' "$KILN_TEST_TMP/r2.json")" \
	"0.646 agent"
# A hot inlet on the BMC: the rack's inlet peak at the next sensor read.
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST \
	-d '{"sensor":{"name":"System Board Inlet Temp","reading":47.5}}' "$BMCSIM_URL/_sim/inject")" = 200 ] ||
	fail "injecting the inlet temperature"
hot() { [ "$(r3 .inlet_peak_c)" = 47.5 ]; }
wait_for "rack r3's inlet peak from the injected reading" 30 hot &&
	same "the inlet peak's node" "$(r3 .inlet_peak_node)" bmc01

[ $FAILS = 0 ] || { cat "$KILN_TEST_TMP/r.txt" >&2; echo "$FAILS failures" >&2; exit 1; }
echo "all passed"
