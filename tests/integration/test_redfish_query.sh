#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Redfish query parameters. $select: kilnd's power reads ask ?$select=PowerState,BootProgress
# and the system's Status and summaries only where the service root advertises SelectQuery (and
# fall back for good on a refusal), and kiln-bmcsim's
# $select answers hold what DSP0266 asks (the @odata annotations plus the selected
# properties), checked on its records. $expand: a first contact asks Systems?$expand=. where
# the root advertises ExpandQuery.NoLinks and takes the system from it (one request less); a
# refusal falls back to the plain GETs, members left as links are followed; the simulator's
# $expand answers are checked (members expanded, one level, bad values refused).
set -u

. "$(dirname "$0")/lib.sh"
RF="$KILN_BIN/kiln-rfdrive"
FIX="$KILN_SRC/tests/sim/fixtures"
for b in kiln-bmcsim kiln-rfdrive; do
	[ -x "$KILN_BIN/$b" ] || { echo "SKIP: $b is not built"; exit 77; }
done
[ -d "$FIX/generic" ] || { echo "SKIP: $FIX has no fixtures"; exit 77; }

WORK=$KILN_TEST_TMP
FAILS=0

# start_sim [simulator options...]: the generic tree; sets PORT, BASE (with credentials), CTL
start_sim() {
	kiln_test_start_bmcsim sim --mockup "$FIX/generic" "$@" || exit 1
	PORT=$SIM_PORT
	BASE="http://admin:password@127.0.0.1:$PORT"
	CTL=$SIM_CTL
}
stop_sim() { kiln_test_stop_bmcsim; }
# power_reads [simulator options...]: 4 power reads through kilnd's engine, the first one a
# first contact; sets OUT, GETS (the system GETs' "path status", ";" between), ALL_GETS (every GET's),
# SELECTED and EXPANDED (the simulator's counts)
power_reads() {
	start_sim "$@"
	OUT=$("$RF" --url "redfish+http://127.0.0.1:$PORT" --timeout-ms 3000 --repeat 4 power-get \
		2>>"$WORK/rf.err")
	ALL_GETS=$(curl -s "$CTL/requests" |
		jq -r '[.[] | select(.method == "GET") | "\(.path) \(.status)"] | join(";")')
	GETS=$(echo "$ALL_GETS" | tr ';' '\n' | grep 'Systems/sys0' | paste -sd';' -)
	SELECTED=$(curl -s "$CTL/state" | jq -r .requests.selected)
	EXPANDED=$(curl -s "$CTL/state" | jq -r .requests.expanded)
	stop_sim
}
all_on() { [ "$(echo "$OUT" | jq -r '[.[] | .power] | unique | join(",")')" = on ]; }
R=/redfish/v1/ C=/redfish/v1/Systems S=/redfish/v1/Systems/sys0

# 1. The root advertises SelectQuery: discovery reads the system once, then every read asks
# for PowerState, BootProgress and what the parts' rollups need only.
power_reads --select-query on
P='$select=PowerState,BootProgress,Status,MemorySummary,ProcessorSummary,Memory,Processors,Storage'
check "advertised: the steady reads ask \$select=PowerState,BootProgress,..." \
	$([ "$GETS" = "$S 200;$S?$P 200;$S?$P 200;$S?$P 200" ] &&
	  [ "$SELECTED" = 3 ] && all_on && echo 0 || echo 1) "GETs '$GETS', selected $SELECTED, out $OUT"

# 2. Not advertised (the generic tree as it is, DMTF-like): plain GETs, never a $select.
power_reads
check "not advertised: plain GETs only" \
	$([ "$GETS" = "$S 200;$S 200;$S 200;$S 200" ] && [ "$SELECTED" = 0 ] && all_on && echo 0 || echo 1) \
	"GETs '$GETS', selected $SELECTED, out $OUT"

# 3. Advertised but refused with 400: one $select, then plain GETs for that BMC from then on.
power_reads --select-query on --select-quirk 400
check "advertised but 400: one try, then plain GETs, reads still answered" \
	$([ "$GETS" = "$S 200;$S?$P 400;$S 200;$S 200;$S 200" ] && all_on && echo 0 || echo 1) \
	"GETs '$GETS', out $OUT"

# 4. Advertised but ignored (the whole resource comes back): PowerState is in it, kept using it.
power_reads --select-query on --select-quirk ignore
check "advertised but ignored: the whole answer is read" \
	$([ "$SELECTED" = 3 ] && all_on && echo 0 || echo 1) "GETs '$GETS', selected $SELECTED, out $OUT"

