# SPDX-License-Identifier: Apache-2.0
# Integration: everything the BMC rates, and a BMC clock that lies (issue 34). kiln-bmcsim
# serves an iDRAC-like node whose clock is 2 days 3 hours behind: `kiln status` says so (a
# warning, no repair), and a log entry the BMC dates before the newest one kiln saw is still
# news (entries are told by arrival, not by the BMC's time). Then a fan stops (0 RPM,
# Critical) and a DIMM goes Critical: both are reasons naming the part, the node critical,
# each "needs hardware inspection".
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
MOCKUP=$SRC/tests/sim/fixtures/idrac9
FAILS=0
T=$KILN_TEST_TMP
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
printf '[poller]\ninterval = 5s\nsensors_every = 1\nsel_every = 1\nhealth_every = 1s\n' >"$T/kilnd.conf"

# the BMC's clock: 2 days, 3 hours and a bit behind the host's
bmcsim_start "$T/sim" "$MOCKUP" --record-max 2000 --clock-skew -183630 || exit 1
SIM=$BMCSIM_URL
inject() { curl -sf -X POST "$SIM/_sim/inject" -d "$1" >/dev/null; }
log_reads() { curl -s "$SIM/_sim/requests" | jq '[.[] | select(.path | test("/Entries"))] | length'; }
read_since() { [ "$(log_reads)" -gt "$1" ]; }

kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/bmc.pw"
"$KILN" node add n1 --bmc "redfish+http://${SIM#http://}" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add failed" >&2; exit 1; }
reasons() { "$KILN" status n1 -o json | jq -r '.[0].reasons[]'; }
has_reason() { reasons | grep -qF -- "$1"; }
field() { "$KILN" status n1 -o json | jq -r ".[0].$1"; }
sel_events() { "$KILN" events -o json | jq '[.[] | select(.kind == "sel")]'; }

# --- the clock -------------------------------------------------------------------------------
CLOCK="bmc clock: 2d 3h behind kilnd's (log times are the BMC's)"
wait_for "the clock's skew is a reason" 30 has_reason "$CLOCK"
same "a warning, no repair class" "$(field health)|$(reasons | grep -F 'bmc clock:')" "warning|$CLOCK"

# --- new entries dated before the newest one seen are still news ----------------------------
wait_for "the poller reads the log" 20 read_since 0 || exit 1
n=$(log_reads)
wait_for "and reads it again (the log is baselined)" 20 read_since "$n"
# an entry the BMC dated ahead (written before its clock was set back): the cursor moves there
ahead=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
inject "{\"log\":{\"message\":\"dated ahead\",\"severity\":\"Warning\",\"created\":\"$ahead\"}}"
one() { [ "$(sel_events | jq '[.[] | select(.message | test("dated ahead"))] | length')" = 1 ]; }
wait_for "an entry dated an hour ahead is an event" 20 one
# now one dated by the BMC's clock, two days behind: older than the cursor, but new
inject '{"log":{"message":"dated behind","severity":"Critical"}}'
behind() { [ "$(sel_events | jq '[.[] | select(.message | test("dated behind"))] | length')" = 1 ]; }
wait_for "an entry the BMC dates 2 days back is an event all the same" 20 behind
n=$(log_reads)
wait_for "two more log reads" 20 read_since $((n + 1))
same "and neither is raised again" "$(sel_events | jq length)" 2
same "it carries the BMC's own (skewed) time, seen now" \
	"$(sel_events | jq '[.[] | select(.message | test("dated behind")) | select(.time - .bmc_time > 180000)] | length')" 1

# --- a fan at 0 RPM and a DIMM the BMC rates Critical --------------------------------------
inject '{"sensor":{"name":"System Board Fan2A","reading":0,"health":"Critical"}}' ||
	fail "inject the fan"
inject '{"sensor":{"name":"DIMM A2","health":"Critical"}}' || fail "inject the DIMM"
FAN="fan: Fan.Embedded.2 (System Board Fan2A) at 0 RPM, Critical [needs hardware inspection]"
DIMM="part: memory DIMM.Socket.A2 (DIMM A2) Critical [needs hardware inspection]"
wait_for "the fan is a reason" 30 has_reason "$FAN"
wait_for "the DIMM is a reason (read under the system's rollup)" 30 has_reason "$DIMM"
same "the node is critical, for inspection" "$(field health)" critical
same "each said once" "$(reasons | grep -cE '^(fan|part):')" 2
"$KILN" status n1 >"$T/status.txt" 2>&1
grep -qF "System Board Fan2A" "$T/status.txt"
check "kiln status shows the fan" $? "$(cat "$T/status.txt")"

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
