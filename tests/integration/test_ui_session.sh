#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The dashboard's server side (issue 22): / and /ui/* without a token, with a CSP; log-in
# exchanges a token for an HttpOnly SameSite=Strict cookie (Secure over HTTPS); the session
# acts with its token's role; a state-changing request without its CSRF value is refused and
# audited, as is a viewer's forged POST; log-out and revoking the token end the session; the
# live stream says hello and pushes a changed row.
. "$KILN_SRC/tests/integration/lib.sh"
FAILS=0

kiln_test_start_kilnd || exit 1
T=$KILN_TEST_TMP
viewer=$(kiln_test_token viewer night-viewer) || exit 1
operator=$(kiln_test_token operator night-op) || exit 1
kiln_api POST /nodes '{"name":"ui01","bmc":"redfish+http://127.0.0.1:9"}' >/dev/null
kiln_api POST /nodes '{"name":"ui02","bmc":"redfish+http://127.0.0.1:9"}' >/dev/null

# h NAME FILE: a header's value from a curl -D dump.
h() { grep -i "^$1:" "$2" | head -1 | cut -d: -f2- | sed 's/^ //; s/\r$//'; }

# --- the page and its assets ------------------------------------------------------------
code=$(curl -s -D "$T/h" -o "$T/page" -w '%{http_code}' "$KILN_URL/")
same "GET / without a token" "$code" 200
csp=$(h Content-Security-Policy "$T/h")
case "$csp" in
*"script-src 'self'"*"connect-src 'self'"*) pass "CSP names only kilnd for scripts and requests" ;;
*) fail "CSP on /: '$csp'" ;;
esac
case "$csp" in
*unsafe-inline* | *unsafe-eval* | *"*"* | *http:* | *https:*) fail "CSP allows inline script or other origins: $csp" ;;
*"default-src 'none'"*) pass "CSP: nothing by default" ;;
*) fail "CSP without default-src 'none': $csp" ;;
esac
grep -q 'name="token"' "$T/page"
check "the log-in form has input[name=token]" $? "$(head -c 300 "$T/page")"
grep -qi '<script>\|<script [^>]*>[^<]' "$T/page" && fail "inline script in the page" || pass "no inline script in the page"
for f in app.js app.css chart.js; do
	code=$(curl -s -D "$T/h" -o /dev/null -w '%{http_code}' "$KILN_URL/ui/$f")
	same "GET /ui/$f" "$code" 200
	[ -n "$(h Content-Security-Policy "$T/h")" ]
	check "/ui/$f has a CSP" $? "no header"
done
same "an unknown asset" "$(curl -s -o /dev/null -w '%{http_code}' "$KILN_URL/ui/nope.js")" 404

# --- log-in ------------------------------------------------------------------------------
# login TOKEN JAR: prints the status; the answer lands in $T/login, headers in $T/lh.
login() {
	curl -s -c "$2" -D "$T/lh" -o "$T/login" -w '%{http_code}' -H 'Content-Type: application/json' \
		--data-binary "{\"token\":\"$1\"}" "$KILN_URL/api/v1/ui/login"
}
same "log-in with a viewer token" "$(login "$viewer" "$T/vjar")" 200
cookie=$(h Set-Cookie "$T/lh")
for attr in HttpOnly SameSite=Strict Max-Age= Path=/; do
	case "$cookie" in *"$attr"*) pass "cookie has $attr" ;; *) fail "cookie without $attr: $cookie" ;; esac
done
case "$cookie" in *Secure*) fail "Secure on plain HTTP (the browser would drop it): $cookie" ;; *) pass "no Secure over plain HTTP" ;; esac
case "$cookie" in *"$viewer"*) fail "the token itself is in the cookie" ;; *) pass "the cookie is not the token" ;; esac
vcsrf=$(jq -r .csrf "$T/login")
same "log-in names the role" "$(jq -r .role "$T/login")" viewer
same "a text/plain log-in (a cross-site form) is refused" \
	"$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: text/plain' \
		--data-binary "{\"token\":\"$viewer\"}" "$KILN_URL/api/v1/ui/login")" 415
