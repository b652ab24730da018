#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The serial console end to end: ipmi_sim with a serial side (kiln-serialsim), kilnd with the
# node's capture on, `kiln console` under a pty (script). Text printed on the serial side
# reaches the attached console and the captured log (kiln console --tail); text typed into
# the console reaches the serial side; an attached console whose BMC dies ends non-zero with
# the reason; capture opens its session again after the BMC drops it.
. "$(dirname "$0")/lib.sh"
ipmisim_require
for tool in script curl jq; do
	command -v "$tool" > /dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -x "$KILN_BIN/kiln-serialsim" ] || { echo "SKIP: $KILN_BIN/kiln-serialsim not built"; exit 77; }
. "$KILN_SRC/tests/integration/lib.sh"
# integration/lib.sh's fail() only counts; in this script the first failure ends the test.
fail() {
	echo "FAIL: $*"
	exit 1
}

ipmisim_serial_side "$KILN_TEST_TMP/serial"
all_cleanup() {
	[ -n "${SCRIPT_PID:-}" ] && kill "$SCRIPT_PID" 2> /dev/null
	kiln_test_cleanup
	ipmisim_cleanup
	ipmisim_serial_stop
}

ipmisim_start 1 || fail "could not start ipmi_sim"
trap all_cleanup EXIT
kiln_test_start_kilnd || fail "kilnd did not start"
KILN=$KILN_BIN/kiln

# the three workarounds ipmi_sim's SOL needs: channel payload support, open-session privilege,
# SOL payload size
status=$(kiln_api POST /nodes "{\"name\":\"con1\",\"bmc\":\"ipmi://127.0.0.1:${IPMISIM_PORTS[0]}\",
	\"bmc_user\":\"$IPMISIM_USER\",\"bmc_password\":\"$IPMISIM_PASSWORD\",
	\"ipmi_workarounds\":\"opensesspriv,solpayloadsize,solchannelsupport\"}")
[ "$status" = 201 ] || fail "node add: $status $(cat "$KILN_BODY_FILE")"

# waits up to $2 seconds for the node's console session to be "$1"
session_wait() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kiln_api GET /nodes/con1/console/log > /dev/null
		[ "$(jq -r .session "$KILN_BODY_FILE")" = "$1" ] && return 0
		sleep 0.1
	done
	fail "console session not $1 after $2 s: $(cat "$KILN_BODY_FILE")"
}
# waits up to $2 seconds for file $3 to contain the fixed string $1
file_wait() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		grep -qF -- "$1" "$3" 2> /dev/null && return 0
		sleep 0.1
	done
	return 1
}

# capture: the console's output lands in STATE/console/con1.log
out=$("$KILN" console con1 --capture on) || fail "capture on: $out"
session_wait open 15
echo "kiln-line-one $$" >> "$SERIAL_DIR/tx"
file_wait "kiln-line-one $$" 5 "$KILND_DIR/console/con1.log" ||
	fail "serial output not captured: $(cat "$KILND_DIR/console/con1.log" 2> /dev/null)"
tail=$("$KILN" console con1 --tail 5) || fail "console --tail: $tail"
echo "$tail" | grep -qxF "kiln-line-one $$" || fail "--tail misses the line: $tail"
json=$("$KILN" -o json console con1 --tail 1) || fail "console --tail -o json: $json"
echo "$json" | jq -e '.capture == true and (.lines | length) == 1' > /dev/null ||
	fail "--tail -o json: $json"

# attach under a pty: output arrives, typed input reaches the serial side, ~. leaves
IN=$KILN_TEST_TMP/console.in
OUT=$KILN_TEST_TMP/console.out
mkfifo "$IN"
exec 7<> "$IN"
script -qfc "$KILN console con1" /dev/null < "$IN" > "$OUT" 2>&1 &
SCRIPT_PID=$!
file_wait "type ~. at the start of a line to leave" 10 "$OUT" || fail "no banner: $(cat "$OUT")"
sleep 0.3
echo "kiln-line-two $$" >> "$SERIAL_DIR/tx"
file_wait "kiln-line-two $$" 5 "$OUT" || fail "serial output did not reach kiln console: $(cat "$OUT")"
# ipmi_sim may drop the first SOL packet of a session as a duplicate: a throwaway CR first
printf '\r' >&7
sleep 0.4
printf 'typed-%s\r' "$$" >&7
file_wait "typed-$$" 5 "$SERIAL_DIR/rx" || fail "typed input did not reach the serial side: $(od -c "$SERIAL_DIR/rx")"
printf '~.' >&7
for ((i = 0; i < 50; i++)); do
	kill -0 "$SCRIPT_PID" 2> /dev/null || break
	sleep 0.1
