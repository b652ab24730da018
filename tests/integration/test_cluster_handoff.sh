# SPDX-License-Identifier: Apache-2.0
# Integration: two kilnd on one PostgreSQL database over 8 simulated Redfish BMCs; API calls
# on a node the receiving instance does not own are handed to its owner (server/handoff.c):
# a read and a bulk power cycle through A name each node's owner in "ran_on", every BMC gets
# exactly one Reset and keeps its one session (the owner's); kill -9 the owner B while it
# waits for a cycle it sent to be confirmed: the caller gets "interrupted" with the power
# read back by A, the BMC no second Reset, the audit row no "pending"; a call on another of
# B's nodes handed while B is dead waits for A to take it over, then runs once. Needs
# PostgreSQL: KILN_TEST_PG, or a throw-away server from tests/pg/pg-server.sh (skipped when
# none can be started).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
MOCKUP=$SRC/tests/sim/fixtures/idrac9
T=$KILN_TEST_TMP
FAILS=0

on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup # drops the databases, then stops a server it started
}
trap on_exit EXIT
kiln_test_need_pg

LEASE=5
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
health_every = 1s
[cluster]
lease = ${LEASE}s
EOF

# A cycle is confirmed once the system is on again: 2 phases of 3 s each, a window in which
# its owner is killed.
bmcsim_start "$T/sim" "$MOCKUP" --count 8 --power-delay-ms 3000 --record-max 100000 || exit 1

# Fixed instance ids make the owners the same at every run: with these, B owns 3 of the 8
# nodes (ids 1..8 in the fresh database: n01, n02, n06), A the other 5.
A_DIR=$T/a
B_DIR=$T/b
mkdir -m 0700 "$A_DIR" "$B_DIR"
echo 00000000000000aa >"$A_DIR/instance.id"
echo 00000000000000bb >"$B_DIR/instance.id"
kiln_test_start_kilnd "$A_DIR" --config "$T/kilnd.conf" || exit 1
A_PID=$KILND_PID
A_URL=$KILND_URL
kiln_test_start_instance "$A_DIR" "$B_DIR" --config "$T/kilnd.conf" || exit 1
B_PID=$KILND_PID
TOKEN=$A_DIR/admin.token
ka() { KILN_URL=$A_URL KILN_TOKEN_FILE=$TOKEN "$KILN" "$@"; }

printf 'password\n' >"$T/bmc.pw"
for i in 1 2 3 4 5 6 7 8; do
	ka node add "n0$i" --bmc "redfish+http://127.0.0.1:${BMCSIM_PORTS[$((i - 1))]}" \
		--bmc-user admin --bmc-password-file "$T/bmc.pw" >/dev/null ||
		{ echo "node add n0$i failed" >&2; exit 1; }
done

sim() { curl -s "http://127.0.0.1:$1/_sim/state" | jq -r "$2"; }
port_of() { echo "${BMCSIM_PORTS[$((${1#n0} - 1))]}"; }
all_sessions() {
	local p
	for p in "${BMCSIM_PORTS[@]}"; do
		[ "$(sim "$p" .sessions)" = 1 ] || return 1
	done
}
wait_for "every BMC holds one session (its owner's poller)" 30 all_sessions || exit 1

# A read through A: each node answered by its owner.
ka power status 'n0[1-8]' -o json >"$T/status.json" 2>"$T/status.err" ||
	{ echo "power status failed: $(cat "$T/status.err")" >&2; exit 1; }
same "power status through A answers 8 nodes" "$(jq 'length' "$T/status.json")" 8
same "each read ran on an instance" \
	"$(jq '[.[] | select(.ran_on == "00000000000000aa" or .ran_on == "00000000000000bb")] | length' "$T/status.json")" 8
B_NODES=$(jq -r '[.[] | select(.ran_on == "00000000000000bb") | .node] | join(" ")' "$T/status.json")
same "B owns three nodes, read through A by B" "$B_NODES" "n01 n02 n06"
same "the reads on A's own nodes ran on A" \
	"$(jq -r '[.[] | select(.ran_on == "00000000000000aa") | .node] | join(" ")' "$T/status.json")" \
	"n03 n04 n05 n07 n08"

