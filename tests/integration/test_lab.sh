# SPDX-License-Identifier: Apache-2.0
# Integration: the README's demo lab (deploy/lab.sh) with the binaries of this build: it ends
# with the export lines and a status table of its 10 simulated nodes; a power cycle through the
# CLI goes through the simulated BMC's power hook and comes back as a new boot id from the
# node's agent; the IPMI nodes' serial consoles show their serial side's boot text (attached
# and --tail), survive SOL (ipmi_sim once died of it) and a power cycle boots gpu10 again on
# its console; a console whose BMC dies ends non-zero with the reason; deploy/lab.sh down
# stops every process it started.
set -u
FAILS=0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
for tool in ipmi_sim sdrcomp jq curl setsid ss script; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done

export KILN_LAB_DIR=$KILN_TEST_TMP/lab KILN_LAB_PORT=0 KILN_LAB_NO_BUILD=1
KILN_LAB_BUILD_DIR=$(dirname "$KILN_BIN")
export KILN_LAB_BUILD_DIR
LAB_SH=$SRC/deploy/lab.sh
KILN=$KILN_BIN/kiln

con_pid=
lab_cleanup() {
	[ -n "$con_pid" ] && kill "$con_pid" 2>/dev/null
	"$LAB_SH" down >/dev/null 2>&1
	kiln_test_cleanup
}
trap lab_cleanup EXIT

"$LAB_SH" >"$KILN_TEST_TMP/up.out" 2>"$KILN_TEST_TMP/up.err" ||
	{ cat "$KILN_TEST_TMP/up.err" "$KILN_TEST_TMP/up.out"; echo "FAIL: deploy/lab.sh failed"; exit 1; }
grep -q '^export KILN_URL=http://127.0.0.1:' "$KILN_TEST_TMP/up.out" && pass "prints export KILN_URL" ||
	fail "no export KILN_URL line"
grep -q '^export KILN_TOKEN_FILE=' "$KILN_TEST_TMP/up.out" && pass "prints export KILN_TOKEN_FILE" ||
	fail "no export KILN_TOKEN_FILE line"
grep -q '^NODE ' "$KILN_TEST_TMP/up.out" && grep -q '^10 nodes' "$KILN_TEST_TMP/up.out" &&
	pass "ends with a status table of 10 nodes" || fail "no status table: $(tail -15 "$KILN_TEST_TMP/up.out")"

eval "$(grep '^export KILN_' "$KILN_TEST_TMP/up.out")"
kinds=$("$KILN" node list -o json | jq -r '[.[].bmc | split(":")[0]] | unique | join(",")')
same "Redfish and IPMI BMCs in the lab" "$kinds" "ipmi,redfish+http"

# Ready means ready: when deploy/lab.sh returns, what the README tells of the lab is there
# already, not waited for (issue 37: in 3 of 4 starts it printed its status before an agent
# had reported and before a driver warning showed). The README's claims, then each checked.
README=$SRC/README.md
for claim in "gpu08 runs GPU work" "gpu02's GPU 3 is held down by heat" \
	"gpu06's BMC rates a fan failed" "gpu03's GPU memory errors want a reset"; do
	tr '\n' ' ' <"$README" | grep -q "$claim" && pass "the README says: $claim" ||
		fail "the README no longer says: $claim"
done
silent_on() { "$KILN" status -o json | jq -r '[.[] | select(.power == "on" and .agent_last_seen == null) | .node] | join(" ")'; }
same "when the lab is up, every powered-on node's agent has reported" "$(silent_on)" ""
grep -q '^10 nodes' "$KILN_TEST_TMP/up.out" && ! grep -E '^gpu[0-9]+ +on .*never' "$KILN_TEST_TMP/up.out"
check "... and the status it printed shows no agent never seen on a node that is on" $? \
	"$(grep -A12 '^NODE ' "$KILN_TEST_TMP/up.out")"

# the node the README says trains shows its work, and refuses a cycle for it
works() { "$KILN" status gpu08 -o json | jq -r '.[0].work' | grep -qE '^[0-9]+ procs?$'; }
works && pass "gpu08 shows its training process in WORK" ||
	fail "gpu08 shows no work: $("$KILN" status gpu08 -o json | jq -c '.[0].work')"
