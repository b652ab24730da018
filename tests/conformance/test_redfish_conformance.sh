#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Conformance: kiln's Redfish driver against kiln-bmcsim serving EVERY tree in
# ../shared/redfish-mockups; expected values are read straight from the tree's files.
set -u

MOCKUPS="${KILN_SHARED:-}/redfish-mockups"
if [ -z "${KILN_SHARED:-}" ] || [ ! -d "$MOCKUPS" ]; then
	echo "SKIP: ${MOCKUPS} is absent (the read-only ../shared folder is not here)"
	exit 77
fi
SIM="$KILN_BIN/kiln-bmcsim"
RF="$KILN_BIN/kiln-rfdrive"
for b in "$SIM" "$RF"; do
	[ -x "$b" ] || { echo "SKIP: $b is not built"; exit 77; }
done
command -v jq >/dev/null || { echo "SKIP: jq is not installed"; exit 77; }

WORK=$(mktemp -d)
SIM_PID=""
cleanup() {
	[ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

FAILS=0
TREE=""
fail() { echo "FAIL [$TREE]: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok   [$TREE]: $*"; }

# The file holding a resource: /redfish/v1/Systems/1/ -> TREE/Systems/1/index.json
res_file() {
	local p="${1#/redfish/v1}"
	p="${p%/}"
	echo "$2${p}/index.json"
}
# Case-insensitive fallback (iLO links mix case)
res_json() {
	local f
	f=$(res_file "$1" "$2")
	if [ ! -f "$f" ]; then
		f=$(find "$2" -ipath "$(res_file "$1" "$2")" 2>/dev/null | head -1)
	fi
	[ -n "$f" ] && [ -f "$f" ] && cat "$f"
}

start_sim() {
	rm -f "$WORK/ports"
	"$SIM" --mockup "$1" --listen 127.0.0.1:0 --ports-file "$WORK/ports" --power-delay-ms 200 \
		--settle-ms 300 >"$WORK/sim.log" 2>&1 &
	SIM_PID=$!
	for _ in $(seq 1 150); do
		[ -s "$WORK/ports" ] && break
		kill -0 "$SIM_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -s "$WORK/ports" ]; then
		echo "kiln-bmcsim did not start on $1:"; tail -5 "$WORK/sim.log"
		return 1
	fi
	PORT=$(head -1 "$WORK/ports")
	URL="redfish+http://127.0.0.1:$PORT"
	CTL="http://127.0.0.1:$PORT/_sim"
}

stop_sim() {
	kill "$SIM_PID" 2>/dev/null
	wait "$SIM_PID" 2>/dev/null
	SIM_PID=""
}

rf() { "$RF" --url "$URL" --timeout-ms 5000 --action-timeout-ms 30000 "$@" 2>"$WORK/rf.err"; }

SKIP_LOGS='^(Journal|HostLogger|Crashdump|FaultList|SL|AuditLog)$'

# How many distinct sensors of each name the tree has: the most members one legacy array
# resource (Thermal, Power) gives that name, or the number of Sensor resources named so.
# kiln may print a name that often ("NAME", "NAME #2", ...), never more: more is one physical
# reading printed twice.
sensor_names_allowed() {
	find "$1" -name index.json -print0 | xargs -0 jq -c '
		if (.Temperatures or .Fans or .Voltages or .PowerControl or .PowerSupplies) then
			[(.Temperatures, .Fans, .Voltages, .PowerControl, .PowerSupplies, .Redundancy)
			 // [] | .[] | (.Name // .FanName // .MemberId // empty)] |
			group_by(.) | map({key: .[0], legacy: length})
		elif (.ReadingType and ((."@odata.id" // "") | test("/Sensors/"))) then
			[{key: (.Name // .Id), sensors: 1}]
		else empty end' 2>/dev/null |
		jq -s 'map(.[]) | group_by(.key) | map({key: .[0].key,
			value: ([([.[].legacy // 0] | max), ([.[].sensors // 0] | add)] | max)}) |
			from_entries'
}

# Distinct entries in the wanted log services of a LogServices collection.
count_logs() {
	local coll="$1" t="$2" n=0 svc id entries c
	[ -z "$coll" ] && { echo 0; return; }
	for svc in $(res_json "$coll" "$t" | jq -r '.Members[]?."@odata.id"'); do
		id=$(basename "${svc%/}")
		echo "$id" | grep -Eiq "$SKIP_LOGS|Dump" && continue
		entries=$(res_json "$svc" "$t" | jq -r '.Entries."@odata.id" // empty')
		[ -z "$entries" ] && continue
		c=$(res_json "$entries" "$t" | jq '[.Members[]? | (.Id // ."@odata.id")] | unique | length')
		n=$((n + ${c:-0}))
	done
	echo $n
}

for dir in "$MOCKUPS"/*/; do
	[ -f "$dir/index.json" ] || continue
	t="${dir%/}"
	TREE=$(basename "$t")

	# --- expected values from the files ---------------------------------------------
	root=$(cat "$t/index.json")
	systems=$(echo "$root" | jq -r '.Systems."@odata.id"')
	sys=$(res_json "$systems" "$t" | jq -r '.Members[0]."@odata.id"')
	sysj=$(res_json "$sys" "$t")
	want_serial=$(echo "$sysj" | jq -r '.SerialNumber // empty')
	want_model=$(echo "$sysj" | jq -r '.Model // empty')
	want_state=$(echo "$sysj" | jq -r '.PowerState')
	case "$want_state" in On) want_power=on ;; Off) want_power=off ;; *) want_power=unknown ;; esac
	chassis=$(echo "$sysj" | jq -r '.Links.Chassis[0]."@odata.id" // empty')
	[ -z "$chassis" ] && chassis=$(res_json "$(echo "$root" | jq -r '.Chassis."@odata.id"')" "$t" |
		jq -r '.Members[0]."@odata.id"')
	thermal=$(res_json "$chassis" "$t" | jq -r '.Thermal."@odata.id" // empty')
	temp_name="" temp_value=""
	if [ -n "$thermal" ]; then
		read -r temp_value temp_name < <(res_json "$thermal" "$t" | jq -r '[.Temperatures[]? |
			select((.ReadingCelsius | type) == "number" and .Status.State != "Absent")][0] |
			select(. != null) | "\(.ReadingCelsius) \(.Name)"')
	fi
	manager=$(echo "$sysj" | jq -r '.Links.ManagedBy[0]."@odata.id" // empty')
	[ -z "$manager" ] && manager=$(res_json "$(echo "$root" | jq -r '.Managers."@odata.id"')" "$t" |
		jq -r '.Members[0]."@odata.id"')
	mgrj=$(res_json "$manager" "$t")
	want_logs=$(( $(count_logs "$(echo "$sysj" | jq -r '.LogServices."@odata.id" // empty')" "$t") +
		      $(count_logs "$(echo "$mgrj" | jq -r '.LogServices."@odata.id" // empty')" "$t") ))
	vm=$(echo "$sysj" | jq -r '.VirtualMedia."@odata.id" // empty')
	[ -z "$vm" ] && vm=$(echo "$mgrj" | jq -r '.VirtualMedia."@odata.id" // empty')
	has_vm=0
	[ -n "$vm" ] && res_json "$vm" "$t" >/dev/null && has_vm=1
	pxe=$(echo "$sysj" | jq -r '(.Boot."BootSourceOverrideTarget@Redfish.AllowableValues" // ["Pxe"]) |
		index("Pxe") != null')

	if ! start_sim "$t"; then
		fail "simulator did not start"
		continue
	fi

	# --- what kiln reports --------------------------------------------------------------
	out=$(rf power-get)
	got=$(echo "$out" | jq -r '.[0].power // .[0].error')
	[ "$got" = "$want_power" ] && ok "power $got (PowerState $want_state)" ||
		fail "power: kiln says '$got', the tree says PowerState '$want_state'"

	out=$(rf inventory)
	got=$(echo "$out" | jq -r '.[0].serial // ""')
	[ "$got" = "$want_serial" ] && ok "serial '$got'" ||
		fail "serial: kiln '$got', tree '$want_serial' ($(echo "$out" | jq -r '.[0].error // ""'))"
	got=$(echo "$out" | jq -r '.[0].model // ""')
	[ "$got" = "$want_model" ] && ok "model '$got'" || fail "model: kiln '$got', tree '$want_model'"

	out=$(rf sensors)
	if [ -n "$temp_name" ]; then
		got=$(echo "$out" | jq -r --arg n "$temp_name" \
			'[.[0].sensors[]? | select(.name == $n and .kind == "temperature")][0].value // "missing"')
		if [ "$got" != "missing" ] && awk -v a="$got" -v b="$temp_value" 'BEGIN{exit !(a == b)}'; then
			ok "temperature '$temp_name' = $got"
		else
			fail "temperature '$temp_name': kiln '$got', tree $temp_value"
		fi
	else
		n=$(echo "$out" | jq '.[0].sensors | length')
		echo "$out" | jq -e '.[0].sensors' >/dev/null && ok "no temperature in the tree; $n other sensors" ||
			fail "sensors: $(echo "$out" | jq -r '.[0].error')"
	fi

	# one line per physical reading: no name more often than the tree has distinct sensors
	allowed=$(sensor_names_allowed "$t")
	extra=$(echo "$out" | jq -c --argjson allowed "${allowed:-{\}}" '[.[0].sensors[]?.name |
		sub(" #[0-9]+$"; "")] | group_by(.) | map(select(length > 1 and
		length > ($allowed[.[0]] // 1)) | "\(.[0]) x\(length)")')
	[ "$extra" = "[]" ] && ok "no duplicate sensor reading" ||
		fail "a reading printed more often than the tree has sensors of its name: $extra"

	out=$(rf sel)
	got=$(echo "$out" | jq -r '.[0].entries | length')
	[ "$got" = "$want_logs" ] && ok "log entries $got" ||
		fail "log entries: kiln '$got', tree $want_logs ($(echo "$out" | jq -r '.[0].error // ""'))"
	# the count is what is listed; an unknown count (-1) names the service that did not read
	count=$(echo "$out" | jq -r '.[0].count')
	if [ "$count" = "$got" ]; then
		ok "log count $count equals the list"
	elif [ "$count" = -1 ] && echo "$out" | jq -e '.[0].skipped | length > 0' >/dev/null; then
		ok "log count not known: $(echo "$out" | jq -r '.[0].skipped[0]' | cut -c1-100)"
	else
		fail "log count $count, $got listed ($(echo "$out" | jq -c '.[0].skipped'))"
	fi

	# --- actions --------------------------------------------------------------------------
	if [ "$want_power" = "off" ]; then
		out=$(rf power on)
		got=$(echo "$out" | jq -r '.[0].power // .[0].error')
		[ "$got" = "on" ] && ok "power on from off" || fail "power on: $got"
	fi
	curl -s -X DELETE "$CTL/requests" >/dev/null
	before=$(curl -s "$CTL/state" | jq '.power_transitions')
	out=$(rf power cycle)
	got=$(echo "$out" | jq -r '.[0].result // .[0].error')
	state=$(curl -s "$CTL/state")
	after=$(echo "$state" | jq '.power_transitions')
	resets=$(curl -s "$CTL/requests" | jq '[.[] | select(.method == "POST" and (.path | test("Reset")))] | length')
	if [ "$got" = "ok" ] && [ "$resets" -ge 1 ] && [ $((after - before)) -ge 2 ] &&
	   [ "$(echo "$state" | jq -r .power)" = "On" ]; then
		ok "power cycle ($(echo "$out" | jq -r '.[0].reset_type'); $resets Reset POST, $((after - before)) transitions)"
	else
		fail "power cycle: result '$got', Reset POSTs $resets, transitions $((after - before)), power $(echo "$state" | jq -r .power)"
	fi

	if [ "$pxe" = "true" ]; then
		out=$(rf boot pxe)
		got=$(echo "$out" | jq -r '.[0].target // .[0].error')
		simboot=$(curl -s "$CTL/state" | jq -r '.boot.BootSourceOverrideTarget')
		[ "$got" = "Pxe" ] && [ "$simboot" = "Pxe" ] && ok "boot override Pxe once" ||
			fail "boot pxe: kiln '$got', simulator '$simboot'"
	fi

	if [ "$has_vm" = 1 ]; then
		img="http://127.0.0.1/images/kiln-test.iso"
		# a CD that holds an image already: the plain insert is refused naming it (one the
		# simulator shows inserted), --force replaces it
		out=$(rf media-insert "$img")
		err=$(echo "$out" | jq -r '.[0].error // ""')
		if [ -n "$err" ]; then
			held=$(echo "$err" | sed -n "s/.* already holds '\(.*\)'; eject it first.*/\1/p")
			curl -s "$CTL/state" | jq -e --arg h "$held" '[.media[] | select(.Inserted and .Image == $h)] |
				length == 1' >/dev/null && ok "insert over '$held' refused" || fail "media insert: $err"
		fi
		out=$(rf --force media-insert "$img")
		got=$(echo "$out" | jq -r '.[0].media.image // .[0].error')
		simimg=$(curl -s "$CTL/state" | jq -r --arg i "$img" '[.media[] | select(.Image == $i and .Inserted)] | length')
		[ "$got" = "$img" ] && [ "$simimg" = 1 ] && ok "virtual media inserted" ||
			fail "media insert: kiln '$got', simulator shows $simimg inserted"
		out=$(rf media-eject)
		got=$(echo "$out" | jq -r 'if .[0].error then .[0].error else .[0].media.inserted end')
		[ "$got" = "false" ] && ok "virtual media ejected" || fail "media eject: $got"
	else
		echo "note [$TREE]: no VirtualMedia in this tree"
	fi
	stop_sim
done

if [ "$FAILS" -gt 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all trees conform"
