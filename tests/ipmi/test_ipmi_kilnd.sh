#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# IPMI through the real kilnd and kiln CLI against ipmi_sim BMCs: power status over 50 BMCs
# in about the time of one (not their sum); power and sensors while kilnd holds more than
# 1,100 descriptors; a wrong password (named, tried twice, then left alone until it
# changes); dead ports within one timeout while the others answer; FRU inventory; a SEL
# entry injected with ipmitool appearing once through the poller; console capture per group.
. "$(dirname "$0")/lib.sh"
ipmisim_require
command -v python3 > /dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
. "$KILN_SRC/tests/integration/lib.sh"
# integration/lib.sh counts failures in fail(); here the first one ends the test
fail() {
	echo "FAIL: $*"
	exit 1
}

N=50
SIM_BADPW=$N          # the BMC the wrong-password node talks to
SIM_SEL=$((N + 1))    # the BMC the second kilnd (short poller interval) polls
HOLDER_PID=
all_cleanup() {
	if [ -n "$HOLDER_PID" ]; then
		kill "$HOLDER_PID" 2> /dev/null
		wait "$HOLDER_PID" 2> /dev/null
	fi
	kiln_test_cleanup
	ipmisim_cleanup
}
ipmisim_start $((N + 2)) || fail "could not start $((N + 2)) ipmi_sim"
trap all_cleanup EXIT
KILN=$KILN_BIN/kiln
PW=$KILN_TEST_TMP/ipmi.pw
printf '%s\n' "$IPMISIM_PASSWORD" > "$PW"
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The poller spreads its first readings over [poller] interval by a hash of the node name
# (poller_jitter_ms): the wrong-password node gets a name whose first reading falls in the
# second half of the hour, so that the poller does not mark it before the test asks.
BADPW=$(python3 - << 'EOF'
for i in range(1000):
    name = "badpw%d" % i
    h = 1469598103934665603
    for ch in name.encode():
        h ^= ch
        h = (h * 1099511628211) % (1 << 64)
    if h % 3600000 > 1800000:
        print(name)
        break
EOF
)
[ -n "$BADPW" ] || fail "no node name with a late first poll"

CONF=$KILN_TEST_TMP/kilnd.conf
cat > "$CONF" << 'EOF'
[bmc]
request_timeout = 2s
[poller]
interval = 1h
[http]
connection_timeout = 10m
EOF
kiln_test_start_kilnd "" --config "$CONF" || fail "kilnd did not start"

# node NAME PORT [GROUP]: an IPMI node on 127.0.0.1:PORT with the simulators' credentials
node_add() {
	local group=()
	[ -n "${3:-}" ] && group=(--group "$3")
	"$KILN" node add "$1" --bmc "ipmi://127.0.0.1:$2" --bmc-user "$IPMISIM_USER" \
		--bmc-password-file "$PW" --ipmi-workarounds opensesspriv "${group[@]}" > /dev/null ||
		fail "node add $1"
}
for ((i = 0; i < N; i++)); do
	group=
	[ $i -lt 2 ] && group=capgrp
	node_add "$(printf 'n%02d' $i)" "${IPMISIM_PORTS[$i]}" "$group"
done

# --- (a) fan-out: 50 BMCs in about the time of the slowest, not their sum --------------------
t0=$(now_ms)
out=$("$KILN" -o json power status n00) || fail "power status n00: $out"
one_ms=$(($(now_ms) - t0))
[ "$(jq -r '.[0].power' <<< "$out")" = off ] || fail "n00 power: $out"
# the serial reference: one node at a time over 5 nodes, with kiln and with ipmipower
t0=$(now_ms)
for ((i = 0; i < 5; i++)); do
	"$KILN" -o json power status "$(printf 'n%02d' $i)" > /dev/null || fail "serial power status n0$i"
done
serial5_ms=$(($(now_ms) - t0))
ipmipower_ms=
if command -v ipmipower > /dev/null 2>&1; then
	t0=$(now_ms)
	for ((i = 0; i < 5; i++)); do
		ipmipower -D LAN_2_0 -h "127.0.0.1:${IPMISIM_PORTS[$i]}" -u "$IPMISIM_USER" -p \
			"$IPMISIM_PASSWORD" -W opensesspriv --stat > /dev/null 2>&1 ||
			fail "ipmipower --stat on sim $i"
	done
	ipmipower_ms=$(($(now_ms) - t0))
