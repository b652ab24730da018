# SPDX-License-Identifier: Apache-2.0
# Integration: `kiln audit` over a fleet of agent reports sent through the ingest endpoint:
# three driver versions, one module/library mismatch and one toolkit too new for its driver
# are reported, exactly; the majority group comes first and differences are marked; --policy
# reports each deviation; exit status 3 when anything deviates, 0 when nothing does;
# `kiln audit log` still shows the audit log.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

FAILS=0
KILN="$KILN_BIN/kiln"

kiln_test_start_kilnd || exit 1

# report NODE DRIVER MODULE CUDA TOOLKITS_JSON: a report shaped like the agent's.
report() {
	jq -cn --arg node "$1" --arg drv "$2" --arg mod "$3" --arg cuda "$4" --argjson tks "$5" \
		--arg id "$(kiln_test_report_id)" --arg now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '{
	  schema: "kiln.agent.report/1", report_id: $id, time: $now,
	  agent: {version: "test"},
	  host: {hostname: $node, boot_id: "b-\($node)", kernel: "6.1.0",
	         memory_total_bytes: (2048 * 1073741824)},
	  nvidia: {status: "ok", driver_version: $drv, kernel_module_version: $mod,
	           cuda_driver_version: $cuda},
	  cuda_toolkits: [$tks[] | {version: ., path: "/usr/local/cuda-\(.)"}],
	  cudnn_version: null,
	  gpus: [range(8) | {index: ., uuid: "GPU-\($node)-\(.)", name: "NVIDIA H100 80GB HBM3",
	          vbios_version: "96.00.89.00.01", pci_bus_id: "00000000:\(. + 16):00.0",
	          memory_total_bytes: (80 * 1073741824)}],
	  xid_events: [],
	  disks: [{name: "nvme0n1", model: "x", size_bytes: 1000, rotational: false, nvme: true}]}'
}

# send NODE REPORT: through POST /api/v1/agent/report with the node's agent token.
send() {
	local status token
	status=$(kiln_api POST /agent/tokens "{\"node\":\"$1\"}")
	[ "$status" = 201 ] || { fail "agent token for $1: $status $(cat "$KILN_BODY_FILE")"; return 1; }
	token=$(jq -r .token "$KILN_BODY_FILE")
	status=$(kiln_api POST /agent/report "$2" "$token")
	case $status in
	200 | 201 | 202) ;;
	*) fail "report of $1: $status $(cat "$KILN_BODY_FILE")"; return 1 ;;
	esac
}

