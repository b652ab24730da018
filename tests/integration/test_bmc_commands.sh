# SPDX-License-Identifier: Apache-2.0
# Integration: kiln power/boot/media/sensors/sel/inventory against kilnd and kiln-bmcsim.
# Ten generic BMCs, an iDRAC- and an iLO-shaped one, a slow one and an agent-only node:
# confirmed power cycle over 10 with an audit row per node, the confirmation threshold and
# --dry-run sending nothing (checked in /_sim/state), a second action on a busy node refused,
# boot override and virtual media seen by the simulator, the live read shapes, and a BMC that
# hangs failing alone within the timeout (exit 3).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
FIX=$SRC/tests/sim/fixtures
for f in "$KILN" "$BMCSIM" "$FIX/generic" "$FIX/idrac9" "$FIX/ilo5"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln and kiln-bmcsim)" >&2; exit 1; }
done
command -v setsid >/dev/null || { echo "skipped: setsid (util-linux) is not installed"; exit 77; }

# An ipmi_sim node too where OpenIPMI is installed (its helpers define fail: ours come after).
IPMI=0
if command -v ipmi_sim >/dev/null && command -v sdrcomp >/dev/null && command -v ss >/dev/null; then
	# shellcheck source=../ipmi/lib.sh
	. "$SRC/tests/ipmi/lib.sh"
	IPMI=1
fi

FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
same() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', want '$3'"; fi
}

on_exit() {
	[ "$IPMI" = 1 ] && ipmisim_cleanup
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

T=$KILN_TEST_TMP
# The poller stays out of the way (its reads would move the request counters); actions and
# reads here are the API's own. A hung BMC costs request_timeout. Three Redfish loops
# whatever the cores: the nodes are spread over them, each BMC staying on its loop.
cat >"$T/kilnd.conf" <<EOF
[http]
threads = 4
[bmc]
redfish_threads = 3
connect_timeout = 2s
request_timeout = 3s
action_timeout = 30s
[poller]
interval = 3600s
EOF

bmcsim_start "$T/sim-gen" "$FIX/generic" --count 10 --power-delay-ms 200 --hang-ms 20000 || exit 1
GEN_PORTS=("${BMCSIM_PORTS[@]}")
bmcsim_start "$T/sim-idrac" "$FIX/idrac9" --power-delay-ms 200 --settle-ms 0 || exit 1
IDRAC_PORT=$BMCSIM_PORT
bmcsim_start "$T/sim-ilo" "$FIX/ilo5" --power-delay-ms 200 || exit 1
ILO_PORT=$BMCSIM_PORT
bmcsim_start "$T/sim-slow" "$FIX/generic" --power-delay-ms 3000 || exit 1
SLOW_PORT=$BMCSIM_PORT
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1

printf 'password\n' >"$T/bmc.pw"
add() {
	"$KILN" node add "$1" --bmc "redfish+http://127.0.0.1:$2" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add $1 failed" >&2; exit 1; }
}
for i in $(seq 1 10); do
	add "$(printf 'gpu%02d' "$i")" "${GEN_PORTS[$((i - 1))]}"
done
add idrac01 "$IDRAC_PORT"
add ilo01 "$ILO_PORT"
add slow01 "$SLOW_PORT"
"$KILN" node add agent01 >/dev/null || { echo "node add agent01 failed" >&2; exit 1; }

sim() { curl -sf "http://127.0.0.1:$1/_sim/$2"; }
gen_port() { echo "${GEN_PORTS[$(( ${1#gpu} - 1 ))]}"; }
# counters: every generic BMC's POST count and resets, one line (what an action would move)
counters() {
	local p
	for p in "${GEN_PORTS[@]}"; do
		sim "$p" state | jq -c '[.requests.POST, (.resets | length)]'
	done | tr -d '\n'
}

# --- power status: live, one object per node -------------------------------------------
out=$("$KILN" power status 'gpu[01-10]' -o json)
rc=$?
same "power status over 10: exit" "$rc" 0
same "power status over 10: all on" "$(jq -c '[.[] | .power] | unique' <<<"$out")" '["on"]'
same "power status over 10: 10 objects, sorted" "$(jq -r '[.[].node] | join(",")' <<<"$out")" \
	"$(printf 'gpu%02d,' $(seq 1 10) | sed 's/,$//')"
out=$("$KILN" power status 'ilo01,agent01' -o json)
rc=$?
same "power status with an agent-only node: exit 3" "$rc" 3
same "ilo5 fixture starts off" "$(jq -r '.[] | select(.node=="ilo01") | .power' <<<"$out")" off
same "agent-only node: no BMC" "$(jq -r '.[] | select(.node=="agent01") | .error' <<<"$out")" \
	"no BMC"
"$KILN" power status 'ilo01,nosuch' >/dev/null 2>&1
same "an unknown node fails the whole range (test_cli_contract has more)" "$?" 2
"$KILN" power status gpu01 >"$T/table" || fail "power status table: exit $?"
grep -q '^NODE  *POWER' "$T/table" && grep -q '^gpu01  *on' "$T/table" ||
	fail "power status table: $(cat "$T/table")"

# --- confirmation and --dry-run send nothing ---------------------------------------------
before=$(counters)
# 11 targets, above the threshold (1 for a cycle), no terminal: refused
setsid -w "$KILN" power cycle 'gpu[01-10],idrac01' </dev/null >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] || fail "confirmation without --yes or terminal: exit $rc"
grep -q -- '--yes' "$T/err" || fail "refusal does not name --yes: $(cat "$T/err")"
setsid -w "$KILN" power off 'gpu[01-04]' --confirm-above 3 </dev/null >/dev/null 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "--confirm-above 3 over 4 nodes without a terminal: exit $rc, want 1"
KILN_CONFIRM_THRESHOLD=2 setsid -w "$KILN" power off 'gpu[01-03]' </dev/null >/dev/null 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "KILN_CONFIRM_THRESHOLD=2 over 3 nodes without a terminal: exit $rc"
out=$("$KILN" power cycle 'gpu[01-10],idrac01' --dry-run -o json)
rc=$?
same "--dry-run: exit 0" "$rc" 0
same "--dry-run: 11 targets, each with the action" \
	"$(jq '[.[] | select(.action=="cycle" and .dry_run==true)] | length' <<<"$out")" 11
