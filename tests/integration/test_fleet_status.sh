# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd's poller against kiln-bmcsim and agents with the fake NVML: a node whose
# agent stops while its BMC says On is flagged hung within 3 report intervals; one in
# maintenance or powered off is not; kiln status -o json's shape; events (hung, power, SEL,
# maintenance) listed by kiln events.
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
for f in "$AGENT" "$NVML" "$NVML_CONF" "$ROOT/dev/kmsg" "$BMCSIM" "$MOCKUP"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent, kiln-bmcsim, the fake NVML)" >&2; exit 1; }
done

FAILS=0

T=$KILN_TEST_TMP
INTERVAL=2 # agent report interval, seconds
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
sensors_every = 1
sel_every = 1
health_every = 1s
[health]
agent_interval = ${INTERVAL}s
hung_intervals = 3
EOF

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

bmcsim_start "$T/sim" "$MOCKUP" --count 3 || exit 1
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1

printf 'password\n' >"$T/bmc.pw"
# The config without Xid events, written once before any agent starts: rewritten in the loop,
# it was truncated while gpu01's agent (started the turn before) could be reading it, and the
# fake NVML then loaded an empty config (0 GPUs) for the agent's life ("gpus seen on gpu01:
# got 0, want 8" under parallel load).
# Both without the fixture's GPU 4 ECC errors and pending remap (a critical GPU of its own,
# judged in test_health_gpu_verdicts): here the nodes' GPUs are healthy.
grep -Ev '^gpu\.4\.(ecc|remap)_' "$NVML_CONF" >"$T/nvml.conf"
grep -v xid_events "$T/nvml.conf" >"$T/clean-nvml.conf"
for i in 1 2 3; do
	n=gpu0$i
	"$KILN" node add "$n" --bmc "redfish+http://127.0.0.1:${BMCSIM_PORTS[$((i - 1))]}" \
		--bmc-user admin --bmc-password-file "$T/bmc.pw" >/dev/null ||
		{ echo "node add $n failed" >&2; exit 1; }
	r=$T/roots/$n
	mkdir -p "$T/roots"
	cp -r "$ROOT" "$r"
	printf '%s\n' "$n" >"$r/proc/sys/kernel/hostname"
	bmcsim_serial "$MOCKUP" >"$r/sys/class/dmi/id/product_serial"
	# The fixture's kernel log holds Xid 79 and 48, the fake NVML config an Xid 48: gpu03
	# keeps them, the others start clean.
	conf=$T/nvml.conf
	if [ "$n" != gpu03 ]; then
		: >"$r/dev/kmsg"
		conf=$T/clean-nvml.conf
	fi
	"$KILN" agent token "$n" >"$T/$n.token" 2>/dev/null || { echo "agent token $n failed" >&2; exit 1; }
	FAKE_NVML_CONFIG=$conf "$AGENT" --server "$KILND_URL" --root "$r" --nvml-lib "$NVML" \
		--state-dir "$T/agent-$n" --token-file "$T/$n.token" --interval "$INTERVAL" \
		>>"$T/agent-$n.log" 2>&1 &
	AGENT_PID[$n]=$!
	AGENT_PIDS+=("$!")
done
# gpu03 is powered off on purpose (its agent keeps running until we stop it below).
curl -s -o /dev/null -X POST -d '{"power":"Off"}' "http://127.0.0.1:${BMCSIM_PORTS[2]}/_sim/inject"

status_json() { "$KILN" status -o json 2>"$T/status.err"; }
field() { status_json | jq -r --arg n "$1" ".[] | select(.node == \$n) | .$2"; }

all_reported() {
	[ "$(status_json | jq '[.[] | select(.agent_last_seen != null)] | length')" = 3 ] &&
		[ "$(field gpu01 power)" = on ] && [ "$(field gpu02 power)" = on ] &&
		[ "$(field gpu03 power)" = off ]
}
wait_for "every agent reported and every BMC was read" 30 all_reported && pass "3 agents, 3 BMCs"

