# SPDX-License-Identifier: Apache-2.0
# Shared by the reinstall tests: the agent, the fake NVML and the power hook
# (reinstall_hook.sh) that stops a node's agent when its simulated BMC powers off and starts
# it with a new boot id when it powers on. Source after lib.sh and ../sim/bmcsim.sh, with SRC
# and T (the test's temporary folder) set; exits if a part is not built.
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
NVML_CONF=$SRC/tests/fake-nvml/configs/h100-8gpu.conf
ROOT=$SRC/tests/fixtures/agent/roots/h100
HOOK=$(dirname "${BASH_SOURCE[0]}")/reinstall_hook.sh
for f in "$AGENT" "$NVML" "$NVML_CONF" "$ROOT/etc/os-release" "$BMCSIM" "$HOOK"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done
# The hook's environment: where each node's root, token and pid file live. The nodes are
# idle (no GPU compute process: one would refuse the reinstall).
grep -v '^gpu\.0\.processes' "$NVML_CONF" >"$T/idle-nvml.conf"
export RH_DIR=$T/nodes RH_AGENT=$AGENT RH_NVML=$NVML RH_NVML_CONF=$T/idle-nvml.conf
mkdir -p "$RH_DIR"
printf 'password\n' >"$T/bmc.pw"

# reinstall_node_add NAME PORT SIM INDEX: adds NAME with the simulator (generic or idrac) on
# PORT, the INDEX-th BMC of SIM, as its BMC, and a host root and agent token for the hook.
reinstall_node_add() {
	local n=$1 d=$RH_DIR/$1
	"$KILN" node add "$n" --bmc "redfish+http://127.0.0.1:$2" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add $n failed" >&2; exit 1; }
	mkdir -p "$d"
	cp -r "$ROOT" "$d/root"
	printf '%s\n' "$n" >"$d/root/proc/sys/kernel/hostname"
	# the BMC's serial: kilnd refuses an agent whose DMI serial is another machine's
	bmcsim_serial "$SRC/tests/sim/fixtures/$([ "$3" = idrac ] && echo idrac9 || echo generic)" \
		>"$d/root/sys/class/dmi/id/product_serial"
	: >"$d/root/dev/kmsg"
	"$KILN" agent token "$n" >"$d/token" 2>/dev/null || { echo "agent token $n failed" >&2; exit 1; }
	printf '%s\n' "$n" >"$RH_DIR/$3-$4"
	printf '%s\n' "$2" >"$d/bmc_port"
}

# Stops every agent the hook started (and keeps it from starting more).
reinstall_agents_stop() {
	local f
	touch "$RH_DIR/stopping"
	for f in "$RH_DIR"/*/agent.pid; do
		[ -s "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null
	done
	sleep 0.2
}
