# SPDX-License-Identifier: Apache-2.0
# Integration: live BMC calls never stall kilnd. 6 agents report every second beside healthy
# simulated BMCs while 24 clients keep live reads going for 30 s against 4 BMCs that accept
# and never answer and a dead IPMI BMC: every agent's agent_age_s stays at most 3 s, GET /health
# answers within 500 ms throughout, no node is flagged hung and remediation (enabled) sends
# nothing. Prints the health and report latencies (p50/p99) without and with the load.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
NVML_CONF=$SRC/tests/fake-nvml/configs/h100-8gpu.conf
ROOT=$SRC/tests/fixtures/agent/roots/h100
MOCKUP=$SRC/tests/sim/fixtures/idrac9
for f in "$AGENT" "$NVML" "$NVML_CONF" "$BMCSIM" "$MOCKUP"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done

FAILS=0
T=$KILN_TEST_TMP
LOAD_S=${KILN_LIVE_LOAD_S:-30}
CLIENTS=24

cat >"$T/kilnd.conf" <<EOF
[bmc]
connect_timeout = 3s
request_timeout = 8s
[poller]
interval = 5s
health_every = 1s
[health]
agent_interval = 1s
hung_intervals = 3
[remediation]
enabled = yes
grace = 1s
max_per_hour = 20
EOF

AGENT_PIDS=()
LOAD_PIDS=()
on_exit() {
	local p
	for p in "${LOAD_PIDS[@]}" "${AGENT_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/ok" "$MOCKUP" --count 6 || exit 1
OK_PORTS=("${BMCSIM_PORTS[@]}")
bmcsim_start "$T/hung" "$MOCKUP" --count 4 --fault hang --hang-ms 120000 || exit 1
HUNG_PORTS=("${BMCSIM_PORTS[@]}")
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1

printf 'password\n' >"$T/bmc.pw"
add() {
	"$KILN" node add "$1" --bmc "$2" --bmc-user admin --bmc-password-file "$T/bmc.pw" \
		>/dev/null || { echo "node add $1 failed" >&2; exit 1; }
}
grep -v xid_events "$NVML_CONF" >"$T/clean-nvml.conf"
for i in 1 2 3 4 5 6; do
	n=ok$i
	add "$n" "redfish+http://127.0.0.1:${OK_PORTS[$((i - 1))]}"
	r=$T/roots/$n
	mkdir -p "$T/roots"
	cp -r "$ROOT" "$r"
	printf '%s\n' "$n" >"$r/proc/sys/kernel/hostname"
	bmcsim_serial "$MOCKUP" >"$r/sys/class/dmi/id/product_serial"
	: >"$r/dev/kmsg"
	"$KILN" agent token "$n" >"$T/$n.token" 2>/dev/null || { echo "agent token $n failed" >&2; exit 1; }
	FAKE_NVML_CONFIG=$T/clean-nvml.conf "$AGENT" --server "$KILND_URL" --root "$r" \
		--nvml-lib "$NVML" --state-dir "$T/agent-$n" --token-file "$T/$n.token" --interval 1 \
		>>"$T/agent-$n.log" 2>&1 &
	AGENT_PIDS+=("$!")
done
for i in 1 2 3 4; do
	add "hung$i" "redfish+http://127.0.0.1:${HUNG_PORTS[$((i - 1))]}"
done
# A dead IPMI BMC: a UDP port nothing listens on.
add dead1 "ipmi://127.0.0.1:$((20000 + RANDOM % 5000))"

status_json() { "$KILN" status -o json 2>>"$T/status.err"; }
ready() {
	[ "$(status_json | jq '[.[] | select((.node | startswith("ok")) and .agent_last_seen != null
		and .power == "on")] | length')" = 6 ]
}
wait_for "6 agents reported and their BMCs read" 40 ready || exit 1

# A probe that times agent reports the way an agent sends them (a new report_id each time).
cp "$T/ok1.token" "$T/probe.token"
FAKE_NVML_CONFIG=$T/clean-nvml.conf "$AGENT" --print --once --root "$T/roots/ok1" --nvml-lib "$NVML" \
	>"$T/report.json" 2>>"$T/probe.err" || fail "kiln-agent --print for the probe"