done
kill -0 "$SCRIPT_PID" 2> /dev/null && fail "~. did not end kiln console"
wait "$SCRIPT_PID" || fail "kiln console exited with $?: $(cat "$OUT")"
SCRIPT_PID=
grep -qF "left con1's console" "$OUT" || fail "no goodbye: $(cat "$OUT")"
file_wait "kiln-line-two $$" 1 "$KILND_DIR/console/con1.log" || fail "attached output not captured"
session_wait open 2 # capture keeps the session after the client left

# the BMC goes away (its session times out) and comes back: an attached kiln console ends
# with an error and the reason, capture opens the session again
script -qefc "$KILN console con1" /dev/null < "$IN" > "$OUT" 2>&1 &
SCRIPT_PID=$!
file_wait "type ~. at the start of a line to leave" 10 "$OUT" || fail "no banner: $(cat "$OUT")"
kill "${IPMISIM_PIDS[0]}"
wait "${IPMISIM_PIDS[0]}" 2> /dev/null
for ((i = 0; i < 300; i++)); do
	kill -0 "$SCRIPT_PID" 2> /dev/null || break
	sleep 0.1
done
kill -0 "$SCRIPT_PID" 2> /dev/null && fail "kiln console outlived its BMC by 30 s: $(cat "$OUT")"
wait "$SCRIPT_PID" && fail "kiln console exited 0 when its BMC died: $(cat "$OUT")"
SCRIPT_PID=
grep -q "^kiln: console closed: .*session timeout" "$OUT" ||
	fail "kiln console did not say why it ended: $(cat "$OUT")"
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do
	kiln_api GET /nodes/con1/console/log > /dev/null
	[ "$(jq -r .session "$KILN_BODY_FILE")" != open ] && break
	sleep 0.2
done
[ "$(jq -r .session "$KILN_BODY_FILE")" != open ] || fail "the session outlived its BMC"
(cd "${IPMISIM_DIRS[0]}" && exec ipmi_sim -c lan.conf -f "$IPMISIM_KIT/node.emu" -s state -n \
	>> "${IPMISIM_DIRS[0]}/sim.log" 2>&1 < /dev/null) &
IPMISIM_PIDS[0]=$!
session_wait open 40
sleep 0.5
echo "kiln-line-three $$" >> "$SERIAL_DIR/tx"
file_wait "kiln-line-three $$" 10 "$KILND_DIR/console/con1.log" ||
	fail "no capture after the BMC came back: $(cat "$KILND_DIR/console/con1.log")"

# errors: an unknown node, a node without an IPMI address, a viewer may not attach
out=$("$KILN" console nosuch --tail 2>&1) && fail "--tail of an unknown node: $out"
echo "$out" | grep -q "not found" || fail "unknown node: $out"
viewer=$(kiln_test_token viewer) || fail "viewer token"
out=$(KILN_TOKEN_FILE= KILN_TOKEN=$viewer "$KILN" console con1 < /dev/null 2>&1) &&
	fail "a viewer attached: $out"
echo "$out" | grep -q "operator" || fail "viewer refusal: $out"
status=$(kiln_api GET /nodes/con1/console)
[ "$status" = 426 ] || fail "console without Upgrade: $status"

out=$("$KILN" console con1 --capture off) || fail "capture off: $out"
session_wait closed 10
kiln_test_stop_kilnd || fail "kilnd exited with an error"
echo "ok: console output in kiln console and the capture, input to the serial side, reconnect"
