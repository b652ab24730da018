# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd --backup while kilnd runs (and agents report), then the documented
# restore into a new state dir with the same secret.key: the nodes are there, a BMC read works
# with the sealed password, the old tokens work, the agent's state, history, events and audit
# are there. A restore with another secret.key is refused (the store's check value of the
# key); with that check removed, as kilnd(8) says for a lost key, it keeps the data but cannot
# unseal the BMC password. PostgreSQL (KILN_TEST_PG) is backed up with pg_dump, which kiln documents and does
# not wrap: the test skips there.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
if [ -n "${KILN_TEST_PG:-}" ]; then
	echo "skipped: under KILN_TEST_PG the store is PostgreSQL, backed up with pg_dump and" \
	     "restored with pg_restore (kilnd(8), BACKUP AND RESTORE); kilnd --backup copies SQLite only"
	exit 77
fi
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
. "$SRC/tests/sim/bmcsim.sh"
for tool in python3 sqlite3; do
	command -v "$tool" >/dev/null || { echo "skipped: $tool is missing"; exit 77; }
done
KILN=$KILN_BIN/kiln
FAILS=0
T=$KILN_TEST_TMP
LOAD_PID=
on_exit() {
	[ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

BMC_PW='backup-Pw-7!'
bmcsim_start "$T/sim" "$SRC/tests/sim/fixtures/generic" --count 2 --user admin \
	--password "$BMC_PW" || exit 1
A=$T/a
mkdir -m 0700 "$A"
kiln_test_start_kilnd "$A" || exit 1
printf '%s\n' "$BMC_PW" >"$T/bmc.pw"

# --- fill it --------------------------------------------------------------------------
for i in 0 1; do
	"$KILN" node add "n$i" --bmc "redfish+http://127.0.0.1:${BMCSIM_PORTS[$i]}" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" --group train --rack "r$i" >/dev/null 2>&1 ||
		fail "node add n$i"
done
"$KILN" node add n2 >/dev/null 2>&1 || fail "node add n2 (agent only)"
OPS=$(kiln_test_token operator ops-bot) || fail "operator token"
printf '%s\n' "$OPS" >"$T/ops.token"
"$KILN" node maintenance n1 on --reason "PSU swap" >/dev/null 2>&1 || fail "maintenance n1"
power_n0() { # what a live BMC read of n0 says: its power, else its error
	kiln_api GET "/power?range=n0" >/dev/null
	jq -r '.[0] | .power // .error // "?"' "$KILN_BODY_FILE" 2>/dev/null
}
same "a BMC read before the backup" "$(power_n0)" on

FAKE_NVML_CONFIG=$SRC/tests/fake-nvml/configs/h100-8gpu.conf "$KILN_BIN/kiln-agent" --print --once \
	--root "$SRC/tests/fixtures/agent/roots/h100" --nvml-lib "$KILN_LIB/fake-nvml/libnvidia-ml.so.1" \
	>"$T/base.json" 2>/dev/null || { echo "FAIL: kiln-agent --print" >&2; exit 1; }
for n in n0 n2; do
	"$KILN" agent token "$n" >"$T/$n.token" 2>/dev/null || fail "agent token $n"
	jq -c --arg n "$n" --arg m "$(printf '%s' "$n" | md5sum | cut -c1-32)" \
		'.host.hostname = $n | .host.machine_id = $m | .host.dmi_serial = ("DMI-" + $n)' \
		"$T/base.json" >"$T/$n.json"
done
post() { # post NODE REPORT_ID: one report with the node's agent token; prints the status
	jq -c --arg id "$(kiln_test_report_id "$2")" '.report_id = $id' "$T/$1.json" >"$T/post.json"
	curl -s -o "$T/post.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$T/$1.token")" \
		-H "Content-Type: application/json" --data-binary @"$T/post.json" "$KILN_URL/api/v1/agent/report"
}
for r in 1 2 3; do
	st=$(post n0 "before-$r")
	case "$st" in 2*) ;; *) fail "report before-$r: $st $(cat "$T/post.out")" ;; esac
done
kiln_api GET "/events?range=n0" >/dev/null
EVENTS_BEFORE=$(jq -c '[.[] | [.id, .kind, .message]]' "$KILN_BODY_FILE" 2>/dev/null)
[ "$(jq length <<<"${EVENTS_BEFORE:-[]}")" -gt 0 ] || fail "no events for n0 before the backup: $(head -c 300 "$KILN_BODY_FILE")"
kiln_api GET /audit >/dev/null
AUDIT_BEFORE=$(jq -c '[.[] | [.id, .action, .target, .outcome]]' "$KILN_BODY_FILE")

# --- the backup, while kilnd runs and an agent keeps reporting ---------------------------
: >"$T/acked"
python3 "$HERE/report_load.py" "$KILND_URL" "$T/acked" "n2=$T/n2.token=$T/n2.json" &
LOAD_PID=$!
wait_for "the load's first report" 20 test -s "$T/acked"
"$KILND" --state-dir "$A" --backup "$T/kiln-backup.db" 2>"$T/backup.err"
check "kilnd --backup beside a running kilnd and a reporting agent" $? "$(cat "$T/backup.err")"
grep -q "secret.key" "$T/backup.err"
check "kilnd --backup says the copy does not hold secret.key" $? "$(cat "$T/backup.err")"
kill "$LOAD_PID" 2>/dev/null
wait "$LOAD_PID" 2>/dev/null
LOAD_PID=
same "the backup is mode 0600" "$(stat -c %a "$T/kiln-backup.db")" 600
same "the backup passes integrity_check" "$(sqlite3 "$T/kiln-backup.db" 'PRAGMA integrity_check')" ok
same "the backup is one file (not WAL)" "$(sqlite3 "$T/kiln-backup.db" 'PRAGMA journal_mode')" delete
same "no partial file is left" "$(ls "$T" | grep -c partial)" 0
[ "$(sqlite3 "$T/kiln-backup.db" "SELECT count(*) FROM agent_reports_seen s JOIN nodes n ON n.id = s.node_id WHERE n.name = 'n2'")" -gt 0 ]
check "the backup holds reports taken while it ran" $? "none of n2's"

