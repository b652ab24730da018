#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Kept IPMI sessions, seen from the BMC side (a relay counting RMCP+ Open Session Requests,
# and the BMC's own active-session count): reads in a row share one session; a BMC restarted
# in between is answered through one retry on a fresh session; a power action after a read
# works on the kept session, is retried only when it failed before the action went out, and
# is never sent again after; a changed (wrong) password is not served by the kept session;
# an idle session is closed, and so is every kept one when the helper stops.
. "$(dirname "$0")/lib.sh"
ipmisim_require
[ -x "$KILN_BIN/kiln-udpcount" ] || { echo "SKIP: $KILN_BIN/kiln-udpcount not built"; exit 77; }
ipmisim_start 1 || fail "could not start ipmi_sim"
ipmisim_relay 0 || fail "could not start the relay"
W=$IPMISIM_WORK
T=$W/targets
D=${IPMISIM_DIRS[0]}
printf '%s\n' "$IPMISIM_PASSWORD" > "$W/password"
printf 'sim0 127.0.0.1 %s %s\n' "${IPMISIM_RELAY[0]}" "$W/pw0" > "$T"
cp "$W/password" "$W/pw0"
# a command for --between that can use lib.sh (its own shell)
LIBENV=". $IPMISIM_KIT/lib.sh; IPMISIM_PORTS=(${IPMISIM_PORTS[*]}); IPMISIM_DIRS=(${IPMISIM_DIRS[*]})"
between() { printf '%s' "bash -c '$LIBENV; $1'"; }
opens_since() { echo $(($(ipmisim_opens 0) - $1)); }
sockets_since() { echo $(($(ipmisim_sockets 0) - $1)); }
power_is() { [ "$(cat "$D/chassis/power")" = "$1" ] || fail "sim0 chassis power is $(cat "$D/chassis/power"), expected $1"; }

# 1. three reads in a row: one session, kept between rounds (the BMC counts 2 active:
#    kiln's and the query's own), closed when the helper stops
o0=$(ipmisim_opens 0)
out=$(ipmisim_drive "$T" --rounds 3 --after-each "$(between "ipmisim_active 0 >> $W/active1")" \
	power-status) || fail "3 reads: $out"
echo "$out" | jq -e '[.rounds[].results[0].power == "off"] | all' > /dev/null || fail "3 reads: $out"
[ "$(opens_since "$o0")" = 1 ] || fail "3 reads opened $(opens_since "$o0") sessions, expected 1: $out"
[ "$(tr '\n' ' ' < "$W/active1")" = "2 2 " ] || fail "active sessions between reads: $(cat "$W/active1")"
[ "$(ipmisim_active 0)" = 1 ] || fail "kept session not closed when the helper stopped"

# the counter is able to see the difference: with nothing kept, every read opens a session
o0=$(ipmisim_opens 0)
out=$(ipmisim_drive "$T" --rounds 3 --session-idle-ms 0 power-status) || fail "unkept reads: $out"
[ "$(opens_since "$o0")" = 3 ] || fail "unkept reads opened $(opens_since "$o0") sessions, expected 3"

# 2. a power action after a read: on the kept session, confirmed, one session in all
o0=$(ipmisim_opens 0)
: > "$D/chassis/history"
out=$(ipmisim_drive "$T" --rounds 2 --first power-status power on) || fail "read then on: $out"
echo "$out" | jq -e '.rounds[0].results[0].power == "off" and
	(.rounds[1].results[0] | .power == "on" and .result == "ok")' > /dev/null ||
	fail "read then on: $out"
[ "$(opens_since "$o0")" = 1 ] || fail "read then on opened $(opens_since "$o0") sessions"
power_is 1
[ "$(grep -c 'power 1' "$D/chassis/history")" = 1 ] || fail "power on sent $(grep -c 'power 1' "$D/chassis/history") times"

# 3. the BMC restarted between two reads: its sessions are gone; the second read times out
#    on the kept session, then is answered on a fresh one
o0=$(ipmisim_opens 0)
out=$(ipmisim_drive "$T" --timeout-ms 1500 --rounds 2 --between "$(between "ipmisim_restart 0")" \
	power-status) || fail "read after BMC restart: $out"
