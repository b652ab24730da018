# SPDX-License-Identifier: Apache-2.0
# Integration: GET /metrics scraped by a real Prometheus (Debian's `prometheus`) over a small
# lab (three simulated BMCs, agents on the fake NVML). After two scrapes, Prometheus' HTTP API
# must say what `kiln status -o json` and `kiln gpus -o json` say: power, health, a GPU's
# temperature, the driver _info. Also: promtool check metrics on a scrape; every metric the
# Grafana dashboard and the alert rules name has a sample in a scrape; a node whose agent is
# silent beyond hung_intervals exports no agent series, only its silence; ?range=; gzip; the
# metrics token reads /metrics only; [metrics] allow_unauthenticated_loopback.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../../deploy/packages.sh
. "$SRC/deploy/packages.sh"
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
	kiln_install_packages prometheus >/dev/null 2>&1
	if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
		echo "SKIP: the Debian package prometheus (prometheus, promtool) cannot be installed here"
		exit 77
	fi
fi
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
# shellcheck source=agent_fleet.sh
. "$HERE/agent_fleet.sh"
FAILS=0
T=$KILN_TEST_TMP
NODES=(m1 m2 m3)
cat >"$T/kilnd.conf" <<CONF
[poller]
interval = 5s
sensors_every = 1
health_every = 1s
[health]
agent_interval = 2s
hung_intervals = 3
[metrics]
allow_unauthenticated_loopback = yes
CONF
PROM_PID=
on_exit() {
	if [ -n "$PROM_PID" ]; then kill "$PROM_PID" 2>/dev/null; wait "$PROM_PID" 2>/dev/null; fi
	fleet_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" --count ${#NODES[@]} || exit 1
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
# m2 differs from the others: a hot GPU 3 and a hot inlet (a warning), so that a value put
# on the wrong node shows
{ cat "$T/fleet-nvml.conf"; echo 'gpu.3.temperature_c = 57'; } >"$T/m2-nvml.conf"
i=0
for n in "${NODES[@]}"; do
	fleet_node_add "$n" "${BMCSIM_PORTS[$i]}" || exit 1
	if [ "$n" = m2 ]; then FLEET_NVML_CONF=$T/m2-nvml.conf fleet_agent_start "$n"; else fleet_agent_start "$n"; fi
	i=$((i + 1))
done
curl -s -o /dev/null -X POST -d '{"sensor":{"name":"System Board Inlet Temp","reading":47}}' \
	"http://127.0.0.1:${BMCSIM_PORTS[1]}/_sim/inject" || fail "inject m2's inlet temperature"
"$KILN" node set m1 --rack r01 >/dev/null || fail "kiln node set m1 --rack r01"
METRICS_TOKEN=$(kiln_test_token metrics prometheus) || exit 1
printf '%s\n' "$METRICS_TOKEN" >"$T/metrics.token"
VIEWER_TOKEN=$(kiln_test_token viewer) || exit 1

# scrape FILE [CURL_ARGS...]: GET /metrics with the metrics token; prints the status.
scrape() {
	local out=$1
	shift
	curl -s -o "$out" -w '%{http_code}' -H "Authorization: Bearer $METRICS_TOKEN" "$@" "$KILND_URL/metrics"
}
has_series() { grep -q "^$1" "$T/scrape.txt"; }
# wait until every node has power, health and, for the agents, GPU series
lab_ready() {
	[ "$(scrape "$T/scrape.txt")" = 200 ] || return 1
	for n in "${NODES[@]}"; do
		has_series "kiln_node_health_level{node=\"$n\"" || has_series "kiln_node_health_level{node=\"$n\"," || return 1
		grep -q "^kiln_gpu_temperature_celsius{node=\"$n\"" "$T/scrape.txt" || return 1
		grep -q "^kiln_bmc_power_watts{node=\"$n\"" "$T/scrape.txt" || return 1
	done
	grep -q '^kiln_node_health_level{node="m2"} 1$' "$T/scrape.txt" &&
		grep -q '^kiln_node_health_reason{node="m2",kind="temperature"} 1$' "$T/scrape.txt" &&
		grep -q '^kiln_bmc_inlet_temperature_celsius{node="m2"} 47$' "$T/scrape.txt"
}
wait_for "every node has health, GPU and BMC series; m2 a warning for its inlet" 60 lab_ready || exit 1

# --- the exposition itself -----------------------------------------------------------
promtool check metrics <"$T/scrape.txt" >"$T/promtool.out" 2>&1
check "promtool check metrics reports no problem" "$([ $? = 0 ] && [ ! -s "$T/promtool.out" ] && echo 0 || echo 1)" "$(head -5 "$T/promtool.out")"
dups=$(grep -v '^#' "$T/scrape.txt" | sed 's/ [^ ]*$//' | sort | uniq -d | head -3)
same "no series twice" "$dups" ""
helps=$(grep '^# HELP' "$T/scrape.txt" | awk '{print $3}' | sort | uniq -d | head -3)
same "HELP once per family" "$helps" ""
grep -q '^kiln_gpu_temperature_celsius{node="m1",rack="r01",gpu="0",UUID="GPU-[^"]*",pci_bus_id="[^"]*",model_name="NVIDIA H100 80GB HBM3"} ' "$T/scrape.txt"
check "GPU series carry node, rack, gpu, UUID, pci_bus_id and model_name" $? "$(grep -m1 '^kiln_gpu_temperature_celsius' "$T/scrape.txt")"
bad=$(grep -v '^#' "$T/scrape.txt" | grep -cv '^kiln_')
same "every family starts with kiln_" "$bad" 0

# --- gzip, range, roles, loopback ------------------------------------------------------
hdr=$(curl -s -D - -o "$T/scrape.gz" -H "Authorization: Bearer $METRICS_TOKEN" -H 'Accept-Encoding: gzip' "$KILND_URL/metrics")
case "$hdr" in *[Cc]ontent-[Ee]ncoding:\ gzip*) pass "gzip when asked" ;; *) fail "no Content-Encoding: gzip: $hdr" ;; esac
gzip -dc "$T/scrape.gz" 2>/dev/null | grep -q '^kiln_node_power_on{node="m2"'
check "the gzipped scrape unpacks to the exposition" $? "gzip -d failed or m2 missing"
case "$hdr" in *text/plain\;\ version=0.0.4*) pass "Content-Type text/plain; version=0.0.4" ;; *) fail "content type: $hdr" ;; esac
same "range: status" "$(scrape "$T/range.txt" -G --data-urlencode 'range=m[2-3]')" 200
same "range: m1 left out" "$(grep -c 'node="m1"' "$T/range.txt")" 0
grep -q '^kiln_node_power_on{node="m3"' "$T/range.txt"
check "range: m3 in" $? "no m3 series"
same "range: an unknown node is 404" "$(scrape /dev/null -G --data-urlencode 'range=nosuch')" 404
same "metrics token: GET /api/v1/nodes is 403" "$(kiln_api GET /nodes "" "$METRICS_TOKEN")" 403
same "metrics token: GET /api/v1/status is 403" "$(kiln_api GET /status "" "$METRICS_TOKEN")" 403
same "metrics token: console log is 403" "$(kiln_api GET /nodes/m1/console/log "" "$METRICS_TOKEN")" 403
same "viewer token reads /metrics" "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $VIEWER_TOKEN" "$KILND_URL/metrics")" 200
same "loopback without a token (allow_unauthenticated_loopback)" "$(curl -s -o /dev/null -w '%{http_code}' "$KILND_URL/metrics")" 200
same "loopback with a bad token is still 401" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer kiln_nope' "$KILND_URL/metrics")" 401
same "loopback without a token: other endpoints still 401" "$(kiln_api GET /nodes "" -)" 401

