# SPDX-License-Identifier: Apache-2.0
# Shared by the benchmark scripts (sourced): a work folder and the processes started in it.

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
