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
