#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (on demand, not CI): GET /metrics for a fleet of N nodes with 8 GPUs each.
#
# usage: tests/bench/metrics.sh [--nodes N] [--scrapes K] [--no-build] [--build DIR] [--prometheus]
#   KILN_BENCH_KEEP=1 keeps the temporary folder.
#
# Builds a plain RelWithDebInfo tree into build-bench, starts kilnd on 127.0.0.1 (plain HTTP,
# fresh state dir), makes N nodes and their agent tokens, stores one real agent report per
# node (kiln-agent --print with the fake NVML's 8-GPU H100 config, all its fields, without
# Xid events) through kiln-bench-ingest, and gives every node the BMC state a poll of the
# simulated iDRAC 9 leaves (its sensors as the Redfish driver reads them, power on, health
# evaluated), written into kiln.db beside the running kilnd. Then K scrapes, plain and with
# Accept-Encoding: gzip, each timed by curl; kilnd's CPU time across them and its peak RSS;
# the first scrape after kilnd started, and one after a tenth of the nodes sent a new report.
# Right before each scrape the stored reports are marked received then (however long the
# set-up took, no agent has gone silent), and every scrape must hold all N nodes' GPU series
# (the gzip ones pass `gzip -t` and are checked inflated): else the benchmark fails.
# --prometheus: then Debian's Prometheus scrapes kilnd every 15 s with its default 10 s
# timeout, twice; its up, scrape_duration_seconds and scrape_samples_scraped are printed.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$SRC/build-bench
NODES=1000 SCRAPES=5 BUILD_IT=1 PROM=0
CMDLINE="tests/bench/metrics.sh $*"
while [ $# -gt 0 ]; do
	case $1 in
	--nodes) NODES=$2; shift 2 ;;
	--scrapes) SCRAPES=$2; shift 2 ;;
	--no-build) BUILD_IT=0; shift ;;
	--build) BUILD=$(realpath -m "$2"); shift 2 ;;
	--prometheus) PROM=1; shift ;;
	-h | --help) sed -n "2,21p" "$0"; exit 0 ;;
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
	cmake --build "$BUILD" -j2 --target kilnd kiln-agent fake-nvml kiln-bench-ingest \
		kiln-bmcsim kiln-rfdrive >/dev/null
fi

. "$SRC/tests/bench/lib.sh"
bench_workdir metrics
bench_agent_report "$TMP/agent.json"
jq -c 'del(.xid_events)' "$TMP/agent.json" >"$TMP/template.json"

# the sensors one poll of the simulated iDRAC 9 stores
"$BUILD/bin/kiln-bmcsim" --mockup "$SRC/tests/sim/fixtures/idrac9" --listen 127.0.0.1:0 \
	--ports-file "$TMP/sim.ports" 2>"$TMP/sim.log" &
SIM_PID=$!
PIDS+=("$SIM_PID")
for _ in $(seq 100); do [ -s "$TMP/sim.ports" ] && break; sleep 0.1; done
"$BUILD/bin/kiln-rfdrive" --url "redfish+http://127.0.0.1:$(head -1 "$TMP/sim.ports")" --user admin \
	--password password sensors | jq -c '{sensors: .[0].sensors}' >"$TMP/sensors.json"
kill -TERM "$SIM_PID"; wait "$SIM_PID" || true
NSENSORS=$(jq '.sensors | length' "$TMP/sensors.json")

mkdir -m 700 "$TMP/kilnd"
# The nodes have no BMC for the poller to read: the BMC state below is written beside it, and
# a health sweep (which stores its own copy of the state) is kept from replacing it meanwhile;
# a row the poller writes anyway (its first sweep over nodes just added) is written again
# before each scrape (bmc_state).
printf '[poller]\nhealth_every = 3600s\n' >"$TMP/kilnd.conf"
"$BUILD/bin/kilnd" --state-dir "$TMP/kilnd" --listen 127.0.0.1:0 --config "$TMP/kilnd.conf" \
	2>"$TMP/kilnd.log" &
KILND_PID=$!
PIDS+=("$KILND_PID")
for _ in $(seq 300); do
	[ -s "$TMP/kilnd/kilnd.url" ] && curl -sf -o /dev/null "$(cat "$TMP/kilnd/kilnd.url")/api/v1/health" && break
	kill -0 "$KILND_PID" 2>/dev/null || { cat "$TMP/kilnd.log"; exit 1; }
	sleep 0.1
