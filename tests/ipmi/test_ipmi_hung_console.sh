#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Evidence beside the verdict: a node whose serial console is captured (ipmi_sim with
# kiln-serialsim as its serial side) panics and its agent falls silent while the BMC still
# says on. It is flagged hung, and the hung reason carries the console's panic line.
. "$(dirname "$0")/lib.sh"
ipmisim_require
for tool in curl jq; do
	command -v "$tool" > /dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -x "$KILN_BIN/kiln-serialsim" ] || { echo "SKIP: $KILN_BIN/kiln-serialsim not built"; exit 77; }
. "$KILN_SRC/tests/integration/lib.sh"
fail() {
	echo "FAIL: $*"
	exit 1
}

AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
for f in "$AGENT" "$NVML"; do
	[ -e "$f" ] || fail "$f is missing (build kiln-agent and the fake NVML)"
done
T=$KILN_TEST_TMP
ipmisim_serial_side "$KILN_TEST_TMP/serial"
AGENT_PID=
all_cleanup() {
	[ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2> /dev/null && wait "$AGENT_PID" 2> /dev/null
	kiln_test_cleanup
	ipmisim_cleanup
	ipmisim_serial_stop
}

ipmisim_start 1 || fail "could not start ipmi_sim"
trap all_cleanup EXIT
echo 1 > "${IPMISIM_DIRS[0]}/chassis/power"
cat > "$T/kilnd.conf" << EOF
[poller]
interval = 5s
health_every = 1s
[health]
agent_interval = 2s
hung_intervals = 3
EOF
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || fail "kilnd did not start"
KILN=$KILN_BIN/kiln
status=$(kiln_api POST /nodes "{\"name\":\"con1\",\"bmc\":\"ipmi://127.0.0.1:${IPMISIM_PORTS[0]}\",
	\"bmc_user\":\"$IPMISIM_USER\",\"bmc_password\":\"$IPMISIM_PASSWORD\",
	\"ipmi_workarounds\":\"opensesspriv,solpayloadsize,solchannelsupport\"}")
[ "$status" = 201 ] || fail "node add: $status $(cat "$KILN_BODY_FILE")"
out=$("$KILN" console con1 --capture on) || fail "capture on: $out"

ROOT=$T/root
cp -r "$KILN_SRC/tests/fixtures/agent/roots/h100" "$ROOT"
: > "$ROOT/dev/kmsg"
# the host is the simulator's: its DMI UUID is the BMC's system GUID, so kilnd takes its reports
ipmisim_host_uuid 0 > "$ROOT/sys/class/dmi/id/product_uuid"
grep -v xid_events "$KILN_SRC/tests/fake-nvml/configs/h100-8gpu.conf" > "$T/nvml.conf"
"$KILN" agent token con1 > "$T/con1.token" 2> /dev/null || fail "agent token"
FAKE_NVML_CONFIG=$T/nvml.conf "$AGENT" --server "$KILND_URL" --root "$ROOT" --nvml-lib "$NVML" \
	--state-dir "$T/agent" --token-file "$T/con1.token" --interval 2 >> "$T/agent.log" 2>&1 &
AGENT_PID=$!
field() { "$KILN" status -o json | jq -r ".[] | select(.node == \"con1\") | .$1"; }
ready() {
	[ "$(field power)" = on ] && [ "$(field agent_last_seen)" != null ] &&
		kiln_api GET /nodes/con1/console/log > /dev/null &&
		[ "$(jq -r .session "$KILN_BODY_FILE")" = open ]
}
for ((i = 0; i < 60; i++)); do
	ready && break
	sleep 0.5
done
ready || fail "con1 not on, reporting and captured: $(field power) $(field agent_last_seen) $(cat "$KILN_BODY_FILE")"

# the kernel panics: its last words on the serial console, then nothing from the agent
sleep 0.5
cat >> "$SERIAL_DIR/tx" << 'EOF'
[ 8812.402113] NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off the bus.
[ 8812.503398] BUG: unable to handle page fault for address: ffffb1c2c0a3f000
[ 8812.611254] Kernel panic - not syncing: Fatal exception in interrupt
[ 8812.612002] ---[ end Kernel panic - not syncing: Fatal exception in interrupt ]---
EOF
for ((i = 0; i < 50; i++)); do
	grep -qF "end Kernel panic" "$KILND_DIR/console/con1.log" 2> /dev/null && break
	sleep 0.1
done
grep -qF "end Kernel panic" "$KILND_DIR/console/con1.log" ||
	fail "the panic was not captured: $(tail -5 "$KILND_DIR/console/con1.log" 2> /dev/null)"
kill "$AGENT_PID"
wait "$AGENT_PID" 2> /dev/null
AGENT_PID=
hung() { field 'reasons[]' | grep -q '^hung:'; }
for ((i = 0; i < 60; i++)); do
	hung && break
	sleep 0.5
done
hung || fail "con1 not flagged hung: $(field reasons)"
reason=$(field 'reasons[]' | grep '^hung:')
echo "$reason" | grep -qxE 'hung: powered on, agent silent for [0-9]+s; console: Kernel panic - not syncing: Fatal exception in interrupt \[reboot may clear it\]' ||
	fail "the hung reason does not carry the console's panic line: $reason"
"$KILN" events con1 --since 1h -o json |
	jq -e 'any(.[]; .kind == "hung" and (.message | test("console: Kernel panic")))' > /dev/null ||
	fail "the hung event does not carry it either"
kiln_test_stop_kilnd || fail "kilnd exited with an error"
echo "ok: a hung node's reason and event carry the captured panic line"
