#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kiln-bmcsim on its own fixtures: auth and sessions (cap, expiry), case-insensitive GET, reset
# allowable values and power delay states, vendor quirks, boot PATCH with ETags, virtual media,
# /_sim/ inject and counters, faults, --count, async tasks, latency and TLS.
set -u
KILN_BIN=${KILN_BIN:?"KILN_BIN must name the build's bin/ folder"}
KILN_SRC=${KILN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
for tool in curl jq; do
	command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed"; exit 77; }
done
FIX=$KILN_SRC/tests/sim/fixtures
. "$KILN_SRC/tests/sim/bmcsim.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bmcsim.XXXXXX") || exit 1
trap 'bmcsim_stop_all; rm -rf "$TMP"' EXIT

FAILS=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1${2:+: $2}"; FAILS=$((FAILS + 1)); }
# expect NAME WANT GOT
expect() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "want '$2', got '$3'"; fi; }

A=(-u admin:password)
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
get() { curl -s "${A[@]}" "$@"; }
post() { local url=$1; shift; curl -s "${A[@]}" -X POST -H 'Content-Type: application/json' "$@" "$url"; }
state() { curl -s "$1/_sim/state"; }
# wait_power URL SYS WANT [TRIES]: polls PowerState until it reads WANT
wait_power() {
	local i p
	for ((i = 0; i < ${4:-50}; i++)); do
		p=$(get "$1$2" | jq -r .PowerState)
		[ "$p" = "$3" ] && { echo "$p"; return 0; }
		sleep 0.1
	done
	echo "$p"
}

# ---------------------------------------------------------------- generic fixture
HOOKLOG=$TMP/hook.log
cat >"$TMP/hook.sh" <<HOOK
#!/bin/sh
echo "\$1 \$2" >>"$HOOKLOG"
HOOK
chmod +x "$TMP/hook.sh"
bmcsim_start "$TMP/g" "$FIX/generic" --power-delay-ms 400 --power-hook "$TMP/hook.sh" || exit 1
G=$BMCSIM_URL
GPID=$BMCSIM_PID
SYS=/redfish/v1/Systems/sys0

expect "service root without auth" 200 "$(code "$G/redfish/v1/")"
expect "/redfish version document" '/redfish/v1/' "$(curl -s "$G/redfish" | jq -r .v1)"
expect "profile guessed generic" generic "$(state "$G" | jq -r .profile)"
expect "system without auth -> 401" 401 "$(code "$G$SYS")"
expect "wrong Basic password -> 401" 401 "$(code -u admin:nope "$G$SYS")"
expect "auth failure counted" 1 "$(state "$G" | jq .auth_failures)"
expect "GET by @odata.id" sys0 "$(get "$G$SYS" | jq -r .Id)"
expect "GET upper case with trailing slash" sys0 "$(get "$G/REDFISH/V1/SYSTEMS/SYS0/" | jq -r .Id)"
nf=$(get "$G/redfish/v1/Systems/nope")
expect "404 status" 404 "$(code "${A[@]}" "$G/redfish/v1/Systems/nope")"
expect "404 Redfish error body" Base.1.8.ResourceMissingAtURI \
	"$(echo "$nf" | jq -r '.error."@Message.ExtendedInfo"[0].MessageId')"
expect "GPUs as Processors" 4 "$(get "$G$SYS/Processors/GPU2" >/dev/null; for i in 0 1 2 3; do get "$G$SYS/Processors/GPU$i" | jq -r .ProcessorType; done | grep -c GPU)"

# sessions: create, use, cap (default 8), delete, bad credentials
H=$(curl -s -D - -o "$TMP/s.json" -X POST -H 'Content-Type: application/json' \
	-d '{"UserName":"admin","Password":"password"}' "$G/redfish/v1/SessionService/Sessions")
