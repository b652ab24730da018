# SPDX-License-Identifier: Apache-2.0
# Shared by the benchmark scripts (sourced): a work folder and the processes started in it.

# bench_needs TOOL...: exits unless every TOOL is on the PATH; raises the soft open-file
# limit to the hard one (thousands of sockets).
bench_needs() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 1; }
	done
	ulimit -Sn "$(ulimit -Hn)"
}

# bench_build TARGET...: unless BUILD_IT is 0, builds the targets in a plain RelWithDebInfo
# tree $BUILD (no sanitizers, warnings as errors) from $SRC.
bench_build() {
	[ "${BUILD_IT:-1}" = 0 ] && return 0
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE= \
		-DKILN_WERROR=ON >/dev/null
	cmake --build "$BUILD" -j2 --target "$@" >/dev/null
}

# bench_workdir NAME: sets TMP to a new folder and PIDS to an empty list; at exit every pid in
# PIDS gets SIGTERM and is waited for, and TMP is removed (kept with KILN_BENCH_KEEP=1).
bench_workdir() {
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-$1.XXXXXX") || exit 1
	PIDS=()
	trap bench_cleanup EXIT
}

bench_cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	if [ -n "${KILN_BENCH_KEEP:-}" ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}

# bench_agent_report OUT: a real 8-GPU report from kiln-agent (fake NVML, H100 config) in OUT.
bench_agent_report() {
	FAKE_NVML_CONFIG=$SRC/tests/fake-nvml/configs/h100-8gpu.conf timeout 60 \
		"$BUILD/bin/kiln-agent" --print --once --root "$SRC/tests/fixtures/agent/roots/h100" \
		--nvml-lib "$BUILD/lib/fake-nvml/libnvidia-ml.so.1" >"$1"
}

