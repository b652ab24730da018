# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd's REST basics on a real daemon: health, 401, the 1 MiB body cap, bad
# JSON and field validation, nodes with ranges, import and range delete all or nothing,
# tokens, audit, secrets kept out of the database and the log, restart, the state dir lock,
# HTTPS with a given certificate, config errors.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

FAILS=0
body() { cat "$KILN_BODY_FILE"; }

# expect DESC WANT_STATUS METHOD PATH [BODY [TOKEN]]: one API call, its status checked.
expect() {
	local desc=$1 want=$2 got
	shift 2
	got=$(kiln_api "$@")
	if [ "$got" != "$want" ]; then
		fail "$desc: status $got, want $want: $(body)"
		return 1
	fi
	pass "$desc"
}

# field_is DESC FIELD: the last answer's "field" is FIELD.
field_is() {
	local got
	got=$(jq -r '.field // "(none)"' "$KILN_BODY_FILE")
	[ "$got" = "$2" ] && pass "$1 names field $2" || fail "$1: field '$got', want '$2': $(body)"
}

# jq_is DESC FILTER WANT: jq FILTER of the last answer is WANT.
jq_is() {
	local got
	got=$(jq -c "$2" "$KILN_BODY_FILE" 2>&1)
	[ "$got" = "$3" ] && pass "$1" || fail "$1: got $got, want $3"
}

kiln_test_start_kilnd || exit 1
DIR=$KILND_DIR
PID1=$KILND_PID
SECRET="bmc-pass-$$-$RANDOM"

# --- health, tokens ---------------------------------------------------------------------------
expect "health without a token" 200 GET /health "" -
jq_is "health says ok with a schema version" '[.status, (.schema|type)]' '["ok","number"]'
expect "nodes without a token" 401 GET /nodes "" -
expect "nodes with a made-up token" 401 GET /nodes "" kiln_nope
[ "$(stat -c %a "$DIR/admin.token")" = 600 ] && pass "admin.token is 0600" || fail "admin.token mode $(stat -c %a "$DIR/admin.token")"
grep -qx 'kiln_[A-Za-z0-9_-]*' "$DIR/admin.token" && [ "$(wc -l <"$DIR/admin.token")" = 1 ] &&
	pass "admin.token holds the bare token and a newline" || fail "admin.token: $(cat "$DIR/admin.token")"
[ "$(stat -c %a "$DIR/secret.key")" = 600 ] && pass "secret.key is 0600" || fail "secret.key mode"
[ "$(stat -c %a "$DIR")" = 700 ] && pass "the state dir is 0700" || fail "state dir mode $(stat -c %a "$DIR")"
grep -q "admin.token" "$KILND_LOG" && pass "the first start says it wrote admin.token" || fail "no admin.token line in the log"
TOKEN_SUM=$(sha256sum <"$DIR/admin.token")
TOKEN_MTIME=$(stat -c %Y "$DIR/admin.token")

# --- the body cap -----------------------------------------------------------------------------
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$KILN_TEST_TMP/big"
ADMIN=$(cat "$KILN_TOKEN_FILE")
# Without Expect, curl sends the whole body at once: kilnd answers 413 and closes while the
# rest is still coming, and curl, whose send then meets a reset, may print 000 although it
# read the answer. The status line it dumped says what kilnd answered.
for how in "" "Expect:" "Transfer-Encoding: chunked"; do
	: >"$KILN_TEST_TMP/big.headers"
	status=$(curl -s -o "$KILN_BODY_FILE" -D "$KILN_TEST_TMP/big.headers" -w '%{http_code}' \
		-H "Authorization: Bearer $ADMIN" -H "Content-Type: application/json" \
		${how:+-H "$how"} --data-binary @"$KILN_TEST_TMP/big" "$KILN_URL/api/v1/nodes")
	[ "$status" = 000 ] && status=$(awk 'NR == 1 { print $2 }' "$KILN_TEST_TMP/big.headers")
	if [ "$status" = 413 ] && jq -e '.error | test("limit")' "$KILN_BODY_FILE" >/dev/null; then
		pass "2 MiB body (${how:-default headers}) -> 413"
	else
		fail "2 MiB body (${how:-default headers}): $status $(body)"
	fi