TOKEN=$(echo "$H" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-auth-token"{print $2}')
LOC=$(echo "$H" | tr -d '\r' | awk -F': ' 'tolower($1)=="location"{print $2}')
expect "session create 201" 201 "$(echo "$H" | head -1 | awk '{print $2}')"
[ -n "$TOKEN" ] && ok "X-Auth-Token returned" || bad "X-Auth-Token returned"
expect "Location is the session" "$(jq -r '."@odata.id"' "$TMP/s.json")" "$LOC"
expect "GET with the token" sys0 "$(curl -s -H "X-Auth-Token: $TOKEN" "$G$SYS" | jq -r .Id)"
expect "bad token -> 401" 401 "$(code -H "X-Auth-Token: nope" "$G$SYS")"
expect "bad session credentials -> 401" 401 "$(code -X POST -d '{"UserName":"admin","Password":"x"}' "$G/redfish/v1/SessionService/Sessions")"
for i in 2 3 4 5 6 7 8; do
	code -X POST -d '{"UserName":"admin","Password":"password"}' "$G/redfish/v1/SessionService/Sessions" >/dev/null
done
expect "8 sessions open" 8 "$(state "$G" | jq .sessions)"
capbody=$(curl -s -w '\n%{http_code}' -X POST -d '{"UserName":"admin","Password":"password"}' "$G/redfish/v1/SessionService/Sessions")
expect "9th session -> 503" 503 "$(echo "$capbody" | tail -1)"
expect "cap message RAC0218" IDRAC.2.8.RAC0218 "$(echo "$capbody" | head -1 | jq -r '.error."@Message.ExtendedInfo"[0].MessageId')"
expect "sessions collection lists 8" 8 "$(get "$G/redfish/v1/SessionService/Sessions" | jq '.Members | length')"
expect "DELETE session" 204 "$(code -X DELETE -H "X-Auth-Token: $TOKEN" "$G$LOC")"
expect "deleted token rejected" 401 "$(code -H "X-Auth-Token: $TOKEN" "$G$SYS")"
expect "session slot freed" 201 "$(code -X POST -d '{"UserName":"admin","Password":"password"}' "$G/redfish/v1/SessionService/Sessions")"
curl -s -X POST -d '{"sessions":"expire"}' "$G/_sim/inject" >/dev/null
expect "inject sessions expire" 0 "$(state "$G" | jq .sessions)"

# reset: allowable values from the ActionInfo; power delay states; hook
R=$SYS/Actions/ComputerSystem.Reset
nmi=$(post "$G$R" -d '{"ResetType":"Nmi"}')
expect "Nmi not in ActionInfo -> ActionParameterNotSupported" Base.1.8.ActionParameterNotSupported \
	"$(echo "$nmi" | jq -r '.error."@Message.ExtendedInfo"[0].MessageId')"
expect "missing ResetType -> 400" 400 "$(code "${A[@]}" -X POST -d '{}' "$G$R")"
expect "ForceOff accepted" 204 "$(code "${A[@]}" -X POST -d '{"ResetType":"ForceOff"}' "$G$R")"
expect "PoweringOff right after" PoweringOff "$(get "$G$SYS" | jq -r .PowerState)"
expect "then Off" Off "$(wait_power "$G" "$SYS" Off)"
expect "PowerCycle from off powers on" 204 "$(code "${A[@]}" -X POST -d '{"ResetType":"PowerCycle"}' "$G$R")"
expect "PoweringOn" PoweringOn "$(get "$G$SYS" | jq -r .PowerState)"
expect "then On" On "$(wait_power "$G" "$SYS" On)"
expect "ForceRestart" 204 "$(code "${A[@]}" -X POST -d '{"ResetType":"ForceRestart"}' "$G$R")"
expect "reset during transition -> 409" 409 "$(code "${A[@]}" -X POST -d '{"ResetType":"ForceOff"}' "$G$R")"
sleep 1
expect "restart went off and on" On "$(wait_power "$G" "$SYS" On)"
expect "resets recorded (Nmi never)" '["ForceOff","PowerCycle","ForceRestart"]' "$(state "$G" | jq -c .resets)"
sleep 0.3
expect "power hook ran on each transition" "0 off,0 on,0 off,0 on" "$(paste -sd, "$HOOKLOG")"

# boot PATCH with ETag / If-Match
ET=$(curl -s -D - -o /dev/null "${A[@]}" "$G$SYS" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')
expect "ETag header = @odata.etag" "$ET" "$(get "$G$SYS" | jq -r '."@odata.etag"')"
expect "PATCH boot with If-Match" 204 "$(code "${A[@]}" -X PATCH -H "If-Match: $ET" \
	-d '{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once"}}' "$G$SYS")"