"$KILN" power off gpu01 --dry-run >"$T/out" || fail "--dry-run table: exit $?"
grep -q 'gpu01: would off' "$T/out" || fail "--dry-run prints the action: $(cat "$T/out")"
same "nothing sent by refusals and --dry-run (POSTs, resets)" "$(counters)" "$before"
n=$("$KILN" audit log -o json | jq '[.[] | select(.action | startswith("power."))] | length')
same "no audit row for what was not done" "$n" 0

# --- power cycle over 10: confirmed final state, audit row per node ------------------------
start=$(date +%s)
out=$("$KILN" power cycle 'gpu[01-10]' --yes -o json)
rc=$?
same "power cycle over 10: exit" "$rc" 0
same "power cycle over 10: each confirmed on" \
	"$(jq -c '[.[] | select(.power=="on" and .result=="ok" and .action=="cycle" and (has("error") | not))] | length' <<<"$out")" 10
echo "power cycle over 10 took $(( $(date +%s) - start )) s"
for i in $(seq 1 10); do
	st=$(sim "${GEN_PORTS[$((i - 1))]}" state)
	[ "$(jq -r '.resets | length' <<<"$st")" -ge 1 ] && [ "$(jq -r .power <<<"$st")" = On ] &&
		[ "$(jq -r .power_transitions <<<"$st")" -ge 2 ] ||
		fail "gpu$(printf %02d "$i"): simulator after the cycle: $(jq -c '{power,resets,power_transitions}' <<<"$st")"
done
audit=$("$KILN" audit log -o json)
same "audit: one power.cycle row per node, outcome ok" \
	"$(jq -r '[.[] | select(.action=="power.cycle" and .outcome=="ok") | .target] | sort | join(",")' <<<"$audit")" \
	"$(printf 'gpu%02d,' $(seq 1 10) | sed 's/,$//')"
