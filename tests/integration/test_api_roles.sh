# SPDX-License-Identifier: Apache-2.0
# Integration: walks every route of `kilnd --list-routes` (the one route table) with no
# token, a bad token, a metrics, a viewer, an operator and an admin token, and checks 401 /
# 403 / allowed against the role each route needs: a metrics token reads GET /metrics and
# nothing else, which viewer and above read too. A route this walk cannot call fails the test.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

FAILS=0

kiln_test_start_kilnd || exit 1

routes=$("$KILND" --list-routes) || { echo "kilnd --list-routes failed" >&2; exit 1; }
nroutes=$(printf '%s\n' "$routes" | grep -c .)
if [ "$nroutes" -lt 1 ]; then
	echo "kilnd --list-routes printed no route" >&2
	exit 1
fi

# Tokens of each role, a fixture node for {name} and a throwaway token for {id}.
declare -A TOKEN RANK
TOKEN[none]=-
TOKEN[bad]=kiln_this_token_does_not_exist_0000000000000000
TOKEN[metrics]=$(kiln_test_token metrics) || exit 1
TOKEN[viewer]=$(kiln_test_token viewer) || exit 1
TOKEN[operator]=$(kiln_test_token operator) || exit 1
TOKEN[admin]=$(kiln_test_token admin) || exit 1
RANK=([none]=0 [viewer]=1 [operator]=2 [admin]=3 [metrics]=1 [agent]=99 [enroll]=99)
[ "$(kiln_api POST /nodes '{"name":"role01","groups":["rolegrp"]}')" = 201 ] ||
	{ echo "fixture node: $(cat "$KILN_BODY_FILE")" >&2; exit 1; }
[ "$(kiln_api POST /tokens '{"role":"viewer","name":"throwaway"}')" = 201 ] ||
	{ echo "fixture token: $(cat "$KILN_BODY_FILE")" >&2; exit 1; }
THROWAWAY_ID=$(jq -r .id "$KILN_BODY_FILE")

# A revoked token must be refused like an unknown one.
REVOKED=$(kiln_test_token admin revoked-admin) || exit 1
REVOKED_ID=$(kiln_api GET /tokens >/dev/null; jq -r '.[] | select(.name=="revoked-admin") | .id' "$KILN_BODY_FILE")
[ "$(kiln_api DELETE "/tokens/$REVOKED_ID")" = 200 ] || { echo "revoke: $(cat "$KILN_BODY_FILE")" >&2; exit 1; }
TOKEN[revoked]=$REVOKED

# fill PATH: puts fixtures into {placeholders}; fails on one it does not know.
fill() {
	local p=$1
	p=${p//\{name\}/role01}
	p=${p//\{id\}/$THROWAWAY_ID}
	p=${p//\{file\}/app.js}
	case "$p" in
	*\{*) return 1 ;;
	esac
	printf '%s' "$p"
}

# An empty object is a body every route must read past authorization (and then refuse or
# accept on its own terms); bodiless methods get none.
body_for() {
	case "$1" in
	POST | PATCH | PUT) printf '{}' ;;
	esac
}

# role_call METHOD PATH BODY TOKEN: kiln_api for a full path (the dashboard's / and /ui/
# lie outside /api/v1); a stream (GET /api/v1/ui/stream) is cut after 2 s, its status kept.
role_call() {
	local args=(-sk -o "$KILN_BODY_FILE" -w '%{http_code}' -X "$1")
	[ "$2" = /api/v1/ui/stream ] && args+=(-m 2)
	[ "$4" != - ] && args+=(-H "Authorization: Bearer $4")
	[ -n "$3" ] && args+=(-H "Content-Type: application/json" --data-binary "$3")
	curl "${args[@]}" "$KILN_URL$2"
}

walked=0
while read -r method pattern role; do
	[ -n "$method" ] || continue
	if [ -z "${RANK[$role]+x}" ]; then
		fail "$method $pattern: unknown role '$role' (not covered)"
		continue
	fi
	if ! path=$(fill "$pattern"); then
		fail "$method $pattern: a path parameter this test cannot fill (not covered)"
		continue
	fi
	body=$(body_for "$method")
	# The strongest token last: an admin call may change the fixtures.
	for who in none bad revoked metrics viewer operator admin; do
		status=$(role_call "$method" "$path" "$body" "${TOKEN[$who]}")
		err=$(jq -r '.error? // empty' "$KILN_BODY_FILE" 2>/dev/null)
		if [ "$role" = none ]; then
			want=allowed
		elif [ "$role" = agent ] || [ "$role" = enroll ]; then
			want=401 # only agent / enrollment tokens (test_agent_ingest.sh), never API tokens
		elif [ "$who" = none ] || [ "$who" = bad ] || [ "$who" = revoked ]; then
			want=401
		elif [ "$role" = metrics ]; then
			want=allowed # the metrics token, and every role of the ladder
		elif [ "$who" = metrics ]; then
			want=403 # nothing but /metrics
		elif [ "${RANK[$who]}" -lt "${RANK[$role]}" ]; then
			want=403
		else
			want=allowed
		fi
		case "$want:$status" in
		401:401 | 403:403) ;;
		allowed:401 | allowed:403 | allowed:405 | allowed:000 | allowed:5*)
			fail "$method $pattern as $who: $status ($err), want the route to answer" ;;
		allowed:404)
			# 404 is fine for a missing fixture, not for a route the server does not know.
			[ "$err" = "no such endpoint" ] &&
				fail "$method $pattern as $who: the server does not know this route" ;;
		allowed:*) ;;
		*) fail "$method $pattern as $who: $status ($err), want $want" ;;
		esac
		if [ "$status" != 200 ] && [ "$status" != 201 ] && [ "$status" != 000 ]; then
			jq -e '.error | type == "string"' "$KILN_BODY_FILE" >/dev/null 2>&1 ||
				fail "$method $pattern as $who: $status without a JSON {\"error\"}"
		fi
	done
	walked=$((walked + 1))
	echo "ok: $method $pattern ($role)"
done <<<"$routes"

if [ "$walked" -ne "$nroutes" ]; then
	fail "walked $walked of $nroutes routes"
fi
# The 401 answers name the scheme.
hdr=$(curl -s -D - -o /dev/null "$KILN_URL/api/v1/nodes")
case "$hdr" in
*"WWW-Authenticate: Bearer"*) ;;
*) fail "401 without 'WWW-Authenticate: Bearer'" ;;
esac

kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	[ -n "${KILND_LOG:-}" ] && tail -20 "$KILND_LOG" >&2
	exit 1
fi
echo "all $walked routes checked with none, bad, revoked, metrics, viewer, operator and admin tokens"