expect "PATCH with the stale ETag -> 412" 412 "$(code "${A[@]}" -X PATCH -H "If-Match: $ET" \
	-d '{"Boot":{"BootSourceOverrideTarget":"Hdd"}}' "$G$SYS")"
expect "PATCH target not allowed (Diags) -> 400" 400 "$(code "${A[@]}" -X PATCH \
	-d '{"Boot":{"BootSourceOverrideTarget":"Diags"}}' "$G$SYS")"
expect "PATCH enabled not allowed -> 400" 400 "$(code "${A[@]}" -X PATCH \
	-d '{"Boot":{"BootSourceOverrideEnabled":"Sometimes"}}' "$G$SYS")"
expect "PATCH unknown property -> 400" 400 "$(code "${A[@]}" -X PATCH -d '{"Bogus":1}' "$G$SYS")"
expect "boot in the resource" Pxe/Once "$(get "$G$SYS" | jq -r '.Boot | "\(.BootSourceOverrideTarget)/\(.BootSourceOverrideEnabled)"')"
expect "boot in /_sim/state" Pxe/Once "$(state "$G" | jq -r '.boot | "\(.BootSourceOverrideTarget)/\(.BootSourceOverrideEnabled)"')"
curl -s -X POST -d '{"fault":"412:count=1"}' "$G/_sim/inject" >/dev/null
ET=$(get "$G$SYS" | jq -r '."@odata.etag"')
expect "injected stale ETag -> 412" 412 "$(code "${A[@]}" -X PATCH -H "If-Match: $ET" -d '{"Boot":{"BootSourceOverrideTarget":"Cd"}}' "$G$SYS")"
ET=$(get "$G$SYS" | jq -r '."@odata.etag"')
expect "retry with a fresh ETag" 204 "$(code "${A[@]}" -X PATCH -H "If-Match: $ET" -d '{"Boot":{"BootSourceOverrideTarget":"Cd"}}' "$G$SYS")"

# virtual media under Systems
VM=$SYS/VirtualMedia/CD1
expect "insert without Image -> 400" 400 "$(code "${A[@]}" -X POST -d '{}' "$G$VM/Actions/VirtualMedia.InsertMedia")"
expect "insert" 204 "$(code "${A[@]}" -X POST -d '{"Image":"http://10.0.0.5/ubuntu-22.04.iso","Inserted":true}' "$G$VM/Actions/VirtualMedia.InsertMedia")"
expect "medium shows the image" "http://10.0.0.5/ubuntu-22.04.iso/true" "$(get "$G$VM" | jq -r '"\(.Image)/\(.Inserted)"')"
expect "insert again -> 409" 409 "$(code "${A[@]}" -X POST -d '{"Image":"http://10.0.0.5/x.iso"}' "$G$VM/Actions/VirtualMedia.InsertMedia")"
expect "media in /_sim/state" true "$(state "$G" | jq .media.CD1.Inserted)"
expect "eject (no body is fine here)" 204 "$(code "${A[@]}" -X POST "$G$VM/Actions/VirtualMedia.EjectMedia")"
expect "ejected" false "$(get "$G$VM" | jq .Inserted)"