same "audit: actor is the token's name" \
	"$(jq -r '[.[] | select(.action=="power.cycle") | .actor] | unique | join(",")' <<<"$audit")" admin

# --- on a terminal (script's pty) the count must be typed --------------------------------
if command -v script >/dev/null; then
	before=$(counters)
	(sleep 0.5; printf '3\n') | script -qec "'$KILN' power off 'gpu[01-04]' --confirm-above 3" \
		/dev/null >"$T/tty.out" 2>&1
	rc=$?
	same "terminal: a wrong count refuses: exit" "$rc" 1
	grep -q 'Type 4 to go on' "$T/tty.out" || fail "terminal: the question: $(cat "$T/tty.out")"
	same "terminal: a wrong count sends nothing" "$(counters)" "$before"
	(sleep 0.5; printf '4\n') | script -qec "'$KILN' power on 'gpu[01-04]' --confirm-above 3" \
		/dev/null >"$T/tty.out" 2>&1
	rc=$?
	same "terminal: the right count goes on: exit" "$rc" 0
	n=$("$KILN" audit log -o json | jq '[.[] | select(.action=="power.on" and .outcome=="ok")] | length')
	same "terminal: an audit row per node" "$n" 4
else
	echo "note: script (util-linux) missing: the typed-count prompt is not exercised"
fi

# --- power on an off node (iLO-shaped), a cycle of an off node needs --on-if-off ------------
"$KILN" power cycle ilo01 --yes -o json >"$T/out"
rc=$?
same "cycle of an off node without --on-if-off: exit 1" "$rc" 1
same "  ... and it stays off" "$(sim "$ILO_PORT" state | jq -r .power)" Off
out=$("$KILN" power on ilo01 --yes -o json)
same "power on ilo01" "$(jq -r '.[0].power + "/" + .[0].result' <<<"$out")" on/ok
same "  ... simulator says On" "$(sim "$ILO_PORT" state | jq -r .power)" On

# --- a second action on a node with one in flight is refused -------------------------------
"$KILN" power cycle slow01 --yes -o json >"$T/slow.json" 2>"$T/slow.err" &
slow_pid=$!
for _ in $(seq 1 100); do
	[ "$(sim "$SLOW_PORT" state | jq '.resets | length')" -ge 1 ] && break
	sleep 0.1
done
slow_posts=$(sim "$SLOW_PORT" state | jq .requests.POST)
"$KILN" power off slow01 --yes >"$T/out" 2>"$T/err"
rc=$?
same "second action on a busy node: exit 1 (409)" "$rc" 1
grep -q 'in flight' "$T/err" || fail "409 message: $(cat "$T/err")"
out=$("$KILN" power on slow01,gpu01 --yes -o json)
rc=$?
same "busy node among free ones: exit 3" "$rc" 3
same "  ... the busy one refused" "$(jq -r '.[] | select(.node=="slow01") | .error' <<<"$out")" \
	"action in flight"
same "  ... the free one done" "$(jq -r '.[] | select(.node=="gpu01") | .power' <<<"$out")" on
same "  ... nothing queued for the busy BMC" "$(sim "$SLOW_PORT" state | jq .requests.POST)" \
	"$slow_posts"
wait "$slow_pid"
rc=$?
same "the first action completes" "$rc" 0
same "  ... confirmed on" "$(jq -r '.[0].power + "/" + .[0].result' "$T/slow.json")" on/ok
same "  ... one reset only" "$(sim "$SLOW_PORT" state | jq -c .resets)" '["PowerCycle"]'

# --- boot override -------------------------------------------------------------------------
out=$("$KILN" boot 'gpu[01-02]' pxe --yes -o json)
same "boot pxe: exit" "$?" 0
same "boot pxe: answer" "$(jq -c '[.[] | .boot] | unique' <<<"$out")" '["pxe"]'
same "boot pxe: simulator" \
	"$(sim "${GEN_PORTS[0]}" state | jq -r '.boot.BootSourceOverrideTarget + "/" + .boot.BootSourceOverrideEnabled')" \
	Pxe/Once
