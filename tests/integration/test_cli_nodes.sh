# SPDX-License-Identifier: Apache-2.0
# Integration: the kiln CLI against a real kilnd (ephemeral port, temporary state dir):
# nodes with noderanges, import, tokens, audit, -o json shapes, exit codes, secret handling.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KILN_BIN=${KILN_BIN:?KILN_BIN must name the bin folder of a build}
KILN=$KILN_BIN/kiln
FAILS=0

# shellcheck source=lib.sh
. "$HERE/lib.sh"


# check DESC EXPECTED_RC CMD...: runs CMD, keeps its output in $OUT/$ERR, checks the status.
check() {
	local desc=$1 want=$2 got
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
	if [ "$got" -ne "$want" ]; then
		fail "$desc: exit $got, want $want; stdout: $OUT; stderr: $ERR"
		return 1
	fi
	pass "$desc"
}

# same DESC GOT WANT
same() {
	if [ "$2" != "$3" ]; then
		fail "$1: got '$2', want '$3'"
		return 1
	fi
	pass "$1"
}

# has DESC TEXT NEEDLE
has() {
	case "$2" in
	*"$3"*) pass "$1" ;;
	*) fail "$1: '$3' not in: $2" ;;
	esac
}

# lacks DESC TEXT NEEDLE
lacks() {
	case "$2" in
	*"$3"*) fail "$1: '$3' found in: $2" ;;
	*) pass "$1" ;;
	esac
}

names() { jq -r '[.[].name] | join(" ")'; }

kiln_test_start_kilnd || exit 1 # exports KILN_URL and KILN_TOKEN_FILE (the admin token)
T=$KILN_TEST_TMP/cli
mkdir -p "$T"
export HOME=$T/home
mkdir -p "$HOME"
unset KILN_TOKEN KILN_CA KILN_FINGERPRINT XDG_CONFIG_HOME

# --- usage errors: exit 2, one line -------------------------------------------------------
check "no command" 2 "$KILN"
same "usage error is one line" "$(wc -l <"$T/err")" 1
check "unknown command" 2 "$KILN" frobnicate
check "missing verb" 2 "$KILN" node
check "unknown verb" 2 "$KILN" node explode
check "unknown option" 2 "$KILN" node add gpu01 --bogus
has "unknown option named" "$ERR" "--bogus"
same "unknown option error is one line" "$(wc -l <"$T/err")" 1
check "bad -o" 2 "$KILN" -o yaml node list
check "bad cipher" 2 "$KILN" node add gpu01 --ipmi-cipher many
check "bad noderange" 2 "$KILN" node add 'gpu[01-03'
has "noderange error names the position" "$ERR" "position"
check "two tls modes" 2 "$KILN" node add gpu01 --bmc redfish://h --tls-insecure --tls-fingerprint aa
check "credentials without bmc" 2 "$KILN" node add gpu01 --bmc-user root
check "user without password and no terminal" 2 setsid -w "$KILN" node add gpu01 \
	--bmc redfish://h --bmc-user root
check "set with nothing to change" 2 "$KILN" node set gpu01
check "help" 0 "$KILN" node add --help
has "help lists options" "$OUT" "--bmc-password-file"
check "nothing was added by the usage errors" 0 "$KILN" node list -o json
same "empty inventory" "$OUT" "[]"

# --- no token / bad token: exit 1 -----------------------------------------------------------
check "no token" 1 env -u KILN_TOKEN_FILE "$KILN" node list
has "no token says so" "$ERR" "no API token"
echo "kiln_not_a_real_token" >"$T/bad.token"
check "bad token" 1 "$KILN" --token-file "$T/bad.token" node list
check "KILN_TOKEN in the environment" 0 env -u KILN_TOKEN_FILE \
	KILN_TOKEN="$(cat "$KILN_TOKEN_FILE")" "$KILN" node list

# --- add with noderange expansion ----------------------------------------------------------
check "add a range" 0 "$KILN" node add 'gpu[01-04]' --group a100 --group rack1 --rack r1
check "add agent-only nodes" 0 "$KILN" node add 'cpu[8-10]' --group cpu
echo "s3cret-bmc-$$" >"$T/pw"
check "add with BMC and password file" 0 "$KILN" node add gpu05 --bmc redfish+http://127.0.0.1:20001 \
	--bmc-user root --bmc-password-file "$T/pw" --group b200 --ipmi-cipher 17 \
	--sol ipmi://127.0.0.1:20623 --bmc-system System.Embedded.1 -o json