# inject: log entry, sensor reading, power
n0=$(get "$G$SYS/LogServices/EventLog/Entries" | jq '.Members | length')
expect "inject log" true "$(curl -s -X POST -d '{"log":{"message":"Xid 79 on GPU 3","severity":"Critical"}}' "$G/_sim/inject" | jq .ok)"
ent=$(get "$G$SYS/LogServices/EventLog/Entries")
expect "entries grew by one" $((n0 + 1)) "$(echo "$ent" | jq '.Members | length')"
expect "count matches" $((n0 + 1)) "$(echo "$ent" | jq '."Members@odata.count"')"
eid=$(echo "$ent" | jq -r '.Members[-1]."@odata.id"')
expect "injected entry resource" "Xid 79 on GPU 3" "$(get "$G$eid" | jq -r .Message)"
expect "inject sensor" true "$(curl -s -X POST -d '{"sensor":{"name":"GPU1 Temp","reading":93.5}}' "$G/_sim/inject" | jq .ok)"
expect "Sensor resource reading" 93.5 "$(get "$G/redfish/v1/Chassis/chassis0/Sensors/GPU1_Temp" | jq .Reading)"
expect "ThermalMetrics reading" 93.5 "$(get "$G/redfish/v1/Chassis/chassis0/ThermalSubsystem/ThermalMetrics" | jq '.TemperatureReadingsCelsius[] | select(.DeviceName=="GPU1 Temp") | .Reading')"
expect "unknown sensor -> 404" 404 "$(code -X POST -d '{"sensor":{"name":"No Such","reading":1}}' "$G/_sim/inject")"
expect "bad inject key -> 400" 400 "$(code -X POST -d '{"frobnicate":1}' "$G/_sim/inject")"
curl -s -X POST -d '{"power":"Off"}' "$G/_sim/inject" >/dev/null
expect "inject power Off" Off "$(get "$G$SYS" | jq -r .PowerState)"

# recorded requests: Authorization scheme only, secrets never
recs=$(curl -s "$G/_sim/requests")
expect "records carry the auth scheme" Basic "$(echo "$recs" | jq -r '[.[] | select(.headers.Authorization)][-1].headers.Authorization')"
if echo "$recs" | grep -q 'password"\|YWRtaW46cGFzc3dvcmQ'; then bad "no secret in /_sim/requests"; else ok "no secret in /_sim/requests"; fi
expect "session body password masked" '***' "$(echo "$recs" | jq -r '[.[] | select(.method=="POST" and (.path|test("Sessions")))][0].body' | jq -r .Password)"
expect "If-Match recorded" true "$(echo "$recs" | jq '[.[] | select(.method=="PATCH" and .status==412)] | length > 0')"

# faults injected at run time: hang, malformed, truncated, reset, 503
curl -s -X POST -d '{"fault":"hang:count=1"}' "$G/_sim/inject" >/dev/null
curl -s -m 1 "${A[@]}" "$G$SYS" >/dev/null; rc=$?
expect "hang: no answer (curl timeout)" 28 "$rc"
expect "after the hang, answers again" sys0 "$(get "$G$SYS" | jq -r .Id)"
expect "/_sim/ answers while a request hangs" true "$(state "$G" | jq '.faults_hit >= 1')"
curl -s -X POST -d '{"fault":"malformed:count=1"}' "$G/_sim/inject" >/dev/null
get "$G$SYS" | jq . >/dev/null 2>&1; rc=$?
[ "$rc" -ne 0 ] && ok "malformed JSON does not parse" || bad "malformed JSON does not parse"
curl -s -X POST -d '{"fault":"truncated:count=1"}' "$G/_sim/inject" >/dev/null
curl -s "${A[@]}" "$G$SYS" >/dev/null; rc=$?
expect "truncated body (curl partial file)" 18 "$rc"
curl -s -X POST -d '{"fault":"reset:count=1"}' "$G/_sim/inject" >/dev/null
curl -s "${A[@]}" "$G$SYS" >/dev/null; rc=$?
[ "$rc" = 52 ] || [ "$rc" = 56 ] && ok "reset: connection dropped ($rc)" || bad "reset: connection dropped" "curl $rc"
curl -s -X POST -d '{"fault":"503:count=2"}' "$G/_sim/inject" >/dev/null
expect "503 storm 1" 503 "$(code "${A[@]}" "$G$SYS")"
expect "503 storm 2" 503 "$(code "${A[@]}" "$G$SYS")"
expect "storm over" 200 "$(code "${A[@]}" "$G$SYS")"
curl -s -X POST -d '{"fault":"slow:count=1:ms=20"}' "$G/_sim/inject" >/dev/null
t0=$(date +%s%N); body=$(get "$G$SYS"); t1=$(date +%s%N)
expect "slow body arrives whole" sys0 "$(echo "$body" | jq -r .Id)"
[ $(((t1 - t0) / 1000000)) -ge 200 ] && ok "slow body is slow ($(((t1 - t0) / 1000000)) ms)" || bad "slow body is slow" "$(((t1 - t0) / 1000000)) ms"
bmcsim_stop "$GPID"; expect "clean exit (no leaks)" 0 "$?"