"$KILN" boot idrac01 disk --persistent --yes >/dev/null || fail "boot disk --persistent: exit $?"
same "boot disk --persistent: simulator" \
	"$(sim "$IDRAC_PORT" state | jq -r '.boot.BootSourceOverrideTarget + "/" + .boot.BootSourceOverrideEnabled')" \
	Hdd/Continuous
n=$("$KILN" audit log -o json | jq '[.[] | select(.action=="boot.set" and .outcome=="ok")] | length')
same "boot: an audit row per node" "$n" 3

# --- virtual media -------------------------------------------------------------------------
URL=http://127.0.0.1:1/images/installer.iso
for node in idrac01 gpu02; do
	port=$IDRAC_PORT
	[ "$node" = gpu02 ] && port=${GEN_PORTS[1]}
	out=$("$KILN" media insert "$node" "$URL" -o json)
	same "$node: media insert" "$?/$(jq -r '.[0].media.inserted' <<<"$out")" 0/true
	same "$node: simulator has the image" \
		"$(sim "$port" state | jq -r --arg u "$URL" '[.media[] | select(.Inserted == true and .Image == $u)] | length')" 1
	out=$("$KILN" media status "$node" -o json)
	same "$node: media status" "$(jq -r '.[0].media.inserted, .[0].media.image' <<<"$out" | tr '\n' ' ')" \
		"true $URL "
	"$KILN" media eject "$node" >/dev/null || fail "$node: media eject: exit $?"
	same "$node: ejected in the simulator" \
		"$(sim "$port" state | jq '[.media[] | select(.Inserted == true)] | length')" 0
done
"$KILN" media insert gpu03 'not a url' >/dev/null 2>&1
same "media insert with a bad URL (kilnd's 400: a usage error): exit" "$?" 2
n=$("$KILN" audit log -o json | jq '[.[] | select(.action=="media.insert" or .action=="media.eject") | select(.outcome=="ok")] | length')
same "media: audit rows" "$n" 4

# --- sensors, sel, inventory shapes --------------------------------------------------------
out=$("$KILN" sensors gpu01,idrac01,ilo01 -o json)
same "sensors: exit" "$?" 0
jq -e 'length == 3 and all(.[]; (.sensors | length > 0) and all(.sensors[];
	has("name") and has("value") and has("unit") and has("health") and
	(.kind | IN("temperature","fan","power","voltage","psu","other")))) and
	any(.[0].sensors[]; .kind == "temperature" and (.value | type) == "number")' <<<"$out" >/dev/null ||
	fail "sensors shape: $(head -c 600 <<<"$out")"
out=$("$KILN" sel gpu01,idrac01,ilo01 -o json)
same "sel: exit" "$?" 0
jq -e 'length == 3 and all(.[]; (.entries | length > 0) and all(.entries[];
	has("id") and has("time") and has("severity") and has("message")))' <<<"$out" >/dev/null ||
	fail "sel shape: $(head -c 600 <<<"$out")"
out=$("$KILN" sel gpu01 --since 1h -o json)
same "sel --since 1h: the fixture's old entries left out" "$(jq '.[0].entries | length' <<<"$out")" 0
curl -sf -X POST "http://127.0.0.1:${GEN_PORTS[0]}/_sim/inject" \
	-d '{"log":{"message":"kiln test entry","severity":"Critical"}}' >/dev/null ||
	fail "inject a log entry"
out=$("$KILN" sel gpu01 --since 1h -o json)
same "sel --since 1h: the new entry" "$(jq -r '[.[0].entries[].message] | join(",")' <<<"$out")" \
	"kiln test entry"
out=$("$KILN" inventory gpu01,idrac01,ilo01 -o json)
same "inventory: exit" "$?" 0
jq -e 'length == 3 and all(.[]; has("manufacturer") and has("model") and has("serial") and
	has("bios_version") and has("bmc_firmware") and (.serial | type) == "string")' <<<"$out" >/dev/null ||
	fail "inventory shape: $(head -c 600 <<<"$out")"
