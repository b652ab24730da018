# SPDX-License-Identifier: Apache-2.0
# Integration: two kilnd on one PostgreSQL database over 6 simulated BMCs divide the nodes:
# each BMC is polled by exactly one instance (its request log shows one poller's rate of
# power reads, not two); kill -9 one: within its lease (5 s) the other
# polls all 6 and flags none hung; a third kilnd with another secret.key refuses to start;
# kiln cluster status lists the instances. Needs PostgreSQL: KILN_TEST_PG, or a throw-away
# server started here with tests/pg/pg-server.sh (skipped when none can be started).
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

bmcsim_start "$T/sim" "$MOCKUP" --count 6 --record-max 100000 || exit 1

# Instance A makes the database; B shares it (the marker names A's database) and A's key.
A_DIR=$T/a
B_DIR=$T/b
mkdir -m 0700 "$A_DIR" "$B_DIR"
kiln_test_start_kilnd "$A_DIR" --config "$T/kilnd.conf" || exit 1
A_PID=$KILND_PID
A_URL=$KILND_URL
kiln_test_start_instance "$A_DIR" "$B_DIR" --config "$T/kilnd.conf" || exit 1
B_PID=$KILND_PID
B_URL=$KILND_URL
B_TOKEN=$A_DIR/admin.token # tokens live in the shared database: B wrote none

# status: both live, each named by the one that answers
ids() { KILN_URL=$1 KILN_TOKEN_FILE=$2 "$KILN" cluster status -o json; }
st=$(ids "$A_URL" "$A_DIR/admin.token")
same "cluster status through A lists two live instances" \
	"$(jq '[.instances[] | select(.live)] | length' <<<"$st")" 2
A_ID=$(jq -r .answered_by <<<"$st")
st=$(ids "$B_URL" "$B_TOKEN")
B_ID=$(jq -r .answered_by <<<"$st")
same "B answers as another instance" "$([ -n "$B_ID" ] && [ "$B_ID" != "$A_ID" ] && echo yes)" yes
same "B sees itself as self" "$(jq -r '.instances[] | select(.self) | .id' <<<"$st")" "$B_ID"

printf 'password\n' >"$T/bmc.pw"
for i in 1 2 3 4 5 6; do
	KILN_URL=$A_URL KILN_TOKEN_FILE=$A_DIR/admin.token "$KILN" node add "n0$i" \
		--bmc "redfish+http://127.0.0.1:${BMCSIM_PORTS[$((i - 1))]}" \
		--bmc-user admin --bmc-password-file "$T/bmc.pw" >/dev/null ||
		{ echo "node add n0$i failed" >&2; exit 1; }
done

# sim_count PORT JQ-SELECT: how many recorded requests of that BMC match.
sim_count() {
	curl -s "http://127.0.0.1:$1/_sim/requests" | jq "[.[] | select($2)] | length"
}
POWER_GET='.method == "GET" and (.path | test("^/redfish/v1/Systems/[^/]+$"))'
all_polled() {
	local p
	for p in "${BMCSIM_PORTS[@]}"; do
		[ "$(sim_count "$p" "$POWER_GET")" -ge 1 ] || return 1
	done
}
clear_logs() {
	local p
	for p in "${BMCSIM_PORTS[@]}"; do
		curl -s -X DELETE "http://127.0.0.1:$p/_sim/requests" >/dev/null
	done
}
clear_logs # node add's own check of each BMC read it too
# the pollers read the node list every 10 s, then each node at its offset into 5 s
wait_for "every BMC polled" 30 all_polled || exit 1

