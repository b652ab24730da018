# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd killed (-9) right after a reinstall job sent its power cycle (issue 15).
# The restarted kilnd resumes the job at its stored step and never sends the cycle again
# (the simulator's reset count stays 1), though it was down longer than the action timeout
# and the reports the old system's agent spooled meanwhile reach it late; the cycle's audit
# row, cut short, says interrupted with the power read back at the first poll; when the job
# is done no row is pending.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
FAILS=0
T=$KILN_TEST_TMP
# shellcheck source=reinstall_env.sh
. "$HERE/reinstall_env.sh"
printf '[jobs]\nboot_timeout = 40s\nretry_interval = 1s\n[poller]\ninterval = 5s\n[bmc]\naction_timeout = 5s\n' >"$T/kilnd.conf"
on_exit() {
	reinstall_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

# Each power phase takes 2 s: the cycle is still being confirmed when kilnd dies.
bmcsim_start "$T/sim" "$SRC/tests/sim/fixtures/generic" --power-delay-ms 2000 \
	--power-hook "$HOOK generic" || exit 1
SIM=$BMCSIM_URL
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
PORT=${KILND_URL##*:}
printf '%s\n' "$KILND_URL" >"$RH_DIR/url"
reinstall_node_add n1 "$BMCSIM_PORT" generic 0
"$HOOK" start n1 || exit 1
reported() { [ -n "$("$KILN" node show n1 -o json | jq -r '.agent.boot_id // empty')" ]; }
wait_for "the agent reported" 30 reported || exit 1
"$KILN" image add pxe-img --pxe >/dev/null || fail "image add"

resets() { curl -s "$SIM/_sim/state" | jq '.resets | length'; }
# The node "boots" when the test says so (below): until then no new agent, the boot id kept.
d=$RH_DIR/n1
touch "$d/no_agent"
"$KILN" reinstall n1 --image pxe-img --yes >"$T/reinstall.out" 2>&1 || fail "reinstall: $(cat "$T/reinstall.out")"
sent() { [ "$(resets)" -ge 1 ]; }
wait_for "the job's power cycle reaches the BMC" 30 sent || exit 1
kill -KILL "$KILND_PID"
wait "$KILND_PID" 2>/dev/null
pass "kilnd killed (SIGKILL) right after the cycle was sent"
# The old system's agent goes on until the power is off, spooling its reports (kilnd is
# down); kilnd stays down longer than the action timeout.
off() { grep -q ' off$' "$d/hook.log" 2>/dev/null; }
wait_for "the BMC powers the node off" 10 off
sleep 6
kiln_test_start_kilnd "$KILND_DIR" --config "$T/kilnd.conf" --listen "127.0.0.1:$PORT" || exit 1
# Those spooled reports arrive now, after the action timeout: made before the cycle took the
# old system down, they must not pass for "the cycle never happened".
late=0
for f in "$d"/agent-state/spool/*.json; do
	[ -e "$f" ] || continue
	curl -s -o /dev/null -H "Authorization: Bearer $(cat "$d/token")" -H 'Content-Type: application/json' \
		--data-binary @"$f" "$KILND_URL/api/v1/agent/report" && late=$((late + 1))
	mv "$f" "$T/"
done
[ "$late" -gt 0 ]
check "the old system's spooled reports were delivered late ($late)" $? "none spooled"
sleep 4 # several job ticks
same "no second cycle for them" "$(resets)" 1
# Now the node comes back from its new boot.
cat /proc/sys/kernel/random/uuid >"$d/root/proc/sys/kernel/random/boot_id"
rm -f "$d/no_agent"
"$HOOK" start n1 || fail "starting the new system's agent"
done_() { [ "$("$KILN" jobs n1 -o json | jq -r '.[-1].state')" = done ]; }
wait_for "the job resumed and finished" 45 done_
same "the node was cycled once" "$(resets)" 1
rows() { "$KILN" audit log -o json | jq --arg a "$1" '[.[] | select(.action == $a and .target == "n1")]'; }
read_back() { rows power.cycle | jq -e '.[0].outcome | test("^interrupted: kilnd stopped; power read back: (on|off) at ")' >/dev/null; }
wait_for "the cut cycle's row says interrupted, with the power read back" 20 read_back ||
	echo "  its row: $(rows power.cycle | jq -c '.[0]')" >&2
same "one power.cycle row" "$(rows power.cycle | jq length)" 1
same "the job's own row is finished" "$(rows reinstall | jq -r '.[0].outcome')" ok
same "no audit row is pending" \
	"$("$KILN" audit log -o json | jq '[.[] | select(.outcome == "pending")] | length')" 0

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -30 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
