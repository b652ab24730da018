#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (on demand, not CI): kiln-agent's footprint over HTTPS to kilnd with the fake NVML.
#
# usage: tests/bench/agent_footprint.sh [--cycles N] [--steady S] [--no-build] [--no-callgrind]
#                                        [--write]
#   --cycles N     cycles of the growth run (--interval 0), default 10000
#   --steady S     seconds of the steady-state run at --interval 1, default 60
#   --no-build     use build-bench as it is
#   --no-callgrind skip the NVML share (then CPU per cycle includes the fake NVML)
#   KILN_BENCH_KEEP=1 in the environment keeps the temporary folder (samples, smaps, logs)
#   --write        replace the agent section of tests/bench/RESULTS.md with this run's figures
#
# Builds a plain RelWithDebInfo kiln (no sanitizers) into build-bench, starts kilnd with HTTPS on
# 127.0.0.1 (ephemeral port, its own ECDSA certificate), adds a node, makes its agent token and
# runs kiln-agent with --ca (no system CA bundle) against the fake NVML's 8-GPU config.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$SRC/build-bench
CYCLES=10000
STEADY=60
BUILD_IT=1
CALLGRIND=1
WRITE=0
CMDLINE="tests/bench/agent_footprint.sh $*"
while [ $# -gt 0 ]; do
	case $1 in
	--cycles) CYCLES=$2; shift 2 ;;
	--steady) STEADY=$2; shift 2 ;;
	--no-build) BUILD_IT=0; shift ;;
	--no-callgrind) CALLGRIND=0; shift ;;
	--write) WRITE=1; shift ;;
	-h | --help) sed -n "2,11p" "$0"; exit 0 ;;
	*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ "$CYCLES" -ge 200 ] || { echo "--cycles must be at least 200" >&2; exit 2; }
[ "$STEADY" -ge 30 ] || { echo "--steady must be at least 30" >&2; exit 2; }
for tool in curl jq openssl sqlite3 strip; do
	command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 1; }
done

if [ "$BUILD_IT" = 1 ]; then
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE= \
		-DKILN_WERROR=ON >/dev/null
	cmake --build "$BUILD" -j2 --target kilnd kiln-agent fake-nvml >/dev/null
fi
AGENT=$BUILD/bin/kiln-agent
NVML=$BUILD/lib/fake-nvml/libnvidia-ml.so.1
export FAKE_NVML_CONFIG=$SRC/tests/fake-nvml/configs/h100-8gpu.conf
ROOT=$SRC/tests/fixtures/agent/roots/h100
TCK=$(getconf CLK_TCK)
PAGE=$(getconf PAGESIZE)

. "$SRC/tests/bench/lib.sh"
bench_workdir footprint

# --- kilnd over HTTPS -----------------------------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=kilnd-bench \
	-addext "subjectAltName=IP:127.0.0.1" -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null
mkdir -m 700 "$TMP/kilnd"
"$BUILD/bin/kilnd" --state-dir "$TMP/kilnd" --listen 127.0.0.1:0 --tls-cert "$TMP/cert.pem" \
	--tls-key "$TMP/key.pem" 2>"$TMP/kilnd.log" &
KILND_PID=$!
PIDS+=("$KILND_PID")
for _ in $(seq 300); do
	[ -s "$TMP/kilnd/kilnd.url" ] && break
	kill -0 "$KILND_PID" 2>/dev/null || { cat "$TMP/kilnd.log"; exit 1; }
	sleep 0.1
