#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# node add asks the BMC first (issue 16, defect 7): a BMC with several systems and no
# --bmc-system is refused with their ids (exit 2), an unreachable one is added with a warning;
# node import does not (issue 35), and kiln status shows what the poller found there; and an
# existing node whose BMC turns out to be such a BMC shows a configuration error, not
# "unreachable". With it, the CLI side of the vendor cases: kiln sensors, sel,
# inventory and media on the vendor trees never print an empty table with exit 0.
set -u
SRC=${KILN_SRC:?}
. "$SRC/tests/integration/lib.sh"
KILN=$KILN_BIN/kiln
FIX=$SRC/tests/sim/fixtures/vendor
FAILS=0
T=$KILN_TEST_TMP

printf '[poller]\ninterval = 5s\nunreachable_failures = 1\nbackoff_max = 5s\n[bmc]\nconnect_timeout = 2s\n' \
	>"$T/kilnd.conf"
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
export HOME=$T/home XDG_CONFIG_HOME=$T/home/.config
printf 'password\n' >"$T/bmc.pw"
PW=(--bmc-user admin --bmc-password-file "$T/bmc.pw")
# a port nothing listens on (yet)
FREE=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

kiln_test_start_bmcsim blade --mockup "$FIX/blade" || exit 1
BLADE="redfish+http://127.0.0.1:$SIM_PORT"

"$KILN" node add b0 --bmc "$BLADE" "${PW[@]}" >"$T/out" 2>"$T/err"
rc=$?
check "node add: several systems without --bmc-system refused (exit 2), naming them" \
	"$([ "$rc" = 2 ] && grep -q "Blade1, Blade2" "$T/err" && echo 0 || echo 1)" \
	"rc $rc: $(cat "$T/err")"
check "node add: nothing stored when refused" \
	"$("$KILN" node list -o json | jq -e 'map(.name) | index("b0") == null' >/dev/null && echo 0 || echo 1)" \
	"$("$KILN" node list -o json | jq -c 'map(.name)')"
# the check reads with Basic: no session of its own (the node's poller opens the one it keeps)
same "the refused check left no session (it opened none)" \
	"$(curl -s http://127.0.0.1:$SIM_PORT/_sim/state | jq -r '"\(.sessions_created) \(.sessions)"')" "0 0"
"$KILN" node add b1 --bmc "$BLADE" --bmc-system Blade1 "${PW[@]}" >"$T/out" 2>"$T/err"
check "node add with --bmc-system: added" "$(echo $?)" "$(cat "$T/err")"
"$KILN" node add u1 --bmc "redfish+http://127.0.0.1:$FREE" "${PW[@]}" >"$T/out" 2>"$T/err"
rc=$?
check "node add: an unreachable BMC is added, with a warning" \
	"$([ "$rc" = 0 ] && grep -q "u1: BMC not reachable now" "$T/err" && echo 0 || echo 1)" \
	"rc $rc: $(cat "$T/out" "$T/err")"

# u1's address starts answering as a BMC of two systems: a configuration error, not down
kiln_test_start_bmcsim late --mockup "$FIX/blade" --listen "127.0.0.1:$FREE" || exit 1
u1_bmc() { "$KILN" status -o json 2>/dev/null | jq -r '.[] | select(.name == "u1" or .node == "u1") |
	"\(.bmc) \(.reasons // [] | join("; "))"'; }
wait_for "u1 shows a configuration error" 40 bash -c "$(declare -f u1_bmc); KILN=$KILN; u1_bmc | grep -q '^misconfigured .*bmc configuration error: .*Blade1, Blade2'"
check "u1: not called unreachable" "$(u1_bmc | grep -qi unreachable && echo 1 || echo 0)" "$(u1_bmc)"

# node import asks no BMC (issue 35: the BMC's first answer is the poller's business): the
# file is added, and kiln status shows the row that does not fit its BMC, and the one whose
# credentials the BMC rejects, once the poller has read them.
printf 'wrong\n' >"$T/bad.pw"
cat >"$T/nodes.csv" <<EOF
name,bmc,bmc_user,bmc_password_file,bmc_system
i1,$BLADE,admin,$T/bmc.pw,Blade2
i2,$BLADE,admin,$T/bmc.pw,
i3,$BLADE,admin,$T/bad.pw,Blade1
EOF
"$KILN" node import "$T/nodes.csv" >"$T/out" 2>"$T/err"
rc=$?
check "node import: added without asking the BMCs" \
	"$([ "$rc" = 0 ] && "$KILN" node list -o json | jq -e 'map(.name) | index("i2") != null' >/dev/null &&
		echo 0 || echo 1)" "rc $rc: $(cat "$T/out" "$T/err")"
