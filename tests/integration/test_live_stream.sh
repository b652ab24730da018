# SPDX-License-Identifier: Apache-2.0
# Integration: live results stream and stay. `kiln power status` over 20 BMCs, 2 of them
# slow, prints the fast nodes' rows before the slow ones finish (NDJSON from kilnd, a row as
# each arrives); a live power read is stored, so `kiln status` shows it; a BMC the poller
# counts unreachable is answered within 100 ms with its last error unless
# --retry-unreachable asks it anyway.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
MOCKUP=$SRC/tests/sim/fixtures/idrac9
FAILS=0
T=$KILN_TEST_TMP
trap 'bmcsim_stop_all; kiln_test_cleanup' EXIT

bmcsim_start "$T/fast" "$MOCKUP" --count 18 || exit 1
FAST=("${BMCSIM_PORTS[@]}")
bmcsim_start "$T/slow" "$MOCKUP" --count 2 --latency-ms 1500 || exit 1
SLOW=("${BMCSIM_PORTS[@]}")

# Phase 1: a poller that does not come round during the test (its first read of each node
# falls somewhere in the hour), so that what kiln status shows is what the live call stored.
cat >"$T/quiet.conf" <<EOF
[poller]
interval = 3600s
EOF
kiln_test_start_kilnd "" --config "$T/quiet.conf" || exit 1
STATE=$KILND_DIR
printf 'password\n' >"$T/bmc.pw"
add() {
	"$KILN" node add "$1" --bmc "$2" --bmc-user admin --bmc-password-file "$T/bmc.pw" \
		>/dev/null || { echo "node add $1 failed" >&2; exit 1; }
}
for i in $(seq 1 18); do
	add "$(printf 'f%02d' "$i")" "redfish+http://127.0.0.1:${FAST[$((i - 1))]}"
done
add s01 "redfish+http://127.0.0.1:${SLOW[0]}"
add s02 "redfish+http://127.0.0.1:${SLOW[1]}"

# A node the poller has not read yet: its stored power is unknown.
power_of() { "$KILN" status -o json | jq -r --arg n "$1" '.[] | select(.node == $n) | .power'; }
probe=
for i in $(seq 1 18); do
	n=$(printf 'f%02d' "$i")
	if [ "$(power_of "$n")" = unknown ]; then probe=$n; break; fi
done
[ -n "$probe" ] || fail "every node was read by the poller already (interval 3600 s?)"

# The rows as they come, each with the time it was printed (ms).
start=$(date +%s%3N)
"$KILN" power status 'f[01-18],s[01-02]' 2>"$T/stream.err" |
	while IFS= read -r line; do echo "$(($(date +%s%3N) - start)) $line"; done >"$T/stream.out"
rc=${PIPESTATUS[0]}
same "kiln power status over 20 BMCs exits 0" "$rc" 0
rows=$(awk '$2 ~ /^[fs][0-9][0-9]$/' "$T/stream.out")
same "one row per node" "$(echo "$rows" | grep -c .)" 20
same "every node is on" "$(echo "$rows" | awk '$3 != "on"' | wc -l)" 0
last_fast=$(echo "$rows" | awk '$2 ~ /^f/ {t = $1} END {print t + 0}')
first_slow=$(echo "$rows" | awk '$2 ~ /^s/ {print $1; exit}')
if [ -n "$first_slow" ] && [ "$last_fast" -lt "$first_slow" ] &&
	[ $((first_slow - last_fast)) -ge 1000 ]; then
	pass "the 18 fast rows were printed by ${last_fast} ms, the first slow one at ${first_slow} ms"
else
	fail "fast rows not ahead of the slow ones: last fast at ${last_fast} ms, first slow at '${first_slow}' ms: $(cat "$T/stream.out")"
fi

# The same request as NDJSON straight from the API: objects in completion order.
curl -sN -H "Authorization: Bearer $(cat "$KILN_TOKEN_FILE")" -H "Accept: application/x-ndjson" \
	-D "$T/nd.headers" "$KILND_URL/api/v1/power?range=f%5B01-18%5D,s%5B01-02%5D" >"$T/nd.out"
same "NDJSON: one object a line, 20 lines" "$(jq -c . "$T/nd.out" | wc -l)" 20
same "NDJSON: the slow nodes come last" "$(jq -r .node "$T/nd.out" | tail -2 | sort | tr '\n' ' ')" "s01 s02 "
grep -qi '^content-type: application/x-ndjson' "$T/nd.headers"
check "NDJSON: Content-Type application/x-ndjson" $? "$(cat "$T/nd.headers")"
grep -qi '^x-kiln-nodes: 20' "$T/nd.headers"
check "NDJSON: X-Kiln-Nodes says 20" $? "$(cat "$T/nd.headers")"
# Without the Accept header: the JSON array in range order, as before.
same "the plain answer is the array in range order" \
	"$(kiln_api GET "/power?range=s01,f01" && jq -r 'map(.node) | join(",")' "$KILN_BODY_FILE")" \
	"200f01,s01"

