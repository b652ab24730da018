# SPDX-License-Identifier: Apache-2.0
# Integration (issue 23's failover test): three kilnd (A, B, C) on one PostgreSQL database over
# 30 simulated Redfish BMCs and 30 agents, each agent given all three URLs (in a rotated
# order, so that each instance receives reports). Checks, in order:
# 1. every BMC holds exactly one session (its owner's), and every node's agent reports;
# 2. the remediation limit holds across instances: 4 nodes owned by all three go hung at once
#    with max_per_hour = 2: two automatic cycles in the whole fleet, not two per instance;
# 3. kill -9 C: its nodes are polled by A and B within lease + lease/3 + a poll interval, and
#    no node is flagged hung (C's agents move to their next URL);
# 4. a bulk `kiln power cycle` of the 30 nodes through A, B owning some: every node confirmed,
#    every BMC one Reset;
# 5. kill -9 B while it confirms cycles of its nodes handed by A: no BMC receives a second
#    Reset, every audit row says ok or interrupted, none pending.
# Needs PostgreSQL: KILN_TEST_PG, or a throw-away server from tests/pg/pg-server.sh.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
# shellcheck source=agent_fleet.sh
. "$HERE/agent_fleet.sh"

T=$KILN_TEST_TMP
FAILS=0
N=30
LEASE=5
INTERVAL=5

