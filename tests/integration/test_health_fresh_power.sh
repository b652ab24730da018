# SPDX-License-Identifier: Apache-2.0
# Integration: kiln judges hung on fresh facts only. Two nodes with agents and remediation on:
# on one the BMC stops answering and the agent stops together (a switch or PDU failure): its
# power turns unknown at the first failed poll, it is never flagged hung and never cycled; the
# other's agent alone stops while its BMC still answers "on": flagged hung and cycled. When
# the quiet BMC answers again, off, the change from its last word is still an event.
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
# A failed poll must show before the hung threshold: 5 s interval + 1 s status timeout is
# under 5 agent intervals of 2 s.
cat >"$T/kilnd.conf" <<EOF
[bmc]
status_timeout = 1s
[poller]
interval = 5s
health_every = 1s
[health]
agent_interval = 2s
hung_intervals = 5
power_fresh_intervals = 2
[remediation]
enabled = yes
grace = 1s
max_per_hour = 10
EOF
on_exit() {
	fleet_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" --count 2 || exit 1
PORTS=("${BMCSIM_PORTS[@]}")
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
i=0
for n in quiet alone; do
	fleet_node_add "$n" "${PORTS[$i]}" && fleet_agent_start "$n" || exit 1
	i=$((i + 1))
done
field() { "$KILN" status -o json | jq -r --arg n "$1" ".[] | select(.node == \$n) | .$2"; }
ready() { [ "$(field quiet power)/$(field alone power)" = on/on ] &&
	[ "$(field quiet agent_last_seen)" != null ] && [ "$(field alone agent_last_seen)" != null ]; }
wait_for "both agents reported and both BMCs read" 30 ready || exit 1

# quiet: its BMC hangs and its agent stops at once; alone: only its agent stops.
curl -s -o /dev/null -X POST -d '{"fault":"hang"}' "http://127.0.0.1:${PORTS[0]}/_sim/inject"
fleet_agents_stop
is_hung() { field "$1" 'reasons[]' | grep -q '^hung:'; }
hung_seen= alone_hung=
for ((k = 0; k < 40; k++)); do # 20 s: twice the hung threshold
	is_hung quiet && hung_seen=1
	is_hung alone && alone_hung=1
	sleep 0.5
done
same "the node whose BMC went quiet with its agent is never flagged hung" "${hung_seen:-no}" no
same "its power is unknown" "$(field quiet power)" unknown
field quiet 'reasons[]' | grep -q '^agent silent for .*power unknown: not judged hung'
check "its reasons say it is silent and not judged" $? "$(field quiet reasons)"
# (flagged until kilnd cycled it: then it is booting, not hung before [health] boot_time)
same "the node whose agent alone stopped is flagged hung" "${alone_hung:-no}" 1
same "remediation cycled only that one" \
	"$("$KILN" audit log -o json | jq -r '[.[] | select(.actor == "kilnd") | .target] | unique | join(",")')" \
	alone
same "no reset reached the quiet BMC" \
	"$(curl -s -m 2 "http://127.0.0.1:${PORTS[0]}/_sim/state" | jq -r '.resets | length' 2>/dev/null || echo '?')" 0

# The quiet BMC answers again, powered off meanwhile: the change from the last power it said
# is an event, though a failed read stood in between (power was unknown).
curl -s -o /dev/null -X POST -d '{"fault":"none"}' "http://127.0.0.1:${PORTS[0]}/_sim/inject"
curl -s -o /dev/null -X POST -d '{"power":"Off"}' "http://127.0.0.1:${PORTS[0]}/_sim/inject"
is_off() { [ "$(field quiet power)" = off ]; }
wait_for "the quiet node reads off once its BMC answers" 30 is_off
same "the change across the failed reads is an event (no kiln action: outside kiln)" \
	"$("$KILN" events quiet --since 1h -o json | jq -r '[.[] | select(.kind == "power") | .message] | join(",")')" \
	"power on -> off outside kiln (no kiln action turned it off)"

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