same "log-in with an unknown token" "$(login kiln_nosuchtoken "$T/xjar")" 401

# c JAR METHOD PATH [BODY [CSRF]]: a request with the jar's cookie and no bearer token.
c() {
	local args=(-s -b "$1" -o "$T/cbody" -w '%{http_code}' -X "$2")
	[ -n "${4:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
	[ -n "${5:-}" ] && args+=(-H "X-CSRF-Token: $5")
	curl "${args[@]}" "$KILN_URL/api/v1$3"
}
same "the session reads /status" "$(c "$T/vjar" GET '/status?form=rows')" 200
same "the session's own view" "$(c "$T/vjar" GET /ui/session)" 200
same "it carries the CSRF value" "$(jq -r .session.csrf "$T/cbody")" "$vcsrf"
same "a viewer's forged power cycle (with its cookie and CSRF value)" \
	"$(c "$T/vjar" POST /power '{"range":"ui01","action":"cycle"}' "$vcsrf")" 403
same "no cookie, no token" "$(curl -s -o /dev/null -w '%{http_code}' "$KILN_URL/api/v1/status")" 401

# --- CSRF --------------------------------------------------------------------------------
same "log-in with an operator token" "$(login "$operator" "$T/ojar")" 200
ocsrf=$(jq -r .csrf "$T/login")
same "an operator's POST without its CSRF value" \
	"$(c "$T/ojar" POST /nodes/maintenance '{"range":"ui01","on":true,"reason":"csrf"}')" 403
same "with another session's CSRF value" \
	"$(c "$T/ojar" POST /nodes/maintenance '{"range":"ui01","on":true,"reason":"csrf"}' "$vcsrf")" 403
kiln_api GET /nodes/ui01 >/dev/null
same "nothing changed by the refused requests" "$(kiln_api GET '/status?range=ui01' >/dev/null; jq -r '.nodes[0].maintenance' "$KILN_BODY_FILE")" false

# --- the live stream -----------------------------------------------------------------------
: >"$T/stream"
curl -s -N -b "$T/vjar" "$KILN_URL/api/v1/ui/stream" >"$T/stream" 2>/dev/null &
spid=$!
KILN_TEST_PIDS+=("$spid")
wait_for "the stream says hello" 5 grep -q '^event: hello' "$T/stream"
same "an operator's POST with its CSRF value" \
	"$(c "$T/ojar" POST /nodes/maintenance '{"range":"ui01","on":true,"reason":"night check"}' "$ocsrf")" 200
t0=$(date +%s%N)
wait_for "the changed row is pushed" 5 grep -q '^data: {"rows":\[\["ui01"' "$T/stream"
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
[ "$ms" -le 2000 ]
check "pushed within 2 s of the change (${ms} ms)" $? "${ms} ms"
grep -q '"ui02"' "$T/stream" && fail "an unchanged row was pushed: $(cat "$T/stream")" ||
	pass "the unchanged row is not pushed"
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# --- audit ---------------------------------------------------------------------------------
kiln_api GET '/audit?limit=200' >/dev/null
cp "$KILN_BODY_FILE" "$T/audit"
same "log-ins audited with the token's name" \
	"$(jq -r '[.[] | select(.action == "session.login" and .outcome == "ok") | .actor] | sort | join(",")' "$T/audit")" \
	"night-op,night-viewer"
same "the unknown token's log-in audited" \
	"$(jq -r '[.[] | select(.action == "session.login" and (.outcome | startswith("refused")))] | length' "$T/audit")" 1
same "the viewer's forged POST audited as denied" \
	"$(jq -r '[.[] | select(.action == "denied" and .actor == "night-viewer" and (.target | startswith("POST /api/v1/power")))] | length' "$T/audit")" 1
same "the POSTs without their CSRF value audited" \
	"$(jq -r '[.[] | select(.action == "denied" and .actor == "night-op" and (.outcome | test("CSRF")))] | length' "$T/audit")" 2
same "the session's action audited as its token" \
	"$(jq -r '[.[] | select(.action == "node.maintenance.on" and .actor == "night-op")] | length' "$T/audit")" 1

# --- log-out and revocation ------------------------------------------------------------------
same "log-out without the CSRF value" "$(c "$T/vjar" POST /ui/logout '{}')" 403
code=$(curl -s -b "$T/vjar" -D "$T/oh" -o /dev/null -w '%{http_code}' -X POST -H "X-CSRF-Token: $vcsrf" \
	-H 'Content-Type: application/json' --data-binary '{}' "$KILN_URL/api/v1/ui/logout")
same "log-out" "$code" 200
case "$(h Set-Cookie "$T/oh")" in *Max-Age=0*) pass "log-out clears the cookie" ;; *) fail "log-out cookie: $(h Set-Cookie "$T/oh")" ;; esac
same "the ended session is refused (server side)" "$(c "$T/vjar" GET /status)" 401
c "$T/vjar" GET /ui/session >/dev/null
same "and the page's question finds no session" "$(jq -c .session "$T/cbody")" null
kiln_api GET '/audit?limit=200' >/dev/null
same "log-out audited" "$(jq -r '[.[] | select(.action == "session.logout" and .actor == "night-viewer" and .outcome == "ok")] | length' "$KILN_BODY_FILE")" 1
kiln_api GET /tokens >/dev/null
opid=$(jq -r '.[] | select(.name == "night-op") | .id' "$KILN_BODY_FILE")
same "revoke the operator's token" "$(kiln_api DELETE "/tokens/$opid")" 200
same "its session ends with it" "$(c "$T/ojar" GET /status)" 401

