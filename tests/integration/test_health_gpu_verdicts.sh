# SPDX-License-Identifier: Apache-2.0
# Integration: GPU verdicts that name the GPU. gpu01's first report carries a GPU with
# uncorrected ECC errors, a pending page retirement and a pending row remap: its health is
# critical at once, the reason naming that GPU's index, bus id and counts (kiln status, the
# API). gpu02 reported its 8 GPUs, then its NVML library no longer matches the loaded kernel
# module: the reason says so, and nothing claims "0 of 8 seen" (NVML cannot count them).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"

KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
CONFS=$SRC/tests/fake-nvml/configs
ROOT=$SRC/tests/fixtures/agent/roots/h100
for f in "$AGENT" "$NVML" "$CONFS/ecc-remap.conf" "$CONFS/mismatch.conf" "$ROOT"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent and the fake NVML)" >&2; exit 1; }
done
FAILS=0
T=$KILN_TEST_TMP
cat >"$T/kilnd.conf" <<EOF
[poller]
health_every = 1s
EOF
trap kiln_test_cleanup EXIT
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1

# report NODE CONF: one agent run for NODE (its own root and state) with fake NVML config CONF.
report() {
	local r=$T/roots/$1
	if [ ! -d "$r" ]; then
		mkdir -p "$T/roots"
		cp -r "$ROOT" "$r"
		printf '%s\n' "$1" >"$r/proc/sys/kernel/hostname"
		printf 'SN-GPUV-%s\n' "$1" >"$r/sys/class/dmi/id/product_serial"
		: >"$r/dev/kmsg"
		"$KILN" node add "$1" >/dev/null || { fail "node add $1"; return 1; }
		"$KILN" agent token "$1" >"$T/$1.token" 2>/dev/null || { fail "agent token $1"; return 1; }
	fi
	FAKE_NVML_CONFIG=$2 timeout 30 "$AGENT" --server "$KILND_URL" --root "$r" --nvml-lib "$NVML" \
		--state-dir "$T/agent-$1" --token-file "$T/$1.token" --once >>"$T/agent-$1.log" 2>&1 ||
		fail "agent $1 with $(basename "$2"): $(tail -3 "$T/agent-$1.log")"
}
field() { "$KILN" status -o json | jq -r --arg n "$1" ".[] | select(.node == \$n) | .$2"; }
# reasons_have NODE TEXT: one of NODE's stored health reasons is TEXT.
reasons_have() { field "$1" 'reasons[]' | grep -qxF -- "$2"; }

# --- a first report with a sick GPU ------------------------------------------------------
report gpu01 "$CONFS/ecc-remap.conf"
WANT='gpu 2 (00000000:47:00.0): 2 uncorrected ECC errors (5 lifetime), page retirement and row remap pending (reset needed), 1 row remapped [reboot may clear it]'
wait_for "gpu01's first report judged" 20 reasons_have gpu01 "$WANT"
same "gpu01 is critical at its first report" "$(field gpu01 health)" critical
same "its one reason names GPU 2, its bus id and its counts" "$(field gpu01 'reasons | join(";")')" "$WANT"
same "its repair class, for the node and the reason: a reset (reboot) may clear it" \
	"$(field gpu01 repair)/$(field gpu01 'repairs | join(",")')" reboot/reboot
kiln_api GET "/status?range=gpu01" >/dev/null
same "the API's object form says the same" \
	"$(jq -r '.nodes[0] | "\(.health)|\(.reasons | join(";"))"' "$KILN_BODY_FILE")" "critical|$WANT"
"$KILN" status gpu01 >"$T/status.txt" 2>&1
grep -qF "gpu 2 (00000000:47:00.0): 2 uncorrected ECC errors" "$T/status.txt"
check "kiln status shows it" $? "$(cat "$T/status.txt")"

# --- a driver/library mismatch after 8 GPUs were seen --------------------------------------
grep -Ev 'xid_events|^gpu\.4\.(ecc|remap)_' "$CONFS/h100-8gpu.conf" >"$T/h100-clean.conf"
report gpu02 "$T/h100-clean.conf"
eight() { [ "$(field gpu02 gpus_seen)/$(field gpu02 gpus_expected)/$(field gpu02 health)" = 8/8/ok ]; }
wait_for "gpu02 reported 8 healthy GPUs" 20 eight
report gpu02 "$CONFS/mismatch.conf"
MISMATCH='driver: NVML/kernel module version mismatch (library ?, kernel module 550.54.15): GPUs not counted, reboot pending [reboot may clear it]'
wait_for "gpu02's mismatch judged" 20 reasons_have gpu02 "$MISMATCH"
same "gpu02 is critical for the mismatch alone" \
	"$(field gpu02 health)/$(field gpu02 'reasons | join(";")')" "critical/$MISMATCH"
same "no GPU count is claimed (gpus_seen unknown, 8 expected)" \
	"$(field gpu02 gpus_seen)/$(field gpu02 gpus_expected)" null/8
kiln_api GET "/status?range=gpu02" >/dev/null
same "the API's object form: no count, no 'of 8 seen'" \
	"$(jq -r '.nodes[0] | "\(.gpus_seen)|\(any(.reasons[]; test("of [0-9]+ seen")))"' "$KILN_BODY_FILE")" \
	"null|false"
"$KILN" status gpu02 >"$T/status2.txt" 2>&1
if grep -q '0/8' "$T/status2.txt"; then
	fail "kiln status still shows 0/8 GPUs: $(cat "$T/status2.txt")"
else
	pass "kiln status shows no 0/8"
fi

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
