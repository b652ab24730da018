# SPDX-License-Identifier: Apache-2.0
# Shared by the health tests: nodes whose BMC is a kiln-bmcsim (the iDRAC-like tree) and whose
# host runs a kiln-agent on the fake NVML (8 healthy, idle H100s: no Xid events, no ECC errors,
# no compute process, which would refuse their power cycles), reporting every 2 s.
# Source after lib.sh and ../sim/bmcsim.sh, with SRC set to the source tree. Sets KILN,
# AGENT, NVML, MOCKUP and AGENT_PID (node -> agent pid); exits if a part is not built.
KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
MOCKUP=$SRC/tests/sim/fixtures/idrac9
FLEET_ROOT=$SRC/tests/fixtures/agent/roots/h100
for _f in "$AGENT" "$NVML" "$BMCSIM" "$MOCKUP" "$FLEET_ROOT"; do
	[ -e "$_f" ] || { echo "FAIL: $_f is missing (build kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done
unset _f
grep -Ev 'xid_events|^gpu\.4\.(ecc|remap)_|^gpu\.0\.processes' "$SRC/tests/fake-nvml/configs/h100-8gpu.conf" >"$KILN_TEST_TMP/fleet-nvml.conf"
printf 'password\n' >"$KILN_TEST_TMP/fleet-bmc.pw"
declare -A AGENT_PID

# fleet_node_add NAME PORT: adds NAME with the simulator on PORT as its BMC, a host root of its
# own (host name NAME, and the simulated BMC's serial as its DMI serial: an agent whose serial
# differs from its BMC's is refused) and its agent token.
fleet_node_add() {
	local n=$1 root=$KILN_TEST_TMP/roots/$1
	"$KILN" node add "$n" --bmc "redfish+http://127.0.0.1:$2" --bmc-user admin \
		--bmc-password-file "$KILN_TEST_TMP/fleet-bmc.pw" >/dev/null || { echo "node add $n failed" >&2; return 1; }
	mkdir -p "$KILN_TEST_TMP/roots"
	cp -r "$FLEET_ROOT" "$root"
	printf '%s\n' "$n" >"$root/proc/sys/kernel/hostname"
	bmcsim_serial "$MOCKUP" >"$root/sys/class/dmi/id/product_serial"
	: >"$root/dev/kmsg"
	"$KILN" agent token "$n" >"$KILN_TEST_TMP/$n.token" 2>/dev/null || { echo "agent token $n failed" >&2; return 1; }
}

# fleet_agent_start NAME [NVML_CONF] / fleet_agent_stop NAME / fleet_agents_stop. Without
# NVML_CONF, FLEET_NVML_CONF names another fake NVML configuration for the agent started;
# FLEET_AGENT_INTERVAL its report interval in seconds (2).
fleet_agent_start() {
	FAKE_NVML_CONFIG=${2:-${FLEET_NVML_CONF:-$KILN_TEST_TMP/fleet-nvml.conf}} "$AGENT" --server "$KILND_URL" \
		--root "$KILN_TEST_TMP/roots/$1" --nvml-lib "$NVML" --state-dir "$KILN_TEST_TMP/agent-$1" \
		--token-file "$KILN_TEST_TMP/$1.token" --interval "${FLEET_AGENT_INTERVAL:-2}" \
		>>"$KILN_TEST_TMP/agent-$1.log" 2>&1 &
	AGENT_PID[$1]=$!
}
fleet_agent_stop() {
	kill -TERM "${AGENT_PID[$1]}" 2>/dev/null
	wait "${AGENT_PID[$1]}" 2>/dev/null
	unset "AGENT_PID[$1]"
}
fleet_agents_stop() {
	local n
	for n in "${!AGENT_PID[@]}"; do fleet_agent_stop "$n"; done
}
