# SPDX-License-Identifier: Apache-2.0
# Integration: a kilnd core file holds no secret (issue 17, finding 7). By default kilnd is
# not dumpable (PR_SET_DUMPABLE 0): a SIGABRT leaves no core although the limit allows one.
# With allow_core_dumps = yes a core appears, and a gcore of a kilnd that has been polling a
# Redfish BMC (logged in with the node's password) holds neither that password nor the
# bytes of secret.key: the key lives in sodium_malloc'd memory (MADV_DONTDUMP) and the
# driver keeps the password sealed under a key of its own, in the clear only while a login
# is built. The node is added by an earlier kilnd: the API request that carried the password
# (libmicrohttpd's connection buffers, not wiped) is not what this test looks for.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
. "$SRC/tests/sim/bmcsim.sh"
command -v python3 >/dev/null 2>&1 || { echo "skipped: python3 is not installed"; exit 77; }
KILN=$KILN_BIN/kiln
FAILS=0
T=$KILN_TEST_TMP
PW=kiln-core-test-Pw-7f3a9c
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$SRC/tests/sim/fixtures/idrac9" --count 1 --user admin --password "$PW" || exit 1
PORT=${BMCSIM_PORTS[0]}
DIR=$T/state
mkdir -p "$DIR"
kiln_test_start_kilnd "$DIR" || exit 1
printf '%s\n' "$PW" >"$T/bmc.pw"
"$KILN" node add idrac01 --bmc "redfish+http://127.0.0.1:$PORT" --bmc-user admin \
	--bmc-password-file "$T/bmc.pw" >/dev/null || fail "node add"
kiln_test_stop_kilnd || fail "kilnd exited with status $?"
rm -f "$T/bmc.pw"

# holds FILE|PID: how many times the password and the key's bytes occur in a core FILE, or
# in what a core of process PID would hold (memscan.py).
holds() { python3 "$HERE/memscan.py" "$1" "$PW" "@$DIR/secret.key"; }

# --- by default: no core at all ----------------------------------------------------------
for u in kilnd kiln-agent; do
	grep -q '^LimitCORE=0$' "$SRC/deploy/systemd/$u.service" && pass "$u.service: LimitCORE=0" ||
		fail "$u.service has no LimitCORE=0"
done
# (ASan turns cores off by itself; disable_coredump=0 leaves the decision to kilnd)
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}disable_coredump=0:handle_abort=0
mkdir -p "$T/cwd1"
if [ "$(cat /proc/sys/kernel/core_pattern)" = core ] && [ "$(cat /proc/sys/fs/suid_dumpable)" = 0 ]; then
	(cd "$T/cwd1" && ulimit -c unlimited && kiln_test_start_kilnd "$DIR" &&
		sleep 1 && kill -ABRT "$KILND_PID" && wait "$KILND_PID" 2>/dev/null)
	CORES=$(find "$T/cwd1" -name 'core*' | wc -l)
	same "a kilnd that aborts leaves no core by default" "$CORES" 0
else
	echo "note: core_pattern '$(cat /proc/sys/kernel/core_pattern)' or suid_dumpable" \
		"$(cat /proc/sys/fs/suid_dumpable): the kernel's core of a default kilnd is not checked"
fi

# --- allow_core_dumps = yes: a core, without secrets ---------------------------------------
cat >"$T/cores.conf" <<CONF
allow_core_dumps = yes
[poller]
interval = 5s
sensors_every = 1
CONF
kiln_test_start_kilnd "$DIR" --config "$T/cores.conf" || exit 1
logged_in() { [ "$(curl -s "http://127.0.0.1:$PORT/_sim/state" | jq .sessions)" -ge 1 ]; }
wait_for "kilnd logged in to the BMC" 20 logged_in
"$KILN" power status idrac01 >/dev/null || fail "kiln power status"
"$KILN" sensors idrac01 >/dev/null || fail "kiln sensors"
sleep 6 # a poller sweep or two
read -r N_PW N_KEY <<<"$(holds "$KILND_PID")"
same "kilnd's dumpable memory does not hold the BMC password" "$N_PW" 0
same "kilnd's dumpable memory does not hold secret.key" "$N_KEY" 0
# A real core too, where gcore can write one (not under the sanitizers).
if command -v gcore >/dev/null 2>&1 && ! ldd "$KILN_BIN/kilnd" | grep -q libasan; then
	timeout 120 gcore -o "$T/kilnd.core" "$KILND_PID" >"$T/gcore.log" 2>&1
	CORE=$(ls "$T"/kilnd.core.* 2>/dev/null | head -1)
	if [ -n "$CORE" ]; then
		read -r N_PW N_KEY <<<"$(holds "$CORE")"
		same "gcore's core does not hold the BMC password" "$N_PW" 0
		same "gcore's core does not hold secret.key" "$N_KEY" 0
		rm -f "$CORE"
	else
		fail "gcore wrote no core: $(tail -3 "$T/gcore.log")"
	fi
else
	echo "note: no gcore, or a sanitizer build: the core itself is not written"
fi
kiln_test_stop_kilnd || fail "kilnd exited with status $?"
[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
