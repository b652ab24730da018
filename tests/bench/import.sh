#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (on demand, not CI): importing nodes with BMC credentials while kilnd's poller
# reads live BMCs, and then the poller's sweep over them (issue 35).
#
# usage: tests/bench/import.sh [--pg] [--nodes N] [--batch B] [--interval S] [--latency MS]
#          [--jitter MS] [--no-build] [--build DIR]
#   defaults: 2,000 nodes on SQLite, 1,000 a request (the API's body cap), kiln-bmcsim BMCs
#   over plain HTTP (redfish+http), 200 +- 50 ms a request, [poller] interval 30 s (kilnd's
#   default).
#   --pg  kilnd on a throw-away PostgreSQL server (tests/pg/pg-server.sh), durable (fsync and
#         synchronous_commit on).
#
# One kilnd, a fresh database, N simulated BMCs. Prints:
#   import: the wall time of the whole import (N / B requests, one after the other, each to
#           its 201 with every node listed), each request's time, and the nodes stored;
#   first sweep: from the import's start, the seconds until every node's first power reading
#           is stored (node_bmc_state.power_time, seconds: the poller's first contact);
#   steady sweep: from a moment T after that, the seconds until every node was read again
#           (within the interval when the poller keeps up), kilnd's and PostgreSQL's CPU over
#           it, and (--pg) how often kiln's writers' lock was held exclusively or shared.
# Every process started here is stopped by its id at exit.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$SRC/build-bench
N=2000 BATCH=1000 INTERVAL=30 LAT=200 JIT=50 BUILD_IT=1 PG=0
CMDLINE="tests/bench/import.sh $*"
while [ $# -gt 0 ]; do
	case $1 in
	--pg) PG=1; shift ;;
	--nodes) N=$2; shift 2 ;;
	--batch) BATCH=$2; shift 2 ;;
	--interval) INTERVAL=$2; shift 2 ;;
	--latency) LAT=$2; shift 2 ;;
	--jitter) JIT=$2; shift 2 ;;
	--no-build) BUILD_IT=0; shift ;;
	--build) BUILD=$(realpath -m "$2"); shift 2 ;;
	-h | --help) sed -n "2,22p" "$0"; exit 0 ;;
	*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
. "$SRC/tests/bench/lib.sh"
bench_needs curl jq sqlite3 psql
bench_build kilnd kiln-bmcsim
bench_workdir import
mkdir -m 700 "$TMP/kilnd"
printf '[poller]\ninterval = %ss\n' "$INTERVAL" >"$TMP/kilnd.conf"
CONF=(--config "$TMP/kilnd.conf")
# sql QUERY: the store kilnd writes; the benchmark's own tables live apart from it on SQLite
# (an attached file), so that they never take kilnd's write lock.
sql() { sqlite3 -cmd "ATTACH '$TMP/bench.db' AS b" "$TMP/kilnd/kiln.db" "$1"; }
FIRST=b.bench_first STEADY=b.bench_steady
if [ "$PG" = 1 ]; then
	PGDIR=$(mktemp -d /tmp/kiln-bench-pg.XXXXXX) # a folder postgres can reach
	import_stop() { "$SRC/tests/pg/pg-server.sh" stop "$PGDIR" >/dev/null 2>&1 || true; bench_cleanup; }
	trap import_stop EXIT
	eval "$(KILN_PG_DURABLE=1 "$SRC/tests/pg/pg-server.sh" start "$PGDIR")" || exit 1
	psql "$KILN_TEST_PG" -qc "CREATE DATABASE kiln_import"
	CONF+=(--store-connection "$KILN_TEST_PG dbname=kiln_import")
	sql() { psql "$KILN_TEST_PG dbname=kiln_import" -qAt -c "$1"; }
	FIRST=bench_first STEADY=bench_steady
fi
echo "$CMDLINE (script at $(git -C "$SRC" rev-parse --short HEAD), kilnd of $BUILD), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"

