# SPDX-License-Identifier: Apache-2.0
# Integration: the host's verdicts. gpu01's agent reads a soft lockup in its kernel log and a
# root filesystem 97% used (staged through the agent's test-only statvfs file under its
# --root): `kiln status gpu01 -o json` shows both reasons with their repair class, and the
# lockup is one "kernel" event. A later report with the disk cleaned up clears the disk
# reason; the lockup line, read again by the restarted agent, stays one event and its reason
# keeps until the window passes.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"

KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
ROOT=$SRC/tests/fixtures/agent/roots/h100
for f in "$AGENT" "$NVML" "$SRC/tests/fake-nvml/configs/h100-8gpu.conf" "$ROOT"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent and the fake NVML)" >&2; exit 1; }
done
FAILS=0
T=$KILN_TEST_TMP
cat >"$T/kilnd.conf" <<EOF2
[poller]
health_every = 1s
EOF2
trap kiln_test_cleanup EXIT
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1

# gpu01: 8 healthy GPUs; its kernel log (uptime 864123 s) holds a soft lockup 123 s old among
# everyday lines; / is a 64 GiB ext4 with 2.1 GiB left to users.
R=$T/roots/gpu01
mkdir -p "$T/roots"
cp -r "$ROOT" "$R"
printf 'gpu01\n' >"$R/proc/sys/kernel/hostname"
printf 'SN-HOST-gpu01\n' >"$R/sys/class/dmi/id/product_serial"
cat >"$R/dev/kmsg" <<'EOF2'
6,5001,863990000000,-;systemd[1]: Started Session 12 of user alice.
0,5002,864000000000,-;watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:4242]
4,5003,864000000100,c;Modules linked in: nvidia_uvm(POE) nvidia_drm(POE) nvidia(POE)
4,5004,864000000200,c;CPU: 12 PID: 4242 Comm: python3 Tainted: P           OE     5.15.0-105-generic #115-Ubuntu
EOF2
mkdir -p "$R/proc/self" "$R/.kiln-test"
printf '/dev/nvme0n1p2 / ext4 rw,relatime,errors=remount-ro 0 0\n' >"$R/proc/self/mounts"
printf '/ 4096 16777216 1337525 550502 4194304 3932160 3932160\n' >"$R/.kiln-test/statvfs"
grep -Ev 'xid_events|^gpu\.4\.(ecc|remap)_|^gpu\.0\.processes' "$SRC/tests/fake-nvml/configs/h100-8gpu.conf" >"$T/clean.conf"
"$KILN" node add gpu01 >/dev/null || fail "node add gpu01"
"$KILN" agent token gpu01 >"$T/gpu01.token" 2>/dev/null || fail "agent token gpu01"

report() {
	FAKE_NVML_CONFIG=$T/clean.conf timeout 30 "$AGENT" --server "$KILND_URL" --root "$R" \
		--nvml-lib "$NVML" --state-dir "$T/agent-gpu01" --token-file "$T/gpu01.token" --once \
		>>"$T/agent-gpu01.log" 2>&1 || fail "agent run: $(tail -3 "$T/agent-gpu01.log")"
}
field() { "$KILN" status gpu01 -o json | jq -r ".[0] | $1"; }
reasons_have() { field '.reasons[]' | grep -qxF -- "$1"; }

LOCKUP='kernel: soft lockup: watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:4242] [reboot may clear it]'
DISK='disk: / 97% used (2.1 GiB free of 64 GiB)'

report
wait_for "the lockup judged" 20 reasons_have "$LOCKUP"
wait_for "the full disk judged" 20 reasons_have "$DISK"
same "gpu01 is critical, a reboot may clear it" "$(field '"\(.health)/\(.repair)"')" critical/reboot
same "two reasons, the lockup's and the disk's" "$(field '.reasons | length')" 2
kiln_api GET "/events?range=gpu01&kind=kernel" >/dev/null
same "the lockup is one kernel event" \
	"$(jq -r '[.[] | select(.kind == "kernel")] | map("\(.severity)|\(.message)") | join(";")' "$KILN_BODY_FILE")" \
	"critical|soft lockup: watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python3:4242]"

# the disk cleaned up (half used); the agent, run again, reads the same kernel log
printf '/ 4096 16777216 8388608 7549747 4194304 3932160 3932160\n' >"$R/.kiln-test/statvfs"
report
no_disk() { ! field '.reasons[]' | grep -q '^disk:'; }
wait_for "the disk reason cleared" 20 no_disk
same "the lockup's reason stays" "$(field '.reasons | join(";")')" "$LOCKUP"
kiln_api GET "/events?range=gpu01&kind=kernel" >/dev/null
same "the lockup read again is still one event" \
	"$(jq -r '[.[] | select(.kind == "kernel")] | length' "$KILN_BODY_FILE")" 1

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
