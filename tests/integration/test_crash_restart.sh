# SPDX-License-Identifier: Apache-2.0
# Integration: kilnd killed with SIGKILL at random moments (ROUNDS times) while agents post
# reports and a bulk power cycle runs (issue 17). After each restart: every report kilnd
# acknowledged is stored, PRAGMA integrity_check is ok, nothing is locked (kilnd starts on
# its state dir and stores a new report), no audit row is left pending (kilnd closes them as
# interrupted at start), and each BMC holds at most one session, now and at its peak (a
# killed kilnd cannot log out; the next start reuses the session it kept; kiln-bmcsim counts
# the sessions it holds and the most it held at once).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
. "$SRC/tests/sim/bmcsim.sh"
tools=(python3)
[ -n "${KILN_TEST_PG:-}" ] || tools+=(sqlite3)
for tool in "${tools[@]}"; do
	command -v "$tool" >/dev/null || { echo "skipped: $tool is missing"; exit 77; }
done
KILN=$KILN_BIN/kiln
FAILS=0
T=$KILN_TEST_TMP
ROUNDS=${KILN_CRASH_ROUNDS:-10}
NODES=4
LOAD_PID=
CYCLE_PID=
on_exit() {
	[ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null
	[ -n "$CYCLE_PID" ] && kill "$CYCLE_PID" 2>/dev/null
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$SRC/tests/sim/fixtures/generic" --count "$NODES" --power-delay-ms 1500 || exit 1
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DIR=$T/state
mkdir -p "$DIR"
printf '[poller]\ninterval = 5s\n' >"$T/kilnd.conf"
start() { kiln_test_start_kilnd "$DIR" --listen "127.0.0.1:$PORT" --config "$T/kilnd.conf"; }
start || exit 1
sql() { kiln_test_sql "$1" "$DIR"; }
printf 'password\n' >"$T/bmc.pw"
FAKE_NVML_CONFIG=$SRC/tests/fake-nvml/configs/h100-8gpu.conf "$KILN_BIN/kiln-agent" --print --once \
	--root "$SRC/tests/fixtures/agent/roots/h100" --nvml-lib "$KILN_LIB/fake-nvml/libnvidia-ml.so.1" \
	>"$T/base.json" 2>/dev/null || { echo "FAIL: kiln-agent --print" >&2; exit 1; }
SPECS=()
for ((i = 0; i < NODES; i++)); do
	n=n$i
	"$KILN" node add "$n" --bmc "redfish+http://127.0.0.1:${BMCSIM_PORTS[$i]}" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" >/dev/null || fail "node add $n"
	"$KILN" agent token "$n" >"$T/$n.token" 2>/dev/null || fail "agent token $n"
	jq -c --arg n "$n" --arg m "$(printf '%031x%x' 0 "$i")" \
		'.host.hostname = $n | .host.machine_id = $m | .xid_events = []' "$T/base.json" >"$T/$n.json"
	SPECS+=("$n=$T/$n.token=$T/$n.json")
done
: >"$T/acked"
python3 "$HERE/report_load.py" "$KILND_URL" "$T/acked" "${SPECS[@]}" &
LOAD_PID=$!

sessions() { # FIELD: that field of every BMC's simulator state, one line per BMC ("port value")
	local p
	for p in "${BMCSIM_PORTS[@]}"; do
		echo "$p $(curl -s --max-time 2 "http://127.0.0.1:$p/_sim/state" | jq -r ".$1 // \"?\"")"
	done
}
over_one() { # FIELD: the BMCs whose FIELD is not 0 or 1 ("port=value ...")
	sessions "$1" | awk '$2 != "0" && $2 != "1" { printf "%s%s=%s", sep, $1, $2; sep = " " }'
}
missing() { # acknowledged reports not stored
	local n id miss=0
	sort -u "$T/acked" >"$T/acked.sorted" # first: what is acknowledged later is stored later
	sql "SELECT n.name || ' ' || s.report_id FROM agent_reports_seen s
		JOIN nodes n ON n.id = s.node_id" | sort >"$T/stored"
	comm -23 "$T/acked.sorted" "$T/stored" | wc -l
}

# The first kill comes once every BMC's first login is kept (bmc_sessions): a kill in the
# moment between a login's answer and its row's commit would leave a session no later kilnd
# knows of (the BMC times it out), which is not what the rounds below are about.
kept_all() { [ "$(sql "SELECT count(*) FROM bmc_sessions WHERE token_enc IS NOT NULL")" = "$NODES" ]; }
wait_for "every BMC's first session kept" 30 kept_all
for ((r = 1; r <= ROUNDS; r++)); do
	# a bulk power cycle in flight, then SIGKILL at a random moment of 0.3-2.3 s
	"$KILN" power cycle all --yes --on-if-off >/dev/null 2>&1 &
	CYCLE_PID=$!
	sleep "$(python3 -c 'import random; print(round(random.uniform(0.3, 2.3), 2))')"
	kill -KILL "$KILND_PID"
	wait "$KILND_PID" 2>/dev/null
	wait "$CYCLE_PID" 2>/dev/null
	CYCLE_PID=
	ACKED=$(sort -u "$T/acked" | wc -l)
	start || { fail "round $r: kilnd did not start again on its state dir"; break; }
	# PostgreSQL's WAL replay is its own business: the check is SQLite's file
	[ -n "${KILN_TEST_PG:-}" ] ||
		same "round $r: integrity_check" "$(sql 'PRAGMA integrity_check')" ok
	same "round $r: all $ACKED acknowledged reports stored" "$(missing)" 0
	same "round $r: no audit row pending" "$(sql "SELECT count(*) FROM audit_log WHERE outcome = 'pending'")" 0
	# kilnd reuses the session it kept (session_keep.c) and checks it with one GET: at no
	# moment since the first start has any BMC held more than one session, however the
	# kill fell (mid-login included), and none holds more than one now
	S=$(over_one sessions)
	[ -z "$S" ] || fail "round $r: BMCs holding more than one session now: $S"
	S=$(over_one sessions_peak)
	[ -z "$S" ] || fail "round $r: BMCs that held more than one session at once: $S"
done
# still writable: the load goes on after the last start
BEFORE=$(sort -u "$T/acked" | wc -l)
grow() { [ "$(sort -u "$T/acked" | wc -l)" -gt "$BEFORE" ]; }
wait_for "reports acknowledged after the last start (nothing stuck locked)" 20 grow &&
	pass "reports stored after the last restart"
kill "$LOAD_PID"
wait "$LOAD_PID" 2>/dev/null
LOAD_PID=
same "after the load: every acknowledged report stored" "$(missing)" 0
INTERRUPTED=$(sql "SELECT count(*) FROM audit_log WHERE outcome = 'interrupted: kilnd stopped'")
CYCLES=$(sql "SELECT count(*) FROM audit_log WHERE action = 'power.cycle'")
[ "$CYCLES" -gt 0 ] && pass "$CYCLES power cycles were audited, $INTERRUPTED of them interrupted by a kill" ||
	fail "no power cycle reached kilnd: the kills hit no bulk action"
pass "$(sort -u "$T/acked" | wc -l) reports acknowledged over $ROUNDS kills; sessions created per BMC: $(sessions sessions_created | awk '{ printf "%s ", $2 }')"
kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
