#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (on demand, not CI): agent-report ingest into kilnd from 10,000 distinct nodes.
#
# usage: tests/bench/ingest.sh [--nodes N] [--conns C] [--duration S] [--shape lean|full]
#                              [--no-build] [--perf] [--build DIR] [--prime] [--pg | --pg-socket]
#                              [--instances K]
#   --shape lean   8-GPU report with the GPU fields kilnd reads (about 4.7 KB, the issue's 3-5 KB)
#   --shape full   kiln-agent --print as it is, without Xid events (about 9.6 KB)
#   --threads T    kilnd's [http] threads (default: kilnd's own choice)
#   --perf         record kilnd with perf during the load (perf report in the kept folder)
#   --build DIR    the build tree to use (default build-bench), e.g. one per helper
#   --prime        one report per node before the measured run, so that every report of the
#                  run updates a node that has a state (steady state, as in a running fleet)
#   --pg           kilnd on PostgreSQL: a throw-away server (tests/pg/pg-server.sh) on this
#                  machine, durable (fsync and synchronous_commit on, as SQLite's WAL here;
#                  KILN_PG_DURABLE=0: off), over TCP on 127.0.0.1
#   --pg-socket    as --pg, kilnd connected over the server's Unix socket
#   --instances K  with --pg: K kilnd on the one database (the first one's secret.key in each
#                  state dir), the C connections spread round-robin over them; prints each
#                  process's CPU over the measured window (kilnd's, the load generator's,
#                  the PostgreSQL server's, all its backends together)
#   KILN_BENCH_KEEP=1 keeps the temporary folder.
#
# Builds a plain RelWithDebInfo tree into build-bench, starts kilnd on 127.0.0.1 (plain HTTP,
# ephemeral port, fresh state dir), makes N nodes (POST /nodes/import) and their agent tokens,
# takes a real report (kiln-agent --print, fake NVML h100-8gpu config) as the template and
# runs kiln-bench-ingest against it: round-robin over the nodes, report_id/time/host ids
# varied. After kilnd stops, sqlite3 (psql with --pg) counts the stored reports: every
# acknowledged report must be there.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$SRC/build-bench
NODES=10000 CONNS=32 DURATION=30 SHAPE=lean BUILD_IT=1 PERF=0 THREADS= PRIME=0 PG=0
INSTANCES=1
CMDLINE="tests/bench/ingest.sh $*"
while [ $# -gt 0 ]; do
	case $1 in
	--nodes) NODES=$2; shift 2 ;;
	--conns) CONNS=$2; shift 2 ;;
	--duration) DURATION=$2; shift 2 ;;
	--shape) SHAPE=$2; shift 2 ;;
	--no-build) BUILD_IT=0; shift ;;
	--perf) PERF=1; shift ;;
	--prime) PRIME=1; shift ;;
	--pg) PG=1; shift ;;
	--pg-socket) PG=1 PG_SOCKET=1; shift ;;
	--instances) INSTANCES=$2; shift 2 ;;
	--threads) THREADS=$2; shift 2 ;;
	--build) BUILD=$(realpath -m "$2"); shift 2 ;;
	-h | --help) sed -n "2,29p" "$0"; exit 0 ;;
	*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
case $INSTANCES in [1-8]) ;; *) echo "--instances must be 1 to 8" >&2; exit 2 ;; esac
[ "$INSTANCES" = 1 ] || [ "$PG" = 1 ] || { echo "--instances needs --pg" >&2; exit 2; }
[ "$INSTANCES" = 1 ] || [ "$PERF" = 0 ] || { echo "--perf records one kilnd: not with --instances" >&2; exit 2; }
for tool in curl jq sqlite3; do
	command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 1; }
done
ulimit -Sn "$(ulimit -Hn)"

if [ "$BUILD_IT" = 1 ]; then
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE= \
		-DKILN_WERROR=ON >/dev/null
	cmake --build "$BUILD" -j2 --target kilnd kiln-agent fake-nvml kiln-bench-ingest >/dev/null
fi

. "$SRC/tests/bench/lib.sh"
bench_workdir ingest

# The template: a real report from kiln-agent with the fake NVML's 8-GPU H100 config.
bench_agent_report "$TMP/agent.json"
case $SHAPE in
lean) jq -c 'del(.xid_events) | .gpus |= map({index, name, uuid, serial, pci_bus_id,
	memory_total_bytes, memory_used_bytes, utilization_gpu_pct, temperature_c, power_draw_w,
	ecc_volatile_uncorrected, ecc_aggregate_uncorrected, remapped_rows_failure, pstate})' \
	"$TMP/agent.json" >"$TMP/template.json" ;;
