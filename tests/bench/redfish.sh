#!/usr/bin/env bash
# Benchmark (on demand, not CI): Redfish power-state sweeps over many kiln-bmcsim BMCs.
#
# usage: tests/bench/redfish.sh [--bmcs N] [--latency MS] [--jitter MS] [--fault SPEC]
#          [--request-timeout S] [--status-timeout S] [--fanout F] [--sweeps K]
#          [--peer-subset M] [--cycle] [--no-build]
#   defaults: 10000 BMCs, HTTPS (ECDSA), 200 +- 50 ms, hang:1%, request_timeout 5 s, kilnd's
#   own fan-out, 3 sweeps, a curl loop over 100 BMCs as the sequential peer.
#   --cycle  after the sweeps, POST /power {"action":"cycle"} over every BMC that answers
#            (power-delay 1 s per phase) and time it until each final state is confirmed.
#   --status-timeout  kilnd's [bmc] status_timeout (power-state reads); default: kilnd's own.
#   KILN_BENCH_BUILD=DIR uses that build directory instead of build-bench.
#
# Starts kiln-bmcsim processes of at most 5,000 ports each on 127.0.0.1 (ports below 32768),
# kilnd on 127.0.0.1 with a node per BMC (TLS verified against the simulators' certificate,
# poller interval 1 h so that it stays out of the way), then times GET /api/v1/power over
# the whole range: the first sweep (TLS handshakes, sessions) and the next ones (reuse).
# Afterwards it reads every BMC's /_sim/state: sessions per BMC (never more than one) and
# request counters (the sweeps really asked the BMCs).
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${KILN_BENCH_BUILD:-$SRC/build-bench}
N=10000 LAT=200 JIT=50 FAULT=hang:1% RT=5 ST= FANOUT= SWEEPS=3 PEER=100 CYCLE=0 BUILD_IT=1
PER_PROC=5000
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
	--cycle) CYCLE=1; shift ;;
	--no-build) BUILD_IT=0; shift ;;
	-h | --help) sed -n "2,21p" "$0"; exit 0 ;;
	*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
for tool in curl jq; do
	command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 1; }
done
ulimit -Sn "$(ulimit -Hn)"
if [ "$BUILD_IT" = 1 ]; then
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE= \
		-DKILN_WERROR=ON >/dev/null
	cmake --build "$BUILD" -j2 --target kilnd kiln kiln-bmcsim >/dev/null
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-redfish.XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	if [ -n "${KILN_BENCH_KEEP:-}" ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# Ports BASE..BASE+N-1, below 32768, spread by $$ so that parallel runs differ.
BASE=$((20000 + ($$ % 3) * 1000))
[ $((BASE + N)) -lt 32768 ] || BASE=$((32767 - N))
FAULTS=()
[ -n "$FAULT" ] && FAULTS=(--fault "$FAULT")
for ((first = 0; first < N; first += PER_PROC)); do
	cnt=$((N - first < PER_PROC ? N - first : PER_PROC))
	"$BUILD/bin/kiln-bmcsim" --mockup "$SRC/tests/sim/fixtures/generic" \
		--listen "127.0.0.1:$((BASE + first))" --count "$cnt" --tls --cert-out "$TMP/sim.$first.pem" \
		--latency-ms "$LAT" --jitter-ms "$JIT" "${FAULTS[@]}" --record-max 0 \
		--hang-ms 600000 --ports-file "$TMP/ports.$first" 2>"$TMP/sim.$first.log" &
	PIDS+=("$!")
done
for ((first = 0; first < N; first += PER_PROC)); do
	for _ in $(seq 600); do [ -s "$TMP/ports.$first" ] && break; sleep 0.1; done
	[ -s "$TMP/ports.$first" ] || { echo "kiln-bmcsim did not start:"; cat "$TMP/sim.$first.log"; exit 1; }
done

{
	printf '[bmc]\nrequest_timeout = %ss\n' "$RT"
	[ -n "$FANOUT" ] && printf 'fanout = %s\n' "$FANOUT"
	[ -n "$ST" ] && printf 'status_timeout = %ss\n' "$ST"
	printf '[poller]\ninterval = 3600s\n'
} >"$TMP/kilnd.conf"
mkdir -m 700 "$TMP/kilnd"
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
AUTH="Authorization: Bearer $(cat "$TMP/kilnd/admin.token")"
api() { curl -gsS -H "$AUTH" -H "Content-Type: application/json" "$@"; }

# Nodes in requests of 1,000 (the API's body cap).
for ((first = 0; first < N; first += 1000)); do
	seq "$first" $((first + 999 < N - 1 ? first + 999 : N - 1)) |
		jq -R -s --argjson base "$BASE" --arg ca "$TMP/sim.$((first / PER_PROC * PER_PROC)).pem" \
		'{nodes: [split("\n")[] | select(length > 0) | tonumber | {
			name: ("rf" + ("0000" + tostring)[-5:]), bmc: "redfish://127.0.0.1:\($base + .)",
			bmc_user: "admin", bmc_password: "password", tls: "ca", tls_ca_file: $ca}]}' \
		>"$TMP/import.json"
	api --data-binary @"$TMP/import.json" -o "$TMP/import.out" -w '%{http_code}\n' \
		"$URL/api/v1/nodes/import" | grep -qx 201 ||
		{ echo "node import failed: $(head -c 300 "$TMP/import.out")" >&2; exit 1; }