# The JSON shape every consumer relies on.
shape=$(status_json | jq -r 'if type == "array" and length == 3 and
	all(.[]; has("node") and has("power") and has("agent_last_seen") and has("health") and
	    (.reasons | type == "array") and has("gpus_seen") and has("gpus_expected") and
	    has("power_age_s") and has("agent_age_s") and has("maintenance"))
	then "ok" else . end')
same "kiln status -o json: an array of node objects with the documented fields" "$shape" ok
same "gpus seen on gpu01" "$(field gpu01 gpus_seen)" 8
same "gpu01 is ok while its agent reports" "$(field gpu01 health)/$(field gpu01 'reasons | join(";")')" ok/
# An unchanged health outcome is not written again on every sweep (here every second), only
# once a minute: gpu01's health_time stands still over three sweeps.
health_time() {
	kiln_test_sql \
		"SELECT b.health_time FROM node_bmc_state b JOIN nodes n ON n.id = b.node_id WHERE n.name = 'gpu01'"
}
if [ -n "${KILN_TEST_PG:-}" ] || command -v sqlite3 >/dev/null 2>&1; then
	ht1=$(health_time)
	sleep 3
	ht2=$(health_time)
	if [ -n "$ht1" ] && { [ "$ht1" = "$ht2" ] || [ $((ht2 - ht1)) -ge 60 ]; }; then
		pass "an unchanged health is not rewritten every sweep"
	else
		fail "gpu01's health_time moved from '$ht1' to '$ht2' in 3 s"
	fi
fi

"$KILN" node maintenance gpu02 on --reason "replacing a PSU" >/dev/null || fail "maintenance on"
same "gpu02 shows its maintenance reason" "$(field gpu02 maintenance.reason)" "replacing a PSU"
"$KILN" node maintenance gpu02 on >/dev/null 2>&1
same "maintenance on without --reason is a usage error" "$?" 2

# Every agent stops: gpu01 (on) must be hung within 3 intervals (plus the health sweep);
# gpu02 (in maintenance) and gpu03 (off) must not.
for n in gpu01 gpu02 gpu03; do
	kill -TERM "${AGENT_PID[$n]}" 2>/dev/null
	wait "${AGENT_PID[$n]}" 2>/dev/null
done
stopped=$(date +%s)
is_hung() { [ "$(field gpu01 health)" = critical ] && field gpu01 'reasons[]' | grep -q '^hung:'; }
if wait_for "gpu01 flagged hung" 20 is_hung; then
	took=$(($(date +%s) - stopped))
	# 3 intervals of silence, counted from the last report (up to one interval before the
	# stop), plus the 1 s health sweep and a second of rounding.
	if [ "$took" -le $((3 * INTERVAL + 2)) ]; then
		pass "gpu01 flagged hung ${took}s after its agent stopped (3 intervals = $((3 * INTERVAL))s)"
	else
		fail "gpu01 flagged hung only after ${took}s"
	fi
fi
sleep 2
same "gpu02 (maintenance) is not hung" "$(field gpu02 hung)" false
same "gpu03 (powered off) is not hung" "$(field gpu03 hung)" false
same "gpu03 (powered off) is critical for its Xids alone" \
	"$(field gpu03 health)/$(field gpu03 'reasons | join(";")')" "critical/xid: critical Xid 48,79 [reboot may clear it]"
kiln_api GET /hung >/dev/null
same "GET /hung names exactly gpu01" "$(jq -c .nodes "$KILN_BODY_FILE")" '["gpu01"]'
same "GET /hung gives it as a range" "$(jq -r .range "$KILN_BODY_FILE")" gpu01
same "kiln status --problems lists gpu01, gpu02 (maintenance) and gpu03" \
	"$("$KILN" status --problems -o json | jq -r '[.[].node] | join(",")')" "gpu01,gpu02,gpu03"
same "kiln status gpu0[1-2] --problems" \
	"$("$KILN" status 'gpu0[1-2]' --problems -o json | jq -r '[.[].node] | join(",")')" "gpu01,gpu02"

# The table: a line per node and the summary, no colours when not on a terminal.
"$KILN" status >"$T/table" 2>&1 || fail "kiln status failed: $(cat "$T/table")"
grep -q '^3 nodes: 1 ok, 0 warning, 2 critical, 1 maintenance, 1 hung$' "$T/table" && pass "summary line" ||
	fail "summary line: $(tail -1 "$T/table")"
grep -q $'\033' "$T/table" && fail "colour codes in a pipe" || pass "no colour codes in a pipe"
same "table rows" "$(grep -c '^gpu0' "$T/table")" 3
"$KILN" status 'gpu0[1-2]' --problems >"$T/table2" 2>&1 || fail "kiln status gpu0[1-2] --problems failed"
same "table of gpu0[1-2] --problems" "$(grep -c '^gpu0[12] ' "$T/table2")/$(tail -1 "$T/table2")" \
	"2/2 nodes: 1 ok, 0 warning, 1 critical, 1 maintenance, 1 hung"

# The rows form (what the table reads) carries the object form's table fields row for row,
# and the same summary. Both answers are taken between two identical object answers, so that
# no poller write or clock tick falls between them.
rows_as_objects='.columns as $c | {summary, nodes: [.rows[] | [$c, .] | transpose
	| map({(.[0]): .[1]}) | add]}'
