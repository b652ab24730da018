#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --version on every binary: "NAME VERSION (REVISION)", the same version and revision in all
# of them, and kilnd's GET /api/v1/health saying what `kilnd --version` says.
set -uo pipefail
. "$KILN_SRC/tests/integration/lib.sh"
FAILS=0

line_re='^([a-z-]+) ([0-9]+\.[0-9]+\.[0-9]+) \(([^()]+)\)$'
want_version=$(sed -n 's/^project(kiln VERSION \([0-9.]*\).*/\1/p' "$KILN_SRC/CMakeLists.txt")
revision=
for b in kilnd kiln kiln-agent kiln-bmcsim; do
	out=$("$KILN_BIN/$b" --version 2>&1)
	rc=$?
	same "$b --version exits 0" "$rc" 0
	if [[ $out =~ $line_re ]]; then
		same "$b --version names $b" "${BASH_REMATCH[1]}" "$b"
		same "$b --version is the project's version" "${BASH_REMATCH[2]}" "$want_version"
		[ -z "$revision" ] && revision=${BASH_REMATCH[3]}
		same "$b --version has the revision of the others" "${BASH_REMATCH[3]}" "$revision"
	else
		fail "$b --version: '$out' is not 'NAME VERSION (REVISION)'"
	fi
done
# built from git, the revision is the commit
if git -C "$KILN_SRC" rev-parse --short=12 HEAD >/dev/null 2>&1; then
	head=$(git -C "$KILN_SRC" rev-parse --short=12 HEAD)
	case $revision in
	*"$head"*) pass "the revision names HEAD ($head)" ;;
	*) fail "revision '$revision' does not name HEAD $head (rebuild?)" ;;
	esac
fi

kiln_test_start_kilnd || exit 1
health=$(curl -s "$KILND_URL/api/v1/health")
same "GET /health and kilnd --version agree" \
	"kilnd $(jq -r '.version' <<<"$health") ($(jq -r '.revision' <<<"$health"))" \
	"$("$KILND" --version)"

[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
echo "all version checks passed"
