# SPDX-License-Identifier: Apache-2.0
# Integration: 20 kill -9 restarts of kilnd against a BMC capped at 8 sessions (issue 15).
# Each start finds the session the killed kilnd kept in the store, checks it with one GET
# and reuses it: never more than one session open on the BMC, no 503 anywhere. Some kills
# cut a power cycle short; after the last start no audit row is pending and each cycle's
# says interrupted, with the power read back at the first poll.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
MOCKUP=$SRC/tests/sim/fixtures/generic
FAILS=0
T=$KILN_TEST_TMP
RESTARTS=20
on_exit() {
	[ -n "${SAMPLER:-}" ] && kill "$SAMPLER" 2>/dev/null
	[ -n "${CYCLE_PID:-}" ] && kill "$CYCLE_PID" 2>/dev/null
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
printf '[poller]\ninterval = 5s\n' >"$T/kilnd.conf"

bmcsim_start "$T/sim" "$MOCKUP" --session-cap 8 --power-delay-ms 1500 || exit 1
SIM=$BMCSIM_URL
sim() { curl -s "$SIM/_sim/state" | jq -r "$1"; }
sim_on() { [ "$(sim .power)" = On ]; }
# The open-session count, sampled every 0.1 s for the whole run.
(while :; do curl -s "$SIM/_sim/state" | jq -r .sessions; sleep 0.1; done) >"$T/samples" 2>/dev/null &
SAMPLER=$!

kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
PORT=${KILND_URL##*:}
DIR=$KILND_DIR
printf 'password\n' >"$T/bmc.pw"
"$KILN" node add n1 --bmc "redfish+http://${SIM#http://}" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add failed" >&2; exit 1; }
cycles() { "$KILN" audit log -o json | jq '[.[] | select(.action == "power.cycle")]'; }
cycle_pending() { [ "$(cycles | jq -r '[.[] | select(.outcome == "pending")] | length')" -gt 0 ]; }
# The keeper stores a new session from a thread of its own, in batches: a kilnd killed before
# that write has none to find (and opens one more), so each kill waits for the kept session.
kept() { [ "$(kiln_test_sql "SELECT count(*) FROM bmc_sessions WHERE token_enc IS NOT NULL" "$DIR")" = 1 ]; }

: >"$T/outcomes"
interrupted=0
for ((i = 1; i <= RESTARTS; i++)); do
	if ((i % 5 == 0)); then
		# a cycle in flight when kilnd dies (once the last one has ended on the BMC)
		wait_for "the BMC is on before cycle $i" 20 sim_on || break
		"$KILN" power cycle n1 --yes >>"$T/outcomes" 2>&1 &
		CYCLE_PID=$!
		wait_for "cycle $i in flight" 10 cycle_pending || break
		interrupted=$((interrupted + 1))
	else
		"$KILN" power status n1 >>"$T/outcomes" 2>&1 || fail "power status at start $i"
	fi
	wait_for "the session is kept before kill $i" 10 kept || break
	kill -KILL "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	if [ -n "${CYCLE_PID:-}" ]; then
		wait "$CYCLE_PID" 2>/dev/null
		CYCLE_PID=
	fi
	kiln_test_start_kilnd "$DIR" --config "$T/kilnd.conf" --listen "127.0.0.1:$PORT" || exit 1
done
"$KILN" power status n1 >>"$T/outcomes" 2>&1 || fail "power status after the last start"
kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
SAMPLER=

same "never more than one session open (sampled)" "$(sort -n "$T/samples" | tail -1)" 1
same "never more than one session open (the BMC's peak)" "$(sim .sessions_peak)" 1
same "one session created in all" "$(sim .sessions_created)" 1
grep -q 503 "$T/outcomes"
check "no 503 in any outcome" $((!$?)) "$(grep 503 "$T/outcomes" | head -3)"
same "no refused login" "$(sim .auth_failures)" 0
same "no audit row is pending" \
	"$("$KILN" audit log -o json | jq '[.[] | select(.outcome == "pending")] | length')" 0
same "each cut cycle says interrupted" \
	"$(cycles | jq '[.[] | select(.outcome | startswith("interrupted: kilnd stopped"))] | length')" \
	"$interrupted"
read_back() {
	[ "$(cycles | jq '[.[] | select(.outcome | test("^interrupted: kilnd stopped; power read back: (on|off) at "))] | length')" = "$interrupted" ]
}
wait_for "each has the power read back" 30 read_back

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
same "the session is deleted at a clean stop" "$(sim .sessions)" 0
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