same "add -o json is an array of nodes with node" "$(echo "$OUT" | jq -r '.[0].node,.[0].name,.[0].has_bmc_password' | tr '\n' ' ')" "gpu05 gpu05 true "
check "add an existing name" 1 "$KILN" node add gpu05
same "duplicate add is one line" "$(wc -l <"$T/err")" 1
check "add a range overlapping existing nodes" 1 "$KILN" node add 'gpu[05-06]'
check "nothing of a failed range added" 1 "$KILN" node show gpu06

# --- list with ranges and groups ----------------------------------------------------------
check "list all" 0 "$KILN" node list -o json
same "list all names, zero padding kept" "$(echo "$OUT" | names)" \
	"cpu10 cpu8 cpu9 gpu01 gpu02 gpu03 gpu04 gpu05"
check "list a range" 0 "$KILN" node list 'gpu[01-02],gpu05' -o json
same "range" "$(echo "$OUT" | names)" "gpu01 gpu02 gpu05"
check "list @group" 0 "$KILN" node list @a100 -o json
same "@group" "$(echo "$OUT" | names)" "gpu01 gpu02 gpu03 gpu04"
check "list with exclusion" 0 "$KILN" -o json node list 'gpu[01-05],-gpu03'
same "exclusion" "$(echo "$OUT" | names)" "gpu01 gpu02 gpu04 gpu05"
same "every list object has node" "$(echo "$OUT" | jq '[.[] | select(.node == .name)] | length')" 4
check "list table" 0 "$KILN" node list 'gpu0[4-5]'
same "table has a header and a row a node" "$(echo "$OUT" | wc -l)" 3
has "table header" "$(echo "$OUT" | head -1)" "NAME"
# Columns are aligned: the BMC column starts at the same offset in the header and the rows.
offsets=$(echo "$OUT" | awk 'NR == 1 { print index($0, "BMC") } /gpu05/ { print index($0, "redfish") }')
same "table aligned" "$(echo "$offsets" | sort -u | wc -l)" 1
check "malformed range: a usage error" 2 "$KILN" node list 'gpu[1-'

# --- show ------------------------------------------------------------------------------------
check "show" 0 "$KILN" node show gpu05 -o json
same "show -o json" "$(echo "$OUT" | jq -r '[.name, .node, .bmc, .bmc_user, (.groups|join(",")), .sol] | join(" ")')" \
	"gpu05 gpu05 redfish+http://127.0.0.1:20001 root b200 ipmi://127.0.0.1:20623"
same "show has no password field" "$(echo "$OUT" | jq 'has("bmc_password")')" false
check "show table" 0 "$KILN" node show gpu05
has "show table has the user" "$OUT" "root"
lacks "show table has no password" "$OUT" "s3cret-bmc-$$"
check "show unknown node" 1 "$KILN" node show gpu99
has "not found message" "$ERR" "kiln: "
check "show with a bad name" 2 "$KILN" node show 'gpu[01-02]'

# --- set ---------------------------------------------------------------------------------------
check "set rack and groups" 0 "$KILN" node set gpu01 --rack r9 --group x --group y
check "show after set" 0 "$KILN" node show gpu01 -o json
same "set applied" "$(echo "$OUT" | jq -r '[.rack, (.groups|join(","))] | join(" ")')" "r9 x,y"
check "set --clear" 0 "$KILN" node set gpu01 --clear rack --clear group -o json
same "cleared" "$(echo "$OUT" | jq -c '[.rack, .groups, .node]')" '[null,[],"gpu01"]'
check "set unknown node" 1 "$KILN" node set gpu99 --rack r1
check "set bad --clear" 2 "$KILN" node set gpu01 --clear name
check "set --dry-run" 0 "$KILN" node set gpu02 --rack r7 --dry-run
check "dry-run changed nothing" 0 "$KILN" node show gpu02 -o json
same "rack unchanged" "$(echo "$OUT" | jq -r .rack)" r1