# refusals
"$KILND" --state-dir "$A" --backup "$A/kiln.db" 2>"$T/err" && fail "a backup onto the live database was taken"
grep -q "is the database itself" "$T/err"
check "a backup onto the live database is refused" $? "$(cat "$T/err")"
"$KILND" --state-dir "$T/nowhere" --backup "$T/x.db" 2>"$T/err"
same "a backup of a state dir without kiln.db exits 1" $? 1
[ ! -e "$T/nowhere" ]
check "and creates nothing" $? "$T/nowhere was created"
"$KILND" --state-dir "$A" --backup "$T/no/such/dir/x.db" 2>"$T/err"
same "a backup into a missing folder exits 1" $? 1

kiln_test_stop_kilnd
check "kilnd A stops cleanly" $? "exit status $?"
ADMIN_TOKEN_FILE=$A/admin.token

# --- restore into a new state dir, as kilnd(8) says ----------------------------------------
B=$T/b
mkdir -m 0700 "$B"
install -m 0600 "$A/secret.key" "$B/secret.key"
install -m 0600 "$A/admin.token" "$B/admin.token"
install -m 0600 "$T/kiln-backup.db" "$B/kiln.db"
kiln_test_start_kilnd "$B" || exit 1

kiln_api GET /nodes >/dev/null
same "the nodes are restored" "$(jq -r '[.[].name] | sort | join(",")' "$KILN_BODY_FILE")" "n0,n1,n2"
kiln_api GET /nodes/n1 >/dev/null
same "a node's settings are restored" "$(jq -r '[.rack, (.groups | join(","))] | join(" ")' "$KILN_BODY_FILE")" "r1 train"
same "a BMC read works with the sealed password" "$(power_n0)" on
same "the old operator token works" "$(kiln_api GET /nodes '' "$OPS")" 200
same "the old admin token works" "$(kiln_api GET /tokens '' "$(cat "$ADMIN_TOKEN_FILE")")" 200
same "a wrong token still does not" "$(kiln_api GET /nodes '' "not-a-token")" 401
kiln_api GET /status >/dev/null
same "maintenance is restored" "$(jq -r '.nodes[] | select(.node == "n1") | .maintenance.reason' "$KILN_BODY_FILE")" \
	"PSU swap"
kiln_api GET /gpus >/dev/null
same "the agent's GPUs are restored" "$(jq '[.. | objects | select(.uuid? != null)] | length >= 8' "$KILN_BODY_FILE")" true
kiln_api GET "/nodes/n0/history" >/dev/null
same "the agent's history is restored" "$(jq '.agent | length' "$KILN_BODY_FILE")" 3
kiln_api GET "/events?range=n0" >/dev/null
EVENTS_AFTER=$(jq -c '[.[] | [.id, .kind, .message]]' "$KILN_BODY_FILE")
jq -e --argjson b "$EVENTS_BEFORE" '$b - . | length == 0' <<<"$EVENTS_AFTER" >/dev/null
check "the events are restored (every event before the backup)" $? "before $EVENTS_BEFORE, after $EVENTS_AFTER"
kiln_api GET /audit >/dev/null
AUDIT_AFTER=$(jq -c '[.[] | [.id, .action, .target, .outcome]]' "$KILN_BODY_FILE")
jq -e --argjson b "$AUDIT_BEFORE" 'length > 0 and ($b - . | length == 0)' <<<"$AUDIT_AFTER" >/dev/null
check "the audit log is restored (every row before the backup)" $? "before $AUDIT_BEFORE, after $AUDIT_AFTER"
same "the old agent token reports to the restored kilnd" \
	"$(post n0 after-1) $(jq -r .status "$T/post.out")" "201 stored"
same "a report id seen before the backup is still a duplicate" \
	"$(post n0 before-2) $(jq -r .status "$T/post.out")" "200 duplicate"
kiln_test_stop_kilnd
check "kilnd B stops cleanly" $? "exit status $?"

# --- the same backup with another secret.key: the BMC password cannot be unsealed -----------
C=$T/c
mkdir -m 0700 "$C"
install -m 0600 "$A/admin.token" "$C/admin.token"
install -m 0600 "$T/kiln-backup.db" "$C/kiln.db"
# first refused: the database's check value of secret.key is not this key's
"$KILND" --state-dir "$C" --listen 127.0.0.1:0 2>"$T/c-refused.log"
same "another key: kilnd refuses to start" $? 1
grep -q "secret.key is not the key this database was first used with" "$T/c-refused.log"
check "another key: the refusal names the key" $? "$(cat "$T/c-refused.log")"
# the documented way on when the key is lost for good: remove the check
sqlite3 "$C/kiln.db" "DELETE FROM key_check"
kiln_test_start_kilnd "$C" || exit 1
same "another key: the nodes are there" "$(kiln_api GET /nodes/n0)" 200
out=$(power_n0)
if [ "$out" = on ]; then
	fail "another key: the BMC read worked"
else
	pass "another key: the BMC read fails ($(cut -c1-160 <<<"$out"))"
fi
kiln_test_stop_kilnd
check "kilnd C stops cleanly" $? "exit status $?"

[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all checks passed"