# --- a real Prometheus scrapes with the metrics token ---------------------------------
PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
KILND_HOSTPORT=${KILND_URL#http://}
cat >"$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: kiln
    metrics_path: /metrics
    authorization:
      credentials_file: $T/metrics.token
    static_configs:
      - targets: ["$KILND_HOSTPORT"]
YML
promtool check config "$T/prometheus.yml" >"$T/promtool-config.out" 2>&1
check "promtool check config" $? "$(cat "$T/promtool-config.out")"
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom-data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" >"$T/prometheus.log" 2>&1 &
PROM_PID=$!
PROM=http://127.0.0.1:$PROM_PORT
# promql QUERY: the instant query's result vector (JSON) on stdout
promql() { curl -s -G "$PROM/api/v1/query" --data-urlencode "query=$1" | jq -c '.data.result'; }
two_scrapes() {
	local v
	v=$(promql 'count_over_time(up{job="kiln"}[1m])' 2>/dev/null | jq -r '.[0].value[1] // 0' 2>/dev/null)
	[ "${v:-0}" -ge 2 ] 2>/dev/null && [ "$(promql 'up{job="kiln"}' | jq -r '.[0].value[1]')" = 1 ]
}
wait_for "Prometheus scraped kilnd twice" 40 two_scrapes || { tail -20 "$T/prometheus.log" >&2; exit 1; }

"$KILN" status -o json >"$T/status.json" || fail "kiln status -o json"
"$KILN" gpus -o json >"$T/gpus.json" || fail "kiln gpus -o json"
for n in "${NODES[@]}"; do
	power=$(jq -r --arg n "$n" '.[] | select(.node == $n) | .power' "$T/status.json")
	health=$(jq -r --arg n "$n" '.[] | select(.node == $n) | .health' "$T/status.json")
	want_on=0; [ "$power" = on ] && want_on=1
	same "$n: kiln_node_power_on is kiln status' power ($power)" \
		"$(promql "kiln_node_power_on{node=\"$n\"}" | jq -r '.[0].value[1]')" "$want_on"
	case "$health" in ok) lvl=0 ;; warning) lvl=1 ;; critical) lvl=2 ;; *) lvl=? ;; esac
	same "$n: kiln_node_health_level is kiln status' health ($health)" \
		"$(promql "kiln_node_health_level{node=\"$n\"}" | jq -r '.[0].value[1]')" "$lvl"
	temp=$(jq -r --arg n "$n" '.[] | select(.node == $n) | .gpus[] | select(.index == 3) | .temperature_c' "$T/gpus.json")
	same "$n: GPU 3's temperature is kiln gpus' ($temp)" \
		"$(promql "kiln_gpu_temperature_celsius{node=\"$n\",gpu=\"3\"}" | jq -r '.[0].value[1]')" "$temp"
	drv=$(jq -r --arg n "$n" '.[] | select(.node == $n) | .driver_version' "$T/gpus.json")
	same "$n: the driver _info names kiln gpus' driver ($drv)" \
		"$(promql "kiln_node_nvidia_driver_info{node=\"$n\"}" | jq -r '.[0].metric.driver_version')" "$drv"
	uuid=$(jq -r --arg n "$n" '.[] | select(.node == $n) | .gpus[] | select(.index == 3) | .uuid' "$T/gpus.json")
	same "$n: GPU 3's UUID label" \
		"$(promql "kiln_gpu_temperature_celsius{node=\"$n\",gpu=\"3\"}" | jq -r '.[0].metric.UUID')" "$uuid"
