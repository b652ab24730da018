#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (on demand, not CI): Redfish power-state sweeps over many kiln-bmcsim BMCs.
#
# usage: tests/bench/redfish.sh [--bmcs N] [--latency MS] [--jitter MS] [--fault SPEC]
#          [--request-timeout S] [--status-timeout S] [--fanout F] [--sweeps K]
#          [--peer-subset M] [--peer-fanout F] [--cycle] [--cli] [--dead] [--sims K]
#          [--no-build]
#   defaults: 10000 BMCs, HTTPS (ECDSA), 200 +- 50 ms, hang:1%, request_timeout 5 s, kilnd's
#   own fan-out, 3 sweeps, a curl loop over 100 BMCs as the sequential peer and a second
#   kilnd with its fan-out limited to 8 (Ironic's default) over the same 100 BMCs.
#   --cycle  after the sweeps, POST /power {"action":"cycle"} over every BMC that answers
#            (power-delay 1 s per phase) and time it until each final state is confirmed.
#   --status-timeout T  kilnd's [bmc] status_timeout (power-state reads: 2, 2s, 1500ms);
#            default: kilnd's own.
#   --cli    time `kiln power status RANGE` (the CLI) instead of a bare GET /api/v1/power.
#   --dead   point 2: 1,000 BMCs of which half accept and never answer (hang:50%), 2 sweeps
#            through the CLI, each checked against its timeout (status_timeout, first contact
#            included; request_timeout without it) + 2 s; the hung half must be reported as
#            timed out, the other half with their power state.
#   --sims K kiln-bmcsim processes (default: one per 5,000 BMCs); more spread the
#            simulators' CPU over both cores.
#   --peer-fanout F  the second kilnd's fan-out (0: not run).
#   --redfish-threads T  kilnd's [bmc] redfish_threads (default: kilnd's own, one per core).
#   --select-query on|off  kiln-bmcsim's service root advertises $select (SelectQuery) or not;
#            default: as the mockup says (generic: not advertised).
#   --expand-query on|off  kiln-bmcsim's service root advertises $expand=. (ExpandQuery) or
#            not: a first contact then reads the system from the Systems collection.
#   --poller-interval S  kilnd's [poller] interval (default 3600s: out of the way; 30s is
#            kilnd's own default, a fleet polled while the sweeps run).
#   --settle S  seconds to wait after the first sweep (the poller's first-contact reads of
#            every node: sensors, SEL, inventory) before the next ones.
#   KILN_BENCH_BUILD=DIR uses that build directory instead of build-bench.
#   KILN_BENCH_PERF=DIR records the last sweep with perf (kilnd.data, sims.data in DIR);
#   KILN_BENCH_PERF_CG=dwarf records call graphs from DWARF (default: frame pointers).
#   KILN_BENCH_TIMELINE=1 prints, for each sweep, kilnd's and the simulators' CPU and the
#   machine's idle share in 500 ms steps (where a sweep waits rather than computes).
#
# Starts kiln-bmcsim processes of at most 5,000 ports each on 127.0.0.1 (ports below 32768),
# kilnd on 127.0.0.1 with a node per BMC (TLS verified against the simulators' certificate,
# poller interval 1 h unless --poller-interval: it still reads ~3 nodes a second, and each
# one's sensors, SEL and inventory at first contact), then times GET /api/v1/power over
# the whole range: the first sweep (TLS handshakes, sessions) and the next ones (reuse).
# Afterwards it reads every BMC's /_sim/state: sessions per BMC (never more than one) and
# request counters (the sweeps really asked the BMCs).
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${KILN_BENCH_BUILD:-$SRC/build-bench}
N=10000 LAT=200 JIT=50 FAULT=hang:1% RT=5 ST= FANOUT= SWEEPS=3 PEER=100 CYCLE=0 BUILD_IT=1
PER_PROC=5000 SIMS= CLI=0 DEAD=0 PEER_FANOUT=8 SELECT= EXPAND= RFT= POLL=3600s SETTLE=0
while [ $# -gt 0 ]; do
	case $1 in
	--bmcs) N=$2; shift 2 ;;
	--latency) LAT=$2; shift 2 ;;
	--jitter) JIT=$2; shift 2 ;;
	--fault) FAULT=$2; shift 2 ;;
	--request-timeout) RT=$2; shift 2 ;;
	--status-timeout) ST=$2; shift 2 ;;
	--fanout) FANOUT=$2; shift 2 ;;
	--sweeps) SWEEPS=$2; shift 2 ;;
	--peer-subset) PEER=$2; shift 2 ;;
	--peer-fanout) PEER_FANOUT=$2; shift 2 ;;
	--cycle) CYCLE=1; shift ;;
	--cli) CLI=1; shift ;;
	--dead) DEAD=1 CLI=1 N=1000 FAULT=hang:50% SWEEPS=2 PEER=0; shift ;;
	--sims) SIMS=$2; shift 2 ;;
	--select-query) SELECT=$2; shift 2 ;;
	--expand-query) EXPAND=$2; shift 2 ;;
	--redfish-threads) RFT=$2; shift 2 ;;
	--poller-interval) POLL=$2; shift 2 ;;
	--settle) SETTLE=$2; shift 2 ;;
	--no-build) BUILD_IT=0; shift ;;
	-h | --help) sed -n "2,44p" "$0"; exit 0 ;;
	*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
