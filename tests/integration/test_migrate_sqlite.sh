# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd --migrate-from-sqlite. A kilnd on SQLite (3 nodes on simulated BMCs, one
# node with an agent's report, a viewer token, audit rows, events) is stopped; its kiln.db is
# copied into a fresh PostgreSQL database under a new state dir with another secret.key; two
# kilnd on that database then take the old admin and viewer tokens, list every node, read
# every BMC's power (the re-sealed passwords open with the new key) and show the old audit
# log and events. The SQLite file is left unchanged; a second migration into the same
# database, one with the wrong secret.key beside the SQLite file, and one into a SQLite store
# are refused. Needs PostgreSQL: KILN_TEST_PG, or a throw-away server started here.
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
MOCKUP=$SRC/tests/sim/fixtures/idrac9
T=$KILN_TEST_TMP
FAILS=0

on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
kiln_test_need_pg
command -v sqlite3 >/dev/null || { echo "skipped: the sqlite3 shell is not installed"; exit 77; }

bmcsim_start "$T/sim" "$MOCKUP" --count 3 || exit 1
printf 'password\n' >"$T/bmc.pw"

# --- the old kilnd, on SQLite whichever leg runs this ---------------------------------------
OLD=$T/old
mkdir -m 0700 "$OLD"
KILN_TEST_PG='' kiln_test_start_kilnd "$OLD" || exit 1
OLD_PID=$KILND_PID
[ -f "$OLD/kiln.db" ] || { echo "FAIL: the old kilnd is not on SQLite" >&2; exit 1; }
for i in 1 2 3; do
	"$KILN" node add "n0$i" --bmc "redfish+http://127.0.0.1:${BMCSIM_PORTS[$((i - 1))]}" \
		--bmc-user admin --bmc-password-file "$T/bmc.pw" >/dev/null ||
		{ echo "node add n0$i failed" >&2; exit 1; }
done
"$KILN" node add agent01 >/dev/null || { echo "node add agent01 failed" >&2; exit 1; }
VIEWER=$("$KILN" token create --role viewer --name migrated-viewer -o json | jq -r .token)
[ -n "$VIEWER" ] && [ "$VIEWER" != null ] || { echo "FAIL: no viewer token" >&2; exit 1; }
"$KILN" power off n02 --yes >/dev/null || fail "power off n02 on the old kilnd"
# an agent's report (its own node, no BMC): history and events
mkdir -p "$T/roots"
cp -r "$ROOT" "$T/roots/agent01"
printf 'agent01\n' >"$T/roots/agent01/proc/sys/kernel/hostname"
"$KILN" agent token agent01 >"$T/agent01.token" || fail "kiln agent token agent01"
for run in 1 2; do
	FAKE_NVML_CONFIG=$NVML_CONF timeout 60 "$AGENT" --server "$KILND_URL" --root "$T/roots/agent01" \
		--nvml-lib "$NVML" --state-dir "$T/agent01" --token-file "$T/agent01.token" --once \
		>>"$T/agent01.log" 2>&1 || fail "agent report $run: $(tail -3 "$T/agent01.log")"
done
kiln_api GET "/audit?limit=1000" >/dev/null
OLD_POWER_OFF=$(jq '[.[] | select((.detail // "" | tostring | test("off")) and (.target // "" | tostring | test("n02")))] | length' "$KILN_BODY_FILE")
kiln_api GET "/events?limit=1000" >/dev/null
OLD_EVENTS=$(jq 'if type == "array" then length else (.events | length) end' "$KILN_BODY_FILE")
OLD_HISTORY=$(sqlite3 "$OLD/kiln.db" "SELECT count(*) FROM agent_history")
echo "old kilnd: $OLD_POWER_OFF audit row(s) of power off n02, $OLD_EVENTS events, $OLD_HISTORY history rows"
[ "$OLD_POWER_OFF" -ge 1 ] || fail "the old audit log has the power off of n02"
[ "$OLD_EVENTS" -ge 1 ] || fail "the old kilnd has events"
[ "$OLD_HISTORY" -ge 2 ] || fail "the old kilnd has the agent's history"
kiln_test_stop_kilnd "$OLD_PID" || fail "the old kilnd stops cleanly"
OLD_SUM=$(sha256sum <"$OLD/kiln.db")

