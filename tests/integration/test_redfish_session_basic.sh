# SPDX-License-Identifier: Apache-2.0
# Integration: a BMC that refuses the session POST (401) but takes the same credentials with
# HTTP Basic (issue 15; issue 16 defect 6): commands work and the BMC saw one failed login;
# with really wrong credentials it sees exactly two, then kilnd leaves it alone (the node
# says credentials rejected; later polls and commands send no login). A login answer
# without Location (with or without @odata.id) is found and deleted at stop. A BMC whose
# sessions are all taken (503 RAC0218) is used with Basic, and node show says so.
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
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
printf '[poller]\ninterval = 5s\nsel_every = 1\nsensors_every = 1\n' >"$T/kilnd.conf"

bmcsim_start "$T/refused" "$MOCKUP" --session-login refused || exit 1
REFUSED=$BMCSIM_URL
bmcsim_start "$T/wrong" "$MOCKUP" || exit 1
WRONG=$BMCSIM_URL
bmcsim_start "$T/bare" "$MOCKUP" --session-login bare || exit 1
BARE=$BMCSIM_URL
bmcsim_start "$T/noloc" "$MOCKUP" --session-login no-location || exit 1
NOLOC=$BMCSIM_URL
bmcsim_start "$T/full" "$MOCKUP" --session-cap 1 || exit 1
FULL=$BMCSIM_URL
# someone else (a web UI) holds the only session
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
	-d '{"UserName":"admin","Password":"password"}' "$FULL/redfish/v1/SessionService/Sessions"
sim() { curl -s "$1/_sim/state" | jq -r "$2"; }

kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/good.pw"
printf 'not-the-password\n' >"$T/bad.pw"
add() {
	"$KILN" node add "$1" --bmc "redfish+http://${2#http://}" --bmc-user admin \
		--bmc-password-file "$3" >/dev/null || { echo "node add $1 failed" >&2; exit 1; }
}
add n1 "$REFUSED" "$T/good.pw"
# node add's check tries Basic, then one session login: wrong credentials are refused there,
# after two failed logins, and nothing is added
out=$("$KILN" node add n2bad --bmc "redfish+http://${WRONG#http://}" --bmc-user admin \
	--bmc-password-file "$T/bad.pw" 2>&1)
same "node add with wrong credentials exits 2" "$?" 2
grep -q "rejected these credentials" <<<"$out"
check "and says the BMC rejected them" $? "$out"
same "node add's check brought two failed logins" "$(sim "$WRONG" '[.login_failures[].via] | join(",")')" \
	basic,session
same "nothing was added" "$("$KILN" node list -o json | jq 'map(select(.name == "n2bad")) | length')" 0
curl -s -X DELETE "$WRONG/_sim/requests" >/dev/null
wrong_base=$(sim "$WRONG" .auth_failures)
# a node whose credentials were right at node add and are wrong now (changed on the BMC,
# or here: on the node)
add n2 "$WRONG" "$T/good.pw"
"$KILN" node set n2 --bmc-password-file "$T/bad.pw" >/dev/null
check "node set n2 to the wrong password" $? ""
add n3 "$BARE" "$T/good.pw"
add n4 "$NOLOC" "$T/good.pw"
add n5 "$FULL" "$T/good.pw"

# 1. Session POST refused, Basic works.
out=$("$KILN" power status n1 -o json 2>&1)
same "power status works with Basic after the refused login" "$(jq -r '.[0].power' <<<"$out")" on
"$KILN" power off n1 --yes >/dev/null 2>&1
check "a power action works too" $? "$(sim "$REFUSED" .power)"
same "the BMC saw one failed login" "$(sim "$REFUSED" .auth_failures)" 1
same "through its session POST" "$(sim "$REFUSED" '.login_failures[0].via')" session
same "node show says how kilnd reaches it" \
	"$("$KILN" node show n1 -o json | jq -r .bmc_session)" "basic (session login refused)"

# 2. Wrong credentials: two failed logins (the session POST, then Basic), then nothing.
"$KILN" power status n2 -o json >"$T/n2.json" 2>&1
rejected() { "$KILN" status -o json | jq -e '.[] | select(.node == "n2") | tostring | test("credentials rejected")' >/dev/null; }
wait_for "n2 shows credentials rejected" 20 rejected
same "the BMC saw exactly two failed logins" "$(($(sim "$WRONG" .auth_failures) - wrong_base))" 2
same "a session POST and a Basic request" \
	"$(sim "$WRONG" "[.login_failures[$wrong_base:][].via] | join(\",\")")" session,basic
sleep 11 # two poll intervals
"$KILN" power status n2 -o json >/dev/null 2>&1
same "later polls and commands send no login" "$(($(sim "$WRONG" .auth_failures) - wrong_base))" 2

# 3. A login answer without Location or @odata.id: the session is found and deleted at stop.
out=$("$KILN" power status n3 -o json 2>&1)
same "power status on the Location-less BMC" "$(jq -r '.[0].power' <<<"$out")" on
same "one session open there" "$(sim "$BARE" .sessions)" 1
same "node show says session" "$("$KILN" node show n3 -o json | jq -r .bmc_session)" session
out=$("$KILN" power status n4 -o json 2>&1)
same "power status where only the body says where the session is" "$(jq -r '.[0].power' <<<"$out")" on

# 4. The session limit reached: Basic, said in node show; no session, no failed login.
out=$("$KILN" power status n5 -o json 2>&1)
same "power status on the BMC whose sessions are all taken" "$(jq -r '.[0].power' <<<"$out")" on
same "node show says Basic and why" "$("$KILN" node show n5 -o json | jq -r .bmc_session)" \
	"basic (BMC session limit)"
same "still the one session there (not ours)" "$(sim "$FULL" .sessions)" 1
same "and no failed login" "$(sim "$FULL" .auth_failures)" 0

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
same "the Location-less session was deleted at shutdown" "$(sim "$BARE" .sessions)" 0
same "so was the one only the body located" "$(sim "$NOLOC" .sessions)" 0
same "the refused BMC still saw one failed login" "$(sim "$REFUSED" .auth_failures)" 1
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -20 "$KILND_LOG" >&2; exit 1; }
echo "all checks passed"
