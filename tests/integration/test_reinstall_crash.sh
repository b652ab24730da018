# Integration: kilnd killed (-9) right after a reinstall job sent its power cycle (issue 15).
# The restarted kilnd resumes the job at its stored step and never sends the cycle again
# (the simulator's reset count stays 1), though it was down longer than the action timeout
# and the old system's spooled reports reach it late; the cycle's audit row, cut short, says interrupted
# with the power read back at the first poll; when the job is done no row is pending.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
NVML_CONF=$SRC/tests/fake-nvml/configs/h100-8gpu.conf
ROOT=$SRC/tests/fixtures/agent/roots/h100
HOOK=$HERE/reinstall_hook.sh
for f in "$AGENT" "$NVML" "$NVML_CONF" "$ROOT/etc/os-release" "$BMCSIM" "$HOOK"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done
FAILS=0
T=$KILN_TEST_TMP
printf '[jobs]\nboot_timeout = 40s\nretry_interval = 1s\n[poller]\ninterval = 5s\n[bmc]\naction_timeout = 5s\n' >"$T/kilnd.conf"
export RH_DIR=$T/nodes RH_AGENT=$AGENT RH_NVML=$NVML RH_NVML_CONF=$NVML_CONF
mkdir -p "$RH_DIR"
on_exit() {
	touch "$RH_DIR/stopping"
	[ -s "$RH_DIR/n1/agent.pid" ] && kill -TERM "$(cat "$RH_DIR/n1/agent.pid")" 2>/dev/null
	sleep 0.2
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
printf 'password\n' >"$T/bmc.pw"
"$KILN" node add n1 --bmc "redfish+http://${SIM#http://}" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add failed" >&2; exit 1; }
d=$RH_DIR/n1
mkdir -p "$d"
cp -r "$ROOT" "$d/root"
printf 'n1\n' >"$d/root/proc/sys/kernel/hostname"
bmcsim_serial "$SRC/tests/sim/fixtures/generic" >"$d/root/sys/class/dmi/id/product_serial"
: >"$d/root/dev/kmsg"
"$KILN" agent token n1 >"$d/token" 2>/dev/null || { echo "agent token failed" >&2; exit 1; }
printf 'n1\n' >"$RH_DIR/generic-0"
"$HOOK" start n1 || exit 1
reported() { [ -n "$("$KILN" node show n1 -o json | jq -r '.agent.boot_id // empty')" ]; }
wait_for "the agent reported" 30 reported || exit 1
"$KILN" image add pxe-img --pxe >/dev/null || fail "image add"

resets() { curl -s "$SIM/_sim/state" | jq '.resets | length'; }
"$KILN" reinstall n1 --image pxe-img --yes >"$T/reinstall.out" 2>&1 || fail "reinstall: $(cat "$T/reinstall.out")"
sent() { [ "$(resets)" -ge 1 ]; }
wait_for "the job's power cycle reaches the BMC" 30 sent || exit 1
kill -KILL "$KILND_PID"
wait "$KILND_PID" 2>/dev/null
pass "kilnd killed (SIGKILL) right after the cycle was sent"
# Down longer than the action timeout: the agent's reports from the old system's last seconds
# (spooled while kilnd was down) arrive after it, and must not pass for "the cycle never
# happened".
sleep 9
kiln_test_start_kilnd "$KILND_DIR" --config "$T/kilnd.conf" --listen "127.0.0.1:$PORT" || exit 1
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
