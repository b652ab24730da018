# SPDX-License-Identifier: Apache-2.0
# Integration: framework-vs-driver compatibility in `kiln audit`, from real agents reading
# the fixture site-packages trees (PyTorch, TensorFlow, JAX, NVIDIA's wheels) under --root.
# gpu01's 530.30.02 driver runs TensorFlow's CUDA 12.2 build under minor-version
# compatibility (a warning); gpu02's loaded kernel module is 470 (its 550 library waits for a
# reboot), which runs none of its CUDA 12 frameworks (critical) and its --site-packages venv's
# CUDA 11.7 build only under compatibility, and its environments need two CUDA majors.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"

FAILS=0
KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
T=$KILN_TEST_TMP
for f in "$AGENT" "$NVML"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent and the fake NVML)" >&2; exit 1; }
done
kiln_test_start_kilnd || exit 1

# node NAME LIBRARY MODULE [SITE_PACKAGES]: a root with the fixture environments, its NVML
# library and kernel module at the versions given, one report sent.
node() {
	local r=$T/roots/$1
	"$KILN" node add "$1" >/dev/null || { fail "node add $1"; return 1; }
	mkdir -p "$T/roots"
	cp -r "$SRC/tests/fixtures/agent/roots/h100" "$r"
	cp -r "$SRC/tests/fixtures/agent/site-packages/." "$r/"
	printf '%s\n' "$1" >"$r/proc/sys/kernel/hostname"
	printf 'SN-%s\n' "$1" >"$r/sys/class/dmi/id/product_serial"
	: >"$r/dev/kmsg"
	sed -i "s/550\.54\.15/$3/" "$r/proc/driver/nvidia/version"
	sed -e "s/^driver_version = .*/driver_version = $2/" -e '/xid_events/d' \
		"$SRC/tests/fake-nvml/configs/h100-8gpu.conf" >"$T/$1-nvml.conf"
	"$KILN" agent token "$1" >"$T/$1.token" 2>/dev/null || { fail "agent token $1"; return 1; }
	FAKE_NVML_CONFIG=$T/$1-nvml.conf "$AGENT" --server "$KILND_URL" --root "$r" --nvml-lib "$NVML" \
		--state-dir "$T/agent-$1" --token-file "$T/$1.token" --once ${4:+--site-packages "$4"} \
		>"$T/agent-$1.log" 2>&1 || fail "agent $1: $(tail -3 "$T/agent-$1.log")"
}
node gpu01 530.30.02 530.30.02
node gpu02 550.54.15 470.223.02 /srv/venvs/*/lib/python3*/site-packages

"$KILN" audit -o json >"$T/audit.json"
same "kiln audit: exit 3 (deviations)" "$?" 3
same "framework findings, by node, check and severity" \
	"$(jq -r '[.findings[] | select(.check | startswith("framework_")) | "\(.node):\(.check):\(.severity)"] | unique | join(" ")' "$T/audit.json")" \
	"gpu01:framework_cuda_mvc:warning gpu02:framework_cuda_majors:warning gpu02:framework_cuda_mvc:warning gpu02:framework_cuda_unsupported:critical"
same "gpu01: TensorFlow's 12.2 under compatibility, named" \
	"$(jq -r '.findings[] | select(.node == "gpu01" and .check == "framework_cuda_mvc") | .message' "$T/audit.json")" \
	"tensorflow 2.15.0 in /opt/conda/envs/tf/lib/python3.10/site-packages is built for CUDA 12.2 (driver >= 535.54.03); driver 530.30.02 runs it under minor-version compatibility, without PTX JIT"
same "gpu02: every CUDA 12 framework unsupported by the loaded 470 module" \
	"$(jq '[.findings[] | select(.node == "gpu02" and .check == "framework_cuda_unsupported")] | length' "$T/audit.json")" 5
same "the fleet by framework version" \
	"$(jq -r '[.frameworks[] | select(.framework == "torch") | "\(.version)/\(.cuda)/\(.nodes)"] | sort | join(" ")' "$T/audit.json")" \
	"1.13.1+cu117/11.7/gpu02 2.3.1+cu121/12.1/gpu[01-02]"
"$KILN" audit >"$T/audit.txt"
check "the table lists the frameworks" "$(grep -q '^FRAMEWORK' "$T/audit.txt"; echo $?)" "$(cat "$T/audit.txt")"

kiln_test_stop_kilnd || fail "kilnd did not stop cleanly"
[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all checks passed"