# 5. The simulator's answers against DSP0266's $select rules.
start_sim --select-query on
get() { curl -s -g "$BASE$1"; }
code() { curl -s -g -o /dev/null -w '%{http_code}' "$BASE$1"; }
a=$(get "$S?\$select=PowerState")
check "sim: \$select=PowerState answers the annotations and PowerState only" \
	$(echo "$a" | jq -e --arg s "$S" '(keys | sort) == ["@odata.etag", "@odata.id", "@odata.type", "PowerState"]
		and .["@odata.id"] == $s and (.["@odata.type"] | startswith("#ComputerSystem."))
		and .PowerState == "On"' >/dev/null && echo 0 || echo 1) "$a"
etag_full=$(get "$S" | jq -r '.["@odata.etag"]')
check "sim: the selection's @odata.etag is the resource's" \
	$([ "$(echo "$a" | jq -r '.["@odata.etag"]')" = "$etag_full" ] && echo 0 || echo 1) "$etag_full vs $a"
a=$(get "$S?%24select=Status/State,%20Boot/BootSourceOverrideTarget,NoSuchProperty")
check "sim: %24select, nested paths, spaces; unknown names left out" \
	$(echo "$a" | jq -e '(keys | sort) == ["@odata.etag", "@odata.id", "@odata.type", "Boot", "Status"]
		and .Status == {"State": "Enabled"} and (.Boot | keys) == ["BootSourceOverrideTarget"]' \
		>/dev/null && echo 0 || echo 1) "$a"
a=$(get "$S?\$select=Status,Status/Health")
check "sim: a path under a selected property adds nothing more" \
	$(echo "$a" | jq -e '.Status == {"State": "Enabled", "Health": "OK"}' >/dev/null && echo 0 || echo 1) "$a"
curl -s -g -X POST -H 'Content-Type: application/json' -d '{"ResetType":"ForceOff"}' \
	"$BASE$S/Actions/ComputerSystem.Reset" >/dev/null
sleep 1.3 # the default power delay (1 s) has passed: Off
a=$(get "$S?\$select=PowerState")
full=$(get "$S" | jq -r .PowerState)
check "sim: after ForceOff both answers say Off (the kept text follows the state)" \
	$([ "$(echo "$a" | jq -r .PowerState)" = Off ] && [ "$full" = Off ] && echo 0 || echo 1) "$a / $full"
a=$(get "/redfish/v1/Chassis/chassis0?\$select=Id")
check "sim: a plain resource's selection" \
	$(echo "$a" | jq -e '(keys | sort) == ["@odata.id", "@odata.type", "Id"]' >/dev/null && echo 0 || echo 1) "$a"
check "sim: a malformed \$select is 400 QueryParameterValueFormatError" \
	$([ "$(code "$S?\$select=Power-State")" = 400 ] &&
	  get "$S?\$select=Power-State" | grep -q QueryParameterValueFormatError && echo 0 || echo 1) \
	"$(get "$S?\$select=Power-State")"
check "sim: \$select=* is the whole resource" \
	$([ "$(get "$S?\$select=*" | jq -r '.Name')" = "GPU Compute Node" ] && echo 0 || echo 1) "$(get "$S?\$select=*" | head -c 200)"
check "sim: another \$ parameter is 501 QueryNotSupported" \
	$([ "$(code "$S?\$expand=*")" = 501 ] && echo 0 || echo 1) "$(code "$S?\$expand=*")"
check "sim: \$select needs credentials like the GET" \
	$([ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$S?\$select=PowerState")" = 401 ] &&
	  echo 0 || echo 1) "not 401"
check "sim: the root says SelectQuery true" \
	$([ "$(curl -s "http://127.0.0.1:$PORT/redfish/v1/" | jq -r .ProtocolFeaturesSupported.SelectQuery)" = true ] &&
	  echo 0 || echo 1) "root"
stop_sim

# 6. Not advertised: the simulator refuses $select with 501, as DSP0266 asks of a "$" query
# parameter a service does not support.
start_sim
check "sim without SelectQuery: \$select is 501" \
	$([ "$(code "$S?\$select=PowerState")" = 501 ] &&
	  curl -s -g "$BASE$S?\$select=PowerState" | grep -q QueryNotSupported && echo 0 || echo 1) \
	"$(curl -s -g "$BASE$S?\$select=PowerState")"
check "sim without SelectQuery: \$skip still works" \
	$([ "$(code "/redfish/v1/Systems?\$skip=0")" = 200 ] && echo 0 || echo 1) "not 200"
stop_sim

# 7. $expand advertised: root, the expanded collection, and no GET of the system at first contact.
power_reads --expand-query on
check "advertised: the first contact reads the system from Systems?\$expand=." \
	$([ "$ALL_GETS" = "$R 200;$C?\$expand=. 200;$S 200;$S 200;$S 200" ] && [ "$EXPANDED" = 1 ] && all_on &&
	  echo 0 || echo 1) "GETs '$ALL_GETS', expanded $EXPANDED, out $OUT"

# 8. $expand not advertised (the generic tree as it is): the collection, then the system.
power_reads
check "not advertised: Systems, then the system" \
	$([ "$ALL_GETS" = "$R 200;$C 200;$S 200;$S 200;$S 200;$S 200" ] && [ "$EXPANDED" = 0 ] && all_on &&
	  echo 0 || echo 1) "GETs '$ALL_GETS', expanded $EXPANDED, out $OUT"

# 9. $expand advertised but refused with 400: the plain collection and system, the reads answered.
power_reads --expand-query on --expand-quirk 400
check "advertised but 400: the plain GETs, reads still answered" \
	$([ "$ALL_GETS" = "$R 200;$C?\$expand=. 400;$C 200;$S 200;$S 200;$S 200;$S 200" ] && all_on &&
	  echo 0 || echo 1) "GETs '$ALL_GETS', out $OUT"

# 10. $expand advertised but ignored (members stay links): the member is fetched.
power_reads --expand-query on --expand-quirk ignore
check "advertised but ignored: the member link is followed" \
	$([ "$ALL_GETS" = "$R 200;$C?\$expand=. 200;$S 200;$S 200;$S 200;$S 200" ] && all_on && echo 0 || echo 1) \
	"GETs '$ALL_GETS', out $OUT"

# 11. $expand with $select (as iDRAC 9 and iLO advertise both): the expanded first contact, then
# the selected reads.
power_reads --expand-query on --select-query on
check "with \$select: expanded first contact, then \$select=PowerState,..." \
	$([ "$ALL_GETS" = "$R 200;$C?\$expand=. 200;$S?$P 200;$S?$P 200;$S?$P 200" ] &&
	  all_on && echo 0 || echo 1) "GETs '$ALL_GETS', out $OUT"

# 12. The simulator's $expand answers.
start_sim --expand-query on
a=$(get "$C?\$expand=.")
check "sim: \$expand=. puts the system in the collection, as its GET gives it" \
	$(echo "$a" | jq -e --argjson sys "$(get "$S")" '.Members | length == 1 and .[0] == $sys' >/dev/null &&
	  echo 0 || echo 1) "$(echo "$a" | head -c 300)"
check "sim: \$expand=.(\$levels=1) is the same answer" \
	$([ "$(get "$C?\$expand=.(\$levels=1)" | jq -c .)" = "$(echo "$a" | jq -c .)" ] && echo 0 || echo 1) \
	"$(get "$C?\$expand=.(\$levels=1)" | head -c 200)"
check "sim: \$expand on a resource that is no collection answers the resource" \
	$([ "$(get "$S?\$expand=." | jq -r .Id)" = sys0 ] && echo 0 || echo 1) "$(get "$S?\$expand=." | head -c 200)"
check "sim: \$expand=* (not advertised) is 400 QueryParameterValueFormatError" \
	$([ "$(code "$C?\$expand=*")" = 400 ] && get "$C?\$expand=*" | grep -q QueryParameterValueFormatError &&
	  echo 0 || echo 1) "$(get "$C?\$expand=*")"
check "sim: \$expand needs credentials like the GET" \
	$([ "$(curl -s -g -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$C?\$expand=.")" = 401 ] &&
	  echo 0 || echo 1) "not 401"
check "sim: the root says ExpandQuery.NoLinks, one level" \
	$(curl -s "http://127.0.0.1:$PORT/redfish/v1/" |
	  jq -e '.ProtocolFeaturesSupported.ExpandQuery | .NoLinks and .MaxLevels == 1 and (.ExpandAll | not)' \
	  >/dev/null && echo 0 || echo 1) "root"
stop_sim
start_sim
check "sim without ExpandQuery: \$expand is 501 QueryNotSupported" \
	$([ "$(code "$C?\$expand=.")" = 501 ] && get "$C?\$expand=." | grep -q QueryNotSupported && echo 0 || echo 1) \
	"$(get "$C?\$expand=.")"
stop_sim

[ "$FAILS" = 0 ] || { echo "$FAILS failed"; cat "$WORK/rf.err" 2>/dev/null | tail -5; exit 1; }
echo "all passed"