# A bulk cycle through A: every node confirmed, by its owner, one Reset each.
resets_before=()
for p in "${BMCSIM_PORTS[@]}"; do resets_before+=("$(sim "$p" '.resets | length')"); done
ka power cycle 'n0[1-8]' -y --batch 8 -o json >"$T/cycle.json" 2>"$T/cycle.err"
same "the bulk cycle answers 8 nodes" "$(jq -s 'flatten | length' "$T/cycle.json")" 8
same "every node's cycle is confirmed" \
	"$(jq -s '[flatten[] | select(.error == null)] | length' "$T/cycle.json")" 8
same "B's nodes were cycled by B" \
	"$(jq -rs '[flatten[] | select(.ran_on == "00000000000000bb") | .node] | sort | join(" ")' "$T/cycle.json")" \
	"$B_NODES"
one=0
for i in "${!BMCSIM_PORTS[@]}"; do
	d=$(($(sim "${BMCSIM_PORTS[$i]}" '.resets | length') - resets_before[i]))
	[ "$d" = 1 ] && one=$((one + 1))
done
same "every BMC received exactly one Reset" "$one" 8
wait_for "every BMC still holds one session" 10 all_sessions || FAILS=$((FAILS + 1))
same "every cycle audited ok" \
	"$(ka audit log -o json | jq '[.[] | select(.action == "power.cycle" and .outcome == "ok")] | length')" 8

# kill -9 B while it confirms a cycle it sent to n02.
P2=$(port_of n02)
r2=$(sim "$P2" '.resets | length')
ka power cycle n02 -y -o json >"$T/cut.json" 2>"$T/cut.err" &
CLI=$!
reset_sent() { [ "$(sim "$P2" '.resets | length')" -gt "$r2" ]; }
wait_for "B sent the Reset to n02" 10 reset_sent ||
	FAILS=$((FAILS + 1))
kill -9 "$B_PID"
t0=$(date +%s)
# A call on B's node n06 while B is dead: handed, waits until A takes the node over.
ka power status n06 -o json >"$T/late.json" 2>"$T/late.err" &
LATE=$!
wait "$CLI"
t1=$(date +%s)
echo "the cut call answered $((t1 - t0)) s after the kill"
cut_error=$(jq -rs 'flatten[0].error' "$T/cut.json")
[[ "$cut_error" =~ ^interrupted:\ instance\ 00000000000000bb\ stopped\ mid-call\;\ power\ now\ (on|off)\ \(read\ back\)$ ]] ||
	echo "the cut call's error: $cut_error; stderr: $(cat "$T/cut.err")" >&2
same "the cut cycle is answered interrupted, power read back by A" \
	"$(jq -rs 'flatten[0].error | test("^interrupted: instance 00000000000000bb stopped mid-call; power now (on|off) \\(read back\\)$")' "$T/cut.json")" true
same "it names A as the one that answered" "$(jq -rs 'flatten[0].ran_on' "$T/cut.json")" 00000000000000aa
same "n02's BMC received no second Reset" "$(($(sim "$P2" '.resets | length') - r2))" 1
same "the cut cycle's audit row says interrupted, with the power A read back" \
	"$(ka audit log -o json | jq -r '[.[] | select(.action == "power.cycle" and .target == "n02")][0].outcome | test("^interrupted: kilnd stopped; power read back: (on|off) at ")')" true
same "no audit row is left pending" \
	"$(ka audit log -o json | jq '[.[] | select(.outcome == "pending")] | length')" 0
wait "$LATE"
same "the call handed while B was dead ran on A" "$(jq -rs 'flatten[0].ran_on' "$T/late.json")" 00000000000000aa
same "and answered the power" "$(jq -rs 'flatten[0].power' "$T/late.json")" on
kill -0 "$A_PID" || { echo "A died" >&2; FAILS=$((FAILS + 1)); }
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all cluster handoff checks passed"