fi
t0=$(now_ms)
out=$("$KILN" -o json power status "n[00-49]") || fail "power status over $N: $out"
fan_ms=$(($(now_ms) - t0))
[ "$(jq '[.[] | select(.power == "off")] | length' <<< "$out")" = $N ] ||
	fail "not every BMC answered: $out"
sum_ms=$((serial5_ms * N / 5))
echo "measured: kiln power status: 1 BMC ${one_ms} ms; 5 one after the other ${serial5_ms} ms" \
	"(x10 = ${sum_ms} ms for $N); $N in one command ${fan_ms} ms" \
	"${ipmipower_ms:+; ipmipower --stat on 5 one after the other ${ipmipower_ms} ms}"
[ $((fan_ms * 3)) -lt "$sum_ms" ] || fail "$N BMCs took ${fan_ms} ms: not well under the sum ${sum_ms} ms"
[ "$fan_ms" -lt $((one_ms * 4 + 2000)) ] ||
	fail "$N BMCs took ${fan_ms} ms, one takes ${one_ms} ms: not about the time of one"

# --- (b) more than 1,100 descriptors in kilnd: idle keep-alive clients ------------------------
HOLD=$KILN_TEST_TMP/holder
mkfifo "$HOLD.in"
hostport=${KILND_URL#*://}
cat > "$HOLD.py" << 'EOF'
import socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
socks = []
for _ in range(n):
    s = socket.create_connection((host, port))
    socks.append(s)
print("holding %d" % len(socks), flush=True)
sys.stdin.read()  # until the test closes the pipe
EOF
python3 "$HOLD.py" "${hostport%:*}" "${hostport##*:}" 1100 < "$HOLD.in" > "$HOLD.out" 2>&1 &
HOLDER_PID=$!
exec 8> "$HOLD.in"
for ((i = 0; i < 300; i++)); do
	grep -q holding "$HOLD.out" 2> /dev/null && break
	kill -0 "$HOLDER_PID" 2> /dev/null || fail "the connection holder died: $(cat "$HOLD.out")"
	sleep 0.1
done
grep -q "holding 1100" "$HOLD.out" || fail "could not open 1100 connections: $(cat "$HOLD.out")"
fds=0
for ((i = 0; i < 100; i++)); do
	fds=$(ls "/proc/$KILND_PID/fd" | wc -l)
	[ "$fds" -gt 1100 ] && break
	sleep 0.1
done
[ "$fds" -gt 1100 ] || fail "kilnd holds only $fds descriptors"
out=$("$KILN" -o json power status "n[00-04]") || fail "power status with $fds fds: $out"
[ "$(jq '[.[] | select(.power == "off")] | length' <<< "$out")" = 5 ] || fail "power status: $out"
out=$("$KILN" -o json power on n03 --yes) || fail "power on with $fds fds: $out"
[ "$(jq -r '.[0].power' <<< "$out")" = on ] || fail "power on: $out"
[ "$(cat "${IPMISIM_DIRS[3]}/chassis/power")" = 1 ] || fail "sim 3's chassis is not on"
out=$("$KILN" -o json power off n03 --yes) || fail "power off with $fds fds: $out"
[ "$(jq -r '.[0].power' <<< "$out")" = off ] || fail "power off: $out"
[ "$(cat "${IPMISIM_DIRS[3]}/chassis/power")" = 0 ] || fail "sim 3's chassis is not off"
out=$("$KILN" -o json sensors n03) || fail "sensors with $fds fds: $out"
jq -e '.[0].sensors | map(select(.kind == "temperature" and .value == 45)) | length == 1' \
	<<< "$out" > /dev/null || fail "sensors: $out"
fds_after=$(ls "/proc/$KILND_PID/fd" | wc -l)
[ "$fds_after" -gt 1100 ] || fail "the idle connections were dropped during the test ($fds_after)"
echo "measured: kilnd held $fds descriptors ($fds_after after) while power and sensors ran"
exec 8>&-
wait "$HOLDER_PID" 2> /dev/null
HOLDER_PID=

# --- (c) a wrong password: named, tried twice, then left alone until it changes --------------
echo wrong-password > "$KILN_TEST_TMP/bad.pw"
"$KILN" node add "$BADPW" --bmc "ipmi://127.0.0.1:${IPMISIM_PORTS[$SIM_BADPW]}" \
	--bmc-user "$IPMISIM_USER" --bmc-password-file "$KILN_TEST_TMP/bad.pw" \
	--ipmi-workarounds opensesspriv > /dev/null || fail "node add $BADPW"
out=$("$KILN" power status "$BADPW" 2>&1) && fail "wrong password accepted: $out"
echo "$out" | grep -q "$BADPW" || fail "the error does not name the node: $out"
echo "$out" | grep -qi "password" || fail "the error does not say password: $out"
t0=$(now_ms)
out=$("$KILN" power status "$BADPW" 2>&1) && fail "wrong password accepted the second time: $out"
again_ms=$(($(now_ms) - t0))
echo "$out" | grep -q "credentials were rejected" || fail "not marked rejected: $out"
[ "$again_ms" -lt "$one_ms" ] || [ "$again_ms" -lt 1500 ] ||
	fail "the rejected node took ${again_ms} ms: was it tried again?"
"$KILN" node set "$BADPW" --bmc-password-file "$PW" > /dev/null || fail "node set password"
out=$("$KILN" -o json power status "$BADPW") || fail "power status after the fix: $out"
[ "$(jq -r '.[0].power' <<< "$out")" = off ] || fail "power after the fix: $out"

# --- (d) dead ports fail within their timeout while the others answer -----------------------
# three of them in one command: together they cost one timeout, not three
dead=$(ipmisim_pick_ports 3) || fail "no free ports for dead BMCs"
for d in 1 2 3; do
	node_add "dead$d" $((dead + d - 1))
done
t0=$(now_ms)
out=$("$KILN" -o json power status n00,n01,dead1,dead2,dead3)
rc=$?
dead_ms=$(($(now_ms) - t0))
[ $rc = 3 ] || fail "dead BMCs among live ones: exit $rc (want 3): $out"
jq -e '[.[] | select(.node | startswith("n")) | .power == "off"] | all and length == 2' \
	<<< "$out" > /dev/null || fail "live BMCs next to dead ones: $out"
jq -e '[.[] | select(.node | startswith("dead")) | .error | test("dead[1-3]") and
	test("timeout|timed out"; "i")] | all and length == 3' <<< "$out" > /dev/null ||
	fail "dead BMC errors: $out"