done
expect "still healthy after the big bodies" 200 GET /health "" -

# --- bad JSON and field validation -------------------------------------------------------------
expect "malformed JSON" 400 POST /nodes '{"name": "gpu01",'
jq -e '.error | test("malformed JSON") and test("line 1")' "$KILN_BODY_FILE" >/dev/null &&
	pass "malformed JSON: the error names the problem and where" || fail "malformed JSON message: $(body)"
expect "a JSON array where an object belongs" 400 POST /nodes '[1,2]'
expect "an empty body" 400 POST /nodes ''
while IFS='|' read -r desc json field; do
	expect "$desc" 400 POST /nodes "$json" && field_is "$desc" "$field"
done <<'EOF2'
unknown field|{"name":"v1","colour":"red"}|colour
name missing|{"rack":"r1"}|name
bad node name|{"name":"-gpu"}|name
name not a string|{"name":7}|name
http scheme|{"name":"v1","bmc":"http://10.0.0.1"}|bmc
bmc with a path|{"name":"v1","bmc":"redfish://10.0.0.1/redfish/v1"}|bmc
bmc port out of range|{"name":"v1","bmc":"ipmi://10.0.0.1:70000"}|bmc
cipher 18|{"name":"v1","bmc":"ipmi://10.0.0.1","ipmi_cipher":18}|ipmi_cipher
cipher as text|{"name":"v1","ipmi_cipher":"3"}|ipmi_cipher
privilege|{"name":"v1","ipmi_privilege":"root"}|ipmi_privilege
unknown workaround|{"name":"v1","ipmi_workarounds":"opensesspriv,frobnicate"}|ipmi_workarounds
tls mode|{"name":"v1","bmc":"redfish://h","tls":"maybe"}|tls
tls ca without a file|{"name":"v1","bmc":"redfish://h","tls":"ca"}|tls_ca_file
relative ca file|{"name":"v1","bmc":"redfish://h","tls_ca_file":"ca.pem"}|tls_ca_file
ca file outside [bmc] ca_dir|{"name":"v1","bmc":"redfish://h","tls":"ca","tls_ca_file":"/etc/shadow"}|tls_ca_file
ca file out of ca_dir by ..|{"name":"v1","bmc":"redfish://h","tls":"ca","tls_ca_file":"/etc/kiln/ca/../../shadow"}|tls_ca_file
short fingerprint|{"name":"v1","bmc":"redfish://h","tls_fingerprint":"abcd"}|tls_fingerprint
fingerprint with tls insecure|{"name":"v1","bmc":"redfish://h","tls":"insecure","tls_fingerprint":"AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89"}|tls_fingerprint
sol over redfish|{"name":"v1","bmc":"redfish://h","sol":"redfish://h2"}|sol
credentials without a bmc|{"name":"v1","bmc_user":"root"}|bmc_user
groups as a string|{"name":"v1","groups":"a100"}|groups
bad group name|{"name":"v1","groups":["ok","bad group"]}|groups
control character in rack|{"name":"v1","rack":"r\u0001"}|rack
EOF2
expect "nothing was created by the refused bodies" 200 GET /nodes
jq_is "inventory still empty" 'length' 0

# --- nodes -------------------------------------------------------------------------------------
expect "create a redfish node" 201 POST /nodes \
	"{\"name\":\"gpu01\",\"bmc\":\"redfish://10.0.0.5\",\"bmc_user\":\"root\",\"bmc_password\":\"$SECRET\",\"groups\":[\"a100\",\"rack1\"],\"rack\":\"r1\"}"
jq_is "the answer shows the port and has_bmc_password" '[.bmc, .has_bmc_password, .tls, .ipmi_cipher]' '["redfish://10.0.0.5:443",true,"verify",3]'
grep -q -- "$SECRET" "$KILN_BODY_FILE" && fail "the password is in the answer" || pass "no password in the answer"
expect "the same name again" 409 POST /nodes '{"name":"gpu01"}'
field_is "duplicate name" name
expect "create an ipmi node with options" 201 POST /nodes \
	'{"name":"gpu02","bmc":"ipmi://[fd00::2]","ipmi_cipher":17,"ipmi_privilege":"operator","ipmi_workarounds":"opensesspriv,solpayloadsize","groups":["a100"]}'