done
URL=$(cat "$TMP/kilnd/kilnd.url")
"$BUILD/bin/kiln-bench-ingest" --setup --url "$URL" --admin-token "$TMP/kilnd/admin.token" \
	--tokens "$TMP/tokens" --nodes "$NODES" --conns 8 >&2
"$BUILD/bin/kiln-bench-ingest" --url "$URL" --tokens "$TMP/tokens" --nodes "$NODES" \
	--template "$TMP/template.json" --conns 16 --duration 3600 --warmup 0 \
	--max-reports "$NODES" >"$TMP/prime.txt" || { cat "$TMP/prime.txt"; exit 1; }
NOW=$(date +%s)
# bmc_state: the BMC state of every node that lacks its sensors (the poller writes the state
# it holds of a node it has just picked up, without sensors: such a row is written again)
bmc_state() {
	sqlite3 "$TMP/kilnd/kiln.db" <<SQL
.timeout 10000
INSERT OR REPLACE INTO node_bmc_state (node_id, power, power_time, reachable, last_ok, sensors,
	sensors_time, health, reasons, health_time)
	SELECT id, 'on', $NOW, 1, $NOW, readfile('$TMP/sensors.json'), $NOW, 'ok', '[]', $NOW
	FROM nodes WHERE id NOT IN (SELECT node_id FROM node_bmc_state WHERE sensors IS NOT NULL);
SQL
}
# the poller's own rows of the nodes first (it picks new nodes up within 10 s)
for _ in $(seq 600); do
	[ "$(sqlite3 "$TMP/kilnd/kiln.db" ".timeout 10000" "SELECT count(*) FROM node_bmc_state;")" -ge "$NODES" ] && break
	sleep 0.1
done
bmc_state
TOKEN=$(curl -sf -H "Authorization: Bearer $(cat "$TMP/kilnd/admin.token")" \
	-d '{"role":"metrics","name":"bench"}' "$URL/api/v1/tokens" | jq -r .token)

# fresh: every stored report received now, so that no agent is silent at the next scrape,
# and every node's sensors there
fresh() {
	sqlite3 "$TMP/kilnd/kiln.db" ".timeout 10000" "UPDATE node_agent_state SET last_seen = $(date +%s);"
	bmc_state
}
# nodes_with FILE: "A B", the nodes with GPU series and those with BMC sensor series in a
# scrape (a gzip one checked and inflated)
nodes_with() {
	case $1 in
	*.bin) gzip -t "$1" && gzip -dc "$1" ;;
	*) cat "$1" ;;
	esac | awk '/^kiln_gpu_info\{|^kiln_bmc_inlet_temperature_celsius\{/ {
			f = substr($0, 1, 8); sub(/.*node="/, ""); sub(/".*/, ""); n[f, $0] = 1 }
		END { for (k in n) { split(k, p, SUBSEP); c[p[1]]++ }
			print c["kiln_gpu"] + 0, c["kiln_bmc"] + 0 }'
}
scrape() { # scrape OUT CURL_ARGS...: prints time_total and size_download
	local out=$1
	shift
	fresh
	curl -sf -o "$out" -w '%{time_total} %{size_download}\n' -H "Authorization: Bearer $TOKEN" "$@" "$URL/metrics"
	local got
	got=$(nodes_with "$out")
	if [ "$got" != "$NODES $NODES" ]; then
		echo "metrics.sh: a scrape ($out) has GPU and BMC series of $got nodes, not $NODES" >&2
		exit 1
	fi
}
scrape "$TMP/first.txt" >"$TMP/first.times" # the first scrape, before measuring
TCK=$(getconf CLK_TCK)
cpu() { sed 's/.*) //' "/proc/$KILND_PID/stat" | awk '{ print $12 + $13 }'; }
C0=$(cpu)
for _ in $(seq "$SCRAPES"); do scrape "$TMP/plain.txt"; done >"$TMP/plain.times"
C1=$(cpu)
for _ in $(seq "$SCRAPES"); do scrape "$TMP/gz.bin" -H 'Accept-Encoding: gzip'; done >"$TMP/gz.times"
C2=$(cpu)
# a tenth of the nodes report again: their blocks are made again at the next scrape
"$BUILD/bin/kiln-bench-ingest" --url "$URL" --tokens "$TMP/tokens" --nodes "$((NODES / 10))" \
	--template "$TMP/template.json" --conns 16 --duration 3600 --warmup 0 \
	--max-reports "$((NODES / 10))" >"$TMP/again.txt" || { cat "$TMP/again.txt"; exit 1; }