done

# kilnd's own counters: the agents' reports and the poller's Redfish reads were counted
v=$(promql 'kiln_ingest_reports_total{result="stored"}' | jq -r '.[0].value[1] // 0')
[ "${v%.*}" -gt 0 ] 2>/dev/null
check "kiln_ingest_reports_total{result=\"stored\"} counts the reports ($v)" $? "got '$v'"
v=$(promql 'kiln_bmc_poll_duration_seconds_count{protocol="redfish"}' | jq -r '.[0].value[1] // 0')
[ "${v%.*}" -gt 0 ] 2>/dev/null
check "kiln_bmc_poll_duration_seconds counts the Redfish polls ($v)" $? "got '$v'"
same "kiln_nodes" "$(promql 'kiln_nodes' | jq -r '.[0].value[1]')" 3

# --- a silent agent: no agent series, only its silence ----------------------------------
fleet_agent_stop m3
silent() {
	scrape "$T/silent.txt" >/dev/null
	grep -q '^kiln_node_agent_silent{node="m3"} 1$' "$T/silent.txt"
}
wait_for "m3's agent counts as silent after 3 intervals of 2 s" 30 silent
same "m3: no GPU series once its agent is silent" "$(grep -c '^kiln_gpu_[a-z_]*{node="m3"' "$T/silent.txt")" 0
same "m3: no driver _info once its agent is silent" "$(grep -c '^kiln_node_nvidia_driver_info{node="m3"' "$T/silent.txt")" 0
grep -q '^kiln_node_agent_last_seen_age_seconds{node="m3"} ' "$T/silent.txt"
check "m3: its silence is still exported" $? "no kiln_node_agent_last_seen_age_seconds for m3"
grep -q '^kiln_gpu_temperature_celsius{node="m1"' "$T/silent.txt"
check "m1 keeps its GPU series" $? "m1's GPU series are gone"

# --- the dashboard's and the rules' metrics have samples in a scrape (m3 hung: a reason) --
names=$( (jq -r '.. | objects | (.expr, .definition) | strings' "$SRC"/deploy/grafana/*.json; \
	grep -h 'expr:' "$SRC"/deploy/prometheus/*rules*.yml) | grep -o 'kiln_[a-z0-9_]*' | sort -u)
[ -n "$names" ] || fail "no kiln_ metric found in deploy/grafana and deploy/prometheus"
for m in $names; do
	base=$m
	if ! grep -q "^# TYPE $base " "$T/silent.txt"; then
		base=${m%_bucket}; base=${base%_sum}; base=${base%_count}
	fi
	if grep -q "^# TYPE $base " "$T/silent.txt" && grep -q "^$m[{ ]" "$T/silent.txt"; then
		:
	else
		fail "$m is named in the dashboard or the rules but has no sample in a scrape"
	fi
done
pass "$(printf '%s\n' "$names" | grep -c .) metrics of the dashboard and the rules checked"

kill "$PROM_PID" 2>/dev/null; wait "$PROM_PID" 2>/dev/null; PROM_PID=
fleet_agents_stop
kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	exit 1
fi
echo "all metrics checks passed"
