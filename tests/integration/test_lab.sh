# Integration: the README's demo lab (deploy/lab.sh) with the binaries of this build: it ends
# with the export lines and a status table of its 10 simulated nodes; a power cycle through the
# CLI goes through the simulated BMC's power hook and comes back as a new boot id from the
# node's agent; deploy/lab.sh down stops every process it started.
set -u
FAILS=0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
for tool in ipmi_sim sdrcomp jq curl setsid; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done

export KILN_LAB_DIR=$KILN_TEST_TMP/lab KILN_LAB_PORT=0 KILN_LAB_NO_BUILD=1
KILN_LAB_BUILD_DIR=$(dirname "$KILN_BIN")
export KILN_LAB_BUILD_DIR
LAB_SH=$SRC/deploy/lab.sh
KILN=$KILN_BIN/kiln

lab_cleanup() {
	"$LAB_SH" down >/dev/null 2>&1
	kiln_test_cleanup
}
trap lab_cleanup EXIT

"$LAB_SH" >"$KILN_TEST_TMP/up.out" 2>"$KILN_TEST_TMP/up.err" ||
	{ cat "$KILN_TEST_TMP/up.err" "$KILN_TEST_TMP/up.out"; echo "FAIL: deploy/lab.sh failed"; exit 1; }
grep -q '^export KILN_URL=http://127.0.0.1:' "$KILN_TEST_TMP/up.out" && pass "prints export KILN_URL" ||
	fail "no export KILN_URL line"
grep -q '^export KILN_TOKEN_FILE=' "$KILN_TEST_TMP/up.out" && pass "prints export KILN_TOKEN_FILE" ||
	fail "no export KILN_TOKEN_FILE line"
grep -q '^NODE ' "$KILN_TEST_TMP/up.out" && grep -q '^10 nodes' "$KILN_TEST_TMP/up.out" &&
	pass "ends with a status table of 10 nodes" || fail "no status table: $(tail -15 "$KILN_TEST_TMP/up.out")"

eval "$(grep '^export KILN_' "$KILN_TEST_TMP/up.out")"
kinds=$("$KILN" node list -o json | jq -r '[.[].bmc | split(":")[0]] | unique | join(",")')
same "Redfish and IPMI BMCs in the lab" "$kinds" "ipmi,redfish+http"

boot_id() { "$KILN" node show gpu01 -o json | jq -r '.agent.boot_id // empty'; }
has_boot() { [ -n "$(boot_id)" ]; }
wait_for "gpu01's agent reported" 60 has_boot
before=$(boot_id)
"$KILN" power cycle gpu01 --yes >"$KILN_TEST_TMP/cycle.out" 2>&1 &&
	pass "power cycle gpu01" || fail "power cycle: $(cat "$KILN_TEST_TMP/cycle.out")"
new_boot() { b=$(boot_id); [ -n "$b" ] && [ "$b" != "$before" ]; }
wait_for "gpu01's agent came back with a new boot id" 60 new_boot && pass "new boot id after the cycle"

pids=$(cat "$KILN_LAB_DIR"/run/*.pid 2>/dev/null)
"$LAB_SH" down >"$KILN_TEST_TMP/down.out" 2>&1 || fail "deploy/lab.sh down failed: $(tail -5 "$KILN_TEST_TMP/down.out")"
left=0
for p in $pids; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
same "every lab process stopped" "$left" 0

[ "$FAILS" = 0 ] || { echo "$FAILS failures" >&2; exit 1; }
echo "all passed"
