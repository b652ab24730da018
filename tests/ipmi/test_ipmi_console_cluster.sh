#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The serial console with two kilnd on one PostgreSQL database: a node's console runs on its
# owner only (a BMC takes one SOL session). Capture switched on through the other instance A
# is opened by the owner B (B's state dir gets the log, A's none); A answers the captured log
# and an attach with 421 naming B, which `kiln console` follows: --tail through A shows what
# B captured, and a console attached through A receives the serial output. Needs
# PostgreSQL: KILN_TEST_PG, or a throw-away server from tests/pg/pg-server.sh.
. "$(dirname "$0")/lib.sh"
ipmisim_require
for tool in script curl jq psql; do
	command -v "$tool" > /dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -x "$KILN_BIN/kiln-serialsim" ] || { echo "SKIP: $KILN_BIN/kiln-serialsim not built"; exit 77; }
. "$KILN_SRC/tests/integration/lib.sh"
fail() {
	echo "FAIL: $*"
	exit 1
}
kiln_test_need_pg

ipmisim_serial_side "$KILN_TEST_TMP/serial"
all_cleanup() {
	[ -n "${SCRIPT_PID:-}" ] && kill "$SCRIPT_PID" 2> /dev/null
	kiln_test_cleanup
	ipmisim_cleanup
	ipmisim_serial_stop
}
ipmisim_start 1 || fail "could not start ipmi_sim"
trap all_cleanup EXIT
KILN=$KILN_BIN/kiln

# With these instance ids B owns node id 1 (the first node of a fresh database); A none.
printf '[cluster]\nlease = 5s\n' > "$KILN_TEST_TMP/kilnd.conf"
A_DIR=$KILN_TEST_TMP/a
B_DIR=$KILN_TEST_TMP/b
mkdir -m 0700 "$A_DIR" "$B_DIR"
echo 00000000000000aa > "$A_DIR/instance.id"
echo 00000000000000bb > "$B_DIR/instance.id"
kiln_test_start_kilnd "$A_DIR" --config "$KILN_TEST_TMP/kilnd.conf" || fail "A did not start"
A_URL=$KILND_URL
kiln_test_start_instance "$A_DIR" "$B_DIR" --config "$KILN_TEST_TMP/kilnd.conf" ||
	fail "B did not start"
B_URL=$KILND_URL
export KILN_TOKEN_FILE=$A_DIR/admin.token
ka() { KILN_URL=$A_URL "$KILN" "$@"; }
kb() { KILN_URL=$B_URL "$KILN" "$@"; }
both_live() {
	[ "$(ka cluster status -o json | jq '[.instances[] | select(.live)] | length')" = 2 ] &&
		[ "$(kb cluster status -o json | jq '[.instances[] | select(.live)] | length')" = 2 ]
}
wait_for "A and B see each other" 15 both_live || fail "the instances do not see each other"

out=$(ka node add con1 --bmc "ipmi://127.0.0.1:${IPMISIM_PORTS[0]}" --bmc-user "$IPMISIM_USER" \
	--bmc-password-file <(printf '%s\n' "$IPMISIM_PASSWORD") \
	--ipmi-workarounds opensesspriv,solpayloadsize,solchannelsupport 2>&1) ||
	fail "node add: $out"

# A does not hold the console: it names the owner (once A's own heartbeat has read B's row:
# until then A takes itself for the only instance)
log_through_a() {
	status=$(curl -s -o "$KILN_TEST_TMP/421.json" -w '%{http_code}' \
		-H "Authorization: Bearer $(cat "$A_DIR/admin.token")" \
		"$A_URL/api/v1/nodes/con1/console/log")
	[ "$status" = 421 ]
}
for ((i = 0; i < 20; i++)); do
	log_through_a && break
	sleep 0.5
done
[ "$status" = 421 ] || fail "the console log through A: HTTP $status $(cat "$KILN_TEST_TMP/421.json")"
[ "$(jq -r .owner "$KILN_TEST_TMP/421.json")" = 00000000000000bb ] ||
	fail "421 does not name B: $(cat "$KILN_TEST_TMP/421.json")"
[ "$(jq -r .owner_url "$KILN_TEST_TMP/421.json")" = "$B_URL" ] ||
	fail "421 does not give B's URL: $(cat "$KILN_TEST_TMP/421.json")"
echo "ok: A answers 421 naming the owner B and its URL"

# capture on through A: B opens the session (its reconcile reads the flag within 5 s)
out=$(ka console con1 --capture on) || fail "capture on through A: $out"
for ((i = 0; i < 200; i++)); do
	[ "$(kb -o json console con1 --tail 1 2> /dev/null | jq -r .session)" = open ] && break
	sleep 0.1
done
[ "$(kb -o json console con1 --tail 1 2> /dev/null | jq -r .session)" = open ] ||
	fail "B did not open the captured console: $(kb -o json console con1 --tail 1 2>&1)"
echo "ok: the owner B opened the capture asked through A"
sleep 0.5
echo "kiln-cluster-one $$" >> "$SERIAL_DIR/tx"
for ((i = 0; i < 50; i++)); do
	grep -qF "kiln-cluster-one $$" "$B_DIR/console/con1.log" 2> /dev/null && break
	sleep 0.1
done
grep -qF "kiln-cluster-one $$" "$B_DIR/console/con1.log" 2> /dev/null ||
	fail "B did not capture the line"
[ ! -s "$A_DIR/console/con1.log" ] || fail "A captured too: $(cat "$A_DIR/console/con1.log")"
echo "ok: B captures, A opens no session of its own"

tail=$(ka console con1 --tail 5) || fail "console --tail through A: $tail"
echo "$tail" | grep -qxF "kiln-cluster-one $$" || fail "--tail through A misses the line: $tail"
echo "ok: --tail through A follows to B"

IN=$KILN_TEST_TMP/console.in
OUT=$KILN_TEST_TMP/console.out
mkfifo "$IN"
exec 7<> "$IN"
script -qfc "env KILN_URL=$A_URL $KILN console con1" /dev/null < "$IN" > "$OUT" 2>&1 &
SCRIPT_PID=$!
for ((i = 0; i < 100; i++)); do
	grep -qF "type ~. at the start of a line to leave" "$OUT" && break
	sleep 0.1
done
grep -qF "type ~. at the start of a line to leave" "$OUT" || fail "no banner: $(cat "$OUT")"
sleep 0.3
echo "kiln-cluster-two $$" >> "$SERIAL_DIR/tx"
for ((i = 0; i < 50; i++)); do
	grep -qF "kiln-cluster-two $$" "$OUT" && break
	sleep 0.1
done
grep -qF "kiln-cluster-two $$" "$OUT" || fail "output did not reach the console attached through A: $(cat "$OUT")"
printf '~.' >&7
for ((i = 0; i < 50; i++)); do
	kill -0 "$SCRIPT_PID" 2> /dev/null || break
	sleep 0.1
done
wait "$SCRIPT_PID" || fail "kiln console exited with $?: $(cat "$OUT")"
SCRIPT_PID=
echo "ok: a console attached through A runs on B"
echo "all cluster console checks passed"