"$KILN" power cycle gpu08 --yes >"$KILN_TEST_TMP/busy.out" 2>&1
same "kiln power cycle gpu08 is refused for its work (exit 1)" "$?" 1
grep -q 'gpu process' "$KILN_TEST_TMP/busy.out"
check "the refusal names the process" $? "$(cat "$KILN_TEST_TMP/busy.out")"

# the lab's two hardware faults, each with what will fix it in kiln status
reason_of() { "$KILN" status "$1" -o json | jq -r --arg p "$2" '.[0].reasons[] | select(startswith($p))'; }
throttled() { reason_of gpu02 "throttle: gpu 3 " | grep -q 'hw_thermal_slowdown: SM 1005 of 1980 MHz.*\[needs hardware inspection\]$'; }
throttled && pass "gpu02 shows its GPU 3 held down by heat, to inspect" ||
	fail "gpu02: $("$KILN" status gpu02 -o json | jq -c '.[0].reasons')"
fan_failed() { reason_of gpu06 "fan: " | grep -q 'Critical.*\[needs hardware inspection\]$'; }
fan_failed && pass "gpu06 shows its failed fan, to inspect" ||
	fail "gpu06: $("$KILN" status gpu06 -o json | jq -c '.[0].reasons')"
reason_of gpu03 "" | grep -q '\[reboot may clear it\]$' && pass "gpu03's memory errors: a reboot may clear them" ||
	fail "gpu03: $("$KILN" status gpu03 -o json | jq -c '.[0].reasons')"
"$KILN" status gpu02,gpu06 >"$KILN_TEST_TMP/faults.txt" 2>&1
grep -q 'needs hardware inspection' "$KILN_TEST_TMP/faults.txt"
check "kiln status (the table) shows the repair class" $? "$(cat "$KILN_TEST_TMP/faults.txt")"

boot_id() { "$KILN" node show gpu01 -o json | jq -r '.agent.boot_id // empty'; }
has_boot() { [ -n "$(boot_id)" ]; }
wait_for "gpu01's agent reported" 60 has_boot
before=$(boot_id)
"$KILN" power cycle gpu01 --yes >"$KILN_TEST_TMP/cycle.out" 2>&1 &&
	pass "power cycle gpu01" || fail "power cycle: $(cat "$KILN_TEST_TMP/cycle.out")"
new_boot() { b=$(boot_id); [ -n "$b" ] && [ "$b" != "$before" ]; }
wait_for "gpu01's agent came back with a new boot id" 60 new_boot && pass "new boot id after the cycle"
# every agent is its node's: none refused (their DMI serials are their BMCs', each BMC's own)
same "no agent identity refused in the lab" "$("$KILN" agent identities -o json | jq length)" 0

# --- the IPMI nodes' serial consoles ---
sim_pid=$(cat "$KILN_LAB_DIR/run/ipmisim-1.pid")
booted() { "$KILN" console gpu10 --tail 1 2>/dev/null | grep -qxF 'gpu10 login: '; }
wait_for "gpu10's boot text captured" 20 booted
tail=$("$KILN" console gpu10 --tail 3 2>&1)
same "kiln console gpu10 --tail 3: the last lines" "$tail" "Debian GNU/Linux 12 gpu10 ttyS1

gpu10 login: "
"$KILN" console gpu10 --tail 2>&1 | grep -q '\] Linux version' && pass "--tail shows the kernel lines" ||
	fail "--tail: no kernel lines: $("$KILN" console gpu10 --tail 2>&1)"

# attached under a pty: typed lines reach the serial side, which answers with its prompt; a
# power cycle boots the node on the attached console; ~. leaves with 0
CON_IN=$KILN_TEST_TMP/console.in
CON_OUT=$KILN_TEST_TMP/console.out
mkfifo "$CON_IN"
exec 7<>"$CON_IN"
script -qefc "$KILN console gpu10" /dev/null <"$CON_IN" >"$CON_OUT" 2>&1 &
con_pid=$!
con_has() { grep -qF -- "$1" "$CON_OUT"; }
gone() { ! kill -0 "$con_pid" 2>/dev/null; }
wait_for "kiln console gpu10 attached" 10 con_has "type ~. at the start of a line" &&
	pass "kiln console gpu10 attached"