# ---------------------------------------------------------------- --count 3, counters, start-up faults
for try in 1 2 3 4 5; do
	base=$((20000 + (($$ * 7 + try * 911) % 12000)))
	bmcsim_start "$TMP/c$try" "$FIX/generic" --listen "127.0.0.1:$base" --count 3 --power-delay-ms 0 \
		--fault "503:index=1" --fault "hang:ports=$((base + 2)):count=1" --hang-ms 500 2>/dev/null && break
done
C=$BMCSIM_PID
expect "three consecutive ports" "$base $((base + 1)) $((base + 2))" "${BMCSIM_PORTS[*]}"
U0=http://127.0.0.1:$base U1=http://127.0.0.1:$((base + 1)) U2=http://127.0.0.1:$((base + 2))
expect "port 0 answers" 200 "$(code "${A[@]}" "$U0$SYS")"
expect "--fault 503:index=1 hits BMC 1" 503 "$(code "${A[@]}" "$U1$SYS")"
curl -s -m 2 "${A[@]}" "$U2$SYS" >/dev/null; rc=$?
expect "--fault hang:ports=P:count=1 hits BMC 2 once (dropped after --hang-ms)" 52 "$rc"
expect "BMC 2 fine after" 200 "$(code "${A[@]}" "$U2$SYS")"
code "${A[@]}" -X POST -d '{"ResetType":"ForceOff"}' "$U0$SYS/Actions/ComputerSystem.Reset" >/dev/null
expect "BMC 0 off (no delay)" Off "$(state "$U0" | jq -r .power)"
expect "BMC 2 untouched" On "$(state "$U2" | jq -r .power)"
# exact counters on BMC 2: 2 GET so far (hung + ok); now 3 GET, 1 POST, 1 PATCH, 1 DELETE
for i in 1 2 3; do get "$U2/redfish/v1" >/dev/null; done
H=$(curl -s -D - -o /dev/null -X POST -d '{"UserName":"admin","Password":"password"}' "$U2/redfish/v1/SessionService/Sessions" | tr -d '\r')
code "${A[@]}" -X PATCH -d '{"Boot":{"BootSourceOverrideTarget":"Hdd"}}' "$U2$SYS" >/dev/null
code "${A[@]}" -X DELETE "$U2$(echo "$H" | awk -F': ' 'tolower($1)=="location"{print $2}')" >/dev/null
expect "/_sim/state request counters" '{"GET":5,"POST":1,"PATCH":1,"DELETE":1,"other":0,"selected":0,"expanded":0}' "$(state "$U2" | jq -c .requests)"
expect "/_sim/ requests are not counted" 5 "$(state "$U2" | jq .requests.GET)"
expect "sessions created/deleted" 1/1 "$(state "$U2" | jq -r '"\(.sessions_created)/\(.sessions_deleted)"')"
bmcsim_stop "$C"; expect "clean exit" 0 "$?"