# --- rm ----------------------------------------------------------------------------------------
check "rm --dry-run" 0 "$KILN" node rm 'gpu[01-02]' --dry-run
same "dry-run lists targets" "$OUT" "would remove gpu01
would remove gpu02"
check "dry-run removed nothing" 0 "$KILN" node list 'gpu[01-02]' -o json
same "still there" "$(echo "$OUT" | names)" "gpu01 gpu02"
check "add 12 nodes" 0 "$KILN" node add 't[01-12]'
check "rm above the threshold without --yes and no terminal" 1 setsid -w "$KILN" node rm 't[01-12]'
has "asks for --yes" "$ERR" "--yes"
check "nothing removed" 0 "$KILN" node list 't[01-12]' -o json
same "12 remain" "$(echo "$OUT" | jq length)" 12
check "rm a range with a missing node: a usage error" 2 "$KILN" node rm 't[01-13]' --yes
check "all or nothing" 0 "$KILN" node list 't[01-12]' -o json
same "12 still remain" "$(echo "$OUT" | jq length)" 12
check "rm --yes" 0 "$KILN" node rm 't[01-12]' --yes -o json
same "rm -o json" "$(echo "$OUT" | jq -c '[length, .[0].node, .[0].deleted]')" '[12,"t01",true]'
check "rm below the threshold" 0 setsid -w "$KILN" node rm 'cpu[8-9]'
has "rm says what it removed" "$OUT" "cpu[8-9]"
check "rm of nothing: a usage error" 2 "$KILN" node rm 'nothere[1-3]' --dry-run

# --- import ----------------------------------------------------------------------------------------
mkdir -p "$T/csv"
echo "csv-pw-$$" >"$T/csv/bmc.pw"
cat >"$T/csv/good.csv" <<'EOF'
name,bmc,bmc_user,bmc_password_file,group,rack,tls_insecure,ipmi_cipher,ipmi_workarounds
imp01,redfish+http://127.0.0.1:21001,admin,bmc.pw,"gpu;h100",r2,yes,,
imp02,ipmi://127.0.0.1:21623,admin,bmc.pw,gpu,"rack, two",,3,"opensesspriv,solpayloadsize"
imp03,,,,,,,,
EOF
check "import a good file" 0 "$KILN" node import "$T/csv/good.csv"
has "import says what" "$OUT" "imp[01-03]"
check "imported nodes" 0 "$KILN" node list 'imp[01-03]' -o json
same "import fields" "$(echo "$OUT" | jq -c '[.[0].groups, .[0].tls, .[0].has_bmc_password, .[1].rack, .[1].ipmi_workarounds, .[2].bmc]')" \
	'[["gpu","h100"],"insecure",true,"rack, two","opensesspriv,solpayloadsize",null]'

long=$(printf 'r%.0s' $(seq 1 70))
cat >"$T/csv/bad.csv" <<EOF
name,rack,group
bad01,r1,x
bad02,$long,x
bad03,r3,x
EOF
check "import with a bad rack on line 3: a usage error" 2 "$KILN" node import "$T/csv/bad.csv"
has "error names the line" "$ERR" "line 3"
has "error names the column" "$ERR" "column rack"
same "import error is one line" "$(wc -l <"$T/err")" 1
check "nothing imported" 0 "$KILN" node list -o json
same "no bad nodes" "$(jq -c '[.[] | select(.name | startswith("bad"))]' <<<"$OUT")" "[]"

cat >"$T/csv/bad2.csv" <<'EOF'
name,"group",ipmi_cipher
"multi01","a
b",3
multi02,c,99
EOF
check "import with a local error after a multi-line field" 1 "$KILN" node import "$T/csv/bad2.csv"
has "local error names line and column" "$ERR" "line 4, column ipmi_cipher"

printf 'name,rack\nimp01,r1\ndup02,r2\n' >"$T/csv/dup.csv"
check "import of an existing name" 1 "$KILN" node import "$T/csv/dup.csv"
has "duplicate names the line" "$ERR" "line 2"
check "dup02 not imported" 1 "$KILN" node show dup02

printf 'name,colour\nx1,red\n' >"$T/csv/col.csv"
check "import with an unknown column" 1 "$KILN" node import "$T/csv/col.csv"
has "unknown column named" "$ERR" "colour"
check "import of a missing file" 1 "$KILN" node import "$T/csv/nope.csv"
check "import --dry-run" 0 "$KILN" node import "$T/csv/dup.csv" --dry-run -o json
same "dry-run shows without passwords" "$(echo "$OUT" | jq -c '[.[].name]')" '["imp01","dup02"]'

