# SPDX-License-Identifier: Apache-2.0
# Integration: an agent is its node. Two nodes with BMC simulators (each its own serial),
# agents and remediation on. nodea's agent is started with nodeb's token (a copied config):
# its reports are refused (409, naming the field), nodeb keeps its identity and gets no
# false "node rebooted", one critical event says so however many reports were refused,
# both nodes show the mismatch in their health and neither is judged hung or power-cycled.
# An admin's accept-identity then lets a genuine change (a reinstall's new machine id) in,
# and the identity is bound again after it.
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
FIX=$SRC/tests/sim/fixtures
for f in "$AGENT" "$NVML" "$NVML_CONF" "$BMCSIM" "$FIX/generic" "$FIX/idrac9"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done
FAILS=0
T=$KILN_TEST_TMP
# Hung after 3 silent agent intervals of 2 s; remediation would act 1 s after that (power
# read every 5 s stays fresh: power_fresh_intervals 3 by default).
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
health_every = 1s
[health]
agent_interval = 2s
hung_intervals = 3
[remediation]
enabled = yes
grace = 1s
max_per_hour = 10
EOF
declare -A AGENT_PID
on_exit() {
	local p
	for p in "${AGENT_PID[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim-a" "$FIX/generic" || exit 1
PORT_A=$BMCSIM_PORT
bmcsim_start "$T/sim-b" "$FIX/idrac9" || exit 1
PORT_B=$BMCSIM_PORT
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/bmc.pw"
grep -v xid_events "$NVML_CONF" >"$T/clean-nvml.conf"

# mkroot ROOTNAME HOSTNAME MACHINE_ID TREE BOOT_ID: the H100 fixture as the machine of that
# simulator tree: its DMI serial and UUID as that vendor's host shows them.
mkroot() {
	local r=$T/roots/$1
	mkdir -p "$T/roots"
	cp -r "$ROOT" "$r"
	printf '%s\n' "$2" >"$r/proc/sys/kernel/hostname"
	printf '%s\n' "$3" >"$r/etc/machine-id"
	bmcsim_host_serial "$4" >"$r/sys/class/dmi/id/product_serial"
	bmcsim_uuid "$4" | tr a-f A-F >"$r/sys/class/dmi/id/product_uuid"
	printf '%s\n' "$5" >"$r/proc/sys/kernel/random/boot_id"
	: >"$r/dev/kmsg"
}
# start_agent ROOTNAME TOKEN_NODE: a kiln-agent every 2 s for that root with that node's token.
start_agent() {
	FAKE_NVML_CONFIG=$T/clean-nvml.conf "$AGENT" --server "$KILND_URL" --root "$T/roots/$1" \
		--nvml-lib "$NVML" --state-dir "$T/agent-$1-$2" --token-file "$T/$2.token" --interval 2 \
		>>"$T/agent-$1-$2.log" 2>&1 &
	AGENT_PID[$1-$2]=$!
}
stop_agent() {
	kill -TERM "${AGENT_PID[$1]}" 2>/dev/null
	wait "${AGENT_PID[$1]}" 2>/dev/null
	unset "AGENT_PID[$1]"
}
# post ROOTNAME TOKEN_NODE: one report of that root sent with that node's token; prints the
# HTTP status (the answer is in $KILN_BODY_FILE).
post() {
	local report
	report=$(FAKE_NVML_CONFIG=$T/clean-nvml.conf "$AGENT" --print --once --root "$T/roots/$1" \
		--nvml-lib "$NVML" 2>/dev/null)
	kiln_api POST /agent/report "$report" "$(cat "$T/$2.token")"
}

mkroot nodea nodea aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa "$FIX/generic" \
	aaaaaaaa-0000-4000-8000-000000000001
mkroot nodeb nodeb bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb "$FIX/idrac9" \
	bbbbbbbb-0000-4000-8000-000000000001
for n in nodea nodeb; do
	port=$PORT_A
	[ "$n" = nodeb ] && port=$PORT_B
	"$KILN" node add "$n" --bmc "redfish+http://127.0.0.1:$port" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add $n failed" >&2; exit 1; }
	"$KILN" agent token "$n" >"$T/$n.token" 2>/dev/null || { echo "agent token $n failed" >&2; exit 1; }
done
sql() { kiln_test_sql "$1"; }
field() { "$KILN" status -o json | jq -r --arg n "$1" ".[] | select(.node == \$n) | .$2"; }
agentf() { "$KILN" node show "$1" -o json | jq -r ".agent.$2"; }
# The BMC serials are known before the agents report: the check against them is in force.
serials() { [ "$(sql "SELECT count(bmc_serial) FROM nodes")" = 2 ]; }
wait_for "the poller stored both BMC serials" 30 serials || exit 1
start_agent nodea nodea
start_agent nodeb nodeb
ready() { [ "$(field nodea power)/$(field nodeb power)" = on/on ] &&
	[ "$(agentf nodea machine_id)" = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ] &&
	[ "$(agentf nodeb machine_id)" = bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb ]; }
wait_for "both agents reported and both BMCs read" 30 ready || exit 1

# nodea's agent restarts with nodeb's token (a copied config); nodeb's own agent goes on.
stop_agent nodea-nodea
same "a report of nodea's host on nodeb's token is refused" "$(post nodea nodeb)" 409
same "the refusal names the field" "$(jq -r .field "$KILN_BODY_FILE")" host.dmi_uuid
jq -r .error "$KILN_BODY_FILE" | grep -q "host.machine_id 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' (stored) vs 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' (reported)"
check "it says stored vs reported" $? "$(cat "$KILN_BODY_FILE")"
start_agent nodea nodeb
refused() { [ "$("$KILN" agent identities -o json | jq -r '.[] | select(.node == "nodeb") | .refused')" -ge 4 ] 2>/dev/null; }
wait_for "nodea's agent keeps being refused on nodeb's token" 30 refused
# past the hung threshold (6 s) and remediation's grace for nodea, whose agent is away
hung_seen=
for ((k = 0; k < 20; k++)); do
	field nodea 'reasons[]' | grep -q '^hung:' && hung_seen=nodea
	field nodeb 'reasons[]' | grep -q '^hung:' && hung_seen=nodeb
	sleep 0.5
done
same "no node is judged hung" "${hung_seen:-none}" none
same "nodeb keeps its machine id" "$(agentf nodeb machine_id)" bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
same "nodeb keeps its DMI serial (the service tag)" "$(agentf nodeb dmi_serial)" \
	"$(bmcsim_host_serial "$FIX/idrac9")"
same "nodeb keeps its host name" "$(agentf nodeb hostname)" nodeb
events() { "$KILN" events "$1" --since 1h -o json | jq -r "[.[] | select(.kind == \"$2\")] | length"; }
same "one identity event for all the refused reports" "$(events nodeb identity)" 1
same "nodeb got no false reboot" "$(events nodeb reboot)" 0
"$KILN" events nodeb --since 1h -o json | jq -r '.[] | select(.kind == "identity") | "\(.severity) \(.message)"' |
	grep -q "^critical agent identity mismatch: host.dmi_uuid '$(bmcsim_uuid "$FIX/generic" | tr a-f A-F)' (reported) is not the BMC's system UUID '$(bmcsim_uuid "$FIX/idrac9")'; host.dmi_serial 'KW24A0815' (reported) is not the BMC's serial 'CNIVC0033A0147' nor its SKU '9QZK2X3'"
check "the event is critical and says what differs" $? "$("$KILN" events nodeb --since 1h -o json)"
field nodeb 'reasons[]' | grep -q "^agent identity mismatch: reports refused (kiln agent accept-identity nodeb): host.dmi_uuid '"
check "nodeb's health shows the refusal, both values and the command" $? "$(field nodeb reasons)"
field nodea 'reasons[]' | grep -q "^agent identity mismatch: this node's agent reports with node nodeb's token"
check "nodea's health says where its agent reports" $? "$(field nodea reasons)"
same "nothing was power-cycled (audit)" \
	"$("$KILN" audit log -o json | jq -r '[.[] | select(.actor == "kilnd")] | length')" 0
for p in "$PORT_A" "$PORT_B"; do
	same "no reset reached the BMC on $p" \
		"$(curl -s -m 2 "http://127.0.0.1:$p/_sim/state" | jq -r '.resets | length' 2>/dev/null || echo '?')" 0
done

# nodec's own host reports once before its BMC's inventory is known, then is refused once
# it is (its BMC states other values: as every Dell was when kilnd compared the wrong field),
# and its retries stop coming for far longer than the hung threshold (a loaded kilnd, an
# agent backing off): it is shown refused, never hung, never cycled.
bmcsim_start "$T/sim-c" "$FIX/vendor/dell-identity" || exit 1
PORT_C=$BMCSIM_PORT
"$KILN" node add nodec --bmc "redfish+http://127.0.0.1:$PORT_C" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || fail "node add nodec"
"$KILN" agent token nodec >"$T/nodec.token" 2>/dev/null || fail "agent token nodec"
c_read() { [ -n "$(sql "SELECT coalesce(bmc_uuid, '') FROM nodes WHERE name = 'nodec'")" ]; }
wait_for "the poller stored nodec's BMC identity" 30 c_read || exit 1
mkroot nodec nodec cccccccccccccccccccccccccccccccc "$FIX/vendor/dell-identity" \
	cccccccc-0000-4000-8000-000000000001
printf 'QQQQQQQ\n' >"$T/roots/nodec/sys/class/dmi/id/product_serial"
printf '4C4C4544-0051-5110-8051-D1C04F515151\n' >"$T/roots/nodec/sys/class/dmi/id/product_uuid"
ids=$(sql "SELECT bmc_uuid || ' ' || bmc_serial || ' ' || bmc_sku FROM nodes WHERE name = 'nodec'")
read -r c_uuid c_serial c_sku <<<"$ids"
sql "UPDATE nodes SET bmc_uuid = NULL, bmc_serial = NULL, bmc_sku = NULL,
	bmc_chassis_serial = NULL WHERE name = 'nodec'" >/dev/null
same "nodec's first report, before its BMC was read, is taken" "$(post nodec nodec)" 201
sql "UPDATE nodes SET bmc_uuid = '$c_uuid', bmc_serial = '$c_serial', bmc_sku = '$c_sku'
	WHERE name = 'nodec'" >/dev/null
same "nodec's own host is refused once its BMC is known" "$(post nodec nodec)" 409
same "... its agent is told why" "$(jq -r .field "$KILN_BODY_FILE")" host.dmi_uuid
c_shown() { field nodec 'reasons[]' | grep -q "^agent identity mismatch: reports refused (kiln agent accept-identity nodec): host.dmi_uuid '4C4C4544-0051-5110-8051-D1C04F515151'"; }
wait_for "nodec shows the refusal with both values" 20 c_shown
sleep 12 # two hung thresholds (6 s) and remediation's grace without a refusal
for ((k = 0; k < 6; k++)); do
	field nodec 'reasons[]' | grep -q '^hung:' && fail "nodec judged hung: $(field nodec reasons)"
	sleep 0.5
done
c_shown
check "nodec still shows the refusal, long after the last one" $? "$(field nodec reasons)"
same "no reset reached nodec's BMC" \
	"$(curl -s -m 2 "http://127.0.0.1:$PORT_C/_sim/state" | jq -r '.resets | length' 2>/dev/null || echo '?')" 0

# A genuine change: nodeb is reinstalled (a new machine id and boot). Refused until an
# admin accepts it; then taken, and bound again.
stop_agent nodea-nodeb
stop_agent nodeb-nodeb
mkroot nodeb2 nodeb cccccccccccccccccccccccccccccccc "$FIX/idrac9" \
	bbbbbbbb-0000-4000-8000-000000000002
same "the reinstalled host is refused before an admin accepts it" "$(post nodeb2 nodeb)" 409
same "a viewer cannot accept an identity" \
	"$(kiln_api POST /agent/identities/accept '{"node":"nodeb"}' "$(kiln_test_token viewer)")" 403
"$KILN" agent accept-identity nodeb >/dev/null || fail "kiln agent accept-identity nodeb"
same "accept-identity is audited" \
	"$(sql "SELECT action || ' ' || target FROM audit_log WHERE action LIKE 'agent.accept-identity'")" \
	"agent.accept-identity nodeb"
same "after accept-identity the new identity is taken" "$(post nodeb2 nodeb)" 201
same "nodeb's machine id is the new one" "$(agentf nodeb machine_id)" cccccccccccccccccccccccccccccccc
same "its refusal is settled" "$("$KILN" agent identities -o json | jq -r '[.[] | select(.node == "nodeb")] | length')" 0
mkroot nodeb3 nodeb dddddddddddddddddddddddddddddddd "$FIX/idrac9" \
	bbbbbbbb-0000-4000-8000-000000000003
same "the identity is bound again: another machine id is refused" "$(post nodeb3 nodeb)" 409
same "the old host's report is refused now too" "$(post nodeb nodeb)" 409

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
