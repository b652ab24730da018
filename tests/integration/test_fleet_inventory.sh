# SPDX-License-Identifier: Apache-2.0
# Integration: the poller reads each node's BMC inventory at first contact (and not again
# within [poller] inventory_every): the BMC serial lets an agent enroll by serial without
# anyone running `kiln inventory`, and `kiln audit` groups the nodes by BMC firmware.
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
GENERIC=$SRC/tests/sim/fixtures/generic
IDRAC=$SRC/tests/sim/fixtures/idrac9
if [ -z "${KILN_TEST_PG:-}" ] && ! command -v sqlite3 >/dev/null 2>&1; then
	echo "skipped: the sqlite3 shell (to read stored rows) is not installed"
	exit 77
fi
for f in "$AGENT" "$NVML" "$NVML_CONF" "$ROOT/dev/kmsg" "$BMCSIM" "$GENERIC" "$IDRAC"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done
# What the fixtures say, read from them rather than repeated here.
SERIAL=$(jq -r .SerialNumber "$GENERIC/Systems/sys0/index.json")
FW_GENERIC=$(jq -r .FirmwareVersion "$GENERIC/Managers/bmc0/index.json")
FW_IDRAC=$(jq -r .FirmwareVersion "$IDRAC/Managers/iDRAC.Embedded.1/index.json")

FAILS=0
T=$KILN_TEST_TMP
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
sensors_every = 1
sel_every = 1
health_every = 1s
EOF

on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim-generic" "$GENERIC" || exit 1
PORT_GENERIC=$BMCSIM_PORT
bmcsim_start "$T/sim-idrac" "$IDRAC" || exit 1
PORT_IDRAC=$BMCSIM_PORT
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
sql() { kiln_test_sql "$1"; }

printf 'password\n' >"$T/bmc.pw"
"$KILN" node add gpu01 --bmc "redfish+http://127.0.0.1:$PORT_GENERIC" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add gpu01 failed" >&2; exit 1; }
"$KILN" node add gpu02 --bmc "redfish+http://127.0.0.1:$PORT_IDRAC" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add gpu02 failed" >&2; exit 1; }

serial_of() { sql "SELECT coalesce(bmc_serial, '') FROM nodes WHERE name = '$1'"; }
inventoried() {
	[ "$(serial_of gpu01)" = "$SERIAL" ] &&
		[ "$(sql "SELECT count(*) FROM node_inventory")" = 2 ]
}
wait_for "the poller stored both inventories and gpu01's BMC serial" 40 inventoried &&
	pass "inventory at first contact: gpu01's serial is $SERIAL"
same "gpu02's stored BMC firmware" \
	"$(sql "SELECT i.bmc_firmware FROM node_inventory i JOIN nodes n ON n.id = i.node_id
		WHERE n.name = 'gpu02'")" "$FW_IDRAC"
INV_TIME=$(sql "SELECT $(kiln_test_sql_concat time node_id) FROM node_inventory")

# mkroot NAME HOSTNAME DMI_SERIAL: a copy of the H100 fixture root as another machine.
mkroot() {
	local r=$T/roots/$1
	mkdir -p "$T/roots"
	cp -r "$ROOT" "$r"
	printf '%s\n' "$2" >"$r/proc/sys/kernel/hostname"
	printf '%s\n' "$3" >"$r/sys/class/dmi/id/product_serial"
}
agent() {
	local name=$1
	shift
	FAKE_NVML_CONFIG=$NVML_CONF timeout 60 "$AGENT" --server "$KILND_URL" --root "$T/roots/$name" \
		--nvml-lib "$NVML" --state-dir "$T/agent-$name" --once "$@" >>"$T/agent-$name.log" 2>&1
}

# An agent whose host name matches no node but whose DMI serial is the BMC's.
"$KILN" agent enroll-token create --name fleet >"$T/enroll.token" 2>/dev/null ||
	fail "kiln agent enroll-token create"
mkroot fresh freshly-installed "$SERIAL"
agent fresh --enroll-token-file "$T/enroll.token" ||
	fail "enrollment by serial: $(tail -3 "$T/agent-fresh.log")"
same "enrolled to gpu01 by the serial the poller stored" \
	"$(sql "SELECT $(kiln_test_json detail matched_by) || ' ' || target FROM audit_log
		WHERE action = 'agent.enroll' ORDER BY id DESC LIMIT 1")" "serial gpu01"
same "gpu01's agent state is the fresh host's" \
	"$(sql "SELECT s.hostname FROM node_agent_state s JOIN nodes n ON n.id = s.node_id
		WHERE n.name = 'gpu01'")" freshly-installed

# gpu02 reports through its own token; the audit groups both by BMC firmware.
mkroot gpu02 gpu02 "$(bmcsim_serial "$IDRAC")"
"$KILN" agent token gpu02 >"$T/gpu02.token" 2>/dev/null || fail "kiln agent token gpu02"
agent gpu02 --token-file "$T/gpu02.token" || fail "gpu02's agent: $(tail -3 "$T/agent-gpu02.log")"
"$KILN" audit -o json >"$T/audit.json" 2>"$T/audit.err"
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "kiln audit -o json exited $rc: $(cat "$T/audit.err")"
same "kiln audit groups by BMC firmware" \
	"$(jq -r '[.groups[] | "\(.nodes)=\(.bmc_firmware)"] | sort | join(" ")' "$T/audit.json")" \
	"gpu01=$FW_GENERIC gpu02=$FW_IDRAC"
same "the minority group's BMC firmware is marked as differing" \
	"$(jq -r '[.groups[] | select(.majority | not) | .differs | index("bmc_firmware") != null] | .[0]' \
		"$T/audit.json")" true
"$KILN" audit >"$T/audit.txt" 2>&1
grep -q "BMC FW" "$T/audit.txt" && grep -q -- "$FW_IDRAC" "$T/audit.txt" &&
	pass "kiln audit's table has a BMC FW column" || fail "kiln audit's table: $(cat "$T/audit.txt")"

# Two more power readings (5 s apart): the inventory is not read again (every 6 h).
sleep 11
same "no second inventory within inventory_every" \
	"$(sql "SELECT $(kiln_test_sql_concat time node_id) FROM node_inventory")" "$INV_TIME"

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizer report?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all checks passed"
