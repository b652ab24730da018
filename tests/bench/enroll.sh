#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (on demand, not CI): a fleet of kiln-agents enrolling at once from one address
# (a rack behind one NAT, or every node booting after a power loss), against kilnd's default
# enrollment rate limit ([http] enroll_rate 5/s after a burst of 100): every agent must get
# its token, waiting out the 429s' Retry-After, within 10 minutes (issue 17).
#
# usage: tests/bench/enroll.sh [--agents N] [--no-build] [--build DIR]
#   KILN_BENCH_KEEP=1 keeps the temporary folder.
#
# Each node gets a BMC serial as the poller stores it from the BMC's inventory (written into
# the store directly: N simulated BMCs are not what is measured), each agent a copy of the
# H100 fixture root (hard links, its own host name, DMI serial, machine and boot ids) and
# the real kiln-agent --once with the fleet enrollment token. Prints the time until the last
# agent delivered its first report, how many were told to come back, and the slowest agent.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$SRC/build-bench
AGENTS=1000 BUILD_IT=1
while [ $# -gt 0 ]; do
	case $1 in
	--agents) AGENTS=$2; shift 2 ;;
	--no-build) BUILD_IT=0; shift ;;
	--build) BUILD=$(realpath -m "$2"); shift 2 ;;
	-h | --help) sed -n "2,15p" "$0"; exit 0 ;;
	*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
for tool in curl jq sqlite3; do
	command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 1; }
done
ulimit -Sn "$(ulimit -Hn)"
ulimit -Su "$(ulimit -Hu)" 2>/dev/null || true
if [ "$BUILD_IT" = 1 ]; then
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE= \
		-DKILN_WERROR=ON >/dev/null
	cmake --build "$BUILD" -j2 --target kilnd kiln kiln-agent fake-nvml >/dev/null
fi
. "$SRC/tests/bench/lib.sh"
bench_workdir enroll

mkdir -m 700 "$TMP/kilnd"
"$BUILD/bin/kilnd" --state-dir "$TMP/kilnd" --listen 127.0.0.1:0 2>"$TMP/kilnd.log" &
KILND_PID=$!
PIDS+=("$KILND_PID")
for _ in $(seq 300); do
	[ -s "$TMP/kilnd/kilnd.url" ] && curl -sf -o /dev/null "$(cat "$TMP/kilnd/kilnd.url")/api/v1/health" && break
	kill -0 "$KILND_PID" 2>/dev/null || { cat "$TMP/kilnd.log"; exit 1; }
	sleep 0.1
done
export KILN_URL KILN_TOKEN_FILE=$TMP/kilnd/admin.token
KILN_URL=$(cat "$TMP/kilnd/kilnd.url")
{
	echo name
	for ((i = 1; i <= AGENTS; i++)); do printf 'node%04d\n' "$i"; done
} >"$TMP/nodes.csv"
"$BUILD/bin/kiln" node import "$TMP/nodes.csv" >/dev/null
sqlite3 "$TMP/kilnd/kiln.db" "UPDATE nodes SET bmc_serial = 'SN-' || name"
"$BUILD/bin/kiln" agent enroll-token create --name bench >"$TMP/enroll.token"

ROOT=$SRC/tests/fixtures/agent/roots/h100
for ((i = 1; i <= AGENTS; i++)); do
	n=$(printf 'node%04d' "$i") r=$TMP/roots/$n
	mkdir -p "$TMP/roots"
	cp -al "$ROOT" "$r"
	for f in proc/sys/kernel/hostname sys/class/dmi/id/product_serial etc/machine-id \
		proc/sys/kernel/random/boot_id; do
		rm -f "$r/$f"
	done
	printf '%s\n' "$n" >"$r/proc/sys/kernel/hostname"
	printf 'SN-%s\n' "$n" >"$r/sys/class/dmi/id/product_serial"
	printf '%032x\n' "$i" >"$r/etc/machine-id"
	printf '%08x-1111-4111-8111-111111111111\n' "$i" >"$r/proc/sys/kernel/random/boot_id"
done

echo "starting $AGENTS agents at once" >&2
T0=$(date +%s.%N)
APIDS=()
for ((i = 1; i <= AGENTS; i++)); do
	n=$(printf 'node%04d' "$i")
	(
		FAKE_NVML_CONFIG=$SRC/tests/fake-nvml/configs/h100-8gpu.conf timeout 900 \
			"$BUILD/bin/kiln-agent" --server "$KILN_URL" --root "$TMP/roots/$n" \
			--nvml-lib "$BUILD/lib/fake-nvml/libnvidia-ml.so.1" --state-dir "$TMP/agent-$n" \
			--enroll-token-file "$TMP/enroll.token" --once >"$TMP/agent-$n.log" 2>&1
		echo "$? $(date +%s.%N)" >"$TMP/agent-$n.done"
	) &
	APIDS+=($!)
done
for p in "${APIDS[@]}"; do wait "$p" || true; done
T1=$(date +%s.%N)
OK=$(cat "$TMP"/agent-*.done | awk '$1 == 0' | wc -l)
LAST=$(cat "$TMP"/agent-*.done | awk -v t0="$T0" '$1 == 0 { d = $2 - t0; if (d > m) m = d } END { printf "%.1f", m }')
TOLD=$(cat "$TMP"/agent-*.log | grep -c 'enroll again in' || true)
STORED=$(sqlite3 "$TMP/kilnd/kiln.db" "SELECT count(*) FROM node_agent_state")
printf 'agents %d enrolled %d stored %d\n' "$AGENTS" "$OK" "$STORED"
printf 'wall %.1f s, last agent delivered after %s s\n' "$(echo "$T1 - $T0" | bc)" "$LAST"
printf '429 answers waited out %d\n' "$TOLD"
[ "$OK" = "$AGENTS" ] && [ "$STORED" = "$AGENTS" ] && [ "${LAST%.*}" -lt 600 ]
