# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd's own trouble is not the nodes' trouble. Five nodes with agents and
# remediation on.
# 1. kilnd's listener held at its connection limit for longer than the hung threshold (the
#    agents cannot deliver): no node is flagged hung or cycled.
# 2. Every agent stops at once (a switch, or kilnd's network): one fleet-wide event, no node
#    flagged hung or cycled; when they report again the state ends with an event of its own.
# 3. One agent stopped alone is still flagged hung (and cycled).
# 4. A power-off through kiln says who did it; one outside kiln is a warning.
# 5. kilnd down for longer than the threshold: no node is hung for it after its start.
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
FAILS=0
T=$KILN_TEST_TMP
NODES=(n1 n2 n3 n4 n5)
# hung after 5 agent intervals of 2 s; one HTTP thread, so the connection limit is exact
cat >"$T/kilnd.conf" <<EOF
[http]
threads = 1
max_connections = 16
connection_timeout = 1s
[poller]
interval = 5s
health_every = 1s
[health]
agent_interval = 2s
hung_intervals = 5
[remediation]
enabled = yes
grace = 1s
max_per_hour = 10
EOF
HOLD_PID=
on_exit() {
	[ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null && wait "$HOLD_PID" 2>/dev/null
	fleet_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" --count ${#NODES[@]} || exit 1
PORTS=("${BMCSIM_PORTS[@]}")
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
i=0
for n in "${NODES[@]}"; do
	fleet_node_add "$n" "${PORTS[$i]}" || exit 1
	i=$((i + 1))
done
STATUS=$T/status.json
status_read() { "$KILN" status -o json >"$STATUS.new" 2>/dev/null && mv "$STATUS.new" "$STATUS"; }
field() { jq -r --arg n "$1" ".[] | select(.node == \$n) | .$2" "$STATUS"; }
# all of the named nodes read on and reported within the last 3 s
fresh() {
	local n now
	status_read || return 1
	now=$(date +%s)
	for n in "$@"; do
		[ "$(field "$n" power)" = on ] || return 1
		[ "$(field "$n" agent_last_seen)" != null ] || return 1
		local seen
		seen=$(field "$n" agent_last_seen)
		case $seen in
		*[!0-9]*) seen=$(date -d "$seen" +%s) ;;
		esac
		[ $((now - seen)) -le 3 ] || return 1
	done
}
hung_events() { "$KILN" events --since 1h -o json | jq -r '[.[] | select(.kind == "hung") | .node] | join(",")'; }
cycles() { "$KILN" audit log -o json | jq -r '[.[] | select(.actor == "kilnd" and .action == "power.cycle") | .target] | join(",")'; }

# hold_listener PORT SECONDS: keeps kilnd's listener at its limit with 16 whole requests
# that stay open (the dashboard's event stream: suspended between events, so no request
# deadline ends them; a trickling slow client no longer can, since kilnd sheds those), as 16
# open dashboards or console streams would. Agents' connections end on the 1 s idle timeout,
# and then they cannot get one.
hold_listener() {
	local port=$1 k pids=()
	for ((k = 0; k < 16; k++)); do
		curl -s -N -o /dev/null -m "$2" -H "Authorization: Bearer $(cat "$KILN_TOKEN_FILE")" \
			"http://127.0.0.1:$port/api/v1/ui/stream" &
		pids[k]=$!
	done
	wait "${pids[@]}"
}

# 1. Two agents report; the listener is then held full for 14 s (the threshold is 10 s): the
# agents cannot deliver, and their silence is kilnd's.
fleet_agent_start n1
fleet_agent_start n2
wait_for "n1 and n2 report" 30 fresh n1 n2 || exit 1
hold_listener "${KILND_URL##*:}" 14 &
HOLD_PID=$!
sleep 3
same "the listener is held at its limit" "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$KILND_URL/api/v1/health")" 000
wait "$HOLD_PID"
HOLD_PID=
wait_for "n1 and n2 report again once the listener has room" 20 fresh n1 n2
same "no node was flagged hung while kilnd could not receive" "$(hung_events)" ""
same "none was cycled" "$(cycles)" ""

# 2. All five report, then all stop at once.
for n in n3 n4 n5; do fleet_agent_start "$n"; done
wait_for "all five report" 30 fresh "${NODES[@]}" || exit 1
for n in "${NODES[@]}"; do fleet_agent_stop "$n"; done
fleet_events() {
	"$KILN" events --since 1h -o json | jq -r '[.[] | select(.kind == "fleet-silence") | .message] | .[]'
}
began() { fleet_events | grep -q '^fleet-wide agent silence: network or kilnd problem'; }
wait_for "one fleet-wide silence event" 20 began
sleep 8 # past every node's hung threshold
status_read
same "one fleet-wide event" "$(fleet_events | grep -c '^fleet-wide agent silence:')" 1
same "no node flagged hung during the fleet-wide silence" "$(hung_events)" ""
same "none cycled" "$(cycles)" ""
field n3 'reasons[]' | grep -q 'during a fleet-wide agent silence: not judged hung'
check "a silent node says why it is not judged" $? "$(field n3 reasons)"
for n in "${NODES[@]}"; do fleet_agent_start "$n"; done
ended() { fleet_events | grep -q '^fleet-wide agent silence over'; }
wait_for "the fleet-wide silence ends when the agents report again" 20 ended
wait_for "all five report again" 30 fresh "${NODES[@]}"

# 3. One agent alone stops: that is the node's trouble.
fleet_agent_stop n1
is_hung() { [ "$(hung_events)" = n1 ]; }
wait_for "n1, silent alone, is flagged hung" 30 is_hung
cycled() { [ "$(cycles)" = n1 ]; }
wait_for "remediation cycles n1 alone" 20 cycled

# 4. n2 is powered off through kiln, n3 at its BMC (outside kiln).
"$KILN" power off n2 --yes >/dev/null 2>&1 || "$KILN" power off n2 >/dev/null 2>&1
check "kiln power off n2" $? ""
curl -s -o /dev/null -X POST -d '{"power":"Off"}' "http://127.0.0.1:${PORTS[2]}/_sim/inject"
both_off() { status_read && [ "$(field n2 power)/$(field n3 power)" = off/off ]; }
wait_for "n2 and n3 read off" 30 both_off
fleet_agent_stop n2
fleet_agent_stop n3
sleep 12 # past the hung threshold: a node off is never hung
status_read
field n2 'reasons[]' | grep -q '^off, by admin at [0-9][0-9]:[0-9][0-9] UTC$'
check "n2 says who turned it off" $? "$(field n2 reasons)"
same "n2 is ok" "$(field n2 health)" ok
field n3 'reasons[]' | grep -q '^powered off outside kiln at '
check "n3's power-off outside kiln is a warning reason" $? "$(field n3 reasons)"
same "n3 is a warning" "$(field n3 health)" warning
same "neither is hung" "$(hung_events)" n1
"$KILN" events n3 --since 1h -o json | jq -r '.[] | select(.kind == "power") | .message' |
	grep -q '^power on -> off outside kiln'
check "n3's power event says outside kiln" $? ""

# 5. kilnd itself is down for longer than the threshold while n4's and n5's agents run (they
# keep their reports): after its start their silence counts from then, not from their last
# report, and neither is flagged hung before they deliver again.
PORT=${KILND_URL##*:}
kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
sleep 11
kiln_test_start_kilnd "$KILND_DIR" --config "$T/kilnd.conf" --listen "127.0.0.1:$PORT" || exit 1
sleep 4
same "no node flagged hung after kilnd's own downtime" "$(hung_events)" n1
same "nor cycled" "$(cycles)" n1

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