BASE=$((20000 + ($$ % 3) * 1000))
[ $((BASE + N)) -lt 32768 ] || BASE=$((32767 - N))
bench_bmcsims_start "$N" "$BASE" "$LAT" "$JIT"

"$BUILD/bin/kilnd" --state-dir "$TMP/kilnd" --listen 127.0.0.1:0 "${CONF[@]}" 2>"$TMP/kilnd.log" &
KPID=$!
PIDS+=("$KPID")
for _ in $(seq 300); do
	[ -s "$TMP/kilnd/kilnd.url" ] && curl -sf -o /dev/null "$(cat "$TMP/kilnd/kilnd.url")/api/v1/health" && break
	kill -0 "$KPID" 2>/dev/null || { cat "$TMP/kilnd.log"; exit 1; }
	sleep 0.1
done
URL=$(cat "$TMP/kilnd/kilnd.url")
AUTH="Authorization: Bearer $(cat "$TMP/kilnd/admin.token")"
[ "$PG" = 1 ] || sqlite3 "$TMP/bench.db" "SELECT 1" >/dev/null
sql "CREATE TABLE $FIRST (node_id BIGINT PRIMARY KEY, t BIGINT);
	CREATE TABLE $STEADY (node_id BIGINT PRIMARY KEY, t BIGINT)"

echo "== $N nodes with BMC credentials, $BATCH a request; load average $(cut -d' ' -f1-3 /proc/loadavg)"
T0=$(date +%s)
t0=$(date +%s%N)
bench_nodes_import "$URL" "$AUTH" "$N" "$BASE" "$BATCH"
ms=$((($(date +%s%N) - t0) / 1000000))
stored=$(sql "SELECT count(*) FROM nodes")
echo "  import: $(awk -v m="$ms" 'BEGIN { printf "%.2f", m / 1000 }') s for $N nodes ($stored stored);" \
	"each request (ms): $(paste -sd' ' "$TMP/import.ms")"
[ "$stored" = "$N" ] || { echo "  COUNT MISMATCH: $stored nodes stored, $N imported" >&2; exit 1; }

bench_sweep_wait "$FIRST" 1 $((INTERVAL * 4 + 60))
echo "  first sweep: every node read $(($(sql "SELECT max(t) FROM $FIRST") - T0)) s after the import began"
T1=$(($(date +%s) + 1))
sleep 1
HZ=$(getconf CLK_TCK)
K0=$(bench_cpu_ticks "$KPID")
P0=0
if [ "$PG" = 1 ]; then
	P0=$(bench_pg_ticks "$PGDIR/data")
	bench_pg_lock_sample "$KILN_TEST_PG dbname=kiln_import" "$TMP/locks" &
	LOCK_PID=$!
	PIDS+=("$LOCK_PID")
fi
bench_sweep_wait "$STEADY" "$T1" $((INTERVAL * 4))
S=$(($(date +%s) - T1))
LAST=$(($(sql "SELECT max(t) FROM $STEADY") - T1))
K1=$(bench_cpu_ticks "$KPID")
echo "  steady sweep ([poller] interval $INTERVAL s): every node read again in $S s" \
	"(the last first read at +$LAST s); load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$PG" = 1 ]; then
	P1=$(bench_pg_ticks "$PGDIR/data")
	kill "$LOCK_PID" 2>/dev/null || true
	echo "    CPU over it: kilnd $(((K1 - K0) * 100 / HZ / S)) %, PostgreSQL $(((P1 - P0) * 100 / HZ / S)) %;" \
		"writers' lock $(bench_pg_lock_summary "$TMP/locks")"
else
	echo "    CPU over it: kilnd $(((K1 - K0) * 100 / HZ / S)) %"
fi
echo "  nodes in the store: $(sql "SELECT count(*) FROM nodes"), with a power reading:" \
	"$(sql "SELECT count(*) FROM node_bmc_state WHERE power_time > 0")"