probe() { # probe SECONDS OUT: one report every 0.25 s, its time on a line
	local until=$(($(date +%s) + $1)) id
	while [ "$(date +%s)" -lt "$until" ]; do
		id=$(kiln_test_report_id)
		jq -c --arg id "$id" '.report_id = $id' "$T/report.json" >"$T/probe-body.json"
		curl -s -o /dev/null -w '%{time_total} %{http_code}\n' -m 30 \
			-H "Authorization: Bearer $(cat "$T/probe.token")" \
			-H "Content-Type: application/json" --data-binary @"$T/probe-body.json" \
			"$KILND_URL/api/v1/agent/report" >>"$2"
		sleep 0.25
	done
}
# sample SECONDS OUT: every 0.5 s, GET /health's time and the status facts checked below.
sample() {
	local until=$(($(date +%s) + $1))
	while [ "$(date +%s)" -lt "$until" ]; do
		curl -s -o /dev/null -w '%{time_total} %{http_code}\n' -m 10 \
			"$KILND_URL/api/v1/health" >>"$2.health"
		status_json | jq -r '[.[] | select(.node | startswith("ok"))] |
			"\(map(.agent_age_s // 99) | max) \(map(select(.reasons | any(startswith("hung:"))))
			| map(.node) | join(","))"' >>"$2.status"
		sleep 0.5
	done
}
pct() { # pct P FILE: the P-th percentile of the first column, in ms
	awk '{print $1 * 1000}' "$2" | sort -n | awk -v p="$1" '{v[NR] = $1}
		END { if (NR == 0) { print "-"; exit } i = int(NR * p / 100 + 0.999); if (i < 1) i = 1;
		printf "%.1f", v[i] }'
}

# Without the load.
probe 8 "$T/quiet.report" &
PROBE=$!
sample 8 "$T/quiet"
wait "$PROBE"

# With the load: 24 clients, each keeping one live read going on the silent BMCs.
load() {
	local until=$(($(date +%s) + LOAD_S)) q left
	q="range=hung%5B1-4%5D,dead1&retry_unreachable=1"
	# One BMC runs one operation at a time: the reads queue on the silent BMCs, and a read
	# still waiting at the end is cut by curl's own limit.
	while left=$((until - $(date +%s))) && [ "$left" -gt 0 ]; do
		curl -s -m "$left" -H "Authorization: Bearer $(cat "$KILN_TOKEN_FILE")" \
			"$KILND_URL/api/v1/$1?$q" >>"$T/load-$2.out"
		echo >>"$T/load-$2.out"
	done
}
for ((k = 0; k < CLIENTS; k++)); do
	case $((k % 3)) in
	0) load power "$k" & ;;
	1) load sensors "$k" & ;;
	2) load sel "$k" & ;;
	esac
	LOAD_PIDS+=("$!")
done
sleep 1 # every client's read is in flight
probe "$((LOAD_S - 2))" "$T/load.report" &
PROBE=$!
sample "$((LOAD_S - 2))" "$T/load"
wait "$PROBE"
for p in "${LOAD_PIDS[@]}"; do
	wait "$p" 2>/dev/null
done
LOAD_PIDS=()

# The load was real: reads came back with an error for every silent BMC (one operation at a
# time per BMC: each 8 s timeout lets the next queued read go).
answers=$(cat "$T"/load-*.out | jq -sR '[split("\n")[] | fromjson? | arrays |
	select(length == 5) | select(all(.[]; has("error")))] | length' 2>/dev/null)
if [ "${answers:-0}" -ge 2 ]; then
	pass "$answers live reads over the silent BMCs were answered, each node with its error"
else
	fail "only '${answers:-0}' live reads came back whole: $(head -c 400 "$T"/load-0.out)"
fi

max_health=$(sort -n "$T/load.health" | tail -1 | cut -d' ' -f1)
bad_codes=$(awk '$2 != 200' "$T/load.health" | wc -l)
if awk -v m="$max_health" 'BEGIN { exit !(m != "" && m < 0.5) }' && [ "$bad_codes" = 0 ]; then
	pass "GET /health answered 200 within 500 ms throughout (slowest ${max_health}s, $(wc -l <"$T/load.health") samples)"
else
	fail "GET /health under the load: slowest '${max_health}'s, $bad_codes answers not 200"
fi
max_age=$(cut -d' ' -f1 "$T/load.status" | sort -n | tail -1)
if [ -n "$max_age" ] && [ "$max_age" -le 3 ]; then
	pass "every agent's agent_age_s stayed at most 3 s (at most ${max_age} s)"
else
	fail "an agent's agent_age_s reached '${max_age}' s under the load"
fi
hung=$(awk 'NF > 1 {print $2}' "$T/load.status" "$T/quiet.status" | sort -u | tr '\n' ' ')
same "no healthy node flagged hung" "$hung" ""
lost=$(awk '$2 != 201' "$T/load.report" | wc -l)
same "every probe report under the load was stored (201)" "$lost" 0
cycles=$("$KILN" audit log -o json | jq '[.[] | select(.actor == "kilnd")] | length')
same "remediation sent nothing" "$cycles" 0
resets=0
for port in "${OK_PORTS[@]}"; do
	resets=$((resets + $(curl -s "http://127.0.0.1:$port/_sim/state" | jq '.resets | length')))
done
same "no healthy BMC was reset" "$resets" 0

echo "figures: health p50/p99 quiet $(pct 50 "$T/quiet.health")/$(pct 99 "$T/quiet.health") ms," \
	"loaded $(pct 50 "$T/load.health")/$(pct 99 "$T/load.health") ms;" \
	"report p50/p99 quiet $(pct 50 "$T/quiet.report")/$(pct 99 "$T/quiet.report") ms," \
	"loaded $(pct 50 "$T/load.report")/$(pct 99 "$T/load.report") ms"

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