# ---------------------------------------------------------------- iDRAC 9: quirks, media under Managers
bmcsim_start "$TMP/d" "$FIX/idrac9" --power-delay-ms 200 --settle-ms 1500 || exit 1
D=$BMCSIM_URL
DS=/redfish/v1/Systems/System.Embedded.1
expect "profile guessed idrac9" idrac9 "$(state "$D" | jq -r .profile)"
code "${A[@]}" -X POST -d '{"ResetType":"ForceOff"}' "$D$DS/Actions/ComputerSystem.Reset" >/dev/null
expect "iDRAC off" Off "$(wait_power "$D" "$DS" Off)"
expect "iDRAC: On right after off -> 409" 409 "$(code "${A[@]}" -X POST -d '{"ResetType":"On"}' "$D$DS/Actions/ComputerSystem.Reset")"
sleep 1.5
expect "iDRAC: On after settling" 204 "$(code "${A[@]}" -X POST -d '{"ResetType":"On"}' "$D$DS/Actions/ComputerSystem.Reset")"
DVM=/redfish/v1/Managers/iDRAC.Embedded.1/VirtualMedia/CD
expect "iDRAC: insert without TransferProtocolType -> 400" 400 "$(code "${A[@]}" -X POST -d '{"Image":"http://10.0.0.5/a.iso"}' "$D$DVM/Actions/VirtualMedia.InsertMedia")"
expect "iDRAC: insert with it" 204 "$(code "${A[@]}" -X POST -d '{"Image":"http://10.0.0.5/a.iso","TransferProtocolType":"HTTP"}' "$D$DVM/Actions/VirtualMedia.InsertMedia")"
expect "iDRAC: medium state" HTTP "$(state "$D" | jq -r .media.CD.TransferProtocolType)"
expect "iDRAC: eject without body -> 400" 400 "$(code "${A[@]}" -X POST "$D$DVM/Actions/VirtualMedia.EjectMedia")"
expect "iDRAC: eject with {}" 204 "$(code "${A[@]}" -X POST -H 'Content-Type: application/json' -d '{}' "$D$DVM/Actions/VirtualMedia.EjectMedia")"
expect "iDRAC: Sel entries" 3 "$(get "$D/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Sel/Entries" | jq '.Members | length')"
curl -s -X POST -d '{"log":{"service":"Lclog","message":"newest"}}' "$D/_sim/inject" >/dev/null
expect "iDRAC: injected Lclog entry listed first" newest "$(get "$D/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Lclog/Entries" | jq -r '.Members[0].Message')"
expect "iDRAC: new entry id follows the tree's" 4122 "$(get "$D/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Lclog/Entries" | jq -r '.Members[0].Id')"
bmcsim_stop "$BMCSIM_PID"; expect "clean exit" 0 "$?"

# ---------------------------------------------------------------- iLO 5: quirks, mixed-case links, async
bmcsim_start "$TMP/i" "$FIX/ilo5" --power-delay-ms 200 --async --task-ms 600 || exit 1
I=$BMCSIM_URL
IS=$(curl -s "$I/redfish/v1/" | jq -r '.Systems."@odata.id"')
expect "iLO link is lower case with a slash" /redfish/v1/systems/ "$IS"
IS=$(get "$I$IS" | jq -r '.Members[0]."@odata.id"')
expect "iLO member link followed" Off "$(get "$I$IS" | jq -r .PowerState)"
expect "iLO: bios via lower-case link" bios "$(get "$I$(get "$I$IS" | jq -r .Bios.\"@odata.id\")" | jq -r .Id)"
IR=$(get "$I$IS" | jq -r '.Actions."#ComputerSystem.Reset".target')
ilo=$(post "$I$IR" -d '{"ResetType":"ForceOff"}')
expect "iLO: redundant ForceOff -> InvalidOperationForSystemState" iLO.2.14.InvalidOperationForSystemState \
	"$(echo "$ilo" | jq -r '.error."@Message.ExtendedInfo"[0].MessageId')"