[ "$dead_ms" -ge 1500 ] && [ "$dead_ms" -lt 4500 ] ||
	fail "three dead BMCs with a 2 s timeout took ${dead_ms} ms (one timeout: 2000, the sum: 6000)"
echo "measured: 2 live + 3 dead BMCs (request_timeout 2s) in one command: ${dead_ms} ms"

# --- (e) FRU inventory ------------------------------------------------------------------------
out=$("$KILN" -o json inventory n00) || fail "inventory: $out"
jq -e '.[0] | .manufacturer == "Kiln Systems" and .model == "KS-9000" and .serial == "KSN-0001"
	and .part_number == "KS9000-A" and .bios_version == null and .fru.board_serial == "BRD-0001"
	and .fru.board_part_number == "KB9000-PCB" and .fru.board_product == "KB-9000 Board"' \
	<<< "$out" > /dev/null || fail "FRU inventory: $out"
# Get System GUID: lan.conf's guid a1b2c3d4...7e0000 for sim0 comes least significant byte
# first, as IPMI sends it; kiln writes it reversed (an agent's product_uuid matches either)
jq -e '.[0].uuid == "00007e6d-5c4b-3a29-1807-f6e5d4c3b2a1"' <<< "$out" > /dev/null ||
	fail "system GUID: $(jq -c '.[0].uuid' <<< "$out")"
out=$("$KILN" inventory n00) || fail "inventory table: $out"
echo "$out" | grep -q "KSN-0001" || fail "inventory table has no serial: $out"

