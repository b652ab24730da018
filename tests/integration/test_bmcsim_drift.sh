# SPDX-License-Identifier: Apache-2.0
# Integration: kiln-bmcsim --drift PCT makes sensor readings move with time (within PCT of the
# tree's value, differently per sensor), while an injected reading stays as injected and a
# simulator without --drift serves the tree's values unchanged.
set -u
FAILS=0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
trap 'bmcsim_stop_all; kiln_test_cleanup' EXIT

FIX=$SRC/tests/sim/fixtures/idrac9
RES=/redfish/v1/Chassis/System.Embedded.1/Thermal
TREE=$FIX/Chassis/System.Embedded.1/Thermal/index.json
NAME=$(jq -r '[.Temperatures[] | select(.ReadingCelsius != null)][0].Name' "$TREE")
BASE=$(jq -r --arg n "$NAME" '.Temperatures[] | select(.Name == $n) | .ReadingCelsius' "$TREE")
[ -n "$NAME" ] && [ "$BASE" != null ] || { echo "FAIL: no temperature in $TREE"; exit 1; }

reading() {
	curl -s -u admin:password "$1$RES" |
		jq -r --arg n "$NAME" '.Temperatures[] | select(.Name == $n) | .ReadingCelsius'
}

bmcsim_start "$KILN_TEST_TMP/plain" "$FIX" || exit 1
PLAIN=$BMCSIM_URL
bmcsim_start "$KILN_TEST_TMP/drift" "$FIX" --drift 20 --count 2 || exit 1
DRIFT=$BMCSIM_URL
DRIFT2=http://127.0.0.1:${BMCSIM_PORTS[1]}

same "without --drift the tree's reading" "$(reading "$PLAIN")" "$BASE"
r1=$(reading "$DRIFT")
sleep 3
r2=$(reading "$DRIFT")
[ -n "$r1" ] && [ "$r1" != "$r2" ] && pass "the reading moves ($r1 -> $r2)" ||
	fail "the reading did not move: $r1 -> $r2"
in_bounds() { awk -v r="$1" -v b="$BASE" 'BEGIN { d = r - b; if (d < 0) d = -d; exit !(d <= b * 0.2 + 0.01) }'; }
in_bounds "$r1" && in_bounds "$r2" && pass "within 20% of $BASE" || fail "out of bounds: $r1, $r2 (tree $BASE)"
o=$(reading "$DRIFT2")
[ "$o" != "$(reading "$DRIFT")" ] && pass "another BMC drifts in its own phase" ||
	fail "two BMCs read the same: $o"

curl -s -o /dev/null -X POST -d "{\"sensor\":{\"name\":\"$NAME\",\"reading\":91.5}}" "$DRIFT/_sim/inject"
same "an injected reading is served as injected" "$(reading "$DRIFT")" 91.5

[ "$FAILS" = 0 ] || { echo "$FAILS failures" >&2; exit 1; }
echo "all passed"
