#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Integration: a kiln that reads more of a BMC's logs than the one before it (issue 32) raises
# no old entry as news after the upgrade. kilnd reads a tree, is stopped, and its database is
# put back as the kiln before read the same tree left it (only what that one stored: the
# entries of the services it read, under the ids it gave them, its count, its cursor); the
# restarted kilnd must raise no "sel" event and no "bmc_log_cleared" event, and a new entry
# must still be one event.
#  - supermicro-hgx: two services called Log1; the kiln before listed the system's only, as
#    "Log1/N": those ids are kept, the manager's entries are new to kiln;
#  - cray-ex: the kiln before read the logs of a microcontroller that has none; the BMC's
#    EventLog (20 entries) is a service kiln never read: history, not 20 events;
#  - lenovo-xcc: the kiln before read one log collection twice (count 8 for 4 entries) and no
#    AuditLog: the count falls to 7, which is no cleared log.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
if [ -z "${KILN_TEST_PG:-}" ]; then
	command -v sqlite3 >/dev/null || { echo "skipped: the sqlite3 shell is not installed"; exit 77; }
fi

KILN=$KILN_BIN/kiln
FIX=$SRC/tests/sim/fixtures/vendor
FAILS=0
T=$KILN_TEST_TMP
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
printf '[poller]\ninterval = 5s\nsel_every = 1\n' >"$T/kilnd.conf"
printf 'password\n' >"$T/bmc.pw"

events() { "$KILN" events -o json | jq -c "[.[] | select(.kind == \"$1\")]"; }
log_reads() { curl -s "$SIM/_sim/requests" | jq '[.[] | select(.path | test("/Entries"))] | length'; }
read_since() { [ "$(log_reads)" -gt "$1" ]; }
# one more log read of the poller's, whole (the requests of a read come one after another;
# the log state is written when the last answer is in: a second look at the count settles it)
one_read() {
	local n
	n=$(log_reads)
	wait_for "$TREE: the poller reads the log" 30 read_since "$n" || return 1
	sleep 1
}

# upgrade TREE SQL: reads TREE with a fresh kilnd, stops it, runs SQL on its database (the
# state the kiln before would have left), starts it again and lets it read the log.
upgrade() {
	TREE=$1
	bmcsim_start "$T/sim-$TREE" "$FIX/$TREE" --record-max 5000 || exit 1
	SIM=$BMCSIM_URL
	kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
	PORT=${KILND_URL##*:}
	"$KILN" node add n1 --bmc "redfish+http://${SIM#http://}" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add failed" >&2; exit 1; }
	one_read
	same "$TREE: nothing raised at first contact" "$(events sel | jq length)" 0
	kiln_test_stop_kilnd || fail "$TREE: kilnd exited non-zero: $(tail -20 "$KILND_LOG")"
	kiln_test_sql "$2" >/dev/null || fail "$TREE: the SQL that makes the old state"
	kiln_test_start_kilnd "$KILND_DIR" --config "$T/kilnd.conf" --listen "127.0.0.1:$PORT" || exit 1
	one_read
}

# news INJECT: an entry that arrives now is one event
news() {
	local one
	curl -sf -X POST "$SIM/_sim/inject" -d "$1" >/dev/null || fail "$TREE: inject"
	one() { [ "$(events sel | jq length)" = 1 ]; }
	wait_for "$TREE: an entry that arrives after the upgrade is one event" 30 one &&
		pass "$TREE: an entry that arrives after the upgrade is one event"
}

finish() {
	kiln_test_stop_kilnd || fail "$TREE: kilnd exited non-zero: $(tail -20 "$KILND_LOG")"
	bmcsim_stop_all
}

# The kiln before stored "sel:<id>:<time>" for what it listed, and marked no service.
NODE="(SELECT id FROM nodes WHERE name = 'n1')"

upgrade supermicro-hgx "DELETE FROM bmc_log WHERE node_id = $NODE AND
	(entry_key LIKE 'svc:%' OR entry_key LIKE 'sel:Managers/%');"
same "$TREE: no old entry raised (the system's Log1/N keep their ids)" "$(events sel | jq length)" 0
same "$TREE: no cleared log" "$(events bmc_log_cleared | jq length)" 0
# (the manager's 4, older than the newest entry kiln had seen, are not asked for again)
got=$(kiln_test_sql "SELECT count(*) FROM bmc_log WHERE node_id = $NODE AND entry_key LIKE 'sel:%'")
same "$TREE: the system's 6 entries stored once, under their old keys" "$got" 6
news '{"log":{"service":"Log1","message":"PSU2 failure detected - Assertion","severity":"Critical"}}'
finish

upgrade cray-ex "DELETE FROM bmc_log WHERE node_id = $NODE;
	UPDATE bmc_log_state SET count = 0, newest = 0 WHERE node_id = $NODE;
	UPDATE node_bmc_state SET sel_cursor = 0 WHERE node_id = $NODE;"
same "$TREE: the EventLog kiln never read is history, not 20 events" "$(events sel | jq length)" 0
got=$(kiln_test_sql "SELECT count(*) FROM bmc_log WHERE node_id = $NODE AND entry_key LIKE 'sel:%' AND history = 1")
same "$TREE: its 20 entries stored as history" "$got" 20
news '{"log":{"service":"EventLog","message":"Node0 heartbeat lost.","severity":"Critical"}}'
finish

upgrade lenovo-xcc "DELETE FROM bmc_log WHERE node_id = $NODE AND
	(entry_key LIKE 'svc:%' OR entry_key LIKE 'sel:AuditLog/%');
	UPDATE bmc_log_state SET count = 8 WHERE node_id = $NODE;"
same "$TREE: no cleared log for a count read once instead of twice" \
	"$(events bmc_log_cleared | jq length)" 0
same "$TREE: no old entry raised" "$(events sel | jq length)" 0
news '{"log":{"service":"PlatformLog","message":"Fan 3 failure","severity":"Critical"}}'
finish

[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
