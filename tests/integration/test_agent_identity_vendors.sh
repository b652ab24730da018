#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Integration: an agent is bound to its node the way each vendor's host and BMC state the
# machine (issue 32). One kilnd, a simulated BMC per vendor tree (the project's fixtures and,
# where ../shared is here, the captures of real BMCs); each node's agent reports what that
# vendor's host shows in DMI (on a Dell the service tag, which the iDRAC gives as the
# System's SKU; elsewhere the System's serial; the System's UUID as product_uuid). Every
# such report is taken, by enrollment too; another machine's is refused naming both values.
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
SHARED=${KILN_SHARED:-}/redfish-mockups
for f in "$AGENT" "$NVML" "$BMCSIM" "$FIX/idrac9"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done
FAILS=0
T=$KILN_TEST_TMP
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
EOF
trap 'bmcsim_stop_all; kiln_test_cleanup' EXIT

# The trees: name and folder. A vendor tree of the project's own for each vendor, and the
# captured ones where ../shared is here.
TREES=(dell:"$FIX/idrac9" hpe:"$FIX/ilo5" generic:"$FIX/generic")
for v in "$FIX"/vendor/*/; do
	[ -f "$v/index.json" ] || continue
	name=$(basename "$v")
	TREES+=("$name:${v%/}")
done
if [ -d "$SHARED" ]; then
	for v in "$SHARED"/*/; do
		[ -f "$v/index.json" ] || continue
		TREES+=("real-$(basename "$v"):${v%/}")
	done
else
	echo "note: ${SHARED} is absent: the captured trees are left out"
fi

kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/bmc.pw"
sql() { kiln_test_sql "$1"; }

# mkroot NAME HOST TREE [UUID]: the H100 fixture root as host HOST of that tree's system: its
# DMI serial and UUID as that vendor's host shows them (no product_uuid file with UUID "-").
mkroot() {
	local r=$T/roots/$1 uuid=${4:-}
	mkdir -p "$T/roots"
	rm -rf "$r"
	cp -r "$ROOT" "$r"
	printf '%s\n' "$2" >"$r/proc/sys/kernel/hostname"
	printf '%s\n' "$(printf '%s' "$2" | md5sum | cut -c1-32)" >"$r/etc/machine-id"
	bmcsim_host_serial "$3" >"$r/sys/class/dmi/id/product_serial"
	[ -z "$uuid" ] && uuid=$(bmcsim_uuid "$3" | tr a-f A-F)
	if [ "$uuid" = - ] || [ -z "$uuid" ]; then
		rm -f "$r/sys/class/dmi/id/product_uuid"
	else
		printf '%s\n' "$uuid" >"$r/sys/class/dmi/id/product_uuid"
	fi
	: >"$r/dev/kmsg"
}
# post ROOT NODE: one report of that root with that node's token; prints the HTTP status.
post() {
	local report
	report=$(FAKE_NVML_CONFIG=$NVML_CONF "$AGENT" --print --once --root "$T/roots/$1" \
		--nvml-lib "$NVML" 2>/dev/null)
	kiln_api POST /agent/report "$report" "$(cat "$T/$2.token")"
}