# a bare number of seconds stays as it was ("2" -> "2s")
case $ST in '' | *[a-z]) ;; *) ST=${ST}s ;; esac
[ -n "$SIMS" ] && PER_PROC=$(((N + SIMS - 1) / SIMS))
for tool in curl jq; do
	command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 1; }
done
ulimit -Sn "$(ulimit -Hn)"
if [ "$BUILD_IT" = 1 ]; then
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE= \
		-DKILN_WERROR=ON >/dev/null
	cmake --build "$BUILD" -j2 --target kilnd kiln kiln-bmcsim >/dev/null
fi

. "$SRC/tests/bench/lib.sh"
bench_workdir redfish

# Ports BASE..BASE+N-1, below 32768, spread by $$ so that parallel runs differ.
BASE=$((20000 + ($$ % 3) * 1000))
[ $((BASE + N)) -lt 32768 ] || BASE=$((32767 - N))
FAULTS=()
[ -n "$FAULT" ] && FAULTS=(--fault "$FAULT")
[ -n "$SELECT" ] && FAULTS+=(--select-query "$SELECT")
[ -n "$EXPAND" ] && FAULTS+=(--expand-query "$EXPAND")
SIM_PIDS=()
for ((first = 0; first < N; first += PER_PROC)); do
	cnt=$((N - first < PER_PROC ? N - first : PER_PROC))
	"$BUILD/bin/kiln-bmcsim" --mockup "$SRC/tests/sim/fixtures/generic" \
		--listen "127.0.0.1:$((BASE + first))" --count "$cnt" --tls --cert-out "$TMP/sim.$first.pem" \
		--latency-ms "$LAT" --jitter-ms "$JIT" "${FAULTS[@]}" --record-max 0 \
		--hang-ms 600000 --ports-file "$TMP/ports.$first" 2>"$TMP/sim.$first.log" &
	PIDS+=("$!")
	SIM_PIDS+=("$!")
done
for ((first = 0; first < N; first += PER_PROC)); do
	for _ in $(seq 600); do [ -s "$TMP/ports.$first" ] && break; sleep 0.1; done
	[ -s "$TMP/ports.$first" ] || { echo "kiln-bmcsim did not start:"; cat "$TMP/sim.$first.log"; exit 1; }
done

