# SPDX-License-Identifier: Apache-2.0
# Integration: the CLI and the agent given several kilnd URLs (one fleet's instances) move to
# the next when nobody answers at one: a dead URL first costs a refused connection, not a failed
# command or an agent that stops reporting; with every URL dead the error names them all.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"

KILN=$KILN_BIN/kiln
AGENT=$KILN_BIN/kiln-agent
NVML=$KILN_LIB/fake-nvml/libnvidia-ml.so.1
NVML_CONF=$SRC/tests/fake-nvml/configs/h100-8gpu.conf
ROOT=$SRC/tests/fixtures/agent/roots/h100
FAILS=0

# A port on 127.0.0.1 that nothing listens on: bound by python, then closed.
dead_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

kiln_test_start_kilnd || exit 1
T=$KILN_TEST_TMP
D1=http://127.0.0.1:$(dead_port)
D2=http://127.0.0.1:$(dead_port)

"$KILN" node add gpu01 >/dev/null || fail "node add gpu01"

# --- the CLI ---------------------------------------------------------------------------
out=$(KILN_URL="$D1,$D2,$KILND_URL" "$KILN" -o json status 2>"$T/cli.err") ||
	fail "kiln status with two dead URLs first: $(cat "$T/cli.err")"
same "kiln status through the third URL lists the node" "$(jq -r '.[0].node' <<<"$out" 2>/dev/null)" gpu01
out=$("$KILN" --url "$D1, $KILND_URL/" -o json node list 2>"$T/cli.err") ||
	fail "kiln --url with a dead URL first: $(cat "$T/cli.err")"
same "--url takes the list too" "$(jq -r '.[0].name' <<<"$out" 2>/dev/null)" gpu01
# a write through the list reaches kilnd once
"$KILN" --url "$D1,$KILND_URL" node add gpu02 >/dev/null 2>"$T/cli.err" || fail "node add through the list: $(cat "$T/cli.err")"
same "the node added through the list exists once" \
	"$("$KILN" -o json node list | jq '[.[] | select(.name == "gpu02")] | length')" 1
KILN_URL="$D1,$D2" "$KILN" status >/dev/null 2>"$T/cli.err" && fail "kiln status with every URL dead succeeded"
grep -q "cannot reach kilnd at any of $D1, $D2" "$T/cli.err"
check "with every URL dead the error names them all" $? "$(cat "$T/cli.err")"
KILN_URL="$D1,ftp://x" "$KILN" status >/dev/null 2>"$T/cli.err" && fail "a bad URL in the list was accepted"
grep -q "'ftp://x' is not an http:// or https:// URL" "$T/cli.err"
check "a bad URL in the list is named" $? "$(cat "$T/cli.err")"

# --- the agent -------------------------------------------------------------------------
if [ -e "$NVML" ] && [ -e "$ROOT/dev/kmsg" ]; then
	"$KILN" agent token gpu01 >"$T/gpu01.token" 2>/dev/null || fail "kiln agent token gpu01"
	cp -r "$ROOT" "$T/root"
	printf 'gpu01\n' >"$T/root/proc/sys/kernel/hostname"
	FAKE_NVML_CONFIG=$NVML_CONF timeout 60 "$AGENT" --server "$D1,$D2,$KILND_URL" --root "$T/root" \
		--nvml-lib "$NVML" --state-dir "$T/agent" --token-file "$T/gpu01.token" --once \
		--log-level debug >"$T/agent.log" 2>&1 || fail "agent with two dead URLs first: $(tail -3 "$T/agent.log")"
	same "the agent's report arrived" "$("$KILN" -o json gpus gpu01 | jq '.[0].gpus | length')" 8
	# KILN_SERVER (the unit's environment) instead of --server
	KILN_SERVER="$D1,$KILND_URL" FAKE_NVML_CONFIG=$NVML_CONF timeout 60 "$AGENT" --root "$T/root" \
		--nvml-lib "$NVML" --state-dir "$T/agent" --token-file "$T/gpu01.token" --once \
		>>"$T/agent.log" 2>&1 || fail "agent with KILN_SERVER: $(tail -3 "$T/agent.log")"
	# every URL dead: the report is spooled, not lost
	FAKE_NVML_CONFIG=$NVML_CONF timeout 60 "$AGENT" --server "$D1,$D2" --root "$T/root" \
		--nvml-lib "$NVML" --state-dir "$T/agent" --token-file "$T/gpu01.token" --once \
		>>"$T/agent.log" 2>&1
	same "with every URL dead the report waits in the spool" "$(ls "$T/agent/spool" | grep -c .)" 1
	FAKE_NVML_CONFIG=$NVML_CONF timeout 60 "$AGENT" --server "$D2,$KILND_URL" --root "$T/root" \
		--nvml-lib "$NVML" --state-dir "$T/agent" --token-file "$T/gpu01.token" --once \
		>>"$T/agent.log" 2>&1 || fail "agent draining the spool through the list"
	same "the spooled report was delivered" "$(ls "$T/agent/spool" | grep -c .)" 0
else
	echo "note: the fake NVML or the agent fixture is missing; the agent half is not run"
fi

[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "ok"