owned_sum=$(ids "$B_URL" "$B_TOKEN" | jq '[.instances[] | select(.live) | .nodes] | add')
same "the live instances own the 6 nodes between them" "$owned_sum" 6
a_nodes=$(ids "$A_URL" "$A_DIR/admin.token" | jq --arg id "$A_ID" '.instances[] | select(.id == $id) | .nodes')
echo "A owns $a_nodes of 6"
# Each BMC's power reads over 3 poll intervals: one poller reads it 3 times (each node at
# a fixed offset into the interval), two 6 times (seen when this check was made to fail
# on purpose, every instance owning every node). 4 is still one poller: on a loaded machine
# a read of the first contact's chain (the inventory reads the system too) or a read
# delayed across the window's edge adds one (seen once in a full parallel run).
sleep 1 # the first contacts' inventory reads (which read the system too) done
clear_logs
sleep 15
one=0
counts=""
for p in "${BMCSIM_PORTS[@]}"; do
	reads=$(sim_count "$p" "$POWER_GET")
	counts+=" $reads"
	[ "$reads" -ge 1 ] && [ "$reads" -le 4 ] && one=$((one + 1))
done
echo "power reads per BMC in 15 s:$counts"
same "each BMC is polled by exactly one instance (1 to 4 reads in 3 intervals, not 6)" "$one" 6

# kill -9 A: B takes its nodes within the lease
clear_logs
kill -9 "$A_PID"
wait "$A_PID" 2>/dev/null
killed_at=$(date +%s)
wait_for "B polls all 6 BMCs after A's death" $((LEASE * 3)) all_polled
took=$(($(date +%s) - killed_at))
echo "B polled all 6 within ${took}s of the kill"
# within the lease for B to see A dead (and lease/3 for its next look), plus one poll
# interval for the node's offset
same "taken over within lease + lease/3 + a poll interval" \
	"$([ "$took" -le $((LEASE + LEASE / 3 + 1 + 5 + 1)) ] && echo yes)" yes
st=$(ids "$B_URL" "$B_TOKEN")
same "B owns all 6 nodes now" "$(jq --arg id "$B_ID" '.instances[] | select(.id == $id) | .nodes' <<<"$st")" 6
same "A is listed dead" "$(jq -r --arg id "$A_ID" '.instances[] | select(.id == $id) | .live' <<<"$st")" false
sleep 2 # two health sweeps on B over the nodes it took over
status=$(KILN_URL=$B_URL KILN_TOKEN_FILE=$B_TOKEN kiln_api GET /hung)
same "GET /hung through B" "$status" 200
same "no node is flagged hung" "$(jq '.nodes | length' "$KILN_BODY_FILE")" 0
hung_events=$(KILN_URL=$B_URL KILN_TOKEN_FILE=$B_TOKEN "$KILN" events --kind hung -o json | jq length)
same "no hung event" "$hung_events" 0
text=$(KILN_URL=$B_URL KILN_TOKEN_FILE=$B_TOKEN "$KILN" cluster status)
echo "$text"
same "kiln cluster status names B as the one that answered" \
	"$(grep -c "$B_ID .*live (answered)" <<<"$text")" 1
same "kiln cluster status shows A dead" "$(grep -c "$A_ID .*dead" <<<"$text")" 1

# C: the same database, another secret.key
C_DIR=$T/c
mkdir -m 0700 "$C_DIR"
cp "$A_DIR.kiln-pg" "$C_DIR.kiln-pg"
"$KILND" --state-dir "$C_DIR" --listen 127.0.0.1:0 --config "$T/kilnd.conf" \
	--store-connection "$KILN_TEST_PG dbname=$(cat "$A_DIR.kiln-pg")" 2>"$C_DIR/kilnd.log" &
C_PID=$!
KILN_TEST_PIDS+=("$C_PID")
for ((i = 0; i < 100; i++)); do
	kill -0 "$C_PID" 2>/dev/null || break
	sleep 0.1
done
wait "$C_PID"
rc=$?
same "a kilnd with another secret.key exits 1" "$rc" 1
if grep -q "secret.key is not the key this database was first used with" "$C_DIR/kilnd.log"; then
	pass "its error names the key"
else
	fail "its error names the key: $(cat "$C_DIR/kilnd.log")"
fi
same "it left no instance row" "$(ids "$B_URL" "$B_TOKEN" | jq '.instances | length')" 2

kiln_test_stop_kilnd "$B_PID"
check "B stops cleanly" $? "exit status"
same "a clean stop removes its row" \
	"$(kiln_test_sql "SELECT count(*) FROM instances WHERE id = '$B_ID'" "$A_DIR")" 0

[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all cluster owner checks passed"