node_bmc() { "$KILN" status -o json 2>/dev/null | jq -r --arg n "$1" '.[] | select(.name == $n or .node == $n) |
	"\(.bmc) \(.bmc_error // "") \(.reasons // [] | join("; "))"'; }
wait_for "imported i2 (no bmc_system) shows a configuration error naming the systems" 40 bash -c \
	"$(declare -f node_bmc); KILN=$KILN; node_bmc i2 | grep -q '^misconfigured .*Blade1, Blade2'"
wait_for "imported i3 (a wrong password) shows its credentials rejected" 40 bash -c \
	"$(declare -f node_bmc); KILN=$KILN; node_bmc i3 | grep -qi 'credentials rejected'"
wait_for "imported i1 reads fine" 40 bash -c "$(declare -f node_bmc); KILN=$KILN; node_bmc i1 | grep -q '^ok'"

# An AMI BMC: no sensors, no logs: one line each, exit 0; a virtual CD known by its Id.
kiln_test_start_bmcsim ami --mockup "$FIX/ami-vcd" || exit 1
"$KILN" node add ami --bmc "redfish+http://127.0.0.1:$SIM_PORT" "${PW[@]}" >/dev/null 2>&1
out=$("$KILN" sensors ami 2>&1)
rc=$?
check "kiln sensors with none: one line saying so, exit 0" \
	"$([ "$rc" = 0 ] && [ "$out" = "ami: no sensors found on this BMC" ] && echo 0 || echo 1)" "rc $rc: $out"
out=$("$KILN" sel ami 2>&1)
rc=$?
check "kiln sel without LogServices: one line saying so, exit 0" \
	"$([ "$rc" = 0 ] && [ "$out" = "ami: no event logs on this BMC" ] && echo 0 || echo 1)" "rc $rc: $out"
"$KILN" media insert ami http://10.0.0.1/a.iso >"$T/out" 2>&1
rc=$?
check "kiln media insert: the AMI virtual CD" \
	"$([ "$rc" = 0 ] && grep -q "VirtualMedia/CD1" "$T/out" && echo 0 || echo 1)" "rc $rc: $(cat "$T/out")"
"$KILN" media insert ami http://10.0.0.1/b.iso >"$T/out" 2>&1
rc=$?
check "kiln media insert over an image: refused, naming it" \
	"$([ "$rc" = 1 ] && grep -q "already holds 'http://10.0.0.1/a.iso'" "$T/out" && echo 0 || echo 1)" \
	"rc $rc: $(cat "$T/out")"
"$KILN" media insert --force ami http://10.0.0.1/b.iso >"$T/out" 2>&1
rc=$?
check "kiln media insert --force replaces it" \
	"$([ "$rc" = 0 ] && grep -q "b.iso" "$T/out" && echo 0 || echo 1)" "rc $rc: $(cat "$T/out")"

# An iLO 7 with dead chassis links: inventory names them, power cycle works.
kiln_test_start_bmcsim dead --mockup "$FIX/ilo7-dead-chassis" --power-delay-ms 100 || exit 1
"$KILN" node add d1 --bmc "redfish+http://127.0.0.1:$SIM_PORT" "${PW[@]}" >/dev/null 2>&1
out=$("$KILN" inventory d1 2>&1)
rc=$?
check "kiln inventory names the chassis it left out" \
	"$([ "$rc" = 0 ] && echo "$out" | grep -q "^d1: chassis not read, left out: /redfish/v1/Chassis/RackMount: 404" &&
		echo "$out" | grep -q ILO7DEAD0001 && echo 0 || echo 1)" "rc $rc: $out"
out=$("$KILN" power cycle d1 --yes 2>&1)
rc=$?
check "kiln power cycle past a dead chassis link" \
	"$([ "$rc" = 0 ] && echo "$out" | grep -q " ok" && echo 0 || echo 1)" "rc $rc: $out"

[ "$FAILS" = 0 ] && echo "all node check and vendor CLI checks passed" || echo "$FAILS check(s) failed"
[ "$FAILS" = 0 ]