# kilnd_start DIR FANOUT: a kilnd in DIR (poller out of the way); sets KPID, KURL, KAUTH.
kilnd_start() {
	local dir=$1 fan=$2
	{
		printf '[bmc]\nrequest_timeout = %ss\n' "$RT"
		[ -n "$fan" ] && printf 'fanout = %s\n' "$fan"
		[ -n "$ST" ] && printf 'status_timeout = %s\n' "$ST"
		[ -n "$RFT" ] && printf 'redfish_threads = %s\n' "$RFT"
		printf '[poller]\ninterval = %s\n' "$POLL"
	} >"$dir.conf"
	mkdir -m 700 "$dir"
	"$BUILD/bin/kilnd" --state-dir "$dir" --listen 127.0.0.1:0 --config "$dir.conf" \
		2>"$dir.log" &
	KPID=$!
	PIDS+=("$KPID")
	for _ in $(seq 300); do
		[ -s "$dir/kilnd.url" ] && curl -sf -o /dev/null "$(cat "$dir/kilnd.url")/api/v1/health" && break
		kill -0 "$KPID" 2>/dev/null || { cat "$dir.log"; exit 1; }
		sleep 0.1
	done
	KURL=$(cat "$dir/kilnd.url")
	KAUTH="Authorization: Bearer $(cat "$dir/admin.token")"
}
# nodes_import URL AUTH COUNT: nodes rf00000.. for the first COUNT BMCs, 1,000 a request
# (the API's body cap), each trusting its own simulator's certificate.
nodes_import() {
	local url=$1 auth=$2 count=$3 first last
	for ((first = 0; first < count; first += 1000)); do
		last=$((first + 999 < count - 1 ? first + 999 : count - 1))
		seq "$first" "$last" | jq -R -s --argjson base "$BASE" --argjson per "$PER_PROC" \
			--arg tmp "$TMP" '{nodes: [split("\n")[] | select(length > 0) | tonumber | {
				name: ("rf" + ("0000" + tostring)[-5:]), bmc: "redfish://127.0.0.1:\($base + .)",
				bmc_user: "admin", bmc_password: "password", tls: "ca",
				tls_ca_file: "\($tmp)/sim.\((. / $per | floor) * $per).pem"}]}' \
			>"$TMP/import.json"
		curl -gsS -H "$auth" -H "Content-Type: application/json" --data-binary @"$TMP/import.json" \
			-o "$TMP/import.out" -w '%{http_code}\n' "$url/api/v1/nodes/import" | grep -qx 201 ||
			{ echo "node import failed: $(head -c 300 "$TMP/import.out")" >&2; exit 1; }
	done
}
kilnd_start "$TMP/kilnd" "$FANOUT"
KILND_PID=$KPID URL=$KURL AUTH=$KAUTH
api() { curl -gsS -H "$AUTH" -H "Content-Type: application/json" "$@"; }
nodes_import "$URL" "$AUTH" "$N"
RANGE="rf[00000-$(printf '%05d' $((N - 1)))]"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
rss_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$KILND_PID/status"; }
cpu_ticks() { bench_cpu_ticks "$@"; }
HZ=$(getconf CLK_TCK)
# sweep URL AUTH RANGE OUT: one power-state sweep, through the CLI with --cli; prints ms.
sweep() {
	local t0 t
	t0=$(now_ms)
	if [ "$CLI" = 1 ]; then
		KILN_URL=$1 KILN_TOKEN=${2#Authorization: Bearer } "$BUILD/bin/kiln" -o json \
			power status "$3" >"$4" || [ $? = 3 ] # 3: some nodes failed
	else
		curl -gsS -H "$2" -G --data-urlencode "range=$3" -o "$4" "$1/api/v1/power"
	fi
	t=$(($(now_ms) - t0))
	echo "$t"
}
# timeline FILE: every 500 ms until killed, "ms kilnd% sims% idle%": the time since the start,
# kilnd's and the simulators' CPU in the step (100 = one core), the machine's idle share
timeline() {
	local start t0 k0 s0 i0 a0 now k s i a
	start=$(now_ms) t0=$start k0=$(cpu_ticks "$KILND_PID") s0=$(cpu_ticks "${SIM_PIDS[@]}")
	read -r i0 a0 < <(awk '/^cpu / { print $5, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
	echo "  timeline: ms kilnd% sims% idle%" >"$1"
	while sleep 0.5; do
		now=$(now_ms) k=$(cpu_ticks "$KILND_PID") s=$(cpu_ticks "${SIM_PIDS[@]}")
		read -r i a < <(awk '/^cpu / { print $5, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat)
		awk -v t=$((now - start)) -v ms=$((now - t0)) -v k=$((k - k0)) -v s=$((s - s0)) \
			-v i=$((i - i0)) -v a=$((a - a0)) -v h="$HZ" 'BEGIN { printf "  %6d %5.0f %5.0f %5.0f\n",
				t, k * 100000 / h / ms, s * 100000 / h / ms, a ? i * 100 / a : 0 }' >>"$1"
		t0=$now k0=$k s0=$s i0=$i a0=$a
	done
}
# the error texts without node names and exact times, counted
errors_grouped() {
	jq -r '[.[] | select(.error) | .error | gsub("rf[0-9]+"; "NODE") | gsub("[0-9]+ milli"; "N milli")
		| gsub("[0-9]+ bytes"; "N bytes")] | group_by(.) | map("  \(length) x \(.[0])") | .[]' "$1" | head -5
}
DEAD_OK=1
printf '%-26s %9s %7s %7s %8s %10s %5s %9s %9s\n' sweep wall_ms on/off unknown errors kilnd_RSS_MiB load1 \
	kilnd_cpu_s sims_cpu_s
for ((k = 1; k <= SWEEPS; k++)); do
	PERF_PIDS=()
	[ "$k" = 2 ] && [ "$SETTLE" != 0 ] && sleep "$SETTLE"
	if [ -n "${KILN_BENCH_PERF:-}" ] && [ "$k" = "$SWEEPS" ]; then
		mkdir -p "$KILN_BENCH_PERF"
		perf record -q --call-graph "${KILN_BENCH_PERF_CG:-fp}" -F 499 -o "$KILN_BENCH_PERF/kilnd.data" -p "$KILND_PID" 2>/dev/null &
		PERF_PIDS+=("$!")
		perf record -q --call-graph "${KILN_BENCH_PERF_CG:-fp}" -F 499 -o "$KILN_BENCH_PERF/sims.data" \
			-p "$(IFS=,; echo "${SIM_PIDS[*]}")" 2>/dev/null &
		PERF_PIDS+=("$!")
		sleep 1
	fi
	kc0=$(cpu_ticks "$KILND_PID") sc0=$(cpu_ticks "${SIM_PIDS[@]}")
	TL_PID=
	if [ -n "${KILN_BENCH_TIMELINE:-}" ]; then
		timeline "$TMP/timeline$k" &
		TL_PID=$!
	fi
	t=$(sweep "$URL" "$AUTH" "$RANGE" "$TMP/sweep$k.json")
	[ -n "$TL_PID" ] && { kill "$TL_PID"; wait "$TL_PID" 2>/dev/null || true; cat "$TMP/timeline$k"; }
	for p in "${PERF_PIDS[@]}"; do kill -INT "$p"; wait "$p" 2>/dev/null || true; done
	kc=$(($(cpu_ticks "$KILND_PID") - kc0)) sc=$(($(cpu_ticks "${SIM_PIDS[@]}") - sc0))
	echo "$t" >"$TMP/t$k"
	read -r ok unk err < <(jq -r '[(map(select(.power == "on" or .power == "off")) | length),
		(map(select(.power == "unknown" and (.error | not))) | length),
		(map(select(.error)) | length)] | @tsv' "$TMP/sweep$k.json")
	printf '%-26s %9s %7s %7s %8s %10s %5s %9s %9s\n' "$([ "$k" = 1 ] && echo "1 (first)" || echo "$k (steady)")" \
		"$t" "$ok" "$unk" "$err" "$(($(rss_kb VmRSS) / 1024))" "$(cut -d' ' -f1 /proc/loadavg)" \
		"$(awk -v t="$kc" -v h="$HZ" 'BEGIN { printf "%.2f", t / h }')" \
		"$(awk -v t="$sc" -v h="$HZ" 'BEGIN { printf "%.2f", t / h }')"
	if [ "$DEAD" = 1 ]; then
		# a power read's GETs run under status_timeout (request_timeout when not set), first
		# contact included
		lim_ms=$((RT * 1000))
		if [ -n "$ST" ]; then
			case $ST in
			*ms) lim_ms=${ST%ms} ;;
			*s) lim_ms=$((${ST%s} * 1000)) ;;
			esac
			[ "$lim_ms" -eq 0 ] && lim_ms=$((RT * 1000))
		fi
		# the hung BMCs are the even-spread half: the API must name each as timed out
		read -r tmo live < <(jq -r '[(map(select(.error and (.error | test("timed out|timeout"; "i"))))
			| length), (map(select(.power == "on" or .power == "off")) | length)] | @tsv' \
			"$TMP/sweep$k.json")
		verdict=pass
		{ [ "$t" -le $((lim_ms + 2000)) ] && [ "$tmo" -eq $((N / 2)) ] && [ "$live" -eq $((N - N / 2)) ]; } ||
			{ verdict=MISS; DEAD_OK=0; }
		echo "  dead check: $t ms <= $lim_ms + 2000 ms, $tmo timed out (want $((N / 2))), $live with a state (want $((N - N / 2))): $verdict"
	fi