full) jq -c 'del(.xid_events)' "$TMP/agent.json" >"$TMP/template.json" ;;
*) echo "--shape must be lean or full" >&2; exit 2 ;;
esac

mkdir -m 700 "$TMP/kilnd"
CONF=()
if [ -n "$THREADS" ]; then
	printf '[http]\nthreads = %s\n' "$THREADS" >"$TMP/kilnd.conf"
	CONF=(--config "$TMP/kilnd.conf")
fi
# count SQL: one number from the store kilnd wrote
count() { sqlite3 -readonly "$TMP/kilnd/kiln.db" "$1"; }
if [ "$PG" = 1 ]; then
	PGDIR=$(mktemp -d /tmp/kiln-bench-pg.XXXXXX)
	bench_pg_stop() { "$SRC/tests/pg/pg-server.sh" stop "$PGDIR" || true; bench_cleanup; }
	trap bench_pg_stop EXIT
	eval "$(KILN_PG_DURABLE=${KILN_PG_DURABLE:-1} "$SRC/tests/pg/pg-server.sh" start "$PGDIR")"
	psql "$KILN_TEST_PG" -qc "CREATE DATABASE kiln_bench"
	if [ "${PG_SOCKET:-0}" = 1 ]; then
		CONF+=(--store-connection "$(cat "$PGDIR/socket") dbname=kiln_bench")
	else
		CONF+=(--store-connection "$KILN_TEST_PG dbname=kiln_bench")
	fi
	count() { psql "$KILN_TEST_PG dbname=kiln_bench" -qAt -c "$1"; }
fi
# kilnd_start DIR: a kilnd on state dir DIR; appends its pid to KPIDS and its URL to URLS.
KPIDS=() URLS=()
kilnd_start() {
	local dir=$1 pid
	"$BUILD/bin/kilnd" --state-dir "$dir" --listen 127.0.0.1:0 "${CONF[@]}" 2>"$dir.log" &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 300); do
		[ -s "$dir/kilnd.url" ] && curl -sf -o /dev/null "$(cat "$dir/kilnd.url")/api/v1/health" && break
		kill -0 "$pid" 2>/dev/null || { cat "$dir.log"; exit 1; }
		sleep 0.1
	done
	KPIDS+=("$pid")
	URLS+=(--url "$(cat "$dir/kilnd.url")")
}
kilnd_start "$TMP/kilnd"
KILND_PID=${KPIDS[0]}
URL=$(cat "$TMP/kilnd/kilnd.url")
# the other instances: the first one's key, the same database
for ((i = 2; i <= INSTANCES; i++)); do
	mkdir -m 700 "$TMP/kilnd$i"
	install -m 600 "$TMP/kilnd/secret.key" "$TMP/kilnd$i/secret.key"
	kilnd_start "$TMP/kilnd$i"
done

"$BUILD/bin/kiln-bench-ingest" --setup --url "$URL" --admin-token "$TMP/kilnd/admin.token" \
	--tokens "$TMP/tokens" --nodes "$NODES" --conns 8 >&2

if [ "$PRIME" = 1 ]; then
	"$BUILD/bin/kiln-bench-ingest" "${URLS[@]}" --tokens "$TMP/tokens" --nodes "$NODES" \
		--template "$TMP/template.json" --conns "$CONNS" --duration 3600 --warmup 0 \
		--max-reports "$NODES" >"$TMP/prime.txt" || { cat "$TMP/prime.txt"; exit 1; }
	PRIMED=$(awk '$1 == "acknowledged" { print $2 }' "$TMP/prime.txt")
	echo "primed: $PRIMED reports, one per node" >&2
fi
if [ "$PERF" = 1 ]; then
	perf record --call-graph dwarf,16384 -F 499 -o "$TMP/perf.data" -p "$KILND_PID" 2>"$TMP/perf.log" &
	PERF_PID=$!
fi
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
CPU0=$(bench_cpu_ticks "${KPIDS[@]}")
for p in "${KPIDS[@]}"; do KCPU0+=("$(bench_cpu_ticks "$p")"); done
IDLE0=$(bench_idle_mark)
if [ "$PG" = 1 ]; then
	PGCPU0=$(bench_pg_ticks "$PGDIR/data")
	bench_pg_lock_sample "$KILN_TEST_PG dbname=kiln_bench" "$TMP/locks" &
	SAMPLER=$!
	PIDS+=("$SAMPLER")
fi
T0=$(date +%s.%N)
set +e
/usr/bin/time -f '%U %S' -o "$TMP/load.cpu" "$BUILD/bin/kiln-bench-ingest" "${URLS[@]}" \
	--tokens "$TMP/tokens" --nodes "$NODES" --template "$TMP/template.json" --conns "$CONNS" \
	--duration "$DURATION" --warmup 3 | tee "$TMP/load.txt"
