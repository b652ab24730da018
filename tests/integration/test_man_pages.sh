#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The man pages against the code: kiln(1)'s commands and options are the CLI's own tables
# (kiln --list-commands), kilnd(8) and kiln-agent(8) name the options their --help lists,
# kilnd.conf(5) has every key of kilnd --print-config-example, deploy/cli.conf.example every
# key the CLI reads, and `man -l` renders each page built here without a warning.
set -uo pipefail
. "$KILN_SRC/tests/integration/lib.sh"
FAILS=0
MAN=$KILN_SRC/docs/man
T=$KILN_TEST_TMP

"$KILN_BIN/kiln" --list-commands >"$T/list"
check "kiln --list-commands exits 0" $? "see above"

# "PATH<TAB>--option" for every option of every command path ("-" for the global options),
# and "PATH<TAB>" for the path itself, from the tables...
awk -F'\t' '$1 == "usage" { print $2 "\t" }
	$1 == "opt" { print $2 "\t" $3 }
	$1 == "global" { print "-\t" $2 }' "$T/list" | sort -u >"$T/tables"
# ...and from kiln.1.scd: "*kiln PATH* ..." opens a command's entry, an indented "*--name*"
# (or "*-x*, *--name*") line defines an option, "Takes the options of *kiln OTHER*" inherits.
awk '
	/^# GLOBAL OPTIONS/ { sect = "global"; path = "-"; next }
	/^# COMMANDS/ { sect = "commands"; path = ""; next }
	/^# / { sect = ""; next }
	sect == "global" && match($0, /^(\*-[a-zA-Z]\*, )?\*--[a-z0-9-]+\*/) {
		s = substr($0, RSTART, RLENGTH); sub(/.*\*--/, "--", s); sub(/\*$/, "", s)
		print "-\t" s; next
	}
	sect == "commands" && match($0, /^\*kiln [a-z -]+\*/) {
		path = substr($0, 7, RLENGTH - 7); print path "\t"; next
	}
	sect == "commands" && path != "" && match($0, /^\t(\*-[a-zA-Z]\*, )?\*--[a-z0-9-]+\*/) {
		s = substr($0, RSTART, RLENGTH); sub(/.*\*--/, "--", s); sub(/\*$/, "", s)
		print path "\t" s; next
	}
	sect == "commands" && path != "" && match($0, /options of \*kiln [a-z -]+\*/) {
		s = substr($0, RSTART + 17, RLENGTH - 18); inherit[path] = s
	}
	END { for (p in inherit) print "INHERIT\t" p "\t" inherit[p] }
' "$MAN/kiln.1.scd" >"$T/man.raw"
grep -v '^INHERIT' "$T/man.raw" >"$T/man"
while IFS=$'\t' read -r _ to from; do
	awk -F'\t' -v from="$from" -v to="$to" '$1 == from && $2 != "" { print to "\t" $2 }' \
		"$T/man.raw" >>"$T/man"
done < <(grep '^INHERIT' "$T/man.raw")
sort -u -o "$T/man" "$T/man"
missing=$(comm -23 "$T/tables" "$T/man" | tr '\t' ' ' | paste -sd, -)
extra=$(comm -13 "$T/tables" "$T/man" | tr '\t' ' ' | paste -sd, -)
same "kiln(1) documents every command path and option of the tables" "$missing" ""
same "kiln(1) documents nothing the tables lack" "$extra" ""
[ "$(wc -l <"$T/tables")" -gt 100 ]
check "the tables list the commands and their options" $? "only $(wc -l <"$T/tables") lines"

# kilnd(8) and kiln-agent(8): the options of --help, both ways
for b in kilnd:kilnd.8 kiln-agent:kiln-agent.8; do
	bin=${b%%:*} page=$MAN/${b#*:}.scd
	"$KILN_BIN/$bin" --help | grep -o -- '--[a-z][a-z-]*' | sort -u >"$T/help.$bin"
	grep -o -- '\*--[a-z][a-z-]*\*' "$page" | tr -d '*' | sort -u >"$T/page.$bin"
	same "$bin(8) documents every option of $bin --help" \
		"$(comm -23 "$T/help.$bin" "$T/page.$bin" | paste -sd, -)" ""
	same "$bin(8) documents no option $bin --help lacks" \
		"$(comm -13 "$T/help.$bin" "$T/page.$bin" | paste -sd, -)" ""
done

# cli.conf: every key the CLI reads is in the example, and the example has no other
awk -F'\t' '$1 == "conf" { print $2 }' "$T/list" | sort >"$T/conf.keys"
sed -n 's/^#\{0,1\}\([a-z_]*\) = .*/\1/p' "$KILN_SRC/deploy/cli.conf.example" | sort -u >"$T/conf.example"
same "deploy/cli.conf.example documents the CLI's keys" \
	"$(paste -sd, "$T/conf.example")" "$(paste -sd, "$T/conf.keys")"

# the pages built with this tree render; kilnd.conf(5) has every key kilnd knows
built=$KILN_BIN/../man
for page in kiln.1 kilnd.8 kiln-agent.8 kilnd.conf.5; do
	if [ ! -f "$built/$page.gz" ]; then
		fail "$page.gz was not built (configure with KILN_DOCS=ON)"
		continue
	fi
	warn=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$built/$page.gz" 2>&1 >"$T/$page.txt")
	same "man -l $page renders without warnings" "$warn" ""
	grep -q "^NAME" "$T/$page.txt"
	check "man -l $page has a NAME section" $? "$(head -3 "$T/$page.txt")"
done
"$KILND" --print-config-example | sed -n 's/^#\([a-z_]*\) =.*/\1/p' | sort >"$T/keys.example"
sed -n 's/^       \([a-z_]*\) = .*/\1/p' "$T/kilnd.conf.5.txt" | sort >"$T/keys.page"
same "kilnd.conf(5) has every key of kilnd --print-config-example" \
	"$(comm -3 "$T/keys.example" "$T/keys.page" | paste -sd, -)" ""

[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
echo "all man page checks passed"