done
echo "kilnd peak RSS (VmHWM): $(($(rss_kb VmHWM) / 1024)) MiB; open descriptors: $(ls /proc/$KILND_PID/fd | wc -l)"
errors_grouped "$TMP/sweep1.json"
[ "$SWEEPS" -gt 1 ] && { echo " sweep $SWEEPS:"; errors_grouped "$TMP/sweep$SWEEPS.json"; }

# What the BMCs saw: sessions and request counters from every simulator.
seq 0 $((N - 1)) | awk -v b="$BASE" '{ printf "url = \"https://127.0.0.1:%d/_sim/state\"\n", b + $1 }' \
	>"$TMP/state.cfg"
{ curl -sk -Z --parallel-max 64 -m 10 -K "$TMP/state.cfg" 2>/dev/null || true; } |
	jq -s '{bmcs: length, sessions_max: (map(.sessions) | max),
		sessions_over_1: (map(select(.sessions > 1)) | length),
		get_total: (map(.requests.GET) | add), post_total: (map(.requests.POST) | add),
		select_total: (map(.requests.selected // 0) | add), expand_total: (map(.requests.expanded // 0) | add),
		connections_total: (map(.connections) | add), connections_max: (map(.connections) | max),
		bmcs_never_asked: (map(select(.requests.GET == 0)) | length)}' >"$TMP/simstate.json"
echo "simulators: $(jq -c . "$TMP/simstate.json")"

# Peers, over the first PEER BMCs, extrapolated to N: a sequential client (curl, one request
# after the other, basic auth, a TLS handshake each), and a second kilnd with its fan-out
# limited to PEER_FANOUT (Ironic's 8 workers): its first sweep and a steady one.
if [ "$PEER" -gt 0 ]; then
	t0=$(now_ms)
	for ((i = 0; i < PEER; i++)); do
		curl -s --cacert "$TMP/sim.0.pem" -u admin:password -m "$RT" -o /dev/null \
			"https://127.0.0.1:$((BASE + i))/redfish/v1/Systems/sys0" || true
	done
	t=$(($(now_ms) - t0))
	curl_x=$((t * N / PEER))
	echo "peer: curl loop over $PEER BMCs: $t ms; extrapolated to $N: $((curl_x / 1000)) s"
	if [ "$PEER_FANOUT" -gt 0 ]; then
		kilnd_start "$TMP/kilnd-peer" "$PEER_FANOUT"
		nodes_import "$KURL" "$KAUTH" "$PEER"
		prange="rf[00000-$(printf '%05d' $((PEER - 1)))]"
		p1=$(sweep "$KURL" "$KAUTH" "$prange" "$TMP/peer1.json")
		p2=$(sweep "$KURL" "$KAUTH" "$prange" "$TMP/peer2.json")
		echo "peer: kilnd --fanout $PEER_FANOUT over $PEER BMCs: first $p1 ms, steady $p2 ms;" \
			"extrapolated to $N: first $((p1 * N / PEER / 1000)) s, steady $((p2 * N / PEER / 1000)) s" \
			"($(jq '[.[] | select(.power == "on" or .power == "off")] | length' "$TMP/peer2.json") answered)"
		kill -TERM "$KPID"
		wait "$KPID" 2>/dev/null || true
	fi
	# ratios: kiln's own sweeps in this run over the peers' extrapolated times
	k1=$(cat "$TMP/t1")
	kn=$(cat "$TMP/t$SWEEPS")
	awk -v k1="$k1" -v kn="$kn" -v c="$curl_x" -v p1="${p1:-0}" -v p2="${p2:-0}" -v n="$N" -v m="$PEER" \
		-v f="$PEER_FANOUT" 'BEGIN {
		printf "ratios (kiln / peer; below 1: kiln faster): first %.4f and steady %.4f of the curl loop", k1 / c, kn / c
		if (p1 > 0) printf "; first %.4f of fan-out %d first, steady %.4f of fan-out %d steady", k1 / (p1 * n / m), f, kn / (p2 * n / m), f
		printf "\n" }'