# --- (g) console capture over a group ---------------------------------------------------------
capture_of() {
	kiln_api GET "/nodes/$1/console/log" > /dev/null
	jq -r .capture "$KILN_BODY_FILE"
}
out=$("$KILN" console @capgrp --capture on) || fail "capture on @capgrp: $out"
[ "$(grep -c "console capture on for n0[01]" <<< "$out")" = 2 ] || fail "capture on @capgrp: $out"
[ "$(capture_of n00)/$(capture_of n01)/$(capture_of n02)" = true/true/false ] ||
	fail "capture after @capgrp on: $(capture_of n00)/$(capture_of n01)/$(capture_of n02)"
out=$("$KILN" -o json console n02,nosuch --capture on 2>&1)
[ $? = 2 ] || fail "a range with an unknown node: not exit 2: $out"
grep -q nosuch <<< "$out" || fail "range with an unknown node does not name it: $out"
[ "$(capture_of n02)" = false ] || fail "a range with an unknown node switched n02 on"
"$KILN" console n02 --capture on > /dev/null || fail "capture on n02"
out=$("$KILN" console n02 --capture off) || fail "per-node capture off: $out"
out=$("$KILN" console @capgrp --capture off) || fail "capture off @capgrp: $out"
[ "$(capture_of n00)/$(capture_of n01)/$(capture_of n02)" = false/false/false ] || fail "capture off"
"$KILN" console @capgrp > /dev/null 2>&1 < /dev/null
[ $? = 2 ] || fail "attach to a group was not a usage error"
status=$(kiln_api POST /console/capture '{"range":"nosuch[1-2]","enabled":true}')
[ "$status" = 404 ] || fail "capture over unknown nodes: $status $(cat "$KILN_BODY_FILE")"
viewer=$(kiln_test_token viewer) || fail "viewer token"
status=$(kiln_api POST /console/capture '{"range":"@capgrp","enabled":true}' "$viewer")
[ "$status" = 403 ] || fail "a viewer switched capture: $status"
n=$("$KILN" audit log -o json | jq '[.[] | select(.action == "console.capture.on" and
	(.target == "n00" or .target == "n01"))] | length')
[ "$n" = 2 ] || fail "audit rows for capture on @capgrp: $n"
kiln_test_stop_kilnd || fail "kilnd exited with an error"

# --- (f) a SEL entry injected with ipmitool appears once through the poller ------------------
cat > "$CONF" << 'EOF'
[poller]
interval = 5s
sel_every = 1
EOF
kiln_test_start_kilnd "" --config "$CONF" || fail "second kilnd did not start"
node_add sel1 "${IPMISIM_PORTS[$SIM_SEL]}"
sel_count() { "$KILN" -o json events sel1 --kind sel 2> /dev/null | jq 'length'; }
"$KILN" -o json events --kind sel > /dev/null || fail "kiln events --kind sel"
# wait for the poller's first reading of sel1 (its power state is stored)
for ((i = 0; i < 150; i++)); do
	kiln_api GET "/status?range=sel1" > /dev/null
	[ "$(jq -r '.nodes[0].power' "$KILN_BODY_FILE")" = off ] && break
	sleep 0.1
done
sleep 6 # one more cycle: the first SEL read is done
before=$(sel_count)
[ -n "$before" ] || fail "kiln events failed"
ipmisim_sel_inject "$SIM_SEL" || fail "ipmitool could not add a SEL entry"
for ((i = 0; i < 250; i++)); do
	[ "$(sel_count)" -gt "$before" ] && break
	sleep 0.1
done
[ "$(sel_count)" = $((before + 1)) ] || fail "the injected entry: $before -> $(sel_count) sel events"
sleep 12 # two more poller cycles: the entry must not come again
[ "$(sel_count)" = $((before + 1)) ] || fail "the injected entry came again: $(sel_count)"
"$KILN" events --kind sel | grep -q sel1 || fail "kiln events does not show it"
[ "$(jq -r '.nodes[0].power' "$KILN_BODY_FILE")" = off ] || fail "the poller never read sel1"
echo "measured: sel events for sel1: $before before the injection, $((before + 1)) after, still" \
	"$((before + 1)) two poller cycles later"
kiln_test_stop_kilnd || fail "second kilnd exited with an error"
echo "ok: IPMI through kilnd: fan-out, >1100 descriptors, wrong password, dead port, FRU," \
	"SEL through the poller, console capture per group"