on_exit() {
	fleet_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
kiln_test_need_pg

cat >"$T/kilnd.conf" <<EOF
[poller]
interval = ${INTERVAL}s
health_every = 1s
[health]
agent_interval = 2s
hung_intervals = 3
[remediation]
enabled = yes
grace = 1s
max_per_hour = 2
[cluster]
lease = ${LEASE}s
EOF

# A cycle is confirmed once the system is on again: 2 phases of 3 s each (the window in
# which step 5 kills B).
bmcsim_start "$T/sim" "$MOCKUP" --count "$N" --power-delay-ms 3000 --record-max 100000 || exit 1

# Fixed instance ids: the same owners at every run.
for x in a b c; do
	mkdir -m 0700 "$T/$x"
	printf '00000000000000%s%s\n' "$x" "$x" >"$T/$x/instance.id"
done
kiln_test_start_kilnd "$T/a" --config "$T/kilnd.conf" || exit 1
A_PID=$KILND_PID A_URL=$KILND_URL
kiln_test_start_instance "$T/a" "$T/b" --config "$T/kilnd.conf" || exit 1
B_PID=$KILND_PID B_URL=$KILND_URL
kiln_test_start_instance "$T/a" "$T/c" --config "$T/kilnd.conf" || exit 1
C_PID=$KILND_PID C_URL=$KILND_URL
export KILN_URL=$A_URL KILN_TOKEN_FILE=$T/a/admin.token
A_ID=00000000000000aa B_ID=00000000000000bb C_ID=00000000000000cc

three_live() { [ "$("$KILN" cluster status -o json | jq '[.instances[] | select(.live)] | length')" = 3 ]; }
wait_for "three live instances" 15 three_live || exit 1
sleep 2 # each instance's own heartbeat has read the other two rows (lease/3)

URLS=("$A_URL" "$B_URL" "$C_URL")
name() { printf 'n%02d' "$1"; }
for ((i = 1; i <= N; i++)); do
	fleet_node_add "$(name "$i")" "${BMCSIM_PORTS[$((i - 1))]}" || exit 1
done
# agent_start NODE: its agent with the three URLs, rotated by the node's number
agent_start() {
	local k=$((10#${1#n} % 3))
	KILND_URL="${URLS[$k]},${URLS[$(((k + 1) % 3))]},${URLS[$(((k + 2) % 3))]}" \
		fleet_agent_start "$1"
}
for ((i = 1; i <= N; i++)); do agent_start "$(name "$i")"; done

sim() { curl -s "http://127.0.0.1:${BMCSIM_PORTS[$(($1 - 1))]}/_sim/state" | jq -r "$2"; }
sim_count() { # sim_count I JQ-SELECT: BMC i's recorded requests that match
	curl -s "http://127.0.0.1:${BMCSIM_PORTS[$(($1 - 1))]}/_sim/requests" |
		jq "[.[] | select($2)] | length"
}
clear_logs() {
	local p
	for p in "${BMCSIM_PORTS[@]}"; do curl -s -X DELETE "http://127.0.0.1:$p/_sim/requests" >/dev/null; done
}
resets() { sim "$1" '.resets | length'; }
all_reporting() {
	[ "$("$KILN" status -o json | jq '[.[] | select(.agent_last_seen != null and .power == "on")] | length')" = "$N" ]
}
one_session_each() {
	local i
	for ((i = 1; i <= N; i++)); do [ "$(sim "$i" .sessions)" = 1 ] || return 1; done
}

# 1. one session a BMC, every agent reporting
wait_for "every node on, its agent reporting" 60 all_reporting || exit 1
wait_for "every BMC holds exactly one session" 30 one_session_each

# Who owns what: a live read through A names, for each node, the instance that ran it.
"$KILN" power status all -o json >"$T/owners.json" || { echo "power status failed" >&2; exit 1; }
owned_by() { jq -r --arg id "$1" '[.[] | select(.ran_on == $id) | .node] | join(" ")' "$T/owners.json"; }
A_NODES=$(owned_by "$A_ID") B_NODES=$(owned_by "$B_ID") C_NODES=$(owned_by "$C_ID")
echo "A owns: $A_NODES"
echo "B owns: $B_NODES"
echo "C owns: $C_NODES"
same "each of the 30 nodes has one owner" "$(echo $A_NODES $B_NODES $C_NODES | wc -w)" "$N"
for x in A B C; do
	v=${x}_NODES
	[ -n "${!v}" ] || { echo "$x owns no node: the test needs all three to own some" >&2; exit 1; }
done
idx() { echo $((10#${1#n})); }

# 2. the remediation limit across instances: two of A's nodes, one of B's, one of C's hung
# at once (their agents stopped while their BMCs say on).
read -r a1 a2 _ <<<"$A_NODES"
read -r b1 _ <<<"$B_NODES"
read -r c1 _ <<<"$C_NODES"
HUNG="$a1 $a2 $b1 $c1"
for n in $HUNG; do fleet_agent_stop "$n"; done
auto_cycles() {
	"$KILN" audit log -o json | jq '[.[] | select(.action == "power.cycle" and .actor == "kilnd")] | length'
}
limited() { "$KILN" events --since 1h -o json | jq -e '[.[] | select(.message | test("limit of 2 automatic"))] | length > 0' >/dev/null; }
wait_for "the remediation limit is reached" 60 limited
sleep 5 # more health sweeps on every instance
same "two automatic cycles in the whole fleet (max_per_hour = 2)" "$(auto_cycles)" 2
cycled=0
for n in $HUNG; do cycled=$((cycled + $(resets "$(idx "$n")"))); done
same "and two BMCs reset for them" "$cycled" 2
for n in $HUNG; do agent_start "$n"; done
wait_for "the hung nodes' agents report again" 30 all_reporting
RESET_BASE=()
for ((i = 1; i <= N; i++)); do RESET_BASE[i]=$(resets "$i"); done

# 3. kill -9 C: A and B poll its nodes within the lease; no node is hung for it.
POWER_GET='.method == "GET" and (.path | test("^/redfish/v1/Systems/[^/]+$"))'
c_polled() {
	local n
	for n in $C_NODES; do [ "$(sim_count "$(idx "$n")" "$POWER_GET")" -ge 1 ] || return 1; done
}
hung_before=$("$KILN" events --since 1h -o json | jq '[.[] | select(.kind == "hung")] | length')
clear_logs
kill -9 "$C_PID"
wait "$C_PID" 2>/dev/null
killed=$(date +%s)
wait_for "A and B poll C's nodes" $((LEASE * 4)) c_polled
took=$(($(date +%s) - killed))
echo "C's nodes polled by the others ${took}s after the kill"
same "taken over within lease + lease/3 + a poll interval" \
	"$([ "$took" -le $((LEASE + LEASE / 3 + INTERVAL + 1)) ] && echo yes)" yes
sleep 10 # past the hung threshold (3 x 2 s) for an agent that could not move on
same "no node flagged hung after C's death" \
	"$("$KILN" events --since 1h -o json | jq '[.[] | select(.kind == "hung")] | length')" "$hung_before"
same "no automatic cycle after C's death" "$(auto_cycles)" 2
same "C's agents moved on: every agent reported within 6 s" \
	"$("$KILN" status -o json | jq '[.[] | select(.agent_age_s != null and .agent_age_s <= 6)] | length')" "$N"

# 4. a bulk cycle of the 30 nodes through A, B owning some: every node confirmed, once.
"$KILN" power cycle all -y --batch "$N" -o json >"$T/cycle.json" 2>"$T/cycle.err"
same "the bulk cycle answers 30 nodes" "$(jq -s 'flatten | length' "$T/cycle.json")" "$N"
same "every node's cycle is confirmed" \
	"$(jq -s '[flatten[] | select(.error == null)] | length' "$T/cycle.json")" "$N"
[ "$(jq -s '[flatten[] | select(.error != null)] | length' "$T/cycle.json")" = 0 ] ||
	jq -sc 'flatten[] | select(.error != null) | {node, error}' "$T/cycle.json" >&2
same "B cycled some of them" \
	"$([ "$(jq -s --arg b "$B_ID" '[flatten[] | select(.ran_on == $b)] | length' "$T/cycle.json")" -gt 0 ] && echo yes)" yes
one=0
for ((i = 1; i <= N; i++)); do
	[ $(($(resets "$i") - RESET_BASE[i])) = 1 ] && one=$((one + 1))
	RESET_BASE[i]=$(resets "$i")
done
same "every BMC received exactly one Reset" "$one" "$N"

# 5. kill -9 B while it confirms the cycles of its nodes, asked through A.
B_NOW=$(jq -rs --arg b "$B_ID" '[flatten[] | select(.ran_on == $b) | .node] | join(",")' "$T/cycle.json")
read -r b_first _ <<<"${B_NOW//,/ }"
"$KILN" power cycle "$B_NOW" -y --batch "$N" -o json >"$T/cut.json" 2>"$T/cut.err" &
CLI=$!
sent() { [ "$(resets "$(idx "$b_first")")" -gt "${RESET_BASE[$(idx "$b_first")]}" ]; }
wait_for "B sent its first Reset" 15 sent
kill -9 "$B_PID"
wait "$B_PID" 2>/dev/null
wait "$CLI"
echo "the cut cycle's answers:"
jq -sc 'flatten[] | {node, ran_on, error}' "$T/cut.json"
same "the cut call answers every one of B's nodes" \
	"$(jq -s 'flatten | length' "$T/cut.json")" "$(echo "${B_NOW//,/ }" | wc -w)"
same "each one confirmed, or interrupted with the power read back" \
	"$(jq -s '[flatten[] | select(.error == null or (.error | test("^interrupted: instance 00000000000000bb stopped mid-call; power now (on|off) \\(read back\\)$")))] | length' "$T/cut.json")" \
	"$(echo "${B_NOW//,/ }" | wc -w)"
sleep 8 # a BMC that would get a second Reset from a takeover gets it by now
twice=0
for ((i = 1; i <= N; i++)); do
	[ $(($(resets "$i") - RESET_BASE[i])) -gt 1 ] && twice=$((twice + 1))
done
same "no BMC received a second Reset" "$twice" 0
pending() { "$KILN" audit log -o json | jq '[.[] | select(.outcome == "pending")] | length'; }
no_pending() { [ "$(pending)" = 0 ]; }
wait_for "no audit row is left pending" 30 no_pending ||
	"$KILN" audit log -o json | jq -c '.[] | select(.outcome == "pending")' >&2
bad=$("$KILN" audit log -o json | jq '[.[] | select(.action == "power.cycle" and (.outcome | test("^(ok|interrupted: )") | not))] | length')
same "every cycle's audit row says ok or interrupted" "$bad" 0
kill -0 "$A_PID" || { echo "A died" >&2; FAILS=$((FAILS + 1)); }
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all cluster failover checks passed"
