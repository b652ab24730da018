#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A background read (the poller's) and an operator's operation on the same Redfish BMC: the
# operator's goes first, the background read waits between two of its requests; one request at
# a time reaches the BMC, on one session. On a BMC not yet discovered the operator's operation
# waits for the background read to end (no second discovery beside the first). A power read
# beside a background power read takes that read's answer. With the fan-out full, an operator's
# operation starts before the poller's queued reads.
set -u

. "$(dirname "$0")/lib.sh"
FIX="$KILN_SRC/tests/sim/fixtures"
for b in kiln-bmcsim kiln-rfdrive; do
	[ -x "$KILN_BIN/$b" ] || { echo "SKIP: $b is not built"; exit 77; }
done
[ -d "$FIX/generic" ] || { echo "SKIP: $FIX has no fixtures"; exit 77; }

FAILS=0
LAT=100 # ms per answer: a request sent before the previous answer would arrive sooner
kiln_test_start_bmcsim sim --mockup "$FIX/generic" --count 2 --latency-ms "$LAT" || exit 1
PORT2=$(sed -n 2p "$KILN_TEST_TMP/sim.ports")
CTL=$SIM_CTL
URL="redfish+http://127.0.0.1:$SIM_PORT"
RF="$KILN_BIN/kiln-rfdrive"
WORK=$KILN_TEST_TMP

# requests: the recorded requests as "ms METHOD path" lines, oldest first
requests() { curl -s "$CTL/requests" | jq -r '.[] | "\(.ms) \(.method) \(.path)"'; }
# min_gap: the shortest time between two requests' arrivals (ms)
min_gap() { requests | awk 'NR > 1 { g = $1 - p; if (m == "" || g < m) m = g } { p = $1 } END { print m + 0 }'; }

# 1. A fresh BMC: the inventory read discovers it; the power read waits for its end.
OUT=$("$RF" --url "$URL" --timeout-ms 5000 --beside inventory power-get 2>"$WORK/rf1.err")
check "fresh BMC: both answered" "$(jq -e '.[0].power == "on" and .[0].background.serial != null' \
	<<<"$OUT" >/dev/null; echo $?)" "$OUT $(cat "$WORK/rf1.err")"
check "fresh BMC: the power read ends after the background read" \
	"$(jq -e '.[0].seq == 2 and .[0].background.seq == 1' <<<"$OUT" >/dev/null; echo $?)" "$OUT"
ROOTS=$(requests | grep -c ' GET /redfish/v1/$')
check "fresh BMC: discovered once" "$([ "$ROOTS" = 1 ]; echo $?)" "$ROOTS root reads"
GAP=$(min_gap)
check "fresh BMC: one request at a time" "$([ "$GAP" -ge $((LAT - 1)) ]; echo $?)" \
	"two requests $GAP ms apart: $(requests | tr '\n' ';')"

# 2. Discovered (second round): the power read goes at the inventory read's next request.
curl -s -X DELETE "$CTL/requests" >/dev/null
OUT=$("$RF" --url "$URL" --timeout-ms 5000 --repeat 2 --beside inventory power-get \
	2>"$WORK/rf2.err")
check "discovered: both answered" "$(jq -e '.[0].power == "on" and .[0].background.serial != null' \
	<<<"$OUT" >/dev/null; echo $?)" "$OUT $(cat "$WORK/rf2.err")"
check "discovered: the power read ends first" \
	"$(jq -e '.[0].seq == 1 and .[0].background.seq == 2' <<<"$OUT" >/dev/null; echo $?)" "$OUT"
FAST=$(jq -r ".[0].elapsed_ms < 7 * $LAT" <<<"$OUT") # behind the inventory: >= 9 * LAT
check "discovered: the power read waits one request at most" "$([ "$FAST" = true ]; echo $?)" \
	"$(jq -c '.[0] | {elapsed_ms, background: .background.elapsed_ms}' <<<"$OUT")"
# the power read's system GET is the last one; inventory requests came after it
AFTER=$(requests | awk '$3 == "/redfish/v1/Systems/sys0" { n = 0; next } $2 == "GET" { n++ } END { print n + 0 }')
check "discovered: the power read between the inventory's requests" "$([ "$AFTER" -ge 1 ]; echo $?)" \
	"no request after the last system read: $(requests | tr '\n' ';')"
GAP=$(min_gap)
check "discovered: one request at a time" "$([ "$GAP" -ge $((LAT - 1)) ]; echo $?)" \
	"two requests $GAP ms apart: $(requests | tr '\n' ';')"
# 3. A power read beside a background power read is answered by that read: one GET a round.
curl -s -X DELETE "$CTL/requests" >/dev/null
OUT=$("$RF" --url "$URL" --timeout-ms 5000 --repeat 2 --beside power-get power-get \
	2>"$WORK/rf3.err")
check "power read beside one: both answered" "$(jq -e '.[0].power == "on" and
	.[0].background.power == "on"' <<<"$OUT" >/dev/null; echo $?)" "$OUT $(cat "$WORK/rf3.err")"
READS=$(requests | grep -c ' GET /redfish/v1/Systems/sys0$')
check "power read beside one: one system read a round" "$([ "$READS" = 2 ]; echo $?)" \
	"$READS system reads in 2 rounds: $(requests | tr '\n' ';')"

# 4. Fan-out full (1): an operator's job starts before queued background reads. Each BMC
# gets a background inventory read, then a power read; the second BMC's power read goes before
# its inventory read (in submission order it came after it).
OUT=$("$RF" --fanout 1 --url "$URL" --url "redfish+http://127.0.0.1:$PORT2" --timeout-ms 5000 \
	--beside inventory power-get 2>"$WORK/rf4.err")
check "fan-out full: all answered" "$(jq -e 'all(.[]; .power == "on" and .background.serial != null)' \
	<<<"$OUT" >/dev/null; echo $?)" "$OUT $(cat "$WORK/rf4.err")"
check "fan-out full: the operator's read before the queued background read" \
	"$(jq -e '.[1].seq < .[1].background.seq' <<<"$OUT" >/dev/null; echo $?)" \
	"$(jq -c '[.[] | {node, seq, background: .background.seq}]' <<<"$OUT")"

STATE=$(curl -s "$CTL/state")
check "one session at a time" "$(jq -e '.sessions_created == 4 and .sessions == 0' \
	<<<"$STATE" >/dev/null; echo $?)" "$(jq -c '{sessions_created, sessions}' <<<"$STATE")"

[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
echo "all checks passed"
