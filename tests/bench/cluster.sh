#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (on demand, not CI): several kilnd on one PostgreSQL database over many
# kiln-bmcsim BMCs: each instance's poller sweep over its own nodes, and a live power read
# over the whole fleet through one instance, (K-1)/K of it handed to the others (handoff.c).
#
# usage: tests/bench/cluster.sh [--bmcs N] [--instances "1 2 3"] [--live "1000 3000 10000"]
#          [--interval S] [--latency MS] [--jitter MS] [--live-timeout S] [--no-build]
#          [--build DIR]
#   defaults: 10,000 BMCs, plain HTTP (redfish+http: TLS is left out on this 2-core machine),
#   200 +- 50 ms a request, no faults, [poller] interval 30 s (kilnd's default), a live read
#   over the first 1,000, 3,000 and 10,000 nodes, each given --live-timeout (300 s).
#
# For each K: a fresh database on one throw-away PostgreSQL (tests/pg/pg-server.sh, durable),
# K kilnd on it (the first one's secret.key in each state dir), the N nodes imported through
# the first. Then:
#   poller: from the import, the seconds until every node's first power reading is stored
#           (node_bmc_state.power_time, seconds; first contact with sensors, SEL, inventory),
#           then a steady sweep: from a moment T, the seconds until every node was read again;
#           both per owner (the owners are the live read's "ran_on"), and each process's CPU
#           over the steady sweep.
#   live:   GET /api/v1/power over the first M nodes through instance 1 (what `kiln power
#           status` sends): wall time to the full answer, nodes answered per instance, errors,
#           node_calls rows written (the table's id sequence), each process's CPU.
# Every process started here is stopped by its id at exit.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$SRC/build-bench
N=10000 KS="1 2 3" LIVE="1000 3000 10000" INTERVAL=30 LAT=200 JIT=50 LIVE_TMO=300 BUILD_IT=1
CMDLINE="tests/bench/cluster.sh $*"
while [ $# -gt 0 ]; do
	case $1 in
	--bmcs) N=$2; shift 2 ;;
	--instances) KS=$2; shift 2 ;;
	--live) LIVE=$2; shift 2 ;;
	--interval) INTERVAL=$2; shift 2 ;;
	--latency) LAT=$2; shift 2 ;;
	--jitter) JIT=$2; shift 2 ;;
	--live-timeout) LIVE_TMO=$2; shift 2 ;;
	--no-build) BUILD_IT=0; shift ;;
	--build) BUILD=$(realpath -m "$2"); shift 2 ;;
	-h | --help) sed -n "2,24p" "$0"; exit 0 ;;
	*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
for tool in curl jq psql; do
	command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 1; }
done
ulimit -Sn "$(ulimit -Hn)"
if [ "$BUILD_IT" = 1 ]; then
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE= >/dev/null
	cmake --build "$BUILD" -j2 --target kilnd kiln-bmcsim >/dev/null
fi

. "$SRC/tests/bench/lib.sh"
bench_workdir cluster
PGDIR=$(mktemp -d /tmp/kiln-bench-pg.XXXXXX) # a folder postgres can reach
cluster_stop() { "$SRC/tests/pg/pg-server.sh" stop "$PGDIR" >/dev/null 2>&1 || true; bench_cleanup; }
trap cluster_stop EXIT
eval "$(KILN_PG_DURABLE=1 "$SRC/tests/pg/pg-server.sh" start "$PGDIR")" || exit 1
echo "$CMDLINE at $(git -C "$SRC" rev-parse --short HEAD), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# The simulators: plain HTTP, at most 5,000 ports a process, below 32768.
BASE=$((20000 + ($$ % 3) * 1000))
[ $((BASE + N)) -lt 32768 ] || BASE=$((32767 - N))
bench_bmcsims_start "$N" "$BASE" "$LAT" "$JIT"
printf '[poller]\ninterval = %ss\n' "$INTERVAL" >"$TMP/kilnd.conf"

# kilnd_start DIR DB: a kilnd on state dir DIR and database DB; appends to KPIDS and KURLS.
kilnd_start() {
	local dir=$1 pid
	"$BUILD/bin/kilnd" --state-dir "$dir" --listen 127.0.0.1:0 --config "$TMP/kilnd.conf" \
		--store-connection "$KILN_TEST_PG dbname=$2" 2>"$dir.log" &
	pid=$!
	PIDS+=("$pid")
	for _ in $(seq 300); do
		[ -s "$dir/kilnd.url" ] && curl -sf -o /dev/null "$(cat "$dir/kilnd.url")/api/v1/health" && break
		kill -0 "$pid" 2>/dev/null || { cat "$dir.log"; exit 1; }
		sleep 0.1
	done
	KPIDS+=("$pid")
	KURLS+=("$(cat "$dir/kilnd.url")")
}
HZ=$(getconf CLK_TCK)
# cpu_mark: the CPU ticks so far of each kilnd, the simulators and PostgreSQL, one line
cpu_mark() {
	local p
	for p in "${KPIDS[@]}"; do printf '%s ' "$(bench_cpu_ticks "$p")"; done
	echo "$(bench_cpu_ticks "${SIM_PIDS[@]}") $(bench_pg_ticks "$PGDIR/data")"
}
# cpu_shares MARK0 MARK1 SECONDS: "kilnd1 a% kilnd2 b% ... sims c% pg d%" (100% = one core)
cpu_shares() {
	awk -v a="$1" -v b="$2" -v s="$3" -v h="$HZ" 'BEGIN { n = split(a, x); split(b, y)
		for (i = 1; i <= n; i++) printf "%s %.0f%% ", i < n - 1 ? "kilnd" i : (i == n - 1 ? "sims" : "pg"),
			(y[i] - x[i]) / h / s * 100; printf "\n" }'
}
# calls_made: node_calls rows inserted so far (the id sequence: a handled row is deleted)
calls_made() {
	sql "SELECT coalesce(max(last_value), 0) FROM pg_sequences WHERE sequencename LIKE 'node_calls%'"
}
# names: the instance ids on stdin turned into "instance I"
names() { sed -f "$TMP/names.sed"; }
# per_owner TABLE SINCE: "owner: nodes, last read at +s" for each instance (from live.json)
per_owner() {
	jq -r '.[] | "\(.node) \(.ran_on // "?")"' "$TMP/owners.json" >"$TMP/owners.txt"
	sql "SELECT n.name, s.t - $2 FROM $1 s JOIN nodes n ON n.id = s.node_id" |
		awk -F'|' 'NR == FNR { split($0, f, " "); o[f[1]] = f[2]; next }
			{ k = ($1 in o) ? o[$1] : "(owner not known)"; c[k]++; if ($2 > m[k]) m[k] = $2 }
			END { for (k in c) printf "  %s: %d nodes, the last read at +%d s\n", k, c[k], m[k] }' \
			"$TMP/owners.txt" - | names | sort
}

