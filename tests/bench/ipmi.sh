#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (on demand, not CI): IPMI power status over 200 ipmi_sim BMCs, kiln versus FreeIPMI's
# ipmipower --stat fan-out over the same BMCs in the same run.
#
# usage: tests/bench/ipmi.sh [--bmcs N] [--rounds R] [--no-build] [--build DIR]
#
# Builds a plain RelWithDebInfo tree into build-bench (or DIR), starts N OpenIPMI ipmi_sim BMCs on
# 127.0.0.1 UDP ports (tests/ipmi/lib.sh), kilnd on 127.0.0.1 with a node per BMC
# (ipmi://127.0.0.1:PORT, workaround opensesspriv, poller interval 1 h so that it stays out of
# the way), then alternates, R rounds each: `kiln power status sim[000-N]` (GET /api/v1/power
# through kilnd's IPMI helper) and `ipmipower --stat -F N` over the same host:port list.
# Prints wall time per round and the ratio of the medians (kiln / ipmipower): all rounds, and
# rounds 2.. alone (kiln's helper keeps each BMC's session from round 1; ipmipower opens a
# session per BMC every round).
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$SRC/build-bench
N=200 ROUNDS=5 BUILD_IT=1
while [ $# -gt 0 ]; do
	case $1 in
	--bmcs) N=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--no-build) BUILD_IT=0; shift ;;
	--build) BUILD=$(realpath -m "$2"); shift 2 ;;
	-h | --help) sed -n "2,15p" "$0"; exit 0 ;;
	*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
for tool in curl jq ipmipower ipmi_sim sdrcomp ss; do
	command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 1; }
done
ulimit -Sn "$(ulimit -Hn)"
if [ "$BUILD_IT" = 1 ]; then
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE= \
		-DKILN_WERROR=ON >/dev/null
	cmake --build "$BUILD" -j2 --target kilnd kiln kiln-ipmidrive >/dev/null
fi
export KILN_BIN=$BUILD/bin
# shellcheck source=../ipmi/lib.sh
. "$SRC/tests/ipmi/lib.sh"
KILND_PID=
stop_all() {
	if [ -n "$KILND_PID" ]; then kill -TERM "$KILND_PID" 2>/dev/null; wait "$KILND_PID" 2>/dev/null || true; fi
	ipmisim_cleanup
}
ipmisim_start "$N"
trap stop_all EXIT
W=$IPMISIM_WORK

printf '[poller]\ninterval = 3600\n' >"$W/kilnd.conf"
mkdir -m 700 "$W/kilnd"
"$BUILD/bin/kilnd" --state-dir "$W/kilnd" --listen 127.0.0.1:0 --config "$W/kilnd.conf" 2>"$W/kilnd.log" &
KILND_PID=$!
for _ in $(seq 300); do
	[ -s "$W/kilnd/kilnd.url" ] && curl -sf -o /dev/null "$(cat "$W/kilnd/kilnd.url")/api/v1/health" && break
	kill -0 "$KILND_PID" 2>/dev/null || { cat "$W/kilnd.log"; exit 1; }
	sleep 0.1
done
export KILN_URL; KILN_URL=$(cat "$W/kilnd/kilnd.url")
export KILN_TOKEN_FILE=$W/kilnd/admin.token

# One node per BMC, imported in one request.
HOSTS=()
for ((i = 0; i < N; i++)); do HOSTS+=("127.0.0.1:${IPMISIM_PORTS[$i]}"); done
printf '%s\n' "${IPMISIM_PORTS[@]}" | jq -R -s --arg u "$IPMISIM_USER" --arg p "$IPMISIM_PASSWORD" \
	'{nodes: [split("\n")[] | select(length > 0) | tonumber] | to_entries | map({
		name: ("sim" + ("000" + (.key | tostring))[-3:]), bmc: "ipmi://127.0.0.1:\(.value)",
		bmc_user: $u, bmc_password: $p, ipmi_workarounds: "opensesspriv"})}' >"$W/import.json"
curl -sf -H "Authorization: Bearer $(cat "$KILN_TOKEN_FILE")" -H "Content-Type: application/json" \
	--data-binary @"$W/import.json" "$KILN_URL/api/v1/nodes/import" >/dev/null
RANGE="sim[000-$(printf '%03d' $((N - 1)))]"
HOSTLIST=$(IFS=,; echo "${HOSTS[*]}")

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
KT=() PT=()
printf '%-6s %-34s %8s %s\n' round tool ms answers
for ((r = 1; r <= ROUNDS; r++)); do
	t0=$(date +%s%N)
	"$BUILD/bin/kiln" power status "$RANGE" -o json >"$W/kiln.json" || true
	t=$(ms "$t0"); KT+=("$t")
	ans=$(jq '[.[] | select(.power == "on" or .power == "off")] | length' "$W/kiln.json")
	printf '%-6s %-34s %8s %s\n' "$r" "kiln power status (API, helper)" "$t" "$ans/$N"
	t0=$(date +%s%N)
	ipmipower -D LAN_2_0 -I 3 -u "$IPMISIM_USER" -p "$IPMISIM_PASSWORD" -W opensesspriv \
		-h "$HOSTLIST" -F "$N" --stat >"$W/ipmipower.txt" 2>&1 || true
	t=$(ms "$t0"); PT+=("$t")
	ans=$(grep -cE ': (on|off)$' "$W/ipmipower.txt" || true)
	printf '%-6s %-34s %8s %s\n' "$r" "ipmipower --stat -F $N" "$t" "$ans/$N"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
KM=$(median "${KT[@]}"); PM=$(median "${PT[@]}")
echo "median: kiln $KM ms, ipmipower $PM ms, ratio kiln/ipmipower $(awk -v a="$KM" -v b="$PM" 'BEGIN { printf "%.2f", a / b }')"
if [ "$ROUNDS" -gt 1 ]; then
	KM=$(median "${KT[@]:1}"); PM=$(median "${PT[@]:1}")
	echo "rounds 2-$ROUNDS median: kiln $KM ms, ipmipower $PM ms, ratio $(awk -v a="$KM" -v b="$PM" 'BEGIN { printf "%.2f", a / b }')"
fi
# The BMCs were asked: ipmi_sim's own session counters are not exposed; the answers above are
# per-BMC power states read over RMCP+ (the chassis power file says off for every BMC).