# --- the migration ----------------------------------------------------------------------
NEW=$T/new
mkdir -m 0700 "$NEW"
kiln_test_pg_db "$NEW" || exit 1
cat >"$T/pg.conf" <<CONF
[store]
backend = postgresql
connection = $KILN_TEST_PG dbname=$KILN_TEST_PG_DB
CONF
migrate() { # migrate STATE_DIR CONFIG SQLITE_FILE: kilnd's exit status, its stderr in $T/migrate.log
	"$KILND" --state-dir "$1" --config "$2" --migrate-from-sqlite "$3" 2>"$T/migrate.log"
}
migrate "$NEW" "$T/pg.conf" "$OLD/kiln.db"
rc=$?
cat "$T/migrate.log"
same "the migration exits 0" "$rc" 0
same "it reports the nodes it copied" "$(grep -c '^kilnd: copied 4 nodes$' "$T/migrate.log")" 1
same "and a summary" "$(grep -c '^kilnd: migrated ' "$T/migrate.log")" 1
same "the SQLite file is unchanged" "$(sha256sum <"$OLD/kiln.db")" "$OLD_SUM"
if cmp -s "$OLD/secret.key" "$NEW/secret.key"; then
	fail "the new state dir has a secret.key of its own"
else
	pass "the new state dir has a secret.key of its own"
fi
same "no kept Redfish session was copied" \
	"$(kiln_test_sql "SELECT count(*) FROM bmc_sessions" "$NEW")" 0

# --- two kilnd on the migrated database --------------------------------------------------
kiln_test_start_kilnd "$NEW" || exit 1
URLS=("$KILND_URL")
kiln_test_start_instance "$NEW" "$T/second" || exit 1
URLS+=("$KILND_URL")
for url in "${URLS[@]}"; do
	export KILN_URL=$url KILN_TOKEN_FILE=$OLD/admin.token
	names=$("$KILN" node list -o json | jq -r '[.[].name] | sort | join(",")')
	same "$url: the old admin token lists every node" "$names" "agent01,n01,n02,n03"
	same "$url: the old viewer token works" "$(kiln_api GET /nodes "" "$VIEWER")" 200
	power=$("$KILN" power status n0[1-3] -o json)
	same "$url: every BMC answers power status (re-sealed passwords open)" \
		"$(jq -r '[.[] | select(.error == null) | .node + "=" + .power] | sort | join(",")' <<<"$power")" \
		"n01=on,n02=off,n03=on"
	kiln_api GET "/audit?limit=1000" >/dev/null
	same "$url: the power off of n02 is in the audit log" \
		"$(jq '[.[] | select((.detail // "" | tostring | test("off")) and (.target // "" | tostring | test("n02")))] | length' "$KILN_BODY_FILE")" \
		"$OLD_POWER_OFF"
	kiln_api GET "/events?limit=1000" >/dev/null
	got=$(jq 'if type == "array" then length else (.events | length) end' "$KILN_BODY_FILE")
	same "$url: the old events are there" "$([ "$got" -ge "$OLD_EVENTS" ] && echo yes)" yes
done
same "the agent's history was copied" \
	"$(kiln_test_sql "SELECT count(*) FROM agent_history" "$NEW")" "$OLD_HISTORY"
"$KILN" node add n05 >/dev/null
check "a new node gets an id past the copied ones" $? "node add n05 failed"

# --- refusals -----------------------------------------------------------------------------
migrate "$T/again" "$T/pg.conf" "$OLD/kiln.db"
same "a second migration into the same database exits 1" "$?" 1
same "it says the database is not empty" "$(grep -c 'already holds nodes or tokens' "$T/migrate.log")" 1

WRONG=$T/wrong
mkdir -m 0700 "$WRONG"
cp "$OLD/kiln.db" "$WRONG/kiln.db"
head -c 32 /dev/urandom >"$WRONG/secret.key"
chmod 0600 "$WRONG/secret.key"
kiln_test_pg_db "$T/fresh" || exit 1
printf '[store]\nbackend = postgresql\nconnection = %s dbname=%s\n' "$KILN_TEST_PG" \
	"$KILN_TEST_PG_DB" >"$T/fresh.conf"
migrate "$T/fresh" "$T/fresh.conf" "$WRONG/kiln.db"
same "a wrong secret.key beside the SQLite file: exit 1" "$?" 1
same "it names the key" "$(grep -c 'secret.key beside .* is not the key' "$T/migrate.log")" 1
rm "$WRONG/secret.key"
migrate "$T/fresh" "$T/fresh.conf" "$WRONG/kiln.db"
same "no secret.key beside the SQLite file: exit 1" "$?" 1
same "the refused migrations left the database empty" \
	"$(psql "$KILN_TEST_PG dbname=$KILN_TEST_PG_DB" -qAtX -c 'SELECT count(*) FROM nodes')" 0
printf 'not a database\n' >"$WRONG/kiln.db"
install -m 0600 "$OLD/secret.key" "$WRONG/secret.key"
migrate "$T/fresh" "$T/fresh.conf" "$WRONG/kiln.db"
same "a file that is not a kiln database: exit 1" "$?" 1
printf '[store]\nbackend = sqlite\n' >"$T/sqlite.conf"
migrate "$T/fresh" "$T/sqlite.conf" "$OLD/kiln.db"
same "a SQLite target store: exit 1" "$?" 1

[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all migration checks passed"