jq_is "ipmi node as shown" '[.bmc, .ipmi_cipher, .ipmi_privilege, .ipmi_workarounds]' '["ipmi://[fd00::2]:623",17,"operator","opensesspriv,solpayloadsize"]'
expect "create an agent-only node" 201 POST /nodes '{"name":"vm01"}'
jq_is "agent-only node has no bmc" '[.bmc, .has_bmc_password]' '[null,false]'
expect "show gpu01" 200 GET /nodes/gpu01
jq_is "show gives the node" '.name' '"gpu01"'
expect "show a missing node" 404 GET /nodes/nope
expect "patch gpu01" 200 PATCH /nodes/gpu01 \
	'{"rack":null,"tls_fingerprint":"ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89"}'
jq_is "patch cleared rack and pinned the fingerprint" '[.rack, .tls, .tls_fingerprint, .has_bmc_password]' \
	'[null,"fingerprint","abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",true]'
expect "patch with a bad field" 400 PATCH /nodes/gpu01 '{"ipmi_cipher":-1}'
field_is "patch cipher -1" ipmi_cipher
expect "a refused patch changed nothing" 200 GET /nodes/gpu01
jq_is "cipher unchanged" '.ipmi_cipher' 3
expect "rename vm01 to vm02" 200 PATCH /nodes/vm01 '{"name":"vm02"}'
expect "vm01 is gone after the rename" 404 GET /nodes/vm01
expect "rename onto an existing name" 409 PATCH /nodes/vm02 '{"name":"gpu01"}'

expect "list a range" 200 GET '/nodes?range=gpu%5B01-02%5D'
jq_is "range gpu[01-02]" '[.[].name]' '["gpu01","gpu02"]'
expect "a range naming a node that does not exist" 404 GET '/nodes?range=gpu%5B01-03%5D'
jq_is "  ... says which, field range" '[.field, .unknown]' '["range",["gpu03"]]'
expect "list a group" 200 GET '/nodes?range=@a100,-gpu02'
jq_is "@a100 minus gpu02" '[.[].name]' '["gpu01"]'
expect "list all" 200 GET '/nodes?range=all'
jq_is "all, ordered by name" '[.[].name]' '["gpu01","gpu02","vm02"]'
expect "a malformed range" 400 GET '/nodes?range=gpu%5B01-'
field_is "malformed range" range

# --- import and range delete: all or nothing -------------------------------------------------
expect "import with a bad second element" 400 POST /nodes/import \
	'{"nodes":[{"name":"imp01"},{"name":"imp02","bmc":"ftp://x"},{"name":"imp03"}]}'
jq_is "import error has index and field" '[.index, .field]' '[1,"bmc"]'
expect "import naming an existing node" 409 POST /nodes/import '{"nodes":[{"name":"imp01"},{"name":"gpu01"}]}'
jq_is "import conflict index" '[.index, .field]' '[1,"name"]'
expect "import with a duplicate inside" 400 POST /nodes/import '{"nodes":[{"name":"imp01"},{"name":"imp01"}]}'
expect "nothing imported by the refused imports" 200 GET '/nodes'
jq_is "no imp nodes" '[.[] | select(.name | startswith("imp"))] | length' 0
expect "import three" 201 POST /nodes/import '{"nodes":[{"name":"imp01"},{"name":"imp02","groups":["imp"]},{"name":"imp03"}]}'
jq_is "import answers the nodes" '[.[].name]' '["imp01","imp02","imp03"]'
expect "range delete naming a missing node" 404 DELETE '/nodes?range=imp%5B01-04%5D'
field_is "range delete of a missing node" range
expect "nothing deleted" 200 GET '/nodes?range=imp%5B01-03%5D'
jq_is "three imp nodes remain" 'length' 3
expect "range delete without a range" 400 DELETE /nodes
expect "range delete" 200 DELETE '/nodes?range=imp%5B01-03%5D'
jq_is "range delete answers per node" '[.[] | select(.deleted) | .node]' '["imp01","imp02","imp03"]'
expect "delete one" 200 DELETE /nodes/vm02
jq_is "delete answer" '.' '{"node":"vm02","deleted":true}'
expect "delete it again" 404 DELETE /nodes/vm02