echo "$out" | jq -e '[.rounds[].results[0].power == "on"] | all' > /dev/null ||
	fail "read after BMC restart: $out"
[ "$(opens_since "$o0")" = 2 ] || fail "restart: $(opens_since "$o0") sessions opened, expected 2"

# 4. a power action whose kept session is lost before anything is sent (all answers dropped
#    from the first): retried once on a fresh session (which fails too), nothing reaches the
#    chassis
s0=$(ipmisim_sockets 0)
: > "$D/chassis/history"
rm -f "$D/drop"
out=$(ipmisim_drive "$T" --timeout-ms 1000 --rounds 2 --first power-status \
	--between "echo 0 > $D/drop" power off)
rm -f "$D/drop"
echo "$out" | jq -e '.rounds[1].results[0] | .code == "timeout"' > /dev/null ||
	fail "lost session before the action: $out"
[ "$(sockets_since "$s0")" = 2 ] || fail "lost before the action: $(sockets_since "$s0") sessions started, expected 2 (the retry): $out"
[ ! -s "$D/chassis/history" ] || fail "an action reached the chassis: $(cat "$D/chassis/history")"
power_is 1

# 5. the kept session answers the action's first read, then loses every answer: the chassis
#    control reached the BMC but no answer came; it must not be sent again on a new session
s0=$(ipmisim_sockets 0)
out=$(ipmisim_drive "$T" --timeout-ms 1000 --rounds 2 --first power-status \
	--between "echo 1 > $D/drop" power off)
rm -f "$D/drop"
echo "$out" | jq -e '.rounds[1].results[0] | .code == "timeout"' > /dev/null ||
	fail "lost answer to the action: $out"
[ "$(sockets_since "$s0")" = 1 ] || fail "action after a lost answer: $(sockets_since "$s0") sessions started, expected 1 (no retry): $out"
power_is 0 # it did reach the BMC
ipmisim_ipmitool 0 chassis power on > /dev/null || fail "ipmitool power on"

# 6. the password changed (to a wrong one) between two reads: the kept session, opened with
#    the old one, must not answer (it is closed), and the new password is refused
o0=$(ipmisim_opens 0)
rm -f "$W/active6"
out=$(ipmisim_drive "$T" --rounds 3 --after-each "$(between "ipmisim_active 0 >> $W/active6; echo wrong-password > $W/pw0")" \
	power-status)
cp "$W/password" "$W/pw0"
echo "$out" | jq -e '.rounds[0].results[0].power == "on" and
	(.rounds[1].results[0] | (.error | test("password invalid")) and .code == "authentication failed")' \
	> /dev/null || fail "wrong password after a change: $out"
# round 0 opened one; round 1 two with the wrong password (the helper tries an auth failure
# twice), none served by the kept one; round 2 nothing (the node's password was refused)
[ "$(opens_since "$o0")" = 3 ] || fail "password change: $(opens_since "$o0") sessions opened, expected 3"
[ "$(head -1 "$W/active6")" = 2 ] || fail "no kept session before the password change: $(cat "$W/active6")"

# 7. idle expiry: with a 1 s idle limit, the kept session is gone 2.5 s later, and the next
#    read opens a new one
ipmisim_restart 0 || fail "restart" # forgets the half-open sessions of the wrong password
o0=$(ipmisim_opens 0)
rm -f "$W/active7"
out=$(ipmisim_drive "$T" --session-idle-ms 1000 --rounds 2 \
	--between "$(between "ipmisim_active 0 >> $W/active7; sleep 2.5; ipmisim_active 0 >> $W/active7")" \
	power-status) || fail "idle expiry: $out"
[ "$(tr '\n' ' ' < "$W/active7")" = "2 1 " ] || fail "active sessions around idle expiry: $(cat "$W/active7")"
[ "$(opens_since "$o0")" = 2 ] || fail "idle expiry: $(opens_since "$o0") sessions opened, expected 2"
echo "ok: kept sessions (reuse, BMC restart, action retry rules, password change, idle expiry, close at stop)"