for i in 01 02 03 04 05 06 07 08; do
	group=train
	[ "$i" = 07 ] || [ "$i" = 08 ] && group=infer
	[ "$(kiln_api POST /nodes "{\"name\":\"gpu$i\",\"groups\":[\"$group\"]}")" = 201 ] ||
		fail "node gpu$i: $(cat "$KILN_BODY_FILE")"
done
[ "$(kiln_api POST /nodes '{"name":"gpu09"}')" = 201 ] || fail "node gpu09"

send gpu01 "$(report gpu01 550.54.15 550.54.15 12.4 '["12.4"]')"
send gpu02 "$(report gpu02 550.54.15 550.54.15 12.4 '["12.4"]')"
send gpu03 "$(report gpu03 550.54.15 550.54.15 12.4 '["12.4"]')"
send gpu04 "$(report gpu04 550.54.15 550.54.15 12.4 '["12.4"]')"
send gpu05 "$(report gpu05 535.104.05 535.104.05 12.2 '["12.2"]')"
send gpu06 "$(report gpu06 535.104.05 535.104.05 12.2 '["12.2","12.8"]')"
send gpu07 "$(report gpu07 560.35.03 560.35.03 12.6 '["12.4"]')"
send gpu08 "$(report gpu08 550.54.15 560.35.03 12.4 '["12.4"]')"

# The whole fleet: exactly the two findings, exit 3.
"$KILN" audit -o json >"$KILN_TEST_TMP/audit.json" 2>"$KILN_TEST_TMP/err"
rc=$?
[ $rc = 3 ] && pass "kiln audit exits 3 on deviations" || fail "kiln audit exit $rc: $(cat "$KILN_TEST_TMP/err")"
got=$(jq -r '[.findings[] | "\(.node):\(.check)"] | join(" ")' "$KILN_TEST_TMP/audit.json")
[ "$got" = "gpu06:toolkit_too_new gpu08:module_mismatch" ] && pass "exactly the mismatch and the too-new toolkit" ||
	fail "findings: '$got'"
got=$(jq -r '[.groups[].driver] | unique | length' "$KILN_TEST_TMP/audit.json")
[ "$got" = 3 ] && pass "three driver versions" || fail "driver versions: $got"
got=$(jq -r '.groups[0] | "\(.nodes) \(.majority)"' "$KILN_TEST_TMP/audit.json")
[ "$got" = "gpu[01-04] true" ] && pass "majority group first" || fail "first group: $got"
got=$(jq -r '.unreported' "$KILN_TEST_TMP/audit.json")
[ "$got" = gpu09 ] && pass "a node without a report is named" || fail "unreported: $got"
got=$(jq -r '.groups[] | select(.nodes == "gpu08") | .differs | join(",")' "$KILN_TEST_TMP/audit.json")
[ "$got" = kernel_module ] && pass "gpu08 differs in its kernel module only" || fail "gpu08 differs: '$got'"

# The table: majority first, differing values marked.
"$KILN" audit >"$KILN_TEST_TMP/audit.txt" 2>&1
rc=$?
[ $rc = 3 ] || fail "table exit $rc"
sed -n 2p "$KILN_TEST_TMP/audit.txt" | grep -q '^gpu\[01-04\] ' && pass "table: majority first" ||
	fail "table: $(cat "$KILN_TEST_TMP/audit.txt")"
grep -q '^gpu08 .*\*560.35.03' "$KILN_TEST_TMP/audit.txt" && pass "table: the differing module is marked" ||
	fail "table marks: $(cat "$KILN_TEST_TMP/audit.txt")"
grep -q 'gpu06 .*toolkit_too_new.*12.8.*570.26' "$KILN_TEST_TMP/audit.txt" && pass "table: the finding says why" ||
	fail "table finding: $(cat "$KILN_TEST_TMP/audit.txt")"

# A range without deviations exits 0; a viewer may audit; `audit versions` is the same.
viewer=$(kiln_test_token viewer)
echo "$viewer" >"$KILN_TEST_TMP/viewer.token"
KILN_TOKEN_FILE="$KILN_TEST_TMP/viewer.token" "$KILN" audit 'gpu[01-04]' >"$KILN_TEST_TMP/out" 2>&1
rc=$?
[ $rc = 0 ] && pass "a clean range exits 0 (viewer)" || fail "clean range exit $rc: $(cat "$KILN_TEST_TMP/out")"
"$KILN" audit versions 'gpu[07-08]' -o json >"$KILN_TEST_TMP/out" 2>&1
rc=$?
got=$(jq -r '[.findings[].node] | join(" ")' "$KILN_TEST_TMP/out" 2>/dev/null)
[ $rc = 3 ] && [ "$got" = gpu08 ] && pass "kiln audit versions RANGE" || fail "audit versions: $rc '$got'"

# A policy: each deviation reported.
cat >"$KILN_TEST_TMP/policy.ini" <<'INI'
[group train]
driver = 550.54.15
toolkit = 12.4

[group infer]
cuda = >=12.4
INI
"$KILN" audit 'gpu[01-08]' --policy "$KILN_TEST_TMP/policy.ini" -o json >"$KILN_TEST_TMP/out" 2>&1
rc=$?
got=$(jq -r '[.findings[] | select(.check == "policy") | .node] | join(" ")' "$KILN_TEST_TMP/out")
[ $rc = 3 ] && [ "$got" = "gpu05 gpu05 gpu06 gpu06" ] && pass "policy deviations (driver and toolkit of gpu05, gpu06)" ||
	fail "policy: $rc '$got' $(cat "$KILN_TEST_TMP/out")"
printf '[group train]\ndrvier = 1\n' >"$KILN_TEST_TMP/bad.ini"
"$KILN" audit --policy "$KILN_TEST_TMP/bad.ini" >"$KILN_TEST_TMP/out" 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 3 ] && grep -q drvier "$KILN_TEST_TMP/out" && pass "a bad policy key is an error naming it" ||
	fail "bad policy: $rc $(cat "$KILN_TEST_TMP/out")"
printf '[train]\ndriver = 1\n' >"$KILN_TEST_TMP/bad.ini"
"$KILN" audit --policy "$KILN_TEST_TMP/bad.ini" >"$KILN_TEST_TMP/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q 'bad.ini:2: section \[train\]' "$KILN_TEST_TMP/out" && pass "a bad policy section names the line" ||
	fail "bad section: $rc $(cat "$KILN_TEST_TMP/out")"

# The audit log is still there.
"$KILN" audit log -o json >"$KILN_TEST_TMP/out" 2>&1 && jq -e 'map(select(.action == "node.add")) | length >= 9' \
	"$KILN_TEST_TMP/out" >/dev/null && pass "kiln audit log" || fail "audit log: $(head -c 300 "$KILN_TEST_TMP/out")"

[ $FAILS = 0 ] || { echo "$FAILS failures" >&2; exit 1; }
echo "all passed"
