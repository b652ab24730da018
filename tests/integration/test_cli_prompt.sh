# SPDX-License-Identifier: Apache-2.0
# Integration: the kiln CLI's terminal prompts, driven through a pseudo-terminal: the BMC
# password is asked without echo, and node rm above the threshold asks for confirmation.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
	echo "skipped: python3 (for a pseudo-terminal) is not installed"
	exit 77
fi
KILN=$KILN_BIN/kiln
FAILS=0

# on_pty EXPECT ANSWER CMD...: runs CMD on a pseudo-terminal, types ANSWER once EXPECT has
# been printed, and prints the exit status then everything the terminal showed.
cat >"$KILN_TEST_TMP/onpty.py" <<'PY'
import os, pty, select, sys, time
expect, answer, argv = sys.argv[1].encode(), sys.argv[2].encode(), sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
out, sent, deadline = b"", False, time.time() + 60
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
    if not sent and expect in out:
        os.write(fd, answer + b"\n")
        sent = True
if time.time() >= deadline:
    os.kill(pid, 9)  # never hang the test on a child stuck at its prompt
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
sys.stdout.write(out.decode(errors="replace"))
PY
on_pty() { python3 "$KILN_TEST_TMP/onpty.py" "$@"; }

kiln_test_start_kilnd || exit 1

secret="typed-secret-$$"
out=$(on_pty "password for" "$secret" "$KILN" node add pt01 --bmc redfish://192.0.2.1 --bmc-user root)
[ "$(echo "$out" | head -1)" = 0 ] && pass "node add with a prompted password" ||
	fail "node add with a prompt: $out"
case "$out" in
*"BMC password for pt01: "*) pass "the prompt names the node" ;;
*) fail "no prompt in: $out" ;;
esac
case "$out" in
*"$secret"*) fail "the password was echoed: $out" ;;
*"added pt01"*) pass "no echo" ;;
*) fail "kiln did not finish: $out" ;;
esac
[ "$("$KILN" node show pt01 -o json | jq -r .has_bmc_password)" = true ] &&
	pass "the password reached kilnd" || fail "pt01 has no password"
if grep -qa -- "$secret" "$KILND_LOG"; then fail "password in kilnd's log"; else pass "not in the log"; fi

out=$(on_pty "password for" "new-$secret" "$KILN" node set pt01 --ask-bmc-password)
[ "$(echo "$out" | head -1)" = 0 ] && pass "node set --ask-bmc-password" || fail "set: $out"

"$KILN" node add 'pc[01-11]' >/dev/null || fail "adding pc[01-11]"
out=$(on_pty "[y/N]" "n" "$KILN" node rm 'pc[01-11]')
[ "$(echo "$out" | head -1)" = 1 ] && pass "answering no fails" || fail "rm answered no: $out"
case "$out" in
*"Remove 11 nodes (pc[01-11])?"*) pass "the question names the nodes" ;;
*) fail "question: $out" ;;
esac
[ "$("$KILN" node list 'pc[01-11]' -o json | jq length)" = 11 ] && pass "nothing removed" ||
	fail "nodes removed after no"
out=$(on_pty "[y/N]" "y" "$KILN" node rm 'pc[01-11]')
[ "$(echo "$out" | head -1)" = 0 ] && pass "answering yes removes" || fail "rm answered yes: $out"
[ "$("$KILN" node list -o json | jq '[.[] | select(.name | startswith("pc"))] | length')" = 0 ] &&
	pass "all removed" ||
	fail "nodes left after yes"

if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	exit 1
fi
echo "all checks passed"