objects_as_rows='{summary, nodes: [.nodes[] | {node, power, power_age_s, agent_age_s, health,
	maintenance_reason: (if .maintenance == false then null else .maintenance.reason end),
	gpus_seen, gpus_expected, driver, cuda, hottest_gpu_c, power_draw_w, reasons, bmc, work}]}'
rows_match() {
	kiln_api GET '/status' >/dev/null && cp "$KILN_BODY_FILE" "$T/objects1.json" &&
		[ "$(kiln_api GET '/status?form=rows')" = 200 ] && cp "$KILN_BODY_FILE" "$T/rows.json" &&
		kiln_api GET '/status?form=objects' >/dev/null &&
		cmp -s "$KILN_BODY_FILE" "$T/objects1.json" || return 1
	local a b
	a=$(jq -S "$objects_as_rows" "$T/objects1.json") && b=$(jq -S "$rows_as_objects" "$T/rows.json") &&
		[ "$(jq '.nodes | length' <<<"$a")" = 3 ] && [ "$a" = "$b" ]
}
if wait_for "the rows form matches the object form" 20 rows_match; then
	pass "GET /status?form=rows gives the object form's table fields and summary"
else
	diff <(jq -S "$objects_as_rows" "$T/objects1.json") <(jq -S "$rows_as_objects" "$T/rows.json") >&2
fi
same "the rows form has a row per node" "$(jq '.rows | length' "$T/rows.json")" 3
same "GET /status?form=bogus is refused" "$(kiln_api GET '/status?form=bogus')/$(jq -r .field "$KILN_BODY_FILE")" 400/form

# A SEL entry and a power change on gpu01's BMC become events.
curl -s -o /dev/null -X POST \
	-d '{"log":{"message":"PSU 2 input lost","severity":"Critical"}}' \
	"http://127.0.0.1:${BMCSIM_PORTS[0]}/_sim/inject"
curl -s -o /dev/null -X POST -d '{"power":"Off"}' "http://127.0.0.1:${BMCSIM_PORTS[0]}/_sim/inject"
sel_seen() { "$KILN" events gpu01 -o json | jq -e 'any(.[]; .kind == "sel" and (.message | test("PSU 2 input lost")))' >/dev/null; }
wait_for "the SEL entry became an event" 20 sel_seen && pass "SEL entry listed by kiln events"
power_seen() { "$KILN" events gpu01 --since 1h -o json | jq -e 'any(.[]; .kind == "power" and (.message | startswith("power on -> off outside kiln")))' >/dev/null; }
wait_for "the power change became an event" 20 power_seen && pass "power change listed"
not_hung() { [ "$(field gpu01 hung)" = false ]; }
wait_for "gpu01 powered off is no longer hung" 10 not_hung && pass "powered off: not hung"

"$KILN" events --severity critical -o json >"$T/crit.json" || fail "kiln events --severity"
same "the hung event is critical" "$(jq '[.[] | select(.kind == "hung" and .node == "gpu01")] | length' "$T/crit.json")" 1
same "no info events under --severity critical" "$(jq '[.[] | select(.severity == "info")] | length' "$T/crit.json")" 0
same "the maintenance event is listed for gpu02" \
	"$("$KILN" events gpu02 -o json | jq -r '[.[] | select(.kind == "maintenance")][0].message')" \
	"maintenance on by admin: replacing a PSU"
"$KILN" events >"$T/events.txt" || fail "kiln events table"
grep -q 'hung: powered on, agent silent' "$T/events.txt" && pass "events table" || fail "events table: $(head -3 "$T/events.txt")"

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -30 "$KILND_LOG" >&2; exit 1; }
echo "all fleet status checks passed"