# A paced action through the API: two batches of two, 2 s apart, on the live thread.
t0=$(date +%s%3N)
curl -sN -H "Authorization: Bearer $(cat "$KILN_TOKEN_FILE")" -H "Accept: application/x-ndjson" \
	-H "Content-Type: application/json" \
	--data-binary '{"range":"f[01-04]","action":"on","batch":2,"interval_s":2}' \
	"$KILND_URL/api/v1/power" | while IFS= read -r line; do
	echo "$(($(date +%s%3N) - t0)) $line"
done >"$T/paced.out"
same "paced: 4 results, each ok" \
	"$(cut -d' ' -f2- "$T/paced.out" | jq -r 'select(.error == null) | "\(.node):\(.batch)"' |
		sort | tr '\n' ' ')" "f01:1 f02:1 f03:2 f04:2 "
b1=$(cut -d' ' -f2- "$T/paced.out" | jq -r .batch | head -2 | sort -u | tr -d '\n')
gap=$(awk 'NR == 2 {a = $1} NR == 3 {print $1 - a}' "$T/paced.out")
if [ "$b1" = 1 ] && [ "${gap:-0}" -ge 1900 ]; then
	pass "paced: batch 2 began ${gap} ms after batch 1 ended"
else
	fail "paced: first rows of batch '$b1', gap '${gap}' ms: $(cat "$T/paced.out")"
fi
same "paced: one audit row per node, each ok" \
	"$("$KILN" audit log -o json | jq -r '[.[] | select(.action == "power.on") | .target + ":" + .outcome] | sort | join(" ")')" \
	"f01:ok f02:ok f03:ok f04:ok"

# What the live read learned is stored.
if [ -n "$probe" ]; then
	same "kiln status shows $probe's power from the live read" "$(power_of "$probe")" on
	age=$("$KILN" status -o json | jq -r --arg n "$probe" '.[] | select(.node == $n) | .power_age_s')
	if [ -n "$age" ] && [ "$age" != null ] && [ "$age" -le 30 ]; then
		pass "$probe's power reading is ${age} s old"
	else
		fail "$probe's stored power reading has no recent age: '$age'"
	fi
fi

# Phase 2: a BMC that accepts and never answers, which the poller gives up on after one
# failed read: asked again, each live read would wait out the request timeout.
kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
cat >"$T/fast.conf" <<EOF
[bmc]
connect_timeout = 2s
request_timeout = 3s
[poller]
interval = 5s
unreachable_failures = 1
EOF
kiln_test_start_kilnd "$STATE" --config "$T/fast.conf" || exit 1
bmcsim_start "$T/hung" "$MOCKUP" --count 1 --fault hang --hang-ms 60000 || exit 1
add dead1 "redfish+http://127.0.0.1:${BMCSIM_PORTS[0]}"
down() {
	kiln_api GET "/power?range=dead1" >/dev/null &&
		jq -e '.[0].error | startswith("unreachable since ")' "$KILN_BODY_FILE" >/dev/null
}
wait_for "the poller counts dead1 unreachable" 30 down
took=$(curl -s -o "$T/down.json" -w '%{time_total}' \
	-H "Authorization: Bearer $(cat "$KILN_TOKEN_FILE")" "$KILND_URL/api/v1/power?range=dead1")
if awk -v t="$took" 'BEGIN { exit !(t < 0.1) }'; then
	pass "a BMC in backoff is answered in ${took}s: $(jq -r '.[0].error' "$T/down.json")"
else
	fail "a BMC in backoff took ${took}s to answer"
fi
jq -e '.[0].unreachable_since | type == "number"' "$T/down.json" >/dev/null
check "the answer carries unreachable_since" $? "$(cat "$T/down.json")"
out=$("$KILN" power status dead1 2>&1)
same "kiln power status on it exits 1" "$?" 1
echo "$out" | grep -q "unreachable since" && pass "the CLI prints the last error" ||
	fail "the CLI did not say unreachable: $out"
# --retry-unreachable asks the BMC: it waits out the 3 s timeout, a fresh error.
t0=$(date +%s%3N)
out=$("$KILN" power status dead1 --retry-unreachable 2>&1)
t1=$(date +%s%3N)
if echo "$out" | grep -q "unreachable since" || [ $((t1 - t0)) -lt 2000 ]; then
	fail "--retry-unreachable answered from the stored error in $((t1 - t0)) ms: $out"
else
	pass "--retry-unreachable asks the BMC ($((t1 - t0)) ms: $(echo "$out" | tail -1 | cut -c1-100))"
fi
# A healthy node beside it is asked as before.
same "a node that answers is read beside the dead one" \
	"$("$KILN" -o json power status f01,dead1 | jq -r '.[] | .node + ":" + (.power // "-")' | tr '\n' ' ')" \
	"dead1:- f01:on "

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
