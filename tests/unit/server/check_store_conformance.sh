#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The store conformance program's list checked against the headers: every function that a
# public header of server/store/ declares (all but the internals store_internal.h,
# store_pg_internal.h, sql.h, migrate.h, migrations.h) must be called by the program: test_store_conformance.c and the
# files of its script, store_conformance_*.c. Fails naming each one that is not.
# Usage: check_store_conformance.sh SOURCE_ROOT
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/../../.." && pwd)}
dir=$root/tests/unit/server
prog=("$dir"/test_store_conformance.c "$dir"/store_conformance_*.c)
internal=' store_internal.h store_pg_internal.h sql.h migrate.h migrations.h '

# Comments out, then the declarations: a line at column 0 (top level; struct members are
# indented) that is not a typedef, whose first '(' follows the function's name.
uncomment() { perl -0pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g' "$1"; }

declared=()
for h in "$root"/server/store/*.h; do
	case "$internal" in *" $(basename "$h") "*) continue ;; esac
	while IFS= read -r fn; do
		declared+=("$fn")
	done < <(uncomment "$h" | grep -E '^[A-Za-z_][^(;]*[ *]([A-Za-z_][A-Za-z0-9_]*)[ ]*\(' |
		 grep -vE '^(typedef|struct [A-Za-z_0-9]+ *\{|enum|#)' |
		 sed -E 's/^[^(]*[ *]([A-Za-z_][A-Za-z0-9_]*)[ ]*\(.*/\1/')
done
if [ ${#declared[@]} -lt 50 ]; then
	echo "check_store_conformance: found only ${#declared[@]} declarations in server/store/*.h:" \
	     "the extraction is broken" >&2
	exit 1
fi

for f in "${prog[@]}"; do # an unmatched pattern stays as it is: no such file
	if [ ! -f "$f" ]; then
		echo "check_store_conformance: no $f" >&2
		exit 1
	fi
done
body=$(for f in "${prog[@]}"; do uncomment "$f"; done)
missing=0
for fn in $(printf '%s\n' "${declared[@]}" | sort -u); do
	if ! grep -qE "(^|[^A-Za-z0-9_])$fn[ ]*\(" <<<"$body"; then
		echo "not called by the conformance program: $fn" >&2
		missing=$((missing + 1))
	fi
done
count=$(printf '%s\n' "${declared[@]}" | sort -u | wc -l)
if [ "$missing" -gt 0 ]; then
	echo "check_store_conformance: $missing of $count store functions have no conformance call" >&2
	exit 1
fi
echo "check_store_conformance: all $count functions of server/store/*.h are called"