# bench_cpu_ticks PID...: utime + stime of the processes together, in clock ticks.
bench_cpu_ticks() {
	local p t=0
	for p in "$@"; do
		t=$((t + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
	done
	echo "$t"
}

# bench_pg_ticks DATADIR: the PostgreSQL server's CPU in clock ticks: the postmaster, its live
# children (the backends, the WAL writer, the checkpointer) and the children it has reaped.
bench_pg_ticks() {
	local pm
	pm=$(head -1 "$1/postmaster.pid")
	{ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pm="$pm" '{ sub(/^.*\) /, "") }
		$2 == pm { t += $12 + $13 } END { print t + 0 }' |
		{ read -r kids; sed 's/^.*) //' "/proc/$pm/stat" |
			awk -v k="$kids" '{ print k + $12 + $13 + $14 + $15 }'; }
}

# bench_idle_mark: the machine's idle and total jiffies so far ("idle total", /proc/stat).
bench_idle_mark() { awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
# bench_idle_share MARK0 MARK1: the machine's idle share between two marks, in percent.
bench_idle_share() {
	awk -v a="$1" -v b="$2" 'BEGIN { split(a, x); split(b, y)
		d = y[2] - x[2]; printf("%.0f %%", (d > 0 ? (y[1] - x[1]) * 100 / d : 0)) }'
}

# bench_pg_lock_sample CONNINFO OUT: until killed, every 200 ms appends to OUT, for kiln's
# writers' lock (the advisory key 7305874131: classid 1, objid 3010906835), the sessions that
# hold it exclusively (store_begin), hold it shared (store_begin_nodes) and wait for it, and
# the per-node locks held (two-key advisory locks): "exclusive shared waiting nodes".
bench_pg_lock_sample() {
	while sleep 0.2; do
		psql "$1" -qAt -F' ' -c "SELECT
			count(*) FILTER (WHERE w AND granted AND mode = 'ExclusiveLock'),
			count(*) FILTER (WHERE w AND granted AND mode = 'ShareLock'),
			count(*) FILTER (WHERE w AND NOT granted),
			count(*) FILTER (WHERE objsubid = 2 AND granted)
			FROM (SELECT *, objsubid = 1 AND classid = 1 AND objid = 3010906835 AS w
			      FROM pg_locks WHERE locktype = 'advisory') l" >>"$2" 2>/dev/null || true
	done
}
# bench_pg_lock_summary FILE: how often the writers' lock was held exclusively (the fleet-wide
# lock that serialises writers), how often shared, the sessions waiting, the node locks held.
bench_pg_lock_summary() {
	awk '{ n++; if ($1 > 0) x++; if ($2 > 0) s++; w += $3; k += $4 } END { if (n) printf "held exclusively in %.0f %% of samples, shared in %.0f %%, %.1f waiting on average, %.1f node locks held on average (%d samples)", x * 100 / n, s * 100 / n, w / n, k / n, n }' "$1"
}

# bench_bmcsims_start N BASE LAT JIT: N kiln-bmcsim BMCs (plain HTTP, the generic tree, LAT +-
# JIT ms a request) on ports BASE..BASE+N-1, at most 5,000 a process; their pids in PIDS and
# SIM_PIDS. Returns once every process listens.
bench_bmcsims_start() {
	local n=$1 base=$2 first cnt per=5000
	SIM_PIDS=()
	for ((first = 0; first < n; first += per)); do
		cnt=$((n - first < per ? n - first : per))
		"$BUILD/bin/kiln-bmcsim" --mockup "$SRC/tests/sim/fixtures/generic" \
			--listen "127.0.0.1:$((base + first))" --count "$cnt" --latency-ms "$3" \
			--jitter-ms "$4" --record-max 0 --ports-file "$TMP/ports.$first" \
			2>"$TMP/sim.$first.log" &
		PIDS+=("$!")
		SIM_PIDS+=("$!")
	done
	for ((first = 0; first < n; first += per)); do
		for _ in $(seq 600); do [ -s "$TMP/ports.$first" ] && break; sleep 0.1; done
		[ -s "$TMP/ports.$first" ] || { echo "kiln-bmcsim did not start:"; cat "$TMP/sim.$first.log"; exit 1; }
	done
}

# bench_nodes_import URL AUTH N BASE [BATCH]: nodes rf00000.. (N), node i with the BMC on port
# BASE+i (admin/password), BATCH (1,000: the API's body cap) a POST /nodes/import; each
# request's milliseconds appended to $TMP/import.ms, one a line. Exits on a refused request
# or an answer that does not list every node of its request.
bench_nodes_import() {
	local first last t0 batch=${5:-1000}
	for ((first = 0; first < $3; first += batch)); do
		last=$((first + batch - 1 < $3 - 1 ? first + batch - 1 : $3 - 1))
		seq "$first" "$last" | jq -R -s --argjson base "$4" '{nodes: [split("\n")[]
			| select(length > 0) | tonumber | {name: ("rf" + ("0000" + tostring)[-5:]),
			bmc: "redfish+http://127.0.0.1:\($base + .)", bmc_user: "admin",
			bmc_password: "password"}]}' >"$TMP/import.json"
		t0=$(date +%s%N)
		curl -gsS -H "$2" -H "Content-Type: application/json" --data-binary @"$TMP/import.json" \
			-o "$TMP/import.out" -w '%{http_code}\n' "$1/api/v1/nodes/import" | grep -qx 201 ||
			{ echo "node import failed: $(head -c 300 "$TMP/import.out")" >&2; exit 1; }
		echo $((($(date +%s%N) - t0) / 1000000)) >>"$TMP/import.ms"
		[ "$(jq length "$TMP/import.out")" = $((last - first + 1)) ] ||
			{ echo "node import answered $(jq length "$TMP/import.out") nodes of $((last - first + 1))" >&2; exit 1; }
	done
}

# bench_sweep_seen TABLE SINCE: with the caller's sql function (one query, one value) and $N:
# records in TABLE (node_id, t) each node's first power reading at or after SINCE (from
# node_bmc_state.power_time, seconds); prints how many nodes it holds.
bench_sweep_seen() {
	sql "INSERT INTO $1 SELECT node_id, power_time FROM node_bmc_state WHERE power_time >= $2
		ON CONFLICT DO NOTHING; SELECT count(*) FROM $1"
}
# bench_sweep_wait TABLE SINCE LIMIT: waits (at most LIMIT s, sampling every second) until all
# $N nodes are in TABLE; says so when not.
bench_sweep_wait() {
	local t
	for ((t = 0; t < $3; t++)); do
		[ "$(bench_sweep_seen "$1" "$2")" -ge "$N" ] && return 0
		sleep 1
	done
	echo "  (not every node read within $3 s: $(bench_sweep_seen "$1" "$2") of $N)"
}
