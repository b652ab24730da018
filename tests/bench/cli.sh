#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (on demand, not CI): `kiln status` and `kiln audit` over 10,000 nodes with agent state.
#
# usage: tests/bench/cli.sh [--nodes N] [--runs R] [--no-build] [--state DIR]
#   KILN_BENCH_KEEP=1 keeps the temporary folder; KILN_BENCH_BUILD=DIR uses that build tree
#   (default build-bench). --state DIR keeps kilnd's state dir there: filled on the first run,
#   reused as it is (no new reports) by later runs, so that builds compare on the same data.
#
# Builds a plain RelWithDebInfo tree into build-bench, starts kilnd on 127.0.0.1 (plain HTTP,
# ephemeral port), makes N agent-only nodes with agent tokens and gives each node two agent
# reports (kiln-bench-ingest, the lean 8-GPU report; a tenth of the nodes on another driver
# so the audit has groups), then times the CLI with hyperfine (apt-get install hyperfine;
# bench-only) or, without it, a loop over date +%s%N.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${KILN_BENCH_BUILD:-$SRC/build-bench}
NODES=10000 RUNS=20 BUILD_IT=1 STATE=
while [ $# -gt 0 ]; do
	case $1 in
	--nodes) NODES=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--no-build) BUILD_IT=0; shift ;;
	--state) STATE=$2; shift 2 ;;
	-h | --help) sed -n "2,13p" "$0"; exit 0 ;;
	*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
for tool in curl jq sqlite3; do
	command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 1; }
done
ulimit -Sn "$(ulimit -Hn)"
if [ "$BUILD_IT" = 1 ]; then
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE= \
		-DKILN_WERROR=ON >/dev/null
	cmake --build "$BUILD" -j2 --target kilnd kiln kiln-agent fake-nvml kiln-bench-ingest >/dev/null
fi

. "$SRC/tests/bench/lib.sh"
bench_workdir cli

bench_agent_report "$TMP/agent.json"
LEAN='del(.xid_events) | .gpus |= map({index, name, uuid, serial, pci_bus_id, memory_total_bytes,
	memory_used_bytes, utilization_gpu_pct, temperature_c, power_draw_w, ecc_volatile_uncorrected,
	ecc_aggregate_uncorrected, remapped_rows_failure, pstate})'
jq -c "$LEAN" "$TMP/agent.json" >"$TMP/template.json"
jq -c "$LEAN | .nvidia.driver_version = \"535.161.08\" | .nvidia.kernel_module_version = \"535.161.08\"
	| .nvidia.cuda_driver_version = \"12.2\"" "$TMP/agent.json" >"$TMP/template-old.json"

KD=$TMP/kilnd FILL=1
if [ -n "$STATE" ]; then
	KD=$(mkdir -p "$STATE" && cd "$STATE" && pwd)
	chmod 700 "$KD"
	[ -s "$KD/kiln.db" ] && FILL=0
	rm -f "$KD/kilnd.url"
else
	mkdir -m 700 "$KD"
fi
"$BUILD/bin/kilnd" --state-dir "$KD" --listen 127.0.0.1:0 2>"$TMP/kilnd.log" &
KILND_PID=$!
PIDS+=("$KILND_PID")
for _ in $(seq 300); do
	[ -s "$KD/kilnd.url" ] && curl -sf -o /dev/null "$(cat "$KD/kilnd.url")/api/v1/health" && break
	kill -0 "$KILND_PID" 2>/dev/null || { cat "$TMP/kilnd.log"; exit 1; }
	sleep 0.1
done
export KILN_URL; KILN_URL=$(cat "$KD/kilnd.url")
export KILN_TOKEN_FILE=$KD/admin.token

ING=$BUILD/bin/kiln-bench-ingest
if [ "$FILL" = 1 ]; then
	"$ING" --setup --url "$KILN_URL" --admin-token "$KILN_TOKEN_FILE" --tokens "$TMP/tokens" \
		--nodes "$NODES" --conns 8 >&2
	# Two reports a node; then the first tenth of the nodes reports an older driver.
	"$ING" --url "$KILN_URL" --tokens "$TMP/tokens" --nodes "$NODES" \
		--template "$TMP/template.json" --conns 16 --warmup 0 --duration 600 \
		--max-reports $((NODES * 2)) >"$TMP/load1.txt"
	"$ING" --url "$KILN_URL" --tokens "$TMP/tokens" --nodes $((NODES / 10)) \
		--template "$TMP/template-old.json" --conns 16 --warmup 0 --duration 600 \
		--max-reports $((NODES / 10)) >"$TMP/load2.txt"
fi
WITH_STATE=$(sqlite3 -readonly "$KD/kiln.db" "SELECT count(*) FROM node_agent_state")
echo "nodes with agent state: $WITH_STATE" >&2
sleep 12 # one health sweep of the poller over every node

"$BUILD/bin/kiln" status >"$TMP/status.txt" || true
"$BUILD/bin/kiln" audit >"$TMP/audit.txt" || true
echo "kiln status: $(wc -l <"$TMP/status.txt") lines; kiln audit: $(wc -l <"$TMP/audit.txt") lines" >&2
head -3 "$TMP/status.txt" >&2; tail -2 "$TMP/status.txt" >&2; head -12 "$TMP/audit.txt" >&2

KILN=$BUILD/bin/kiln
printf '%-36s %10s %10s %10s\n' "command ($NODES nodes)" "mean ms" "min ms" "max ms"
for cmd in "status" "status -o json" "audit" "audit -o json"; do
	if command -v hyperfine >/dev/null; then
		hyperfine -N -i -w 2 -r "$RUNS" --export-json "$TMP/h.json" "$KILN $cmd" >/dev/null 2>&1
		jq -r --arg c "kiln $cmd" '.results[0] | [$c, .mean * 1000, .min * 1000, .max * 1000]
			| "\(.[0])|\(.[1])|\(.[2])|\(.[3])"' "$TMP/h.json" |
			awk -F'|' '{ printf "%-36s %10.1f %10.1f %10.1f\n", $1, $2, $3, $4 }'
	else
		ts=()
		for ((i = 0; i < RUNS; i++)); do
			t0=$(date +%s%N); $KILN $cmd >/dev/null 2>&1 || true; t1=$(date +%s%N)
			ts+=($(((t1 - t0) / 1000)))
		done
		printf '%s\n' "${ts[@]}" | sort -n | awk -v c="kiln $cmd" '{ a[NR] = $1; s += $1 }
			END { printf "%-36s %10.1f %10.1f %10.1f\n", c, s / NR / 1000, a[1] / 1000, a[NR] / 1000 }'
	fi
done
echo "timer: $(command -v hyperfine >/dev/null && hyperfine --version || echo 'date +%s%N loop'), $RUNS runs after 2 warm-ups"