# --- kilnd stops with a stream open (libmicrohttpd must not stop with it suspended) ---------
same "log-in again" "$(login "$viewer" "$T/vjar")" 200
curl -s -N -b "$T/vjar" "$KILN_URL/api/v1/ui/stream" >"$T/stream2" 2>/dev/null &
spid=$!
KILN_TEST_PIDS+=("$spid")
wait_for "the second stream says hello" 5 grep -q '^event: hello' "$T/stream2"
kill -TERM "$KILND_PID"
gone() { ! kill -0 "$KILND_PID" 2>/dev/null; }
wait_for "kilnd stops within 10 s with a stream open" 10 gone
kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizer report?): $(tail -20 "$KILND_LOG")"
stream_ended() { ! kill -0 "$spid" 2>/dev/null; }
wait_for "the stream ends with kilnd" 5 stream_ended

# --- over HTTPS the cookie is Secure --------------------------------------------------------
C=$T/tls
mkdir -p "$C"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=kilnd-test \
	-addext "subjectAltName=IP:127.0.0.1" -keyout "$C/key.pem" -out "$C/cert.pem" 2>/dev/null ||
	{ echo "openssl could not make a certificate" >&2; exit 1; }
kiln_test_start_kilnd "$KILND_DIR" --tls-cert "$C/cert.pem" --tls-key "$C/key.pem" || exit 1
code=$(curl -sk -D "$T/lh" -o "$T/login" -w '%{http_code}' -H 'Content-Type: application/json' \
	--data-binary "{\"token\":\"$viewer\"}" "$KILN_URL/api/v1/ui/login")
same "log-in over HTTPS" "$code" 200
case "$(h Set-Cookie "$T/lh")" in *"; Secure"*) pass "Secure over HTTPS" ;; *) fail "no Secure over HTTPS: $(h Set-Cookie "$T/lh")" ;; esac
kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizer report?): $(tail -20 "$KILND_LOG")"

[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
