# SPDX-License-Identifier: Apache-2.0
# Integration: a BMC log's entries from before kiln first looked are history, not news (issue
# 15). A BMC with 50 critical entries dated 2024 gives no event and no report line at its
# first contact; two entries injected later are two events with the BMC's own times; a
# restart raises nothing again and misses nothing that arrived while kilnd was down; a
# cleared log is history again (one info event says it was cleared).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
MOCKUP=$SRC/tests/sim/fixtures/generic
FAILS=0
T=$KILN_TEST_TMP
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
printf '[poller]\ninterval = 5s\nsel_every = 1\n' >"$T/kilnd.conf"

bmcsim_start "$T/sim" "$MOCKUP" --record-max 2000 || exit 1
SIM=$BMCSIM_URL
inject() { curl -sf -X POST "$SIM/_sim/inject" -d "$1" >/dev/null; }
for ((i = 0; i < 50; i++)); do
	inject "$(printf '{"log":{"message":"old fault %d","severity":"Critical","created":"2024-05-02T10:%02d:00Z"}}' "$i" "$i")" ||
		{ echo "inject failed" >&2; exit 1; }
done
log_reads() { curl -s "$SIM/_sim/requests" | jq '[.[] | select(.path | test("/Entries"))] | length'; }
read_since() { [ "$(log_reads)" -gt "$1" ]; }

kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
PORT=${KILND_URL##*:}
printf 'password\n' >"$T/bmc.pw"
"$KILN" node add n1 --bmc "redfish+http://${SIM#http://}" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add failed" >&2; exit 1; }
sel_events() { "$KILN" events -o json | jq '[.[] | select(.kind == "sel")]'; }

wait_for "the poller reads the log" 20 read_since 0 || exit 1
n=$(log_reads)
wait_for "and reads it again" 20 read_since "$n"
same "no event for the entries already on the BMC" "$(sel_events | jq length)" 0
same "no report line" "$("$KILN" report --since 1h -o json | jq '.went_bad | length')" 0
"$KILN" report --since 1h >"$T/report.txt" 2>&1
grep -A3 "Nodes that went bad" "$T/report.txt" | grep -q n1
check "the report's 'Nodes that went bad' names no node" $((!$?)) "$(cat "$T/report.txt")"

inject '{"log":{"message":"new fault A","severity":"Critical"}}'
inject '{"log":{"message":"new fault B","severity":"Warning"}}'
two() { [ "$(sel_events | jq length)" = 2 ]; }
wait_for "two entries injected later are two events" 20 two
ids=$(curl -s -u admin:password "$SIM/redfish/v1/Systems/sys0/LogServices/EventLog/Entries" |
	jq -r '.Members[] | select(.Message | startswith("new fault")) | .Created')
want=$(while read -r c; do date -u -d "$c" +%s; done <<<"$ids" | sort | tr '\n' ' ')
got=$(sel_events | jq -r '.[].bmc_time' | sort | tr '\n' ' ')
same "each carries the BMC's own time" "$got" "$want"
same "and when kiln saw it" "$(sel_events | jq '[.[] | select(.time >= .bmc_time)] | length')" 2
"$KILN" events >"$T/events.txt"
grep "new fault" "$T/events.txt" | grep -q "$(date -d @"${want%% *}" '+%Y-%m-%d %H:%M:%S')"
check "kiln events shows the BMC's time" $? "$(cat "$T/events.txt")"

# A restart: nothing raised again, and what arrived while kilnd was down is news.
kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
inject '{"log":{"message":"while down","severity":"Critical"}}'
kiln_test_start_kilnd "$KILND_DIR" --config "$T/kilnd.conf" --listen "127.0.0.1:$PORT" || exit 1
three() { [ "$(sel_events | jq length)" = 3 ]; }
wait_for "the entry logged while kilnd was down is an event" 20 three
n=$(log_reads)
wait_for "another read" 20 read_since "$n"
same "nothing raised twice" "$(sel_events | jq length)" 3

# A cleared log: what it holds afterwards is history again.
curl -sf -u admin:password -X POST -H 'Content-Type: application/json' -d '{}' \
	"$SIM/redfish/v1/Systems/sys0/LogServices/EventLog/Actions/LogService.ClearLog" >/dev/null ||
	fail "ClearLog on the simulator"
cleared() { "$KILN" events -o json | jq -e '[.[] | select(.kind == "bmc_log_cleared")] | length == 1' >/dev/null; }
wait_for "the clear is noticed" 20 cleared
inject '{"log":{"message":"after the clear","severity":"Critical"}}'
four() { [ "$(sel_events | jq length)" = 4 ]; }
wait_for "an entry after the clear is an event" 20 four

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