# --- tokens and roles -------------------------------------------------------------------------
check "token create -o json" 0 "$KILN" token create --role viewer --name ro -o json
same "token create shape" "$(echo "$OUT" | jq -r '[(.id|type), (.token|type), .role] | join(" ")')" \
	"number string viewer"
echo "$OUT" | jq -r .token >"$T/viewer.token"
VIEWER_ID=$(echo "$OUT" | jq -r .id)
check "token create table prints the bare token" 0 "$KILN" token create --role operator
same "bare token only on stdout" "$(echo "$OUT" | wc -l)" 1
check "token create without --role" 2 "$KILN" token create
check "viewer can list" 0 "$KILN" --token-file "$T/viewer.token" node list
check "viewer cannot add" 1 "$KILN" --token-file "$T/viewer.token" node add v01
check "token list" 0 "$KILN" token list -o json
same "token list has the viewer" "$(echo "$OUT" | jq -r '.[] | select(.name == "ro") | .role')" viewer
lacks "token list shows no token" "$OUT" "$(cat "$T/viewer.token")"
check "token list table" 0 "$KILN" token list
has "token list header" "$OUT" "ROLE"
check "token revoke" 0 "$KILN" token revoke "$VIEWER_ID"
check "revoked token refused" 1 "$KILN" --token-file "$T/viewer.token" node list
check "token revoke bad id" 2 "$KILN" token revoke abc

# --- audit log ----------------------------------------------------------------------------------
check "audit log -o json" 0 "$KILN" audit log --since 1h -o json
same "audit log is an array" "$(echo "$OUT" | jq -r type)" array
check "audit log table" 0 "$KILN" audit log
has "audit header" "$OUT" "ACTION"
check "audit bad duration" 2 "$KILN" audit log --since soon

# --- cli.conf ----------------------------------------------------------------------------------
mkdir -p "$HOME/.config/kiln"
printf 'url = %s\ntoken_file = %s\n' "$KILN_URL" "$KILN_TOKEN_FILE" >"$HOME/.config/kiln/cli.conf"
check "cli.conf supplies url and token" 0 env -u KILN_URL -u KILN_TOKEN_FILE "$KILN" node list -o json
printf 'url = %s\ncolour = red\n' "$KILN_URL" >"$HOME/.config/kiln/cli.conf"
check "cli.conf with an unknown key" 1 env -u KILN_URL "$KILN" node list
has "config error names the key" "$ERR" "colour"
rm -f "$HOME/.config/kiln/cli.conf"
check "--url wins over KILN_URL" 0 env KILN_URL=http://127.0.0.1:1 "$KILN" --url "$KILN_URL" node list

# --- the BMC password is never in ps, nor in kilnd's log -------------------------------------
secret="ps-secret-$$-xyzzy"
mkfifo "$T/pw.fifo"
"$KILN" node add psnode --bmc redfish+http://127.0.0.1:20002 --bmc-user root \
	--bmc-password-file "$T/pw.fifo" >"$T/ps.out" 2>&1 &
kpid=$!
# kiln now blocks opening the FIFO: look at every process's arguments while it runs.
for _ in $(seq 1 50); do
	[ -r "/proc/$kpid/cmdline" ] && grep -q pw.fifo "/proc/$kpid/cmdline" && break
	sleep 0.1
done
psout=$(ps -ww -eo pid,args)
has "kiln node add is running" "$psout" "psnode"
lacks "no password in ps" "$psout" "$secret"
echo "$secret" >"$T/pw.fifo"
wait "$kpid"
same "kiln node add with the FIFO succeeded" "$?" 0
check "psnode has a password" 0 "$KILN" node show psnode -o json
same "has_bmc_password" "$(echo "$OUT" | jq -r .has_bmc_password)" true
lacks "no password in the node's JSON" "$OUT" "$secret"
if grep -qa -- "$secret" "$KILND_LOG"; then
	fail "the BMC password is in kilnd's log"
else
	pass "no password in kilnd's log"
fi
if kiln_test_db_has "$secret" "$KILND_STATE"; then
	fail "the BMC password is in kiln.db in clear"
else
	pass "no password in kiln.db"
fi

if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	exit 1
fi
echo "all checks passed"
