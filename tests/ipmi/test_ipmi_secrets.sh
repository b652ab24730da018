#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# BMC passwords after use (issue 17, finding 7): a kilnd allowed to dump core (so that its
# memory can be read) adds a Redfish node that answers only Basic and an IPMI node through
# its API (node add's probe), answers power status and sensors for both, and holds an
# attached serial console (SOL) of the IPMI node. Each password (and the Redfish one's Basic
# form, base64 of user:password) is counted in kilnd's memory and its IPMI helper's:
# - kilnd: none, at every moment (curl gets the Basic header, not the password, so that its
#   connection cache keeps no copy; an attached console drops the password once its session
#   is asked for);
# - the helper: while an IPMI session is kept, libfreeipmi's context only (the kept list has
#   a keyed hash); none once it has gone idle (libfreeipmi wipes its context); after a
#   console, at most the one copy libipmiconsole leaves in the context it freed (kiln cannot
#   wipe it; the not-dumpable default covers it).
# What each scan found is printed.
. "$(dirname "$0")/lib.sh"
ipmisim_require
for tool in script curl jq python3 base64 pgrep; do
	command -v "$tool" > /dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -x "$KILN_BIN/kiln-serialsim" ] || { echo "SKIP: $KILN_BIN/kiln-serialsim not built"; exit 77; }
. "$KILN_SRC/tests/integration/lib.sh"
. "$KILN_SRC/tests/sim/bmcsim.sh"
FAILS=0
KILN=$KILN_BIN/kiln
T=$KILN_TEST_TMP
# one password per path, so that a copy found names its path (IPMI: at most 20 bytes)
IPMISIM_PASSWORD=kiln-ipmi-Pw-5e1d8b
RF_PW=kiln-basic-Pw-0a4c7e93
RF_BASIC=$(printf 'admin:%s' "$RF_PW" | base64 -w0)

ipmisim_serial_side "$T/serial"
all_cleanup() {
	[ -n "${SCRIPT_PID:-}" ] && kill "$SCRIPT_PID" 2> /dev/null
	bmcsim_stop_all
	kiln_test_cleanup
	ipmisim_cleanup
	ipmisim_serial_stop
}
ipmisim_start 1 || { echo "FAIL: could not start ipmi_sim"; exit 1; }
trap all_cleanup EXIT
bmcsim_start "$T/sim" "$KILN_SRC/tests/sim/fixtures/generic" --count 1 --user admin \
	--password "$RF_PW" --session-login refused || exit 1

# no poller sweep within the test (the reads below are the API's); kept sessions for 10 s
printf 'allow_core_dumps = yes\n[poller]\ninterval = 1h\n[bmc]\nipmi_session_idle = 10s\n' \
	> "$T/kilnd.conf"
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
# kilnd forks a launcher early, which forks the IPMI helper
LAUNCHER=$(pgrep -P "$KILND_PID" | head -1)
HELPER=$(pgrep -P "${LAUNCHER:-0}" | head -1)
[ -n "$HELPER" ] || { echo "FAIL: kilnd has no IPMI helper process"; exit 1; }

# counts PID: "IPMI REDFISH BASIC": the copies PID's memory holds
counts() {
	python3 "$KILN_SRC/tests/integration/memscan.py" "$1" "$IPMISIM_PASSWORD" "$RF_PW" "$RF_BASIC"
}
# scan MOMENT: prints both processes' counts and checks kilnd's (always none); the helper's
# are left in HELPER_HOLDS
scan() {
	local k
	k=$(counts "$KILND_PID")
	HELPER_HOLDS=$(counts "$HELPER")
	echo "scan ($1): kilnd $k, helper $HELPER_HOLDS (IPMI password, Redfish password, its Basic form)"
	same "kilnd holds no BMC password $1" "$k" "0 0 0"
}
# at_most_one WHAT: the helper holds at most one copy of the IPMI password, none of the other
at_most_one() {
	case $HELPER_HOLDS in
	"0 0 0" | "1 0 0") pass "the helper holds at most $1" ;;
	*) fail "the helper holds '$HELPER_HOLDS' (want at most 1 0 0: $1)" ;;
	esac
}

status=$(kiln_api POST /nodes "{\"name\":\"rf1\",\"bmc\":\"redfish+http://127.0.0.1:${BMCSIM_PORTS[0]}\",
	\"bmc_user\":\"admin\",\"bmc_password\":\"$RF_PW\"}")
same "node add rf1 (Redfish, Basic only)" "$status" 201
status=$(kiln_api POST /nodes "{\"name\":\"ipmi1\",\"bmc\":\"ipmi://127.0.0.1:${IPMISIM_PORTS[0]}\",
	\"bmc_user\":\"$IPMISIM_USER\",\"bmc_password\":\"$IPMISIM_PASSWORD\",
	\"ipmi_workarounds\":\"opensesspriv,solpayloadsize,solchannelsupport\"}")
same "node add ipmi1" "$status" 201
scan "after node add (the Redfish BMC probed)"

for n in rf1 ipmi1; do
	"$KILN" power status "$n" > /dev/null || fail "power status $n"
	"$KILN" sensors "$n" > /dev/null || fail "sensors $n"
done
scan "after power status and sensors (an IPMI session kept)"
at_most_one "libfreeipmi's copy in the kept session's context"
sleep 14 # past ipmi_session_idle
scan "after the kept IPMI session went idle"
same "the helper holds no BMC password then" "$HELPER_HOLDS" "0 0 0"

# an attached console, held open while the memory is read
mkfifo "$T/console.in"
script -qfc "$KILN console ipmi1" /dev/null < "$T/console.in" > "$T/console.out" 2>&1 &
SCRIPT_PID=$!
exec 7> "$T/console.in"
attached() { grep -qF "attached to ipmi1" "$T/console.out"; }
wait_for "kiln console attached" 15 attached
sleep 2
scan "with a console attached"
printf '\n~.' >&7
exec 7>&-
wait "$SCRIPT_PID" 2> /dev/null
SCRIPT_PID=
closed() {
	kiln_api GET /nodes/ipmi1/console/log > /dev/null
	[ "$(jq -r .session "$KILN_BODY_FILE")" = closed ]
}
wait_for "the console session closed" 15 closed
sleep 1
scan "after the console closed"
at_most_one "the copy libipmiconsole leaves in the context it freed"

kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
