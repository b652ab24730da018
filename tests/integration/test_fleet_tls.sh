# SPDX-License-Identifier: Apache-2.0
# Integration: a Redfish node pinned to a certificate fingerprint that its BMC no longer shows
# (kiln-bmcsim --tls): the poller's readings are refused, the node's power is an error, and one
# critical "tls" event names both fingerprints; the correctly pinned node is read normally.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
MOCKUP=$SRC/tests/sim/fixtures/generic
if [ -z "${KILN_TEST_PG:-}" ] && ! command -v sqlite3 >/dev/null 2>&1; then
	echo "skipped: the sqlite3 shell (to read the poller's failure count) is not installed"
	exit 77
fi
for f in "$BMCSIM" "$MOCKUP"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-bmcsim)" >&2; exit 1; }
done

FAILS=0
T=$KILN_TEST_TMP
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
sensors_every = 1
sel_every = 1
health_every = 1s
EOF
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" --count 2 --tls --cert-out "$T/bmc.pem" || exit 1
GOOD_FP=$(curl -sk "https://127.0.0.1:${BMCSIM_PORTS[0]}/_sim/state" | jq -r .tls_fingerprint)
[ -n "$GOOD_FP" ] && [ "$GOOD_FP" != null ] || { echo "FAIL: no tls_fingerprint in /_sim/state" >&2; exit 1; }
# As kiln writes fingerprints: 64 lowercase hex digits.
GOOD_HEX=$(printf '%s' "${GOOD_FP#*sha256:}" | tr -d ':' | tr 'A-F' 'a-f')
# The fingerprint of another certificate: what the node was pinned to before the BMC's changed.
OLD_FP=$(printf 'an older certificate' | sha256sum | cut -d' ' -f1)
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1

printf 'password\n' >"$T/bmc.pw"
"$KILN" node add good --bmc "redfish://127.0.0.1:${BMCSIM_PORTS[0]}" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" --tls-fingerprint "$GOOD_FP" >/dev/null ||
	{ echo "node add good failed" >&2; exit 1; }
"$KILN" node add changed --bmc "redfish://127.0.0.1:${BMCSIM_PORTS[1]}" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" --tls-fingerprint "$OLD_FP" >/dev/null ||
	{ echo "node add changed failed" >&2; exit 1; }

status_field() { "$KILN" status -o json 2>/dev/null | jq -r --arg n "$1" ".[] | select(.node == \$n) | .$2"; }
failures() { kiln_test_sql "SELECT b.failures FROM node_bmc_state b
	JOIN nodes n ON n.id = b.node_id WHERE n.name = 'changed'"; }
# Two refused polls at least (the second after the backoff), so a repeated event would show.
settled() {
	[ "$(status_field good power)" = on ] && [ "$(failures)" -ge 2 ] 2>/dev/null
}
wait_for "the pinned node read and the changed one refused twice" 40 settled &&
	pass "good is on; changed refused $(failures) times"
same "the changed node's power is unknown" "$(status_field changed power)" unknown
status_field changed bmc_error | grep -q "sha256:$GOOD_HEX" &&
	pass "its BMC error names the certificate seen" ||
	fail "changed's bmc_error: $(status_field changed bmc_error)"

"$KILN" events -o json >"$T/events.json" 2>"$T/events.err" || fail "kiln events: $(cat "$T/events.err")"
same "one tls event for the changed node" \
	"$(jq '[.[] | select(.kind == "tls" and .node == "changed")] | length' "$T/events.json")" 1
same "none for the good one" "$(jq '[.[] | select(.kind == "tls" and .node == "good")] | length' "$T/events.json")" 0
same "the tls event is critical" \
	"$(jq -r '.[] | select(.kind == "tls") | .severity' "$T/events.json")" critical
msg=$(jq -r '.[] | select(.kind == "tls") | .message' "$T/events.json")
case "$msg" in
*"$GOOD_HEX"*"$OLD_FP"*) pass "the event names the seen and the pinned fingerprints" ;;
*) fail "tls event message: $msg" ;;
esac

# A live request is refused the same way, and nothing was sent to the changed BMC.
"$KILN" power status changed -o json >"$T/power.json" 2>/dev/null
rc=$?
[ "$rc" -ne 0 ] && pass "kiln power status on the changed node fails ($rc)" ||
	fail "kiln power status on the changed node exited 0"
grep -q "sha256:$OLD_FP" "$T/power.json" && pass "its error names the pin" ||
	fail "power status: $(cat "$T/power.json")"
same "the changed BMC saw no Redfish request" \
	"$(curl -sk "https://127.0.0.1:${BMCSIM_PORTS[1]}/_sim/state" | jq '[.requests[]] | add')" 0

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizer report?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all checks passed"