done
URL=$(cat "$TMP/kilnd/kilnd.url")
case $URL in https://127.0.0.1:*) ;; *) echo "kilnd is not on https://127.0.0.1: $URL" >&2; exit 1 ;; esac
ADMIN=$(cat "$TMP/kilnd/admin.token")
api() { # METHOD PATH BODY -> body on stdout; fails unless 2xx
	curl -sf --cacert "$TMP/cert.pem" -X "$1" -H "Authorization: Bearer $ADMIN" \
		-H "Content-Type: application/json" --data-binary "$3" "$URL/api/v1$2"
}
# node_token NAME: adds an agent-only node and writes its agent token to $TMP/NAME.token
node_token() {
	api POST /nodes "{\"name\":\"$1\",\"bmc\":null}" >/dev/null
	api POST /agent/tokens "{\"node\":\"$1\"}" | jq -r .token >"$TMP/$1.token"
	chmod 600 "$TMP/$1.token"
	[ -s "$TMP/$1.token" ] && [ "$(cat "$TMP/$1.token")" != null ]
}
# reports NAME: reports kilnd stored for the node
reports() {
	sqlite3 -readonly -cmd ".timeout 5000" "$TMP/kilnd/kiln.db" \
		"SELECT count(*) FROM agent_reports_seen s JOIN nodes n ON n.id = s.node_id WHERE n.name = '$1'" \
		2>/dev/null || echo -1
}
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
cpu_ticks() { # utime + stime of the whole process (all threads)
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
# start_agent NAME ARGS...: sets APID
start_agent() {
	local name=$1
	shift
	mkdir -p "$TMP/state-$name"
	"$AGENT" --server "$URL" --ca "$TMP/cert.pem" --token-file "$TMP/$name.token" \
		--state-dir "$TMP/state-$name" --root "$ROOT" --nvml-lib "$NVML" "$@" \
		2>"$TMP/agent-$name.log" &
	APID=$!
	PIDS+=("$APID")
}

node_token steady
node_token growth
node_token cg

# --- 1. steady state at --interval 1 -----------------------------------------------------------
echo "steady state: --interval 1 for ${STEADY}s" >&2
start_agent steady --interval 1
sleep 20
ST_C0=$(reports steady); ST_T0=$(cpu_ticks "$APID"); ST_S0=$(date +%s.%N)
# fork/exec: trace process-management syscalls of every thread for 10 s
STRACE_NOTE="strace not installed"
if command -v strace >/dev/null; then
	timeout -s INT 10 strace -f -qq -e trace=process -o "$TMP/strace.out" -p "$APID" 2>/dev/null || true
	FORKS=$(grep -cE '(^|[^a-z_])(fork|vfork|clone|clone3)\(' "$TMP/strace.out" || true)
	EXECS=$(grep -cE '(^|[^a-z_])execve(at)?\(' "$TMP/strace.out" || true)
	STRACE_NOTE="strace -f -e trace=process, 10 s: $FORKS fork/vfork/clone, $EXECS execve"
else
	FORKS=-1; EXECS=-1
fi
sleep $((STEADY - 30))
ST_C1=$(reports steady); ST_T1=$(cpu_ticks "$APID"); ST_S1=$(date +%s.%N)
ST_ANON=$(status_kb "$APID" RssAnon); ST_RSS=$(status_kb "$APID" VmRSS)
ST_FILE=$(status_kb "$APID" RssFile); ST_HWM=$(status_kb "$APID" VmHWM)
ST_THREADS=$(ls "/proc/$APID/task" | wc -l)
ST_CHILDREN=$(cat /proc/"$APID"/task/*/children | wc -w)
cp "/proc/$APID/smaps" "$TMP/steady.smaps" 2>/dev/null || true
kill -TERM "$APID"; wait "$APID" || true
ST_CYC=$((ST_C1 - ST_C0))
ST_CPU=$(awk -v t="$((ST_T1 - ST_T0))" -v c="$ST_CYC" -v h="$TCK" 'BEGIN { printf "%.3f", (c > 0 ? t * 1000 / h / c : -1) }')
ST_WALL=$(awk -v a="$ST_S0" -v b="$ST_S1" 'BEGIN { printf "%.0f", b - a }')

# --- 2. growth: --cycles N --interval 0 --------------------------------------------------------
echo "growth: $CYCLES cycles at --interval 0" >&2
start_agent growth --interval 0 --cycles "$CYCLES"
G_START=$(date +%s.%N)
: >"$TMP/growth.samples"
while kill -0 "$APID" 2>/dev/null; do
	# cycles, RssAnon, VmRSS, ticks (sampled together; the cycle count is kilnd's)
	line="$(reports growth) $(status_kb "$APID" RssAnon) $(status_kb "$APID" VmRSS) $(cpu_ticks "$APID")" || break
	[ "$(echo "$line" | wc -w)" = 4 ] && echo "$line" >>"$TMP/growth.samples"
	# fine-grained until cycle 100, then every 0.5 s
	if [ "${line%% *}" -ge 100 ]; then sleep 0.5; else sleep 0.02; fi
done
wait "$APID" && G_RC=0 || G_RC=$?
G_END=$(date +%s.%N)
G_STORED=$(reports growth)
G_SPOOL=$(find "$TMP/state-growth/spool" -type f 2>/dev/null | wc -l)
# first sample at or past cycle 100, last sample before the exit
read -r G_C0 G_A0 G_R0 G_T0 < <(awk '$1 >= 100 { print; exit }' "$TMP/growth.samples")
read -r G_C1 G_A1 G_R1 G_T1 < <(tail -1 "$TMP/growth.samples")
# samples land mid-cycle (--interval 0): compare the highest RssAnon of cycles 100-1000 with the
# highest of the last 1000 cycles, so that a cycle's transient buffers weigh the same in both
G_EARLY=$(awk '$1 >= 100 && $1 <= 1000 && $2 > m { m = $2 } END { print m + 0 }' "$TMP/growth.samples")
G_LATE=$(awk -v c="$CYCLES" '$1 >= c - 1000 && $2 > m { m = $2 } END { print m + 0 }' "$TMP/growth.samples")
G_CPU=$(awk -v t="$((G_T1 - G_T0))" -v c="$((G_C1 - G_C0))" -v h="$TCK" 'BEGIN { printf "%.3f", (c > 0 ? t * 1000 / h / c : -1) }')
G_WALL=$(awk -v a="$G_START" -v b="$G_END" 'BEGIN { printf "%.1f", b - a }')

# --- 3. the fake NVML's share of the agent's instructions (callgrind, two runs, difference) ----
NVML_SHARE=""
if [ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null && command -v python3 >/dev/null; then
	echo "callgrind: 20 and 70 cycles" >&2
	for n in 20 70; do
		mkdir -p "$TMP/state-cg"
		valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$n" "$AGENT" --server "$URL" \
			--ca "$TMP/cert.pem" --token-file "$TMP/cg.token" --state-dir "$TMP/state-cg" \
			--root "$ROOT" --nvml-lib "$NVML" --interval 0 --cycles "$n" 2>"$TMP/cg.$n.log"
	done
	read -r I20 N20 < <(python3 "$SRC/tests/bench/cg_share.py" "$TMP/cg.20" fake-nvml/libnvidia-ml)
	read -r I70 N70 < <(python3 "$SRC/tests/bench/cg_share.py" "$TMP/cg.70" fake-nvml/libnvidia-ml)
	NVML_SHARE=$(awk -v a="$I20" -v b="$I70" -v x="$N20" -v y="$N70" 'BEGIN { printf "%.3f", (y - x) / (b - a) }')
	IR_CYCLE=$(awk -v a="$I20" -v b="$I70" 'BEGIN { printf "%.2f", (b - a) / 50 / 1e6 }')
	IR_NVML=$(awk -v x="$N20" -v y="$N70" 'BEGIN { printf "%.2f", (y - x) / 50 / 1e6 }')
fi
if [ -n "$NVML_SHARE" ]; then
	G_CPU_OUT=$(awk -v c="$G_CPU" -v s="$NVML_SHARE" 'BEGIN { printf "%.3f", c * (1 - s) }')
	CPU_NOTE="callgrind: $IR_CYCLE M instructions/cycle, $IR_NVML M of them inside the fake NVML (share $NVML_SHARE)"
else
	G_CPU_OUT=$G_CPU
	CPU_NOTE="NVML share not measured: figure includes the fake NVML"
fi

# --- 4. stripped binary ------------------------------------------------------------------------
cp "$AGENT" "$TMP/kiln-agent.stripped"
strip "$TMP/kiln-agent.stripped"
SIZE=$(stat -c %s "$TMP/kiln-agent.stripped")

# --- table -------------------------------------------------------------------------------------
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v >= 0 && v < t) ? "pass" : "MISS" }'; }
GROWTH_KB=$((G_A1 - G_A0))
GROWTH_RSS_KB=$((G_R1 - G_R0))
ROWS=$(
	printf '| measure | figure | target | result |\n|---|---|---|---|\n'
	printf '| private memory (RssAnon), steady state | %d kB | < 2048 kB | %s |\n' "$ST_ANON" "$(verdict "$ST_ANON" 2048)"
	printf '| total RSS (VmRSS), steady state | %d kB (RssFile %d kB, VmHWM %d kB) | < 12288 kB | %s |\n' "$ST_RSS" "$ST_FILE" "$ST_HWM" "$(verdict "$ST_RSS" 12288)"
	printf '| CPU per cycle outside NVML (growth run) | %s ms | < 2 ms | %s |\n' "$G_CPU_OUT" "$(verdict "$G_CPU_OUT" 2)"
	printf '| CPU per cycle incl. fake NVML (growth run, %d cycles) | %s ms | - | - |\n' "$((G_C1 - G_C0))" "$G_CPU"
	printf '| CPU per cycle incl. fake NVML (--interval 1, %d cycles) | %s ms | - | - |\n' "$ST_CYC" "$ST_CPU"
	printf '| fork/exec per cycle | %s fork/clone, %s exec in 10 s; %d threads, %d children | 0 | %s |\n' "$FORKS" "$EXECS" "$ST_THREADS" "$ST_CHILDREN" "$( [ "$FORKS" = 0 ] && [ "$EXECS" = 0 ] && [ "$ST_CHILDREN" = 0 ] && echo pass || echo MISS)"
	printf '| RssAnon, highest sample of cycles 100-1000 -> of the last 1000 | %d -> %d kB (%+d kB) | no growth | %s |\n' "$G_EARLY" "$G_LATE" "$((G_LATE - G_EARLY))" "$( [ "$G_LATE" -le "$G_EARLY" ] && echo pass || echo MISS)"
	printf '| RssAnon at cycle %d -> %d (single samples) | %d -> %d kB (%+d kB) | - | - |\n' "$G_C0" "$G_C1" "$G_A0" "$G_A1" "$GROWTH_KB"
	printf '| VmRSS at cycle %d -> %d | %d -> %d kB (%+d kB) | - | - |\n' "$G_C0" "$G_C1" "$G_R0" "$G_R1" "$GROWTH_RSS_KB"
	printf '| stripped kiln-agent | %d bytes | < 307200 | %s |\n' "$SIZE" "$(verdict "$SIZE" 307200)"
)
NOTES=$(
	echo "- steady state: ${ST_WALL} s at --interval 1 after 20 s of warm-up, $ST_CYC reports stored by kilnd."
	echo "- growth run: $CYCLES cycles at --interval 0 in ${G_WALL} s wall, exit status $G_RC; kilnd stored $G_STORED reports, $G_SPOOL left in the spool."
	echo "- CPU: utime+stime from /proc/PID/stat between two samples, divided by the reports kilnd stored between them; $CPU_NOTE."
	echo "- fork/exec: $STRACE_NOTE."
	echo "- growth samples (cycle: RssAnon kB), every ~1000 cycles: $(awk 'BEGIN { n = -1 } $1 >= 100 && int($1 / 1000) != n { n = int($1 / 1000); printf "%s%d: %d", sep, $1, $2; sep = ", " }' "$TMP/growth.samples")."
)
echo
echo "$ROWS"
echo
echo "$NOTES"

if [ "$WRITE" = 1 ]; then
	RES=$SRC/tests/bench/RESULTS.md
	SECTION=$(
		echo "## kiln-agent footprint"
		echo
		echo "Run $(date -u +%Y-%m-%d) at commit $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown) on $(uname -m), $(nproc) cores ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), shared with other work; kernel $(uname -r)."
		echo "kilnd over HTTPS on 127.0.0.1 (ECDSA P-256 certificate, agent with --ca only), fake NVML with"
		echo "tests/fake-nvml/configs/h100-8gpu.conf, root tests/fixtures/agent/roots/h100. Command:"
		echo
		echo '```'
		echo "$CMDLINE"
		echo '```'
		echo
		echo "$ROWS"
		echo
		echo "$NOTES"
	)
	if [ -f "$RES" ]; then
		# replace the section from its heading to the next "## "
		awk -v sec="$SECTION" '
			$0 == "## kiln-agent footprint" { print sec; skip = 1; done = 1; next }
			skip && /^## / { skip = 0; print "" }
			!skip { print }
			END { if (!done) print "\n" sec }' "$RES" >"$TMP/RESULTS.md"
		cp "$TMP/RESULTS.md" "$RES"
	else
		printf '# kiln benchmark results\n\nFigures measured by the programs in tests/bench/, each with the command that produced it.\n\n%s\n' "$SECTION" >"$RES"
	fi
	echo "wrote $RES" >&2
fi