# ipmi_sim may drop a session's first SOL packet as a duplicate: a throwaway CR first
printf '\r' >&7
sleep 0.4
printf 'root\r' >&7
prompted() { tr -d '\r' <"$CON_OUT" | grep -qx 'gpu10 login: root' && tr -d '\r' <"$CON_OUT" | tail -1 | grep -qx 'gpu10 login: '; }
wait_for "the console shows the serial side's echo and login prompt" 10 prompted &&
	pass "kiln console shows the serial side's login prompt"
"$KILN" power cycle gpu10 --yes >"$KILN_TEST_TMP/cycle10.out" 2>&1 || fail "power cycle gpu10: $(cat "$KILN_TEST_TMP/cycle10.out")"
wait_for "gpu10's boot text on the attached console" 20 con_has "DMI: kiln lab simulated node gpu10" &&
	pass "kiln console shows gpu10 booting after the power cycle"
printf '~.' >&7
wait_for "~. ends kiln console" 5 gone || kill "$con_pid"
wait "$con_pid"
check "~. leaves kiln console with 0" $? "$(cat "$CON_OUT")"
con_has "left gpu10's console" && pass "kiln console says it left" || fail "no goodbye: $(cat "$CON_OUT")"
kill -0 "$sim_pid" 2>/dev/null && pass "ipmi_sim of gpu10 is alive after SOL" ||
	fail "ipmi_sim of gpu10 died: $(tail -5 "$KILN_LAB_DIR/logs/ipmisim-1.log")"
power=$("$KILN" -o json power status gpu10 2>&1)
same "kiln power status gpu10 after the console" "$(echo "$power" | jq -r '.[0].power' 2>/dev/null)" on

# a console whose BMC dies under it ends non-zero, saying why (input from a new pipe: none
# of the bytes typed above is left for it)
exec 7>&-
rm -f "$CON_IN"
mkfifo "$CON_IN"
exec 7<>"$CON_IN"
script -qefc "$KILN console gpu09" /dev/null <"$CON_IN" >"$CON_OUT" 2>&1 &
con_pid=$!
wait_for "kiln console gpu09 attached" 10 con_has "type ~. at the start of a line"
kill "$(cat "$KILN_LAB_DIR/run/ipmisim-0.pid")"
wait_for "kiln console gpu09 ends after its BMC died" 30 gone || kill "$con_pid"
wait "$con_pid"
rc=$?
con_pid=
[ "$rc" != 0 ] && pass "a lost console exits non-zero ($rc)" || fail "a lost console exited 0: $(cat "$CON_OUT")"
grep -q '^kiln: console closed: .*session timeout' "$CON_OUT" && pass "a lost console prints why" ||
	fail "a lost console does not say why: $(cat "$CON_OUT")"
exec 7>&-

pids=$(cat "$KILN_LAB_DIR"/run/*.pid 2>/dev/null)
t0=$(date +%s)
"$LAB_SH" down >"$KILN_TEST_TMP/down.out" 2>&1 || fail "deploy/lab.sh down failed: $(tail -5 "$KILN_TEST_TMP/down.out")"
# everything stopped at once, waited for once (issue 37: 32 s, one process after the other;
# now 5-9 s on a quiet machine, but 39 s once under a full parallel test run: only a hang is
# failed here, the time is said)
down_s=$(($(date +%s) - t0))
echo "deploy/lab.sh down took $down_s s"
check "deploy/lab.sh down ends ($down_s s)" "$([ "$down_s" -le 60 ]; echo $?)" \
	"$(cat "$KILN_TEST_TMP/down.out")"
left=0
for p in $pids; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
same "every lab process stopped" "$left" 0

[ "$FAILS" = 0 ] || { echo "$FAILS failures" >&2; exit 1; }
echo "all passed"