for K in $KS; do
	echo "== $K instance(s), $N BMCs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	DB=kiln_cluster_$K
	psql "$KILN_TEST_PG" -qc "CREATE DATABASE $DB"
	sql() { psql "$KILN_TEST_PG dbname=$DB" -qAt -c "$1"; }
	KPIDS=() KURLS=()
	mkdir -m 700 "$TMP/k$K.1"
	kilnd_start "$TMP/k$K.1" "$DB"
	for ((i = 2; i <= K; i++)); do
		mkdir -m 700 "$TMP/k$K.$i"
		install -m 600 "$TMP/k$K.1/secret.key" "$TMP/k$K.$i/secret.key"
		kilnd_start "$TMP/k$K.$i" "$DB"
	done
	AUTH="Authorization: Bearer $(cat "$TMP/k$K.1/admin.token")"
	for ((i = 1; i <= K; i++)); do
		echo "s/$(cat "$TMP/k$K.$i/instance.id")/instance $i/"
	done >"$TMP/names.sed"
	sql "CREATE TABLE bench_first (node_id BIGINT PRIMARY KEY, t BIGINT);
		CREATE TABLE bench_steady (node_id BIGINT PRIMARY KEY, t BIGINT)"
	T0=$(date +%s)
	bench_nodes_import "${KURLS[0]}" "$AUTH" "$N" "$BASE"
	echo "  imported through instance 1 in $(($(date +%s) - T0)) s"
	bench_sweep_wait bench_first 1 $((INTERVAL * 4 + 60))
	T1=$(($(date +%s) + 1))
	sleep 1
	C0=$(cpu_mark)
	bench_sweep_wait bench_steady "$T1" $((INTERVAL * 4))
	S=$(($(date +%s) - T1))
	STEADY_CPU=$(cpu_shares "$C0" "$(cpu_mark)" "$S")

	for M in $LIVE; do
		[ "$M" -le "$N" ] || continue
		range="rf[00000-$(printf '%05d' $((M - 1)))]"
		ID0=$(calls_made)
		echo "  live read over $M nodes through instance 1; load average $(cut -d' ' -f1-3 /proc/loadavg)"
		C0=$(cpu_mark) t0=$(date +%s%N)
		code=$(curl -gsS -m "$LIVE_TMO" -H "$AUTH" -G --data-urlencode "range=$range" \
			-o "$TMP/live.json" -w '%{http_code}' "${KURLS[0]}/api/v1/power" || true)
		ms=$((($(date +%s%N) - t0) / 1000000))
		C1=$(cpu_mark)
		ID1=$(calls_made)
		if [ "$code" != 200 ] || ! jq -e 'type == "array"' "$TMP/live.json" >/dev/null 2>&1; then
			echo "    NO FULL ANSWER after $ms ms (HTTP '$code', $(wc -c <"$TMP/live.json") bytes);" \
				"node_calls rows written: $((ID1 - ID0)), left: $(sql "SELECT state || ' ' || count(*)
				FROM node_calls GROUP BY state" | tr '\n' ' ')"
		else
			echo "    $ms ms; $(jq -r '[(map(select(.power == "on" or .power == "off")) | length),
				(map(select(.error)) | length)] | "\(.[0]) with a state, \(.[1]) errors"' "$TMP/live.json");" \
				"node_calls rows written: $((ID1 - ID0))"
			jq -r 'group_by(.ran_on) | .[] | "      ran on \(.[0].ran_on // "?"): \(length)"' "$TMP/live.json" | names
			jq -r '[.[] | select(.error) | .error] | group_by(.) | .[:3][] | "      \(length) x \(.[0])"' "$TMP/live.json"
			cp "$TMP/live.json" "$TMP/owners.json" # the owners, as far as answered
		fi
		echo "    CPU over the call: $(cpu_shares "$C0" "$C1" "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')")"
	done

	echo "  poller, first sweep (from the import at +0, first contact):"
	[ -s "$TMP/owners.json" ] && per_owner bench_first "$T0"
	echo "  poller, steady sweep ([poller] interval ${INTERVAL} s): every node read again in $S s"
	[ -s "$TMP/owners.json" ] && per_owner bench_steady "$T1"
	echo "    CPU over the steady sweep: $STEADY_CPU"
	rm -f "$TMP/owners.json"
	for p in "${KPIDS[@]}"; do kill -TERM "$p"; wait "$p" 2>/dev/null || true; done
done
