# SPDX-License-Identifier: Apache-2.0
# Integration: power actions done safely. Twenty kiln-bmcsim BMCs: bulk power on/cycle asks
# for confirmation above the threshold (nothing sent without a terminal or --yes), --dry-run
# prints the 20 targets and sends nothing, a second action on a node with one in flight is
# refused, an audit row per node with its outcome, --batch 5 --interval 1 paces the cycle.
# Then three nodes with agents (fake NVML): the one whose agent stops while its BMC is On is
# flagged hung, the one in maintenance and the one powered off are not; `kiln power cycle
# --hung` cycles exactly the hung one; automatic remediation cycles it once, as kilnd, never
# the maintenance node, and writes an event.
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
FIX=$SRC/tests/sim/fixtures
for f in "$KILN" "$AGENT" "$NVML" "$NVML_CONF" "$ROOT" "$BMCSIM" "$FIX/generic"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln, kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done
command -v setsid >/dev/null || { echo "skipped: setsid (util-linux) is not installed"; exit 77; }

FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
same() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', want '$3'"; fi
}

AGENT_PIDS=()
declare -A AGENT_PID
on_exit() {
	local p
	for p in "${AGENT_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

T=$KILN_TEST_TMP
printf 'password\n' >"$T/bmc.pw"
sim() { curl -sf "http://127.0.0.1:$1/_sim/$2"; }
# wait_for DESC SECONDS COMMAND...: retries COMMAND every 0.5 s.
wait_for() {
	local desc=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		if "$@"; then return 0; fi
		sleep 0.5
	done
	fail "$desc (waited ${secs}s)"
	return 1
}

# === Part 1: bulk power over 20 nodes ======================================================
# The poller stays out of the way: its reads would not move the counters below, but an
# action is the API's alone here.
cat >"$T/bulk.conf" <<EOF
[http]
threads = 4
[bmc]
action_timeout = 30s
[poller]
interval = 3600s
EOF
bmcsim_start "$T/sim-bulk" "$FIX/generic" --count 20 --power-delay-ms 600 || exit 1
PORTS=("${BMCSIM_PORTS[@]}")
kiln_test_start_kilnd "" --config "$T/bulk.conf" || exit 1
ALL=$(printf 'gpu%02d,' $(seq 1 20) | sed 's/,$//')
for i in $(seq 1 20); do
	"$KILN" node add "$(printf 'gpu%02d' "$i")" --bmc "redfish+http://127.0.0.1:${PORTS[$((i - 1))]}" \
		--bmc-user admin --bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add $i failed" >&2; exit 1; }
done
port_of() { echo "${PORTS[$((10#${1#gpu} - 1))]}"; }
# Every BMC's POST count and resets, one line: what any action would move.
counters() {
	local p
	for p in "${PORTS[@]}"; do
		sim "$p" state | jq -c '[.requests.POST, (.resets | length)]'
	done | tr -d '\n'
}
resets() { sim "$(port_of "$1")" state | jq '.resets | length'; }
power_rows() { "$KILN" audit log -o json | jq --arg a "$1" '[.[] | select(.action == $a)]'; }

before=$(counters)
for action in on cycle; do
	setsid -w "$KILN" power "$action" 'gpu[01-20]' </dev/null >"$T/out" 2>"$T/err"
	rc=$?
	same "power $action over 20 without a terminal or --yes: exit 1" "$rc" 1
	grep -q "power $action of 20 nodes needs --yes" "$T/err" ||
		fail "power $action: the refusal names the count and --yes: $(cat "$T/err")"
done
if command -v script >/dev/null; then
	(sleep 0.5; printf '19\n') | script -qec "'$KILN' power cycle 'gpu[01-20]'" /dev/null >"$T/tty.out" 2>&1
	same "on a terminal, a wrong count refuses: exit" "$?" 1
	grep -q 'Type 20 to go on' "$T/tty.out" || fail "the question asks for 20: $(cat "$T/tty.out")"
else
	echo "note: script (util-linux) missing: the typed count is not exercised here"
fi
"$KILN" power cycle 'gpu[01-20]' --dry-run >"$T/dry.txt"
same "--dry-run: exit" "$?" 0
same "--dry-run prints the 20 targets and the action" \
	"$(grep -c '^gpu[0-9][0-9]: would cycle$' "$T/dry.txt")" 20
out=$("$KILN" power on 'gpu[01-20]' --dry-run --batch 5 -o json)
same "--dry-run --batch 5: the batch of each target" \
	"$(jq -c '[.[] | .batch] | group_by(.) | map(length)' <<<"$out")" '[5,5,5,5]'
same "nothing sent by refusals and --dry-run (POSTs, resets on the 20 BMCs)" "$(counters)" "$before"
same "no audit row for what was not done" "$("$KILN" audit log -o json | jq '[.[] | select(.action | startswith("power."))] | length')" 0

# A second action while the first runs: refused on a busy node, never queued.
"$KILN" power cycle 'gpu[01-20]' --yes -o json >"$T/first.json" 2>"$T/first.err" &
first=$!
for _ in $(seq 1 100); do
	[ "$(resets gpu07)" -ge 1 ] && break
	sleep 0.05
done
posts7=$(sim "$(port_of gpu07)" state | jq .requests.POST)
"$KILN" power off gpu07 --yes >"$T/out" 2>"$T/err"
rc=$?
same "second action on a node in flight: exit 1 (409)" "$rc" 1
grep -q 'in flight' "$T/err" || fail "the 409 says why: $(cat "$T/err")"
"$KILN" power on 'gpu[01-20]' --yes -o json >"$T/second.json" 2>"$T/err"
same "second bulk action over the 20 while the first runs: exit 1" "$?" 1
same "  ... nothing queued on gpu07's BMC" "$(sim "$(port_of gpu07)" state | jq .requests.POST)" "$posts7"
wait "$first"
same "the first action completes: exit" "$?" 0
same "  ... 20 nodes confirmed on" \
	"$(jq '[.[] | select(.power == "on" and .result == "ok" and (has("error") | not))] | length' "$T/first.json")" 20
bad=""
for i in $(seq 1 20); do
	n=$(printf 'gpu%02d' "$i")
	[ "$(resets "$n")" = 1 ] || bad="$bad $n:$(resets "$n")"
done
same "one reset on each of the 20 BMCs" "$bad" ""
same "an audit row per node, outcome ok" \
	"$(power_rows power.cycle | jq -r '[.[] | select(.outcome == "ok") | .target] | sort | join(",")')" "$ALL"

# --batch 5 --interval 1: four batches, three pauses; gpu20 off makes one outcome a failure.
"$KILN" power off gpu20 --yes >/dev/null || fail "power off gpu20"
resets20=$(resets gpu20)
start=$(date +%s%N)
"$KILN" power cycle 'gpu[01-20]' --yes --batch 5 --interval 1 -o json >"$T/paced.json" 2>"$T/paced.err"
rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
same "paced cycle with one node off: exit 3" "$rc" 3
echo "paced cycle (4 batches of 5, 1 s apart) took ${took_ms} ms"
[ "$took_ms" -ge 3000 ] || fail "paced cycle took ${took_ms} ms, under 3 pauses of 1 s"
same "  ... 19 cycled and confirmed on" \
	"$(jq '[.[] | select(.result == "ok" and .power == "on")] | length' "$T/paced.json")" 19
same "  ... gpu20 (off) failed" "$(jq -r '.[] | select(.node == "gpu20") | has("error")' "$T/paced.json")" true
bad=""
for i in $(seq 1 19); do
	n=$(printf 'gpu%02d' "$i")
	[ "$(resets "$n")" = 2 ] || bad="$bad $n:$(resets "$n")"
done
same "  ... a second reset on each of the 19 BMCs" "$bad" ""
same "  ... none on gpu20's" "$(resets gpu20)" "$resets20"
[ -s "$T/paced.err" ] && fail "progress written to stderr that is not a terminal: $(cat "$T/paced.err")"
rows=$(power_rows power.cycle)
same "audit: two power.cycle rows per node" "$(jq -c 'group_by(.target) | map(length) | unique' <<<"$rows")" '[2]'
same "audit: gpu20's second row says why it failed" \
	"$(jq -r '[.[] | select(.target == "gpu20")][0].outcome' <<<"$rows" | cut -c1-7)" "failed:"
same "audit: no row left pending" "$("$KILN" audit log -o json | jq '[.[] | select(.outcome == "pending")] | length')" 0
if command -v script >/dev/null; then
	script -qec "'$KILN' power on 'gpu[01-20]' --yes --batch 10" /dev/null >"$T/tty.out" 2>&1
	grep -q 'power on: 20/20 nodes done (batch 2/2)' "$T/tty.out" ||
		fail "progress on a terminal: $(tr '\r' '\n' <"$T/tty.out" | head -5)"
	pass "progress on a terminal"
fi
kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
bmcsim_stop_all

# === Part 2: hung nodes, kiln power cycle --hung, automatic remediation =====================
INTERVAL=2 # agent report interval, seconds
cat >"$T/hung.conf" <<EOF
[poller]
interval = 5s
health_every = 1s
[health]
agent_interval = ${INTERVAL}s
hung_intervals = 3
boot_time = 10s
EOF
bmcsim_start "$T/sim-hung" "$FIX/generic" --count 3 --power-delay-ms 200 || exit 1
PORTS=("${BMCSIM_PORTS[@]}")
kiln_test_start_kilnd "" --config "$T/hung.conf" || exit 1
STATE=$KILND_DIR
grep -v xid_events "$NVML_CONF" >"$T/clean-nvml.conf"
for i in 1 2 3; do
	n=gpu0$i
	"$KILN" node add "$n" --bmc "redfish+http://127.0.0.1:${PORTS[$((i - 1))]}" \
		--bmc-user admin --bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add $n failed" >&2; exit 1; }
	r=$T/roots/$n
	mkdir -p "$T/roots"
	cp -r "$ROOT" "$r"
	printf '%s\n' "$n" >"$r/proc/sys/kernel/hostname"
	bmcsim_serial "$FIX/generic" >"$r/sys/class/dmi/id/product_serial"
	: >"$r/dev/kmsg"
	"$KILN" agent token "$n" >"$T/$n.token" 2>/dev/null || { echo "agent token $n failed" >&2; exit 1; }
	FAKE_NVML_CONFIG=$T/clean-nvml.conf "$AGENT" --server "$KILND_URL" --root "$r" --nvml-lib "$NVML" \
		--state-dir "$T/agent-$n" --token-file "$T/$n.token" --interval "$INTERVAL" \
		>>"$T/agent-$n.log" 2>&1 &
	AGENT_PID[$n]=$!
	AGENT_PIDS+=("$!")
done
# gpu03 is powered off on purpose, gpu02 goes into maintenance.
curl -s -o /dev/null -X POST -d '{"power":"Off"}' "http://127.0.0.1:${PORTS[2]}/_sim/inject"
"$KILN" node maintenance gpu02 on --reason "swapping a GPU" >/dev/null || fail "maintenance on"
field() { "$KILN" status -o json 2>/dev/null | jq -r --arg n "$1" ".[] | select(.node == \$n) | .$2"; }
all_reported() {
	[ "$("$KILN" status -o json 2>/dev/null | jq '[.[] | select(.agent_last_seen != null)] | length')" = 3 ] &&
		[ "$(field gpu01 power)" = on ] && [ "$(field gpu02 power)" = on ] &&
		[ "$(field gpu03 power)" = off ]
}
wait_for "every agent reported and every BMC was read" 30 all_reported && pass "3 agents, 3 BMCs"
hreset() { sim "${PORTS[$(($1 - 1))]}" state | jq '.resets | length'; }
hresets() { echo "$(hreset 1),$(hreset 2),$(hreset 3)"; }

out=$("$KILN" power cycle --hung --yes)
same "--hung with no hung node: exit" "$?" 0
same "  ... says so" "$out" "no hung nodes; nothing sent"
same "  ... sends nothing" "$(hresets)" 0,0,0

for n in gpu01 gpu02 gpu03; do
	kill -TERM "${AGENT_PID[$n]}" 2>/dev/null
	wait "${AGENT_PID[$n]}" 2>/dev/null
done
stopped=$(date +%s)
is_hung() { [ "$(field gpu01 hung)" = true ]; }
if wait_for "gpu01 flagged hung" 20 is_hung; then
	took=$(($(date +%s) - stopped))
	# 3 intervals of silence from the last report (up to one interval before the stop), the
	# 1 s health sweep and a second of rounding.
	if [ "$took" -le $((3 * INTERVAL + 2)) ]; then
		pass "gpu01 flagged hung ${took}s after its agent stopped (3 intervals = $((3 * INTERVAL))s)"
	else
		fail "gpu01 flagged hung only after ${took}s"
	fi
fi
sleep 2
same "gpu02 (maintenance) is not hung" "$(field gpu02 hung)" false
same "gpu03 (powered off) is not hung" "$(field gpu03 hung)" false
out=$("$KILN" power cycle --hung gpu02,gpu03 --yes)
same "--hung within a range holding no hung node: exit 0, nothing sent" "$?/$(hresets)" 0/0,0,0
"$KILN" power cycle --hung --dry-run >"$T/out"
same "--hung --dry-run names exactly gpu01" "$(cat "$T/out")" "gpu01: would cycle"
"$KILN" power on --hung gpu01 >/dev/null 2>&1
same "--hung with power on is a usage error" "$?" 2
out=$("$KILN" power cycle --hung --yes -o json)
same "kiln power cycle --hung: exit" "$?" 0
same "  ... cycled exactly gpu01" "$(jq -c '[.[] | {node, result}]' <<<"$out")" '[{"node":"gpu01","result":"ok"}]'
same "  ... resets on the three BMCs" "$(hresets)" 1,0,0
same "  ... audited as the caller" \
	"$("$KILN" audit log -o json | jq -r '[.[] | select(.action == "power.cycle") | .actor + ":" + .target + ":" + .outcome] | join(",")')" \
	"admin:gpu01:ok"

# Automatic remediation: kilnd restarted with it on (grace 1 s, at most 1 an hour). gpu01 is
# still hung once the boot the cycle above began should have ended ([health] boot_time 10 s)
# (its agent stays down); kilnd cycles it once, never gpu02 (maintenance).
kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
cat "$T/hung.conf" >"$T/remedy.conf"
cat >>"$T/remedy.conf" <<EOF
[remediation]
enabled = yes
grace = 1s
max_per_hour = 1
EOF
kiln_test_start_kilnd "$STATE" --config "$T/remedy.conf" || exit 1
auto_rows() { "$KILN" audit log -o json | jq -c '[.[] | select(.actor == "kilnd")]'; }
auto_done() { [ "$(auto_rows | jq -r '[.[] | .outcome] | join(",")')" = ok ]; }
wait_for "kilnd cycled gpu01 automatically" 30 auto_done
sleep 4 # more health sweeps: it must not cycle again
same "automatic: one audited power.cycle of gpu01 by kilnd" \
	"$(auto_rows | jq -r '[.[] | .action + ":" + .target + ":" + .outcome] | join(",")')" "power.cycle:gpu01:ok"
same "automatic: the audit row says why" "$(auto_rows | jq -r '.[0].detail | if type == "string" then fromjson else . end | .automatic')" true
same "automatic: resets on the three BMCs (gpu02 in maintenance untouched)" "$(hresets)" 2,0,0
"$KILN" events gpu01 --kind remediation -o json >"$T/ev.json" || fail "kiln events --kind remediation"
jq -e 'any(.[]; .message | test("automatic power cycle"))' "$T/ev.json" >/dev/null &&
	pass "automatic: an event is written" || fail "no remediation event: $(cat "$T/ev.json")"
same "automatic: no event for gpu02" "$("$KILN" events gpu02 --kind remediation -o json | jq length)" 0

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -30 "$KILND_LOG" >&2; exit 1; }
echo "all power safety checks passed"
