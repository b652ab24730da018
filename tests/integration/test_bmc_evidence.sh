# SPDX-License-Identifier: Apache-2.0
# Integration: the BMC's own evidence in the node's reasons. kiln-bmcsim's iDRAC tree has four
# PSUs in one redundancy set that needs all four: when PS2 fails the reason names it and says
# the redundancy is lost (counted from the set's members, though the BMC still calls the set
# OK). A critical log entry the BMC had at first contact does not count; one that arrives
# later makes the node critical, with its message and time, for [health] bmc_log_window.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
MOCKUP=$SRC/tests/sim/fixtures/idrac9
[ -x "$BMCSIM" ] || { echo "FAIL: $BMCSIM is missing (build kiln-bmcsim)" >&2; exit 1; }
FAILS=0
T=$KILN_TEST_TMP
WINDOW=12
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
sensors_every = 1
sel_every = 1
health_every = 1s
[health]
bmc_log_window = ${WINDOW}s
EOF
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" --count 1 || exit 1
PORT=${BMCSIM_PORTS[0]}
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/bmc.pw"
"$KILN" node add idrac01 --bmc "redfish+http://127.0.0.1:$PORT" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add failed" >&2; exit 1; }
field() { "$KILN" status -o json | jq -r ".[] | select(.node == \"idrac01\") | $1"; }
reasons() { field '.reasons | join(";")'; }
inject() { curl -s -o /dev/null -w '%{http_code}' -X POST -d "$1" "http://127.0.0.1:$PORT/_sim/inject"; }
events() { "$KILN" events idrac01 --since 1h -o json | jq -r "[.[] | select(.kind == \"$1\")] | length"; }
# the log's entries at first contact are history: read (the simulator saw it), no event
log_reads() { curl -s "http://127.0.0.1:$PORT/_sim/requests" | jq '[.[] | select(.path | test("/Entries"))] | length'; }
logs_read() { [ "$(log_reads)" -gt 0 ] && [ "$(field .health)" = ok ]; }
wait_for "idrac01's log read at first contact, the node ok" 30 logs_read || exit 1
same "the critical entry already in the log does not count" "$(reasons)" ""
same "nor is it an event" "$(events sel)" 0
# One more poll, so that a read after the first one has run too.
sleep 6
same "still ok a poll later" "$(field .health)/$(reasons)" ok/

same "PS2 fails" "$(inject '{"sensor":{"name":"PS2 Status","health":"Critical"}}')" 200
psu_named() { reasons | grep -q 'psu: PS2 Status (Critical) failed'; }
wait_for "the reason names the failed PSU" 20 psu_named
case $(reasons) in
*"psu: redundancy lost (System Board PS Redundancy: 3 healthy, 4 needed)"*) pass "and says the redundancy is lost" ;;
*) fail "redundancy: $(reasons)" ;;
esac
same "the BMC's sensors show the set" \
	"$("$KILN" sensors idrac01 -o json | jq -r '.[0].sensors[] | select(.name == "System Board PS Redundancy") | .kind + "/" + .health')" \
	psu/OK
same "PS2 comes back" "$(inject '{"sensor":{"name":"PS2 Status","health":"OK"}}')" 200
psu_ok() { ! reasons | grep -q 'psu:'; }
wait_for "the PSU reasons end" 20 psu_ok

same "a fatal bus error is logged" \
	"$(inject '{"log":{"message":"A fatal PCIe bus error on slot 3.","severity":"Critical"}}')" 200
logged() { reasons | grep -q '^bmc log: SEL [^ ]*: A fatal PCIe bus error on slot 3\. at 20[0-9-]* [0-9:]* UTC'; }
if wait_for "the new entry makes the node critical" 20 logged; then
	start=$(date +%s)
	same "critical" "$(field .health)" critical
fi
cleared() { [ "$(field .health)" = ok ]; }
wait_for "ok once the window passed" $((WINDOW + 10)) cleared
[ -n "${start:-}" ] && { took=$(($(date +%s) - start)); [ "$took" -ge $((WINDOW - 2)) ]; check "not before the window (${took}s)" $? "$took"; }
same "one bmc_log event" "$(events bmc_log)" 1
same "the new entry is a sel event" \
	"$("$KILN" events idrac01 --since 1h -o json | jq -r '[.[] | select(.kind == "sel" and (.message | test("PCIe bus error")))] | length')" 1

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
