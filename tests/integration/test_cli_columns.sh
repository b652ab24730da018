# SPDX-License-Identifier: Apache-2.0
# Integration: the CLI's streamed tables keep their columns apart (issue 32). kiln-bmcsim
# serves one BMC with values wider than the columns kiln inventory, sensors and sel size
# beforehand (a 16-character serial, "System Board PS Redundancy", a long log id) and one
# with the generic fixture's; each table line must be the cells of one row of the command's
# -o json answer, two spaces or more between each cell and the next.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
FIX=$SRC/tests/sim/fixtures
for f in "$KILN" "$BMCSIM" "$FIX/generic"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln and kiln-bmcsim)" >&2; exit 1; }
done
FAILS=0
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
T=$KILN_TEST_TMP

# The generic fixture with values wider than their columns.
cp -r "$FIX/generic" "$T/wide"
patch_json() { # FILE JQ-FILTER
	jq "$2" "$1" >"$T/patched" && mv "$T/patched" "$1"
}
patch_json "$T/wide/Systems/sys0/index.json" \
	'.SerialNumber = "S889914X37109101" | .BiosVersion = "21.6.5" |
	 .Manufacturer = "Kilnworks Systems International" | .Model = "KW-8G4U-H200-2T-LIQUID-COOLED"'
patch_json "$T/wide/Chassis/chassis0/Sensors/CPU1_Temp/index.json" \
	'.Name = "System Board PS Redundancy"'
patch_json "$T/wide/Chassis/chassis0/ThermalSubsystem/ThermalMetrics/index.json" \
	'(.. | objects | select(.DeviceName? == "CPU1 Temp") | .DeviceName) |= "System Board PS Redundancy"'
patch_json "$T/wide/Systems/sys0/LogServices/EventLog/Entries/index.json" \
	'.Members[0].Id = "1234567890123"'

bmcsim_start "$T/sim-wide" "$T/wide" || exit 1
WIDE_PORT=$BMCSIM_PORT
bmcsim_start "$T/sim-gen" "$FIX/generic" || exit 1
GEN_PORT=$BMCSIM_PORT
printf '[poller]\ninterval = 3600s\n' >"$T/kilnd.conf" # its reads stay out of the way
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
printf 'password\n' >"$T/bmc.pw"
for n in "wide01:$WIDE_PORT" "gen01:$GEN_PORT"; do
	"$KILN" node add "${n%%:*}" --bmc "redfish+http://127.0.0.1:${n#*:}" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" >/dev/null || { echo "node add ${n%%:*} failed" >&2; exit 1; }
done

# The cells as the table shows them: numbers as out_number (one decimal from 10 up), null
# as "-".
JQ_CELL='def cell: if . == null then "-" elif type == "number" then
	(if fabs >= 10 then (. * 10 | round) / 10 else . end | tostring) else tostring end;'

# columns DESC TABLE ROWS: every line of TABLE (the header first) is one line of ROWS (tab-
# separated cells) laid out with two spaces or more after each cell but the last, and TABLE
# has as many lines as ROWS.
columns() {
	local desc=$1 bad
	bad=$(awk -F'\t' '
		NR == FNR { want[++n] = $0; next }
		function fits(line, row,   cells, k, c, pos, sp) {
			k = split(row, cells, "\t")
			pos = 1
			for (c = 1; c <= k; c++) {
				if (substr(line, pos, length(cells[c])) != cells[c])
					return 0
				pos += length(cells[c])
				if (c == k)
					return pos == length(line) + 1
				if (cells[c + 1] == "")
					continue # an empty cell: the spaces before it run on
				for (sp = 0; substr(line, pos, 1) == " "; pos++)
					sp++
				if (sp < 2)
					return 0
			}
			return 1
		}
		{
			lines++
			ok = 0
			for (i = 1; i <= n && !ok; i++)
				if (!used[i] && fits($0, want[i])) {
					used[i] = 1
					ok = 1
				}
			if (!ok)
				print "line " FNR " is no row laid out two spaces apart: " $0
		}
		END { if (lines != n) print lines " lines for " n " rows" }' "$3" "$2")
	if [ -z "$bad" ]; then pass "$desc"; else fail "$desc: $bad"; cat "$2" >&2; fi
}

# kiln inventory: the serial and the model wider than their columns.
"$KILN" inventory 'wide01,gen01' >"$T/inv.txt" || fail "inventory: exit $?"
"$KILN" inventory 'wide01,gen01' -o json | jq -r "$JQ_CELL"'
	(["NODE", "MANUFACTURER", "MODEL", "SERIAL", "BIOS", "BMC FW", "CPUS", "MEMORY GIB",
	  "GPUS"] | join("\t")),
	(.[] | [.node, .manufacturer, .model, .serial, .bios_version, .bmc_firmware, .cpu_count,
		.memory_gib, (.gpus | length)] | map(cell) | join("\t"))' >"$T/inv.rows"
columns "inventory: columns apart" "$T/inv.txt" "$T/inv.rows"
grep -q 'S889914X37109101  21\.6\.5' "$T/inv.txt" && pass "inventory: serial, two spaces, BIOS" ||
	fail "inventory: serial and BIOS: $(cat "$T/inv.txt")"

# kiln sensors: a sensor name wider than its column.
"$KILN" sensors 'wide01,gen01' >"$T/sens.txt" || fail "sensors: exit $?"
"$KILN" sensors 'wide01,gen01' -o json | jq -r "$JQ_CELL"'
	(["NODE", "SENSOR", "KIND", "VALUE", "UNIT", "HEALTH"] | join("\t")),
	(.[] | .node as $n | .sensors[] | [$n, .name, .kind, .value, .unit, .health] | map(cell) |
	 join("\t"))' >"$T/sens.rows"
columns "sensors: columns apart" "$T/sens.txt" "$T/sens.rows"
grep -q 'System Board PS Redundancy  temperature' "$T/sens.txt" &&
	pass "sensors: the wide name, two spaces, its kind" ||
	fail "sensors: the wide name: $(cat "$T/sens.txt")"

# kiln sel: ids wider than their column, the first much wider.
"$KILN" sel 'wide01,gen01' >"$T/sel.txt" || fail "sel: exit $?"
"$KILN" sel 'wide01,gen01' -o json | jq -r "$JQ_CELL"'
	(["NODE", "ID", "TIME", "SEVERITY", "MESSAGE"] | join("\t")),
	(.[] | .node as $n | .entries[] | [$n, .id, .time, .severity, .message] | map(cell) |
	 join("\t"))' >"$T/sel.rows"
columns "sel: columns apart" "$T/sel.txt" "$T/sel.rows"

if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	exit 1
fi
echo "all column checks passed"