scrape "$TMP/again.bin" -H 'Accept-Encoding: gzip' >"$TMP/again.times"
RSS=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$KILND_PID/status")
if [ "$PROM" = 1 ]; then
	command -v prometheus >/dev/null || { echo "bench --prometheus needs prometheus" >&2; exit 1; }
	PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	echo "$TOKEN" >"$TMP/prom.token"
	cat >"$TMP/prometheus.yml" <<YML
global:
  scrape_interval: 15s
scrape_configs:
  - job_name: kiln
    authorization:
      credentials_file: $TMP/prom.token
    static_configs:
      - targets: ["${URL#http://}"]
YML
	prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom-data" \
		--web.listen-address="127.0.0.1:$PROM_PORT" >"$TMP/prometheus.log" 2>&1 &
	PIDS+=("$!")
	promql() { curl -s -G "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'; }
	for _ in $(seq 90); do
		fresh
		[ "$(promql 'count_over_time(up{job="kiln"}[5m])' 2>/dev/null)" = 2 ] && break
		sleep 2
	done
	PROM_LINE="up $(promql 'up{job="kiln"}'), scrape_duration_seconds $(promql 'scrape_duration_seconds{job="kiln"}'), samples $(promql 'scrape_samples_scraped{job="kiln"}') (the second scrape of $(promql 'count_over_time(up{job="kiln"}[5m])'))"
fi
SERIES=$(grep -vc '^#' "$TMP/plain.txt")
NODE_SERIES=$(grep -c 'node="bn00001"' "$TMP/plain.txt" || true)
GPU_SERIES=$(grep -c 'node="bn00001".*gpu="0"' "$TMP/plain.txt" || true)
stats() { sort -n | awk '{ a[NR] = $1 } END { printf "median %.3f s, min %.3f s, max %.3f s", a[int((NR + 1) / 2)], a[1], a[NR] }'; }

echo "command: $CMDLINE"
echo "kilnd $BUILD/bin/kilnd, script at commit $(git -C "$SRC" rev-parse --short HEAD), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-32s %s\n' "nodes, GPUs" "$NODES, $((NODES * 8)) ($(awk '$1 == "acknowledged" { print $2 }' "$TMP/prime.txt") reports stored)"
printf '%-32s %s\n' "BMC sensors a node" "$NSENSORS"
printf '%-32s %s\n' "series in a scrape" "$SERIES"
printf '%-32s %s\n' "series of one node (of them GPU 0)" "$NODE_SERIES ($GPU_SERIES)"
printf '%-32s %s\n' "plain scrape time" "$(cut -d' ' -f1 "$TMP/plain.times" | stats)"
printf '%-32s %s\n' "plain scrape size" "$(head -1 "$TMP/plain.times" | awk '{ printf "%.1f MB (%.0f bytes a node)", $2 / 1e6, $2 / '"$NODES"' }')"
printf '%-32s %s\n' "gzip scrape time" "$(cut -d' ' -f1 "$TMP/gz.times" | stats)"
printf '%-32s %s\n' "gzip scrape size" "$(head -1 "$TMP/gz.times" | awk '{ printf "%.2f MB (%.0f bytes a node)", $2 / 1e6, $2 / '"$NODES"' }')"
printf '%-32s %s\n' "first scrape (plain)" "$(awk '{ printf "%.3f s", $1 }' "$TMP/first.times")"
printf '%-32s %s\n' "gzip scrape, 10 % new reports" "$(awk '{ printf "%.3f s, %.2f MB", $1, $2 / 1e6 }' "$TMP/again.times") ($(awk '$1 == "acknowledged" { print $2 }' "$TMP/again.txt") reports stored)"
printf '%-32s %s\n' "kilnd CPU a scrape (plain / gzip)" "$(awk -v a="$C0" -v b="$C1" -v c="$C2" -v t="$TCK" -v k="$SCRAPES" 'BEGIN { printf "%.3f s / %.3f s", (b - a) / t / k, (c - b) / t / k }')"
[ "$PROM" = 1 ] && printf '%-32s %s\n' "Prometheus $(prometheus --version 2>&1 | awk 'NR == 1 { print $3 }')" "$PROM_LINE"
printf '%-32s %s\n' "kilnd peak RSS" "$(awk -v k="$RSS" 'BEGIN { printf "%.0f MiB", k / 1024 }')"