expect "iLO: PowerCycle not allowed" 400 "$(code "${A[@]}" -X POST -d '{"ResetType":"PowerCycle"}' "$I$IR")"
H=$(curl -s -D "$TMP/h" -o "$TMP/task.json" "${A[@]}" -X POST -d '{"ResetType":"On"}' "$I$IR"; tr -d '\r' <"$TMP/h")
expect "async: 202" 202 "$(echo "$H" | head -1 | awk '{print $2}')"
MON=$(echo "$H" | awk -F': ' 'tolower($1)=="location"{print $2}')
expect "async: Retry-After" 1 "$(echo "$H" | awk -F': ' 'tolower($1)=="retry-after"{print $2}')"
expect "async: task running" 202 "$(code "${A[@]}" "$I$MON")"
sleep 0.8
expect "async: task done" 200/Completed "$(curl -s -w '/%{http_code}' "${A[@]}" "$I$MON" | sed 's#^\(.*\)/\([0-9]*\)$#\2/\1#' | { IFS=/ read -r c j; echo "$c/$(echo "$j" | jq -r .TaskState)"; })"
expect "async: power is On" On "$(get "$I$IS" | jq -r .PowerState)"
bmcsim_stop "$BMCSIM_PID"; expect "clean exit" 0 "$?"

# ---------------------------------------------------------------- idle expiry, --require-etag
bmcsim_start "$TMP/e" "$FIX/generic" --session-timeout 1 --require-etag || exit 1
E=$BMCSIM_URL
TOK=$(curl -s -D - -o /dev/null -X POST -d '{"UserName":"admin","Password":"password"}' "$E/redfish/v1/SessionService/Sessions" |
	tr -d '\r' | awk -F': ' 'tolower($1)=="x-auth-token"{print $2}')
expect "fresh token works" 200 "$(code -H "X-Auth-Token: $TOK" "$E$SYS")"
sleep 2.2
expect "idle session expired -> 401" 401 "$(code -H "X-Auth-Token: $TOK" "$E$SYS")"
expect "expiry counted" 1 "$(state "$E" | jq .sessions_expired)"
expect "--require-etag: PATCH without If-Match -> 428" 428 "$(code "${A[@]}" -X PATCH -d '{"Boot":{"BootSourceOverrideTarget":"Pxe"}}' "$E$SYS")"
ET=$(get "$E$SYS" | jq -r '."@odata.etag"')
expect "--require-etag: with If-Match" 204 "$(code "${A[@]}" -X PATCH -H "If-Match: $ET" -d '{"Boot":{"BootSourceOverrideTarget":"Pxe"}}' "$E$SYS")"
bmcsim_stop "$BMCSIM_PID"; expect "clean exit" 0 "$?"

# ---------------------------------------------------------------- latency and TLS
bmcsim_start "$TMP/t" "$FIX/generic" --tls --cert-out "$TMP/t/cert.pem" --latency-ms 300 || exit 1
t0=$(date +%s%N)
expect "TLS with the written certificate" sys0 "$(curl -s --cacert "$TMP/t/cert.pem" "${A[@]}" "$BMCSIM_URL$SYS" | jq -r .Id)"
t1=$(date +%s%N)
[ $(((t1 - t0) / 1000000)) -ge 300 ] && ok "--latency-ms 300 delays ($(((t1 - t0) / 1000000)) ms)" || bad "--latency-ms delays" "$(((t1 - t0) / 1000000)) ms"
fp=$(curl -s --cacert "$TMP/t/cert.pem" "$BMCSIM_URL/_sim/state" | jq -r .tls_fingerprint)
want=$(openssl x509 -in "$TMP/t/cert.pem" -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2)
expect "fingerprint in /_sim/state" "$want" "$fp"
if openssl x509 -in "$TMP/t/cert.pem" -noout -text 2>/dev/null | grep -q 'NIST CURVE: P-256\|prime256v1'; then
	ok "ECDSA P-256 key"
else
	bad "ECDSA P-256 key"
fi
bmcsim_stop "$BMCSIM_PID"; expect "clean exit" 0 "$?"

if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all checks passed"
