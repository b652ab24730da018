#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln-bmcsim smoke over every tree in $KILN_SHARED/redfish-mockups (skips when absent):
# every resource answers by its path (and upper-cased with a trailing slash; a captured error
# body with the status its MessageId stands for), the system's
# PowerState matches the file, sessions, reset with the tree's allowable values, boot PATCH,
# virtual media where the tree has it, sensor and log injection, and a clean exit.
set -u
KILN_BIN=${KILN_BIN:?"KILN_BIN must name the build's bin/ folder"}
KILN_SRC=${KILN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
MOCKS=${KILN_SHARED:-$KILN_SRC/../shared}/redfish-mockups
for tool in curl jq; do
	command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed"; exit 77; }
done
if [ ! -d "$MOCKS" ]; then
	echo "skipped: $MOCKS is absent (the shared Redfish mockups are not checked out next to the repository)"
	exit 77
fi
. "$KILN_SRC/tests/sim/bmcsim.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bmcsim-mockups.XXXXXX") || exit 1
trap 'bmcsim_stop_all; rm -rf "$TMP"' EXIT

FAILS=0
ok() { echo "ok   $T: $1"; }
bad() { echo "FAIL $T: $1${2:+: $2}"; FAILS=$((FAILS + 1)); }
expect() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "want '$2', got '$3'"; fi; }
A=(-u admin:password)
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
get() { curl -s "${A[@]}" "$@"; }
# file_of ODATA_ID: the tree file holding that resource
file_of() { local rel=${1#/redfish/v1}; rel=${rel%/}; echo "$TREE${rel}/index.json"; }
wait_power() {
	local i p
	for ((i = 0; i < 60; i++)); do
		p=$(get "$U$1" | jq -r .PowerState)
		[ "$p" = "$2" ] && break
		sleep 0.1
	done
	echo "$p"
}
# reset TYPE: POST it, retrying a transient 409 (iDRAC settling) a few times; prints the status
reset() {
	local i c
	for ((i = 0; i < 10; i++)); do
		c=$(code "${A[@]}" -X POST -H 'Content-Type: application/json' -d "{\"ResetType\":\"$1\"}" "$U$RT")
		[ "$c" != 409 ] && break
		sleep 0.3
	done
	echo "$c"
}

trees=0
for TREE in "$MOCKS"/*/; do
	TREE=${TREE%/}
	[ -f "$TREE/index.json" ] || continue
	T=$(basename "$TREE")
	trees=$((trees + 1))
	bmcsim_start "$TMP/$T" "$TREE" --power-delay-ms 200 --settle-ms 300 || { bad "start"; continue; }
	U=$BMCSIM_URL
	echo "---- $T (profile $(curl -s "$U/_sim/state" | jq -r .profile))"
	expect "service root without auth" 200 "$(code "$U/redfish/v1/")"
	# the root promises only the $expand the simulator serves: "." at one level, or none
	xq=$(curl -s "$U/redfish/v1/" | jq -c '.ProtocolFeaturesSupported.ExpandQuery')
	systems=$(curl -s "$U/redfish/v1/" | jq -r '.Systems."@odata.id"')
	if [ "$xq" = null ]; then
		expect "no ExpandQuery: \$expand=. is 501" 501 "$(code -g "${A[@]}" "$U$systems?\$expand=.")"
	else
		expect "ExpandQuery as served" '{"ExpandAll":false,"Levels":true,"Links":false,"MaxLevels":1,"NoLinks":true}' "$xq"
		expect "\$expand=. answers the members expanded" true \
			"$(get -g "$U$systems?\$expand=." | jq '[.Members[] | has("Id")] | all')"
	fi

	# every stored resource by its path, then upper-cased with a trailing slash
	# (captured error bodies, {"error":...} alone, answer with their status instead)
	(cd "$TREE" && grep -l '"error"' -r --include=index.json . | while read -r f; do
		jq -e '(keys == ["error"]) and ((.error."@Message.ExtendedInfo"[0].MessageId // .error.code //
			"") | test("Success$") | not)' "$f" >/dev/null 2>&1 && echo "$f"
	done | sed 's#^\.##; s#/index\.json$##' | grep -v -i '^/SessionService/Sessions/' | sort) >"$TMP/$T.errors"
	(cd "$TREE" && find . \( -name index.json -o -name index.xml \) | sed 's#^\.##; s#/index\.[a-z]*$##' |
		grep -v -i '^/SessionService/Sessions/' | sort | comm -23 - "$TMP/$T.errors") >"$TMP/$T.paths"
	n=$(wc -l <"$TMP/$T.paths")
	ne=$(wc -l <"$TMP/$T.errors")
	awk -v u="$U/redfish/v1" '{print "url = \"" u $0 "\"\noutput = /dev/null"}' "$TMP/$T.errors" >"$TMP/$T.ecfg"
	ok=$( [ "$ne" = 0 ] && echo 0 || curl -s "${A[@]}" -K "$TMP/$T.ecfg" -w '%{http_code}\n' | grep -c '^200$')
	expect "the $ne stored error bodies answer as errors" 0 "$ok"
	awk -v u="$U/redfish/v1" '{print "url = \"" u $0 "\"\noutput = /dev/null"}' "$TMP/$T.paths" >"$TMP/$T.cfg"
	miss=$(curl -s "${A[@]}" -K "$TMP/$T.cfg" -w '%{http_code} %{url_effective}\n' | grep -vc '^200 ')
	expect "all $n resources answer 200" 0 "$miss"
	awk -v u="$U/REDFISH/V1" '{print "url = \"" u toupper($0) "/\"\noutput = /dev/null"}' "$TMP/$T.paths" >"$TMP/$T.ucfg"
	miss=$(curl -s "${A[@]}" -K "$TMP/$T.ucfg" -w '%{http_code} %{url_effective}\n' | grep -vc '^200 ')
	expect "all $n resources answer upper-cased with a trailing slash" 0 "$miss"

	SYS=$(get "$U$(curl -s "$U/redfish/v1/" | jq -r '.Systems."@odata.id"')" | jq -r '.Members[0]."@odata.id"')
	want=$(jq -r .PowerState "$(file_of "$SYS")")
	[ "$want" = On ] || [ "$want" = Off ] || want=On
	expect "system $SYS PowerState as in the tree" "$want" "$(get "$U$SYS" | jq -r .PowerState)"
	expect "serial as in the tree" "$(jq -r .SerialNumber "$(file_of "$SYS")")" "$(get "$U$SYS" | jq -r .SerialNumber)"

	LOC=$(curl -s -D - -o /dev/null -X POST -H 'Content-Type: application/json' \
		-d '{"UserName":"admin","Password":"password"}' "$U/redfish/v1/SessionService/Sessions" |
		tr -d '\r' | awk -F': ' 'tolower($1)=="location"{print $2}')
	[ -n "$LOC" ] && ok "session created ($LOC)" || bad "session created"
	c=$(code "${A[@]}" -X DELETE "$U$LOC")
	[ "$c" = 200 ] || [ "$c" = 204 ] && ok "session deleted" || bad "session deleted" "$c"

	sysdoc=$(get "$U$SYS")
	RT=$(echo "$sysdoc" | jq -r '.Actions."#ComputerSystem.Reset".target')
	allowed=$(echo "$sysdoc" | jq -c '.Actions."#ComputerSystem.Reset"."ResetType@Redfish.AllowableValues" // empty')
	if [ -z "$allowed" ]; then
		info=$(echo "$sysdoc" | jq -r '.Actions."#ComputerSystem.Reset"."@Redfish.ActionInfo"')
		allowed=$(get "$U$info" | jq -c '[.Parameters[] | select(.Name=="ResetType") | .AllowableValues[]]')
	fi
	expect "ResetType outside the allowable values -> 400" 400 "$(code "${A[@]}" -X POST -d '{"ResetType":"Bogus"}' "$U$RT")"
	if [ "$want" = Off ]; then
		expect "power On" 2 "$(reset On | cut -c1)"
		expect "... reaches On" On "$(wait_power "$SYS" On)"
	fi
	expect "power ForceOff" 2 "$(reset ForceOff | cut -c1)"
	expect "... reaches Off" Off "$(wait_power "$SYS" Off)"
	expect "power On" 2 "$(reset On | cut -c1)"
	expect "... reaches On" On "$(wait_power "$SYS" On)"
	st=$(curl -s "$U/_sim/state")
	expect "resets recorded" '"ForceOff","On"' "$(echo "$st" | jq -c .resets | tr -d '[]' | sed 's/^"On",//')"
	echo "$allowed" | jq -e 'index("ForceOff") != null' >/dev/null && ok "ForceOff is allowed by the tree" || bad "ForceOff is allowed by the tree"

	targets=$(echo "$sysdoc" | jq -c '.Boot."BootSourceOverrideTarget@Redfish.AllowableValues" // ["Pxe"]')
	tgt=$(echo "$targets" | jq -r 'if index("Pxe") then "Pxe" else .[-1] end')
	c=$(code "${A[@]}" -X PATCH -H 'Content-Type: application/json' \
		-d "{\"Boot\":{\"BootSourceOverrideTarget\":\"$tgt\",\"BootSourceOverrideEnabled\":\"Once\"}}" "$U$SYS")
	[ "${c:0:1}" = 2 ] && ok "boot PATCH $tgt ($c)" || bad "boot PATCH $tgt" "$c"
	expect "boot override read back" "$tgt" "$(get "$U$SYS" | jq -r .Boot.BootSourceOverrideTarget)"

	media=$(echo "$st" | jq -r '.media | to_entries[0].value.path // empty')
	if [ -n "$media" ]; then
		act=$(get "$U$media" | jq -r '.Actions."#VirtualMedia.InsertMedia".target // empty')
		[ -n "$act" ] || act=$media/Actions/VirtualMedia.InsertMedia
		ej=$(get "$U$media" | jq -r '.Actions."#VirtualMedia.EjectMedia".target // empty')
		[ -n "$ej" ] || ej=$media/Actions/VirtualMedia.EjectMedia
		code "${A[@]}" -X POST -H 'Content-Type: application/json' -d '{}' "$U$ej" >/dev/null
		c=$(code "${A[@]}" -X POST -H 'Content-Type: application/json' \
			-d '{"Image":"http://10.0.0.5/ubuntu.iso","TransferProtocolType":"HTTP","Inserted":true}' "$U$act")
		[ "${c:0:1}" = 2 ] && ok "virtual media insert at $media ($c)" || bad "virtual media insert" "$c"
		expect "medium inserted" true "$(get "$U$media" | jq .Inserted)"
		c=$(code "${A[@]}" -X POST -H 'Content-Type: application/json' -d '{}' "$U$ej")
		[ "${c:0:1}" = 2 ] && ok "virtual media eject ($c)" || bad "virtual media eject" "$c"
	else
		echo "--   $T: no VirtualMedia in the tree"
	fi

	thermal=$(cd "$TREE" && find . -path '*/Chassis/*/Thermal/index.json' | head -1)
	name=
	if [ -n "$thermal" ]; then
		name=$(jq -r '[.Temperatures[]? | select(.Name != null)][0].Name // empty' "$TREE/$thermal")
		path=/redfish/v1$(dirname "${thermal#.}")
	fi
	if [ -n "$name" ]; then
		curl -s -X POST -d "{\"sensor\":{\"name\":\"$name\",\"reading\":77}}" "$U/_sim/inject" >/dev/null
		expect "sensor '$name' overridden" 77 "$(get "$U$path" | jq --arg n "$name" '[.Temperatures[] | select(.Name==$n)][0].ReadingCelsius')"
	fi
	log=$(echo "$st" | jq -r '.logs[0].path // empty')
	if [ -n "$log" ]; then
		n0=$(get "$U$log" | jq '."Members@odata.count" // (.Members | length)')
		curl -s -X POST -d '{"log":{"message":"kiln smoke entry","severity":"Critical"}}' "$U/_sim/inject" >/dev/null
		expect "log entry injected into $log" $((n0 + 1)) "$(get "$U$log" | jq '."Members@odata.count" // (.Members | length)')"
		expect "entry listed" 1 "$(get "$U$log" | jq '[.Members[] | select(.Message=="kiln smoke entry")] | length')"
	fi
	bmcsim_stop "$BMCSIM_PID"
	expect "clean exit" 0 "$?"
done
[ "$trees" -gt 0 ] || { echo "skipped: no trees under $MOCKS"; exit 77; }
if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all checks passed over $trees trees"