want_serial=$(jq -r .SerialNumber "$FIX/generic/Systems/sys0/index.json")
same "inventory: serial from the tree" "$(jq -r '.[] | select(.node=="gpu01") | .serial' <<<"$out")" \
	"$want_serial"
"$KILN" inventory gpu01 >"$T/table" && grep -q "$want_serial" "$T/table" ||
	fail "inventory table: $(cat "$T/table")"

# --- a BMC that hangs fails alone, within the timeout --------------------------------------
curl -sf -X POST "http://127.0.0.1:$(gen_port gpu03)/_sim/inject" -d '{"fault":"hang"}' >/dev/null ||
	fail "inject hang"
start=$(date +%s)
out=$("$KILN" power status 'gpu[01-10]' -o json)
rc=$?
took=$(( $(date +%s) - start ))
same "one BMC hangs: exit 3" "$rc" 3
same "  ... its node has the error" "$(jq -r '.[] | select(.node=="gpu03") | has("error")' <<<"$out")" true
same "  ... the others answer" "$(jq '[.[] | select(.power=="on")] | length' <<<"$out")" 9
[ "$took" -le 12 ] || fail "  ... took $took s (request timeout 3 s)"
echo "power status with one hung BMC took $took s"
out=$("$KILN" power reset 'gpu[02-04]' --yes -o json)
rc=$?
same "reset with one hung BMC: exit 3" "$rc" 3
same "  ... the audit row says failed" \
	"$("$KILN" audit log -o json | jq -r '[.[] | select(.action=="power.reset" and .target=="gpu03")][0].outcome' | cut -c1-7)" \
	"failed:"
curl -sf -X POST "http://127.0.0.1:$(gen_port gpu03)/_sim/inject" -d '{"fault":"none"}' >/dev/null

# --- an IPMI node through the same endpoints (optional) --------------------------------------
if [ "$IPMI" = 1 ]; then
	if ipmisim_start 1; then
		trap on_exit EXIT # ipmisim_start installs its own
		printf '%s\n' "$IPMISIM_PASSWORD" >"$T/ipmi.pw"
		"$KILN" node add ipmi01 --bmc "ipmi://127.0.0.1:${IPMISIM_PORTS[0]}" --bmc-user admin \
			--bmc-password-file "$T/ipmi.pw" --ipmi-workarounds opensesspriv >/dev/null ||
			fail "node add ipmi01"
		out=$("$KILN" power status ipmi01,gpu01 -o json)
		same "ipmi: power status next to redfish" "$?/$(jq -r '[.[].power] | join(",")' <<<"$out")" 0/on,off
		out=$("$KILN" power on ipmi01 --yes -o json)
		same "ipmi: power on, confirmed" "$?/$(jq -r '.[0].power' <<<"$out")" 0/on
		same "ipmi: the result word is Redfish's" "$(jq -r '.[0].result' <<<"$out")" ok
		same "ipmi: the simulator's chassis is on" "$(cat "${IPMISIM_DIRS[0]}/chassis/power")" 1
		n=$("$KILN" audit log -o json | jq '[.[] | select(.target=="ipmi01" and .action=="power.on" and .outcome=="ok")] | length')
		same "ipmi: audit row" "$n" 1
		out=$("$KILN" power on ipmi01,ilo01 --yes -o json)
		same "power on of on nodes: noop from both drivers" \
			"$(jq -r '[.[].result] | join(",")' <<<"$out")" noop,noop
	else
		fail "ipmi_sim did not start"
	fi
else
	echo "note: OpenIPMI (ipmi_sim) missing: no IPMI node in this run"
fi

# --- usage errors ----------------------------------------------------------------------------
"$KILN" power bounce gpu01 >/dev/null 2>&1
same "unknown power action: exit 2" "$?" 2
"$KILN" boot gpu01 floppy >/dev/null 2>&1
same "unknown boot device: exit 2" "$?" 2
"$KILN" sel gpu01 --since soon >/dev/null 2>&1
same "bad --since: exit 2" "$?" 2

kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	tail -20 "$KILND_LOG" >&2
	exit 1
fi
echo "all BMC command checks passed"