# --- tokens and audit --------------------------------------------------------------------------
VIEWER=$(kiln_test_token viewer ops-viewer) || exit 1
expect "viewer lists nodes" 200 GET /nodes "" "$VIEWER"
expect "viewer may not add nodes" 403 POST /nodes '{"name":"x1"}' "$VIEWER"
expect "viewer may not list tokens" 403 GET /tokens "" "$VIEWER"
expect "token with a bad role" 400 POST /tokens '{"role":"root"}'
field_is "bad role" role
expect "list tokens" 200 GET /tokens
jq_is "no hashes or tokens in the list" '[.[] | keys] | add | unique' '["created_at","id","last_used_at","name","revoked","role"]'
VIEWER_ID=$(jq -r '.[] | select(.name=="ops-viewer") | .id' "$KILN_BODY_FILE")
ADMIN_ID=$(jq -r '.[] | select(.name=="admin") | .id' "$KILN_BODY_FILE")
expect "revoke the viewer token" 200 DELETE "/tokens/$VIEWER_ID"
expect "the revoked token is refused" 401 GET /nodes "" "$VIEWER"
expect "the last admin token cannot be revoked" 409 DELETE "/tokens/$ADMIN_ID"
expect "revoke a token id that does not exist" 404 DELETE /tokens/999999
expect "audit log" 200 GET '/audit?since=1h'
jq_is "audit rows for what was done, by admin" \
	'[.[] | select(.actor=="admin" and .outcome=="ok") | .action] | unique' \
	'["node.add","node.delete","node.import","node.set","token.create","token.revoke"]'
jq_is "audit rows of node.add name the nodes" '[.[] | select(.action=="node.add" and .outcome=="ok") | .target] | sort' '["gpu01","gpu02","vm01"]'
expect "audit limit" 200 GET '/audit?limit=2'
jq_is "two rows" 'length' 2
expect "audit with a bad since" 400 GET '/audit?since=yesterday'

# --- secrets out of the database and the log ----------------------------------------------------
if kiln_test_db_has "$SECRET" "$DIR"; then
	fail "the BMC password is in kiln.db in clear"
else
	pass "no BMC password in kiln.db"
fi
if grep -qa -- "$SECRET" "$KILND_LOG"; then fail "the BMC password is in the log"; else pass "no BMC password in the log"; fi
if grep -qaF -- "$ADMIN" "$KILND_LOG" || kiln_test_db_has "$ADMIN" "$DIR"; then fail "the admin token is in the log or the database"; else pass "no token in the log or the database"; fi

# --- the lock, restart -------------------------------------------------------------------------
"$KILND" --state-dir "$DIR" --listen 127.0.0.1:0 2>"$KILN_TEST_TMP/second.err" &
second=$!
for _ in $(seq 1 100); do kill -0 "$second" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$second" 2>/dev/null; then
	kill "$second"
	wait "$second"
	fail "a second kilnd on the same state dir kept running"
else
	wait "$second"
	rc=$?
	[ "$rc" -ne 0 ] && pass "a second kilnd exits non-zero ($rc)" || fail "a second kilnd exited 0"
	grep -q "kilnd: state dir $DIR is in use by pid $PID1" "$KILN_TEST_TMP/second.err" &&
		pass "the second kilnd names the holder" || fail "second kilnd said: $(cat "$KILN_TEST_TMP/second.err")"
fi
expect "the first kilnd still answers" 200 GET /nodes/gpu01

if kiln_test_stop_kilnd; then pass "SIGTERM: kilnd exits 0"; else fail "kilnd exited $? on SIGTERM"; fi
[ ! -e "$DIR/kilnd.url" ] && pass "kilnd.url removed on shutdown" || fail "kilnd.url left behind"
grep -q "stopped" "$KILND_LOG" && pass "the log says it stopped" || fail "no 'stopped' line"
lines_before=$(wc -l <"$KILND_LOG")
kiln_test_start_kilnd "$DIR" || exit 1
[ "$KILND_PID" != "$PID1" ] || fail "the same pid?"
[ "$(sha256sum <"$DIR/admin.token")" = "$TOKEN_SUM" ] && [ "$(stat -c %Y "$DIR/admin.token")" = "$TOKEN_MTIME" ] &&
	pass "admin.token not rewritten on restart" || fail "admin.token changed on restart"