fi

if [ "$CYCLE" = 1 ]; then
	jq -r '[.[] | select(.power == "on") | .node] | join(",")' "$TMP/sweep$SWEEPS.json" >"$TMP/on.txt"
	t0=$(now_ms)
	api -o "$TMP/cycle.json" --data-binary "{\"range\":\"$(cat "$TMP/on.txt")\",\"action\":\"cycle\"}" \
		"$URL/api/v1/power"
	t=$(($(now_ms) - t0))
	echo "power cycle over $(tr ',' '\n' <"$TMP/on.txt" | grep -c .) nodes: $t ms;" \
		"$(jq '[.[] | select(.result == "ok" and .power == "on")] | length' "$TMP/cycle.json") confirmed on," \
		"$(jq '[.[] | select(.error)] | length' "$TMP/cycle.json") errors"
	# the simulators' side: each cycled BMC saw its reset and went off and on again
	{ curl -sk -Z --parallel-max 64 -m 10 -K "$TMP/state.cfg" 2>/dev/null || true; } |
		jq -s -c '{bmcs_reset: (map(select((.resets | length) > 0)) | length),
			on_after: (map(select((.resets | length) > 0 and .power == "On")) | length),
			transitions: (map(.power_transitions) | add), resets: (map(.resets[]) | group_by(.)
			| map({(.[0]): length}) | add)}' | sed 's/^/simulators after the cycle: /'
fi

# kilnd's stop: it deletes every session it holds (one per answering BMC).
t0=$(now_ms)
kill -TERM "$KILND_PID"
wait "$KILND_PID" 2>/dev/null || true
echo "kilnd stop (SIGTERM to exit, sessions deleted): $(($(now_ms) - t0)) ms"
[ "$DEAD" = 1 ] && { [ "$DEAD_OK" = 1 ] && echo "dead BMCs: pass" || { echo "dead BMCs: MISS"; exit 1; }; }
exit 0
