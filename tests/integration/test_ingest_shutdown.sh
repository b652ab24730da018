# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd stopped (SIGTERM) while agent reports wait suspended for the ingest
# writer's commit: it exits cleanly (no libmicrohttpd panic on a suspended connection, no
# sanitizer report), and every report answered 2xx is in the database (no answer before
# the commit); a report answered otherwise may or may not be stored, but never twice.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

if [ -z "${KILN_TEST_PG:-}" ] && ! command -v sqlite3 >/dev/null 2>&1; then
	echo "skipped: the sqlite3 shell (to read stored rows) is not installed"
	exit 77
fi
FAILS=0
N=${KILN_TEST_REPORTS:-150}

kiln_test_start_kilnd || exit 1
T=$KILN_TEST_TMP
"$KILN_BIN/kiln" node add gpu01 >/dev/null || { echo "node add failed" >&2; exit 1; }
status=$(kiln_api POST /agent/tokens '{"node":"gpu01"}')
[ "$status" = 201 ] || { echo "agent token: $status $(cat "$KILN_BODY_FILE")" >&2; exit 1; }
TOKEN=$(jq -r .token "$KILN_BODY_FILE")

# report LABEL: a minimal valid report (no GPUs) with the id kiln_test_report_id LABEL.
report() {
	printf '{"schema":"kiln.agent.report/1","report_id":"%s","host":{"hostname":"gpu01",' \
		"$(kiln_test_report_id "$1")"
	printf '"boot_id":"b1"},"nvidia":{"status":"no_driver"},"gpus":[]}'
}
status=$(kiln_api POST /agent/report "$(report warmup)" "$TOKEN")
same "a report before the storm is stored" "$status" 201

# N reports at once, each its own connection; kilnd is stopped while they are in flight.
mkdir -p "$T/out"
PIDS=()
for i in $(seq 1 "$N"); do
	curl -sk -m 20 -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
		-H "Content-Type: application/json" --data-binary "$(report "storm-$i")" \
		"$KILND_URL/api/v1/agent/report" >"$T/out/$i" 2>/dev/null &
	PIDS+=("$!")
	[ "$i" = $((N / 2)) ] && kill -TERM "$KILND_PID"
done
for p in "${PIDS[@]}"; do
	wait "$p"
done
kiln_test_stop_kilnd
rc=$?
same "kilnd exits 0 when stopped under report load" "$rc" 0
if grep -qiE "panic|AddressSanitizer|runtime error|LeakSanitizer" "$KILND_LOG"; then
	fail "kilnd's log has a panic or sanitizer report: $(grep -iE -m3 "panic|Sanitizer|runtime error" "$KILND_LOG")"
fi

ok=0
for i in $(seq 1 "$N"); do
	code=$(cat "$T/out/$i" 2>/dev/null)
	rows=$(kiln_test_sql "SELECT count(*) FROM agent_history WHERE report_id = '$(kiln_test_report_id "storm-$i")'")
	case "$code" in
	200 | 201)
		ok=$((ok + 1))
		[ "$rows" = 1 ] || fail "storm-$i answered $code but has $rows history rows"
		;;
	*)
		[ "${rows:-0}" -le 1 ] || fail "storm-$i answered '$code' and has $rows history rows"
		;;
	esac
done
answers=$(for f in "$T"/out/*; do cat "$f"; echo; done | sort | uniq -c | tr -s ' \n' ' ')
echo "info: $ok of $N reports answered 2xx before kilnd stopped (count, code:$answers)"

[ "$FAILS" = 0 ] && echo "all passed" || { echo "$FAILS failed"; exit 1; }
