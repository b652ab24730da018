# SPDX-License-Identifier: Apache-2.0
# Integration: the store records a check value of secret.key at the first start; the same
# state restarted beside another secret.key (a restore that took the wrong key) refuses to
# start naming the key, and starts again once the right key is back. Both backends.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

FAILS=0
T=$KILN_TEST_TMP
DIR=$T/state
mkdir -m 0700 "$DIR"
kiln_test_start_kilnd "$DIR" || exit 1
kiln_test_stop_kilnd
check "first start and stop" $? "exit status"
same "the check value is stored, not the key" \
	"$(kiln_test_sql "SELECT count(*) FROM key_check WHERE length(value) = 64")" 1
if kiln_test_db_has "$(od -An -tx1 "$DIR/secret.key" | tr -d ' \n')"; then
	fail "the key (as hex, the check value's form) is not in the store"
else
	pass "the key (as hex, the check value's form) is not in the store"
fi

mv "$DIR/secret.key" "$T/right.key"
head -c 32 /dev/urandom >"$DIR/secret.key"
chmod 0600 "$DIR/secret.key"
store=()
[ -n "${KILN_TEST_PG:-}" ] && store=(--store-connection "$KILN_TEST_PG dbname=$(cat "$DIR.kiln-pg")")
"$KILND" --state-dir "$DIR" --listen 127.0.0.1:0 "${store[@]}" 2>"$T/wrong.log" &
pid=$!
KILN_TEST_PIDS+=("$pid")
for ((i = 0; i < 100; i++)); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
wait "$pid"
same "kilnd beside another secret.key exits 1" $? 1
if grep -q "secret.key is not the key this database was first used with" "$T/wrong.log"; then
	pass "its error names the key"
else
	fail "its error names the key: $(cat "$T/wrong.log")"
fi

install -m 0600 "$T/right.key" "$DIR/secret.key"
kiln_test_start_kilnd "$DIR" || exit 1
pass "the right key starts again"
kiln_test_stop_kilnd
check "and stops cleanly" $? "exit status"

[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all key check checks passed"