LOAD_RC=${PIPESTATUS[0]}
set -e
WALL=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
CPU1=$(bench_cpu_ticks "${KPIDS[@]}")
for p in "${KPIDS[@]}"; do KCPU1+=("$(bench_cpu_ticks "$p")"); done
IDLE1=$(bench_idle_mark)
if [ "$PG" = 1 ]; then
	PGCPU1=$(bench_pg_ticks "$PGDIR/data")
	kill "$SAMPLER"; wait "$SAMPLER" 2>/dev/null || true
fi
RSS=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$KILND_PID/status")
# the round trips to the database the ingest writers made, all instances (an older kilnd
# has no such counter: "-")
TRIPS=0
for u in "${URLS[@]}"; do
	[ "$u" = --url ] && continue
	t=$(curl -sf -H "Authorization: Bearer $(cat "$TMP/kilnd/admin.token")" "$u/metrics" |
		awk '$1 == "kiln_ingest_store_round_trips_total" { print $2 }')
	[ -n "$t" ] && [ "$TRIPS" != - ] && TRIPS=$((TRIPS + ${t%.*})) || TRIPS=-
done
if [ "$PERF" = 1 ]; then
	kill -INT "$PERF_PID"; wait "$PERF_PID" || true
	perf report -i "$TMP/perf.data" --no-children --percent-limit 1.5 --stdio 2>/dev/null \
		>"$TMP/perf.txt" || true
	KILN_BENCH_KEEP=1
fi
for p in "${KPIDS[@]}"; do kill -TERM "$p"; wait "$p" || true; done
ACKED=$(awk '$1 == "acknowledged" { print $2 }' "$TMP/load.txt")
STORED=$(count "SELECT count(*) FROM agent_history")
SEEN=$(count "SELECT count(*) FROM agent_reports_seen")
TCK=$(getconf CLK_TCK)
printf '%-28s %s\n' "kilnd CPU s (whole run)" "$(awk -v a="$CPU0" -v b="$CPU1" -v t="$TCK" 'BEGIN { printf "%.1f", (b - a) / t }')"
printf '%-28s %s\n' "kilnd CPU ms / stored report" "$(awk -v a="$CPU0" -v b="$CPU1" -v t="$TCK" -v n="$((STORED - ${PRIMED:-0}))" 'BEGIN { if (n > 0) printf "%.3f", (b - a) / t * 1000 / n }')"
# each process's share of a core over the load generator's whole run (warm-up included)
pct() { awk -v t="$1" -v h="$TCK" -v w="$WALL" 'BEGIN { printf "%.0f %%", t / h / w * 100 }'; }
if [ "$INSTANCES" -gt 1 ] || [ "$PG" = 1 ]; then
	for ((i = 0; i < INSTANCES; i++)); do
		printf '%-28s %s\n' "kilnd $((i + 1)) CPU (of one core)" "$(pct $((KCPU1[i] - KCPU0[i])))"
	done
	printf '%-28s %s\n' "load generator CPU" "$(awk -v w="$WALL" '{ printf "%.0f %%", ($1 + $2) / w * 100 }' "$TMP/load.cpu")"
	[ "$PG" = 1 ] && printf '%-28s %s\n' "PostgreSQL CPU (all)" "$(pct $((PGCPU1 - PGCPU0)))"
	printf '%-28s %s\n' "machine idle (both cores)" "$(bench_idle_share "$IDLE0" "$IDLE1")"
	[ "$PG" = 1 ] && printf '%-28s %s\n' "writers' advisory lock" "$(bench_pg_lock_summary "$TMP/locks")"
	printf '%-28s %s s\n' "window (load run, wall)" "$(printf '%.1f' "$WALL")"
fi
printf '%-28s %s\n' "load average before / after" "$LOAD0 / $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$PG" = 1 ] && printf '%-28s %s\n' "round trips / report" "$(awk -v t="$TRIPS" -v n="$STORED" 'BEGIN { if (t == "-") print "- (not counted by this kilnd)"; else if (n > 0) printf "%.2f (%d round trips for %d stored reports)", t / n, t, n }')"
printf '%-28s %s\n' "kilnd peak RSS MiB" "$(awk -v k="$RSS" 'BEGIN { printf "%.0f", k / 1024 }')"
printf '%-28s %s\n' "stored in kiln.db" "$STORED history rows, $SEEN report ids"
ACKED=$((ACKED + ${PRIMED:-0}))
if [ "$STORED" != "$ACKED" ] || [ "$SEEN" != "$ACKED" ]; then
	echo "MISMATCH: $ACKED acknowledged, $STORED stored" >&2
	exit 1
fi
echo "every acknowledged report is in kiln.db ($ACKED)"
exit "$LOAD_RC"