# One node per tree; a tree whose systems need --bmc-system is left to the Redfish tests.
NODES=()
declare -A TREE_OF
for entry in "${TREES[@]}"; do
	name=${entry%%:*}
	tree=${entry#*:}
	bmcsim_start "$T/sim-$name" "$tree" || { fail "bmcsim on $name"; continue; }
	if ! "$KILN" node add "$name" --bmc "redfish+http://127.0.0.1:$BMCSIM_PORT" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" >"$T/add-$name.log" 2>&1; then
		echo "note: $name not added ($(head -1 "$T/add-$name.log"))"
		continue
	fi
	"$KILN" agent token "$name" >"$T/$name.token" 2>/dev/null || fail "agent token $name"
	NODES+=("$name")
	TREE_OF[$name]=$tree
done
# An NVIDIA HGX platform's second system is its GPU baseboard, never a host: added without
# --bmc-system. A blade chassis' two hosts still need it (exit 2, naming them).
for n in dgx-h100 gb200 gh200; do
	[ -n "${TREE_OF[$n]:-}" ] && pass "$n added without --bmc-system" ||
		fail "$n not added: $(cat "$T/add-$n.log" 2>/dev/null)"
done
grep -q "this BMC has 2 systems (Blade1, Blade2); choose one with --bmc-system" "$T/add-blade.log"
check "a two-host blade BMC is still refused without --bmc-system" $? "$(cat "$T/add-blade.log")"
bmcsim_start "$T/sim-dgx-board" "$FIX/vendor/dgx-h100" || exit 1
"$KILN" node add dgx-board --bmc "redfish+http://127.0.0.1:$BMCSIM_PORT" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" --bmc-system HGX_Baseboard_0 >"$T/add-board.log" 2>&1
same "the HGX baseboard as --bmc-system: a usage error" "$?" 2
grep -q "'HGX_Baseboard_0' is this BMC's GPU baseboard, not a host" "$T/add-board.log"
check "... saying it is the GPU baseboard" $? "$(cat "$T/add-board.log")"
inventories() { [ "$(sql "SELECT count(*) FROM node_inventory")" -ge "${#NODES[@]}" ]; }
wait_for "the poller read every BMC's inventory" 60 inventories || exit 1

for n in "${NODES[@]}"; do
	tree=${TREE_OF[$n]}
	mkroot "$n" "$n" "$tree"
	status=$(post "$n" "$n")
	if [ "$status" = 201 ]; then
		pass "$n: its host's report is taken (serial '$(bmcsim_host_serial "$tree")', UUID '$(bmcsim_uuid "$tree")')"
	else
		fail "$n: its host's report answered $status: $(cat "$KILN_BODY_FILE")"
	fi
done

# A Dell host whose agent reports no UUID (an agent older than it): its service tag, the SKU.
mkroot dell-no-uuid dell "$FIX/idrac9" -
same "Dell: the service tag alone binds (the System's SKU)" "$(post dell-no-uuid dell)" 201
same "... and the node says what vouched" \
	"$("$KILN" node show dell -o json | jq -r '.agent.identity.bound_by // empty')" "SKU (service tag)"
same "Dell with the UUID: the UUID vouched first" \
	"$(post dell dell >/dev/null; "$KILN" node show dell -o json | jq -r '.agent.identity.bound_by // empty')" \
	"system UUID"
# The same host as SMBIOS before 2.6 shows it: the first three fields byte-swapped.
u=$(bmcsim_uuid "$FIX/idrac9")
swapped=$(printf '%s' "$u" | sed -E 's/^(..)(..)(..)(..)-(..)(..)-(..)(..)-/\4\3\2\1-\6\5-\8\7-/' | tr a-f A-F)
mkroot dell-old-smbios dell "$FIX/idrac9" "$swapped"
same "Dell: a byte-swapped UUID is the same machine" "$(post dell-old-smbios dell)" 201
same "... and says so" \
	"$("$KILN" node show dell -o json | jq -r '.agent.identity.bound_by // empty' | grep -c byte-swapped)" 1

# Another Dell's host on this node's token: refused, naming what differs on both sides.
mkroot other-dell dell "$FIX/idrac9" 4C4C4544-0047-3710-8052-B3C04F4E3533
printf 'G7R5N53\n' >"$T/roots/other-dell/sys/class/dmi/id/product_serial"
same "another Dell machine is refused" "$(post other-dell dell)" 409
jq -r .error "$KILN_BODY_FILE" | grep -q "host.dmi_uuid '4C4C4544-0047-3710-8052-B3C04F4E3533' (reported) is not the BMC's system UUID '$u'; host.dmi_serial 'G7R5N53' (reported) is not the BMC's serial 'CNIVC0033A0147' nor its SKU '9QZK2X3'"
check "the refusal names both values" $? "$(cat "$KILN_BODY_FILE")"
shown() { "$KILN" status dell -o json | jq -r '.[0].reasons[]' |
	grep -q "^agent identity mismatch: reports refused (kiln agent accept-identity dell): host.dmi_uuid '4C4C4544-0047"; }
wait_for "the refused node says so, with both values and the command" 30 shown

# Enrollment finds a Dell node by its UUID or its service tag (the node has no agent yet).
"$KILN" agent enroll-token create --name fleet >"$T/enroll.token" 2>/dev/null ||
	fail "kiln agent enroll-token create"
enroll() { kiln_api POST /agent/enroll "$1" "$(cat "$T/enroll.token")"; }
bmcsim_start "$T/sim-dell2" "$FIX/idrac9" || exit 1
"$KILN" node add dell2 --bmc "redfish+http://127.0.0.1:$BMCSIM_PORT" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || fail "node add dell2"
dell2_read() { [ "$(sql "SELECT count(*) FROM node_inventory i JOIN nodes n ON n.id = i.node_id WHERE n.name = 'dell2'")" = 1 ]; }
wait_for "the poller read dell2's BMC" 30 dell2_read || exit 1
# two simulated BMCs of one tree state the same values: such a value names no machine; the
# second one's is made its own as a real second Dell's would be
sql "UPDATE nodes SET bmc_uuid = '4c4c4544-0044-3510-8039-c4c04f4b5433', bmc_sku = 'D5K9KT3',
	bmc_serial = 'CNWS20024B0311', bmc_chassis_serial = 'CNWS20024B0311' WHERE name = 'dell2'" >/dev/null
same "enrollment by a Dell's UUID" \
	"$(enroll '{"hostname":"x1","dmi_uuid":"4C4C4544-0044-3510-8039-C4C04F4B5433","dmi_serial":"D5K9KT3"}')" 201
same "... takes that node" "$(jq -r .node "$KILN_BODY_FILE")" dell2

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