tail -n +"$((lines_before + 1))" "$KILND_LOG" | grep -q "first start\|created" &&
	fail "the second start says it created something" || pass "the second start creates nothing"
expect "nodes survive a restart" 200 GET /nodes
jq_is "both nodes are back" '[.[].name]' '["gpu01","gpu02"]'
jq_is "with their password flag" '.[0].has_bmc_password' true
kiln_test_stop_kilnd || fail "kilnd exited $? on the second SIGTERM"

# --- HTTPS with a given certificate (on loopback) ------------------------------------------------
if command -v openssl >/dev/null 2>&1; then
	TLS=$KILN_TEST_TMP/tls
	mkdir -p "$TLS"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=kiln-test -addext "subjectAltName=IP:127.0.0.1" \
		-keyout "$TLS/key.pem" -out "$TLS/cert.pem" 2>/dev/null
	kiln_test_start_kilnd "" --tls-cert "$TLS/cert.pem" --tls-key "$TLS/key.pem" || exit 1
	case "$KILND_URL" in
	https://127.0.0.1:*) pass "kilnd.url says https" ;;
	*) fail "kilnd.url with a certificate: $KILND_URL" ;;
	esac
	status=$(curl -s --cacert "$TLS/cert.pem" -o /dev/null -w '%{http_code}' "$KILND_URL/api/v1/health")
	[ "$status" = 200 ] && pass "health over verified HTTPS" || fail "HTTPS health: $status"
	want=$(openssl x509 -in "$TLS/cert.pem" -noout -fingerprint -sha256 | sed 's/.*=//')
	grep -q "fingerprint $want" "$KILND_LOG" && pass "the log shows the certificate's SHA-256" ||
		fail "fingerprint $want not in the log"
	kiln_test_stop_kilnd || fail "HTTPS kilnd exited $?"
	if "$KILND" --state-dir "$KILN_TEST_TMP/half" --tls-cert "$TLS/cert.pem" 2>"$KILN_TEST_TMP/half.err"; then
		fail "a certificate without its key was accepted"
	else
		pass "a certificate without its key is refused"
	fi
else
	echo "skip: openssl not installed, HTTPS checks not run"
fi

# --- configuration errors ---------------------------------------------------------------------
printf 'listen = 127.0.0.1:0\n[http]\nthreads = 2\ncolour = red\n' >"$KILN_TEST_TMP/bad.conf"
if "$KILND" --state-dir "$KILN_TEST_TMP/conf" --config "$KILN_TEST_TMP/bad.conf" 2>"$KILN_TEST_TMP/conf.err"; then
	fail "an unknown config key was accepted"
else
	grep -q "bad.conf:4" "$KILN_TEST_TMP/conf.err" && grep -q "colour" "$KILN_TEST_TMP/conf.err" &&
		pass "an unknown config key names the line and the key" || fail "config error: $(cat "$KILN_TEST_TMP/conf.err")"
fi
printf 'listen = 127.0.0.1:0\n[http]\nmax_connections = 5\n' >"$KILN_TEST_TMP/bounds.conf"
if "$KILND" --state-dir "$KILN_TEST_TMP/conf" --config "$KILN_TEST_TMP/bounds.conf" 2>"$KILN_TEST_TMP/conf.err"; then
	fail "max_connections 5 was accepted"
else
	grep -q "max_connections" "$KILN_TEST_TMP/conf.err" && pass "an out-of-bounds value names the key" ||
		fail "bounds error: $(cat "$KILN_TEST_TMP/conf.err")"
fi
if "$KILND" --state-dir "$KILN_TEST_TMP/conf" --listen nowhere 2>"$KILN_TEST_TMP/conf.err"; then
	fail "--listen nowhere was accepted"
else
	grep -q "listen" "$KILN_TEST_TMP/conf.err" && pass "a bad --listen is refused" || fail "listen error: $(cat "$KILN_TEST_TMP/conf.err")"
fi

if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	exit 1
fi
echo "all checks passed"
