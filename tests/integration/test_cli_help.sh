# SPDX-License-Identifier: Apache-2.0
# Integration: every help of the CLI reads in a terminal (issue 37: 44 lines over 100
# characters in 16 of 21 helps, one of 891): wrapped at 80 columns when not written to a
# terminal (here), at the terminal's width on one (script(1) gives it 120, then 70), never a
# line over 100 on a pipe; each table of verbs or options starts its descriptions in one
# column, continued lines under them. No kilnd is needed.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

KILN=$KILN_BIN/kiln
FAILS=0
T=$KILN_TEST_TMP

# every command, and every verb of a command, as kiln lists them
"$KILN" --list-commands >"$T/list" || fail "kiln --list-commands"
{
	echo ""
	awk -F'\t' '$1 == "cmd" || $1 == "usage" { print $2 }' "$T/list"
} | sort -u >"$T/paths"
[ "$(wc -l <"$T/paths")" -gt 30 ] && pass "$(wc -l <"$T/paths") helps to read" ||
	fail "only $(wc -l <"$T/paths") command paths listed"

LONG=0
while IFS= read -r path; do
	# shellcheck disable=SC2086 # the path's words are the command and its verb
	"$KILN" $path --help >"$T/help" 2>&1 || { fail "kiln $path --help exits $?"; continue; }
	n=$(awk 'length($0) > 100' "$T/help" | wc -l)
	if [ "$n" -gt 0 ]; then
		LONG=$((LONG + n))
		echo "kiln $path --help: $n line(s) over 100 characters, e.g.:" >&2
		awk 'length($0) > 100 { print "  " $0; exit }' "$T/help" >&2
	fi
	# an options table: each option's description starts at column 36 (one too long for its
	# column goes on the next line), and a line that continues one starts there too
	bad=$(awk '/^(options|global options):$/ { t = 1; next } /^$/ { t = 0 }
		t && /^  / { rest = $0; sub(/^ +/, "", rest)
			if ((index(rest, "  ") || /^ {35}/) &&
			    (substr($0, 36, 1) == " " || substr($0, 35, 1) != " ")) print }' "$T/help")
	[ -z "$bad" ] || fail "kiln $path --help: options out of their column: $bad"
done <"$T/paths"
same "no help line is longer than 100 characters" "$LONG" 0
same "on a pipe, wrapped at 80 columns" \
	"$("$KILN" power --help | awk 'length($0) > 80' | wc -l)" 0

# on a terminal, its width: script(1) runs kiln on a pseudo-terminal of 120, then 70 columns
if command -v script >/dev/null; then
	for cols in 120 70; do
		script -qec "stty cols $cols; $KILN power --help" /dev/null | tr -d '\r' >"$T/tty$cols"
		same "on a $cols-column terminal: no line wider" \
			"$(awk -v w="$cols" 'length($0) > w' "$T/tty$cols" | wc -l)" 0
	done
	[ "$(awk 'length($0) > 80' "$T/tty120" | wc -l)" -gt 0 ] &&
		pass "... and the 120 columns are used" || fail "120 columns: no line past 80"
else
	echo "note: script(1) (util-linux) is not installed: the terminal width is not tested"
fi

# the verbs' table: descriptions in one column, whatever the verbs' and synopses' widths
"$KILN" agent --help >"$T/agent"
same "kiln agent --help: one column for the descriptions" \
	"$(awk '/^verbs:$/ { t = 1; next } /^$/ { t = 0 }
		t { n = split($0, a, /  +/); print length($0) - length(a[n]) }' "$T/agent" |
		sort -u | wc -l)" 1

# kilnd's help names the example configuration where the package installs it (issue 37: it
# named deploy/kilnd.conf.example, which an installed system lacks)
"$KILND" --help >"$T/kilnd-help" 2>&1
same "kilnd --help names the installed example" \
	"$(grep -c '/usr/share/doc/kiln-server/examples/' "$T/kilnd-help")" 1
same "... fitting 100 columns" "$(awk 'length($0) > 100' "$T/kilnd-help" | wc -l)" 0

[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
