# SPDX-License-Identifier: Apache-2.0
# Shared helpers for kiln's script tests: start kilnd on 127.0.0.1:0 with a temporary state
# dir, wait until it answers, make tokens, call the API with curl, stop what was started.
# Source it; it installs an EXIT trap that stops every kilnd it started and removes the
# temporary files (a test that needs its own EXIT work calls kiln_test_cleanup from it).

KILN_BIN=${KILN_BIN:?"KILN_BIN must name the build's bin/ folder"}
KILND=$KILN_BIN/kilnd

for _tool in curl jq; do
	if ! command -v "$_tool" >/dev/null 2>&1; then
		echo "skipped: $_tool is not installed"
		exit 77
	fi
done
unset _tool

KILN_TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-test.XXXXXX") || exit 1
KILN_TEST_PIDS=()
KILN_TEST_PG_DBS=()   # the databases this script made (KILN_TEST_PG), dropped at exit

# fail/pass MESSAGE: one check's outcome; fail counts into FAILS (the test sets FAILS=0).
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
# check DESC STATUS DETAIL: passes when STATUS (a command's exit status) is 0, else fails
# with DETAIL.
check() {
	if [ "$2" = 0 ]; then pass "$1"; else fail "$1: $3"; fi
}
# same DESC GOT WANT: passes when GOT is WANT.
same() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', want '$3'"; fi
}
# wait_for DESC SECONDS COMMAND...: retries COMMAND every 0.5 s.
wait_for() {
	local desc=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		if "$@"; then return 0; fi
		sleep 0.5
	done
	fail "$desc (waited ${secs}s)"
	return 1
}
# kiln_test_report_id [LABEL]: a report_id as the schema wants it (32 lowercase hex digits):
# random, or derived from LABEL, so a test can name the same id again.
kiln_test_report_id() {
	if [ $# -gt 0 ]; then
		printf '%s' "$1" | md5sum | cut -c1-32
	else
		od -An -tx1 -N16 /dev/urandom | tr -d ' \n'
	fi
}

# Stops every kilnd this script started (by pid), then removes the temporary files.
kiln_test_cleanup() {
	local pid db
	for pid in "${KILN_TEST_PIDS[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	KILN_TEST_PIDS=()
	if [ -n "${KILN_TEST_PG:-}" ] && [ -z "${KILN_TEST_KEEP:-}" ]; then
		for db in "${KILN_TEST_PG_DBS[@]}"; do
			psql "$KILN_TEST_PG" -qAt -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
		done
	fi
	KILN_TEST_PG_DBS=()
	if [ -n "$KILN_TEST_PG_SERVER" ]; then # after its databases went
		bash "${KILN_SRC:-$(dirname "${BASH_SOURCE[0]}")/../..}/tests/pg/pg-server.sh" stop \
			"$KILN_TEST_PG_SERVER" >/dev/null 2>&1
		rm -rf "${KILN_TEST_PG_SERVER%/srv}"
		KILN_TEST_PG_SERVER=""
	fi
	if [ -n "${KILN_TEST_KEEP:-}" ]; then
		echo "kept $KILN_TEST_TMP" >&2
	else
		rm -rf "$KILN_TEST_TMP"
	fi
}
trap kiln_test_cleanup EXIT

# kiln_test_need_pg: for a test that needs PostgreSQL whichever leg runs it: the server
# KILN_TEST_PG names, or a throw-away one started here (tests/pg/pg-server.sh) that
# kiln_test_cleanup stops; exits 77 (skipped, with why) when none can be started. Exported
# KILN_TEST_PG then makes every kilnd the script starts use it.
KILN_TEST_PG_SERVER=""
kiln_test_need_pg() {
	local base out src=${KILN_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
	command -v psql >/dev/null || { echo "skipped: psql is not installed"; exit 77; }
	[ -n "${KILN_TEST_PG:-}" ] && return 0
	# a short path of its own: the server's socket path must stay under 108 bytes
	base=$(mktemp -d /tmp/kiln-pg.XXXXXX) || exit 1
	chmod 0755 "$base" # the server runs as another user when this is root
	if ! out=$(bash "$src/tests/pg/pg-server.sh" start "$base/srv" 2>&1); then
		echo "skipped: no PostgreSQL server could be started (tests/pg/pg-server.sh: $out)"
		rm -rf "$base"
		exit 77
	fi
	KILN_TEST_PG_SERVER=$base/srv
	eval "$(cat "$base/srv/env")"
	export KILN_TEST_PG
}

# On the PostgreSQL leg (KILN_TEST_PG: tests/pg/pg-server.sh), kilnd keeps its data in a
# database of that server, one per state dir. kiln_test_pg_db DIR sets KILN_TEST_PG_DB to
# DIR's database name, making the database the first time (a restart of the same state dir
# finds its data again; the name is kept beside DIR, in DIR.kiln-pg).
kiln_test_pg_db() {
	local mark="${1%/}.kiln-pg" name
	if [ ! -s "$mark" ]; then
		name=kiln_it_$(date +%s)_$$_$RANDOM
		psql "$KILN_TEST_PG" -qAt -c "CREATE DATABASE $name" >/dev/null || return 1
		echo "$name" >"$mark"
		KILN_TEST_PG_DBS+=("$name")
	fi
	KILN_TEST_PG_DB=$(cat "$mark")
}

# kiln_test_sql SQL [STATE_DIR]: runs SQL on the database of STATE_DIR (default KILND_DIR)
# on either backend and prints the rows as sqlite3 -batch -noheader does ("a|b", NULL empty);
# SQL written in the dialect both accept (count(*), ||, LIKE, coalesce, no json_extract).
kiln_test_sql() {
	local dir=${2:-$KILND_DIR}
	if [ -n "${KILN_TEST_PG:-}" ]; then
		psql "$KILN_TEST_PG dbname=$(cat "${dir%/}.kiln-pg")" -qAtX -c "$1" 2>/dev/null
	else
		sqlite3 -batch -noheader "$dir/kiln.db" "$1" 2>/dev/null
	fi
}

# kiln_test_json EXPR PATH: the SQL that reads PATH (a.b) of the JSON text EXPR on this run's
# backend (SQLite's json_extract, PostgreSQL's #>>), for kiln_test_sql.
kiln_test_json() {
	if [ -n "${KILN_TEST_PG:-}" ]; then
		printf "((%s)::json #>> '{%s}')" "$1" "${2//./,}"
	else
		printf "json_extract(%s, '\$.%s')" "$1" "$2"
	fi
}

# kiln_test_sql_concat EXPR ORDER: the SQL aggregate of EXPR's values joined by commas, in
# the order of ORDER (SQLite's group_concat in scan order, PostgreSQL's string_agg).
kiln_test_sql_concat() {
	if [ -n "${KILN_TEST_PG:-}" ]; then
		printf "string_agg((%s)::text, ',' ORDER BY %s)" "$1" "$2"
	else
		printf "group_concat(%s)" "$1"
	fi
}

# kiln_test_db_has TEXT [STATE_DIR]: whether TEXT stands anywhere in the stored data (the
# SQLite files byte for byte; on PostgreSQL a pg_dump of the database).
kiln_test_db_has() {
	local dir=${2:-$KILND_DIR}
	if [ -n "${KILN_TEST_PG:-}" ]; then
		pg_dump "$KILN_TEST_PG dbname=$(cat "${dir%/}.kiln-pg")" 2>/dev/null | grep -qaF -- "$1"
	else
		cat "$dir"/kiln.db* 2>/dev/null | grep -qaF -- "$1"
	fi
}

# kiln_test_start_kilnd [STATE_DIR [KILND_ARGS...]]
# Starts kilnd on 127.0.0.1:0 (unless KILND_ARGS name another --listen) with STATE_DIR
# (default: a new temporary one), waits for DIR/kilnd.url and /api/v1/health, and sets
# KILND_DIR (the state dir; KILND_STATE names it too), KILND_PID, KILND_LOG (stderr,
# appended), KILND_URL; exports KILN_URL and
# KILN_TOKEN_FILE. Returns 1 (and prints the log) if kilnd exits or does not answer in 30 s.
# With KILN_TEST_PG set, kilnd runs on STATE_DIR's own PostgreSQL database (kiln_test_pg_db).
kiln_test_start_kilnd() {
	local dir=${1:-} listen=(--listen 127.0.0.1:0) store=() arg i
	[ $# -gt 0 ] && shift
	if [ -z "$dir" ]; then
		dir=$(mktemp -d "$KILN_TEST_TMP/kilnd.XXXXXX") || return 1
	fi
	if [ -n "${KILN_TEST_PG:-}" ]; then
		kiln_test_pg_db "$dir" || { echo "cannot make a test database" >&2; return 1; }
		store=(--store-connection "$KILN_TEST_PG dbname=$KILN_TEST_PG_DB")
	fi
	for arg in "$@"; do
		[ "$arg" = "--listen" ] && listen=()
	done
	KILND_DIR=$dir
	KILND_STATE=$dir
	KILND_LOG=$dir/kilnd.log
	rm -f "$dir/kilnd.url"
	"$KILND" --state-dir "$dir" "${listen[@]}" "${store[@]}" "$@" 2>>"$KILND_LOG" &
	KILND_PID=$!
	KILN_TEST_PIDS+=("$KILND_PID")
	for ((i = 0; i < 300; i++)); do
		if ! kill -0 "$KILND_PID" 2>/dev/null; then
			echo "kilnd exited during start; its log:" >&2
			cat "$KILND_LOG" >&2
			return 1
		fi
		if [ -s "$dir/kilnd.url" ]; then
			KILND_URL=$(cat "$dir/kilnd.url")
			if [ "$(curl -sk -o /dev/null -w '%{http_code}' "$KILND_URL/api/v1/health")" = 200 ]; then
				export KILN_URL=$KILND_URL
				export KILN_TOKEN_FILE=$dir/admin.token
				return 0
			fi
		fi
		sleep 0.1
	done
	echo "kilnd did not answer /api/v1/health within 30 s; its log:" >&2
	cat "$KILND_LOG" >&2
	return 1
}

# kiln_test_start_instance FIRST DIR [KILND ARGS...]: another kilnd (state dir DIR) on the
# database of the one started on state dir FIRST, with FIRST's secret.key: several kilnd on
# one PostgreSQL database. An instance.id already in DIR is kept.
kiln_test_start_instance() {
	local first=$1 dir=$2
	shift 2
	mkdir -p -m 0700 "$dir"
	cp "${first%/}.kiln-pg" "${dir%/}.kiln-pg"
	install -m 0600 "$first/secret.key" "$dir/secret.key"
	kiln_test_start_kilnd "$dir" "$@"
}

# kiln_test_stop_kilnd [PID]: SIGTERM, then waits; returns kilnd's exit status
# (sanitizer reports make it non-zero). Default: the last one started.
kiln_test_stop_kilnd() {
	local pid=${1:-$KILND_PID} rc keep=() p
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	for p in "${KILN_TEST_PIDS[@]}"; do
		[ "$p" != "$pid" ] && keep+=("$p")
	done
	KILN_TEST_PIDS=("${keep[@]}")
	return $rc
}

# kiln_api METHOD PATH [BODY [TOKEN]]: calls $KILN_URL/api/v1PATH with the token (default:
# the admin token; "-" for none). Prints the HTTP status; the body lands in $KILN_BODY_FILE.
KILN_BODY_FILE=$KILN_TEST_TMP/body
kiln_api() {
	local method=$1 path=$2 body=${3:-} token=${4:-} args=()
	if [ -z "$token" ]; then
		token=$(cat "$KILN_TOKEN_FILE")
	fi
	if [ "$token" != "-" ]; then
		args+=(-H "Authorization: Bearer $token")
	fi
	if [ -n "$body" ]; then
		args+=(-H "Content-Type: application/json" --data-binary "$body")
	fi
	curl -sk -o "$KILN_BODY_FILE" -w '%{http_code}' -X "$method" "${args[@]}" \
		"$KILN_URL/api/v1$path"
}

# kiln_test_token ROLE [NAME]: creates an API token with the admin token; prints the bare
# token (fails when kilnd says no).
kiln_test_token() {
	local role=$1 name=${2:-$1-$RANDOM} status
	status=$(kiln_api POST /tokens "{\"role\":\"$role\",\"name\":\"$name\"}")
	if [ "$status" != 201 ]; then
		echo "creating a $role token failed: $status $(cat "$KILN_BODY_FILE")" >&2
		return 1
	fi
	jq -r .token "$KILN_BODY_FILE"
}

# kiln_test_start_bmcsim NAME KILN-BMCSIM-ARGS...: starts kiln-bmcsim on 127.0.0.1:0 (its
# --mockup and the rest from the arguments), stopped at exit like kilnd; waits for its port and
# sets SIM_PID, SIM_PORT (the first BMC's), SIM_CTL (its /_sim URL). Returns 1 (and prints its
# log) when it does not start in 10 s.
kiln_test_start_bmcsim() {
	local name=$1 i
	shift
	rm -f "$KILN_TEST_TMP/$name.ports"
	"$KILN_BIN/kiln-bmcsim" --listen 127.0.0.1:0 --ports-file "$KILN_TEST_TMP/$name.ports" "$@" \
		>"$KILN_TEST_TMP/$name.log" 2>&1 &
	SIM_PID=$!
	KILN_TEST_PIDS+=("$SIM_PID")
	for ((i = 0; i < 100; i++)); do
		[ -s "$KILN_TEST_TMP/$name.ports" ] && break
		kill -0 "$SIM_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -s "$KILN_TEST_TMP/$name.ports" ]; then
		echo "kiln-bmcsim did not start:"
		cat "$KILN_TEST_TMP/$name.log"
		return 1
	fi
	SIM_PORT=$(head -1 "$KILN_TEST_TMP/$name.ports")
	SIM_CTL="http://127.0.0.1:$SIM_PORT/_sim"
}

# kiln_test_stop_bmcsim: stops the simulator kiln_test_start_bmcsim started last.
kiln_test_stop_bmcsim() {
	kill "$SIM_PID" 2>/dev/null
	wait "$SIM_PID" 2>/dev/null
	SIM_PID=""
}