done
RANGE="rf[00000-$(printf '%05d' $((N - 1)))]"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
rss_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$KILND_PID/status"; }
printf '%-26s %9s %7s %7s %8s %10s\n' sweep wall_ms on/off unknown errors kilnd_RSS_MiB
for ((k = 1; k <= SWEEPS; k++)); do
	t0=$(now_ms)
	api -g -G --data-urlencode "range=$RANGE" -o "$TMP/sweep$k.json" "$URL/api/v1/power"
	t=$(($(now_ms) - t0))
	read -r ok unk err < <(jq -r '[(map(select(.power == "on" or .power == "off")) | length),
		(map(select(.power == "unknown" and (.error | not))) | length),
		(map(select(.error)) | length)] | @tsv' "$TMP/sweep$k.json")
	printf '%-26s %9s %7s %7s %8s %10s\n' "$([ "$k" = 1 ] && echo "1 (first)" || echo "$k (steady)")" \
		"$t" "$ok" "$unk" "$err" "$(($(rss_kb VmRSS) / 1024))"
done
echo "kilnd peak RSS (VmHWM): $(($(rss_kb VmHWM) / 1024)) MiB; open descriptors: $(ls /proc/$KILND_PID/fd | wc -l)"
jq -r '[.[] | select(.error)] | group_by(.error) | map("  \(length) x \(.[0].error)") | .[]' \
	"$TMP/sweep1.json" | head -5

# What the BMCs saw: sessions and request counters from every simulator.
seq 0 $((N - 1)) | awk -v b="$BASE" '{ printf "url = \"https://127.0.0.1:%d/_sim/state\"\n", b + $1 }' \
	>"$TMP/state.cfg"
{ curl -sk -Z --parallel-max 64 -m 10 -K "$TMP/state.cfg" 2>/dev/null || true; } |
	jq -s '{bmcs: length, sessions_max: (map(.sessions) | max),
		sessions_over_1: (map(select(.sessions > 1)) | length),
		get_total: (map(.requests.GET) | add), post_total: (map(.requests.POST) | add),
		bmcs_never_asked: (map(select(.requests.GET == 0)) | length)}' >"$TMP/simstate.json"
echo "simulators: $(jq -c . "$TMP/simstate.json")"

# Peer: a sequential client (curl, one request after the other, basic auth) over a subset.
if [ "$PEER" -gt 0 ]; then
	t0=$(now_ms)
	for ((i = 0; i < PEER; i++)); do
		curl -s --cacert "$TMP/sim.0.pem" -u admin:password -m "$RT" -o /dev/null \
			"https://127.0.0.1:$((BASE + i))/redfish/v1/Systems/sys0" || true
	done
	t=$(($(now_ms) - t0))
	echo "peer: curl loop over $PEER BMCs: $t ms; extrapolated to $N: $((t * N / PEER / 1000)) s"
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
fi

# kilnd's stop: it deletes every session it holds (one per answering BMC).
t0=$(now_ms)
kill -TERM "$KILND_PID"
wait "$KILND_PID" 2>/dev/null || true
echo "kilnd stop (SIGTERM to exit, sessions deleted): $(($(now_ms) - t0)) ms"
