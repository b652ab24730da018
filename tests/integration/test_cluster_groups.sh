# SPDX-License-Identifier: Apache-2.0
# Integration: [cluster] group. Two kilnd on one PostgreSQL database over 8 simulated BMCs:
# A serves group room1, B no group. The 4 nodes of group room1 are A's, the 4 others B's
# (each node's live calls name their owner in ran_on, cluster status counts 4 each, and every
# BMC is polled); kiln cluster status shows A's group and B's [cluster] url;
# kill -9 A: room1's nodes, which no live instance of their group serves, go to B.
# Needs PostgreSQL: KILN_TEST_PG, or a throw-away server from tests/pg/pg-server.sh.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
T=$KILN_TEST_TMP
FAILS=0

on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
kiln_test_need_pg

LEASE=5
conf() { # conf FILE [GROUP]
	printf '[poller]\ninterval = 5s\n[cluster]\nlease = %ss\n' "$LEASE" >"$1"
	[ -z "${2:-}" ] || printf 'group = %s\n' "$2" >>"$1"
}
conf "$T/a.conf" room1
conf "$T/b.conf"
printf 'url = http://kiln-b.example:8470\n' >>"$T/b.conf" # what the others give out for B
bmcsim_start "$T/sim" "$SRC/tests/sim/fixtures/idrac9" --count 8 || exit 1

mkdir -m 0700 "$T/a"
kiln_test_start_kilnd "$T/a" --config "$T/a.conf" || exit 1
A_PID=$KILND_PID A_URL=$KILND_URL
kiln_test_start_instance "$T/a" "$T/b" --config "$T/b.conf" || exit 1
export KILN_URL=$A_URL KILN_TOKEN_FILE=$T/a/admin.token
st() { "$KILN" cluster status -o json; }
A_ID=$(st | jq -r .answered_by)
B_ID=$(st | jq -r --arg a "$A_ID" '.instances[] | select(.id != $a) | .id')
two_live() { [ "$(st | jq '[.instances[] | select(.live)] | length')" = 2 ]; }
wait_for "both instances live" 15 two_live || exit 1
sleep 2 # each instance's heartbeat has read the other's row (lease/3)
same "cluster status shows A's group" \
	"$(st | jq -r --arg a "$A_ID" '.instances[] | select(.id == $a) | .group')" room1
same "and B with none" "$(st | jq -r --arg b "$B_ID" '.instances[] | select(.id == $b) | .group')" null
same "B registered its [cluster] url" \
	"$(st | jq -r --arg b "$B_ID" '.instances[] | select(.id == $b) | .listen')" http://kiln-b.example:8470
same "A its listen address" "$(st | jq -r --arg a "$A_ID" '.instances[] | select(.id == $a) | .listen')" "$A_URL"

printf 'password\n' >"$T/bmc.pw"
for i in 1 2 3 4 5 6 7 8; do
	group=()
	[ "$i" -le 4 ] && group=(--group room1)
	"$KILN" node add "n0$i" --bmc "redfish+http://127.0.0.1:${BMCSIM_PORTS[$((i - 1))]}" \
		--bmc-user admin --bmc-password-file "$T/bmc.pw" "${group[@]}" >/dev/null ||
		{ echo "node add n0$i failed" >&2; exit 1; }
done
owners() { "$KILN" power status all -o json | jq -r '[.[] | "\(.node)=\(.ran_on)"] | join(" ")'; }
want="n01=$A_ID n02=$A_ID n03=$A_ID n04=$A_ID n05=$B_ID n06=$B_ID n07=$B_ID n08=$B_ID"
same "room1's nodes are A's, the others B's" "$(owners)" "$want"
same "cluster status counts 4 nodes each" \
	"$(st | jq -r '[.instances[] | .nodes] | join(" ")')" "4 4"

# Each BMC polled by its owner: clear the simulators' logs, then one poll interval and a bit.
POWER_GET='.method == "GET" and (.path | test("^/redfish/v1/Systems/[^/]+$"))'
reads() { curl -s "http://127.0.0.1:${BMCSIM_PORTS[$(($1 - 1))]}/_sim/requests" | jq "[.[] | select($POWER_GET)] | length"; }
for p in "${BMCSIM_PORTS[@]}"; do curl -s -X DELETE "http://127.0.0.1:$p/_sim/requests" >/dev/null; done
sleep 6
polled=0
for i in 1 2 3 4 5 6 7 8; do [ "$(reads "$i")" -ge 1 ] && polled=$((polled + 1)); done
same "every BMC is polled by one of them" "$polled" 8

# kill -9 A: no live instance serves room1, so its nodes go to the instances of no group.
kill -9 "$A_PID"
wait "$A_PID" 2>/dev/null
export KILN_URL=$KILND_URL KILN_TOKEN_FILE=$T/a/admin.token
all_b() { [ "$(owners)" = "n01=$B_ID n02=$B_ID n03=$B_ID n04=$B_ID n05=$B_ID n06=$B_ID n07=$B_ID n08=$B_ID" ]; }
wait_for "B runs room1's nodes once A is dead" $((LEASE * 3)) all_b &&
	pass "B runs room1's nodes once A is dead"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all cluster group checks passed"
