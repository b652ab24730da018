# SPDX-License-Identifier: Apache-2.0
# Integration: kiln-agent (fake NVML, --root fixtures) -> kilnd: per-node tokens, enrollment
# by serial and by name (an admin accepts), refused and revoked enrollment tokens, pending agents, reports made
# while kilnd is down arriving exactly once, a lost acknowledgement, Xids once, kiln gpus.
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
if [ -z "${KILN_TEST_PG:-}" ] && ! command -v sqlite3 >/dev/null 2>&1; then
	echo "skipped: the sqlite3 shell (to count stored rows) is not installed"
	exit 77
fi
for f in "$AGENT" "$NVML" "$NVML_CONF" "$ROOT/dev/kmsg"; do
	[ -e "$f" ] || { echo "FAIL: $f is missing (build kiln-agent and the fake NVML)" >&2; exit 1; }
done

FAILS=0

kiln_test_start_kilnd || exit 1
T=$KILN_TEST_TMP
DIR=$KILND_DIR
PORT=${KILND_URL##*:}
AGENT_PIDS=()
on_exit() {
	local p
	for p in "${AGENT_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	kiln_test_cleanup
}
trap on_exit EXIT

sql() { kiln_test_sql "$1" "$DIR"; }
node_id() { sql "SELECT id FROM nodes WHERE name = '$1'"; }
history_rows() { sql "SELECT count(*) FROM agent_history WHERE node_id = $(node_id "$1")"; }

# mkroot NAME HOSTNAME DMI_SERIAL BOOT_ID: a copy of the H100 fixture root as another machine.
mkroot() {
	local r=$T/roots/$1
	mkdir -p "$T/roots"
	cp -r "$ROOT" "$r"
	printf '%s\n' "$2" >"$r/proc/sys/kernel/hostname"
	printf '%s\n' "$3" >"$r/sys/class/dmi/id/product_serial"
	printf '%s\n' "$4" >"$r/proc/sys/kernel/random/boot_id"
}

# agent NAME ARGS...: one kiln-agent run (--once unless ARGS say otherwise) for root NAME,
# state dir $T/agent-NAME; output in $T/agent-NAME.log.
agent() {
	local name=$1
	shift
	FAKE_NVML_CONFIG=$NVML_CONF timeout 60 "$AGENT" --server "$KILND_URL" --root "$T/roots/$name" \
		--nvml-lib "$NVML" --state-dir "$T/agent-$name" --log-level debug "$@" \
		>>"$T/agent-$name.log" 2>&1
}

for n in gpu01 gpu02 gpu03 gpu04 gpu05 gpu06; do
	"$KILN" node add "$n" >/dev/null || { echo "node add $n failed" >&2; exit 1; }
done
mkroot gpu01 gpu01 SN-0001 11111111-1111-4111-8111-111111111111
mkroot spoof gpu02 SN-0002 22222222-2222-4222-8222-222222222222
mkroot reinstalled reinstalled-host SN-0003 33333333-3333-4333-8333-333333333333
mkroot gpu04 gpu04.lab.example SN-to-be-filled 44444444-4444-4444-8444-444444444444
mkroot stranger stranger SN-STRANGER 55555555-5555-4555-8555-555555555555
mkroot nobody nobody SN-NOBODY 77777777-7777-4777-8777-777777777777
mkroot gpu06 gpu06 SN-0006 66666666-6666-4666-8666-666666666666

# --- per-node agent tokens ---------------------------------------------------------------
"$KILN" agent token gpu01 >"$T/gpu01.token" 2>/dev/null || fail "kiln agent token gpu01"
same "the agent token is printed bare" "$(wc -l <"$T/gpu01.token")" 1
agent gpu01 --once --token-file "$T/gpu01.token" || fail "agent gpu01 did not deliver: $(tail -3 "$T/agent-gpu01.log")"
"$KILN" -o json gpus gpu01 >"$T/gpus.json" || fail "kiln gpus gpu01 -o json"
same "kiln gpus: the node" "$(jq -r '.[0].node' "$T/gpus.json")" gpu01
same "kiln gpus: 8 GPUs" "$(jq '.[0].gpus | length' "$T/gpus.json")" 8
same "kiln gpus: driver" "$(jq -r '.[0].driver_version' "$T/gpus.json")" 550.54.15
same "kiln gpus: CUDA" "$(jq -r '.[0].cuda_driver_version' "$T/gpus.json")" 12.4
same "kiln gpus: a GPU's name" "$(jq -r '.[0].gpus[0].name' "$T/gpus.json")" "NVIDIA H100 80GB HBM3"
"$KILN" gpus gpu01 >"$T/gpus.txt" || fail "kiln gpus gpu01"
same "kiln gpus table: a row per GPU" "$(grep -c '^gpu01 ' "$T/gpus.txt")" 8
"$KILN" node show gpu01 -o json >"$T/show.json" 2>/dev/null
same "kiln node show has the agent state" "$(jq -r '.agent.gpu_count // empty' "$T/show.json" 2>/dev/null)" 8

# The agent restarts within the same boot and reads the kernel log again: no new Xid events.
xids() { sql "SELECT count(*) FROM events WHERE kind = 'xid' AND node_id = $(node_id gpu01)"; }
XIDS=$(xids)
same "the fixture's two kernel log Xids are two events" \
	"$(sql "SELECT count(*) FROM events WHERE kind = 'xid' AND dedup_key LIKE '%:kmsg:%'")" 2
agent gpu01 --once --token-file "$T/gpu01.token" || fail "second gpu01 run"
same "two reports, two history rows" "$(history_rows gpu01)" 2
same "the same Xids reported again are no new events" "$(xids)" "$XIDS"
same "Xid 79 is critical" \
	"$(sql "SELECT severity FROM events WHERE kind = 'xid' AND message LIKE 'Xid 79%'")" 2

# An agent token writes only its own node, and only from that node's host: a report from
# another host (gpu02, SN-0002) on gpu01's token is refused (test_agent_identity.sh).
agent spoof --once --token-file "$T/gpu01.token" && fail "the spoofing run was accepted"
same "a report naming gpu02 does not land on the token's node" \
	"$(sql "SELECT hostname FROM node_agent_state WHERE node_id = $(node_id gpu01)")" gpu01
same "gpu02 has no report" "$("$KILN" -o json gpus gpu02 2>/dev/null | jq -r '.[0].error')" \
	"no agent report yet"
# A node whose agent found no driver: kiln gpus shows its status, and no versions (the
# columns are "-", the same at every run: they once printed whatever the stack held).
"$KILN" node add nd01 >/dev/null || fail "node add nd01"
kiln_api POST /agent/tokens '{"node":"nd01"}' >/dev/null
ND_TOKEN=$(jq -r .token "$KILN_BODY_FILE")
same "a report without a driver is stored" "$(kiln_api POST /agent/report "$(printf \
	'{"schema":"kiln.agent.report/1","report_id":"%s","host":{"hostname":"nd01","boot_id":"b1"},%s' \
	"$(kiln_test_report_id nd1)" '"nvidia":{"status":"no_driver"},"gpus":[]}')" "$ND_TOKEN")" 201
for i in 1 2 3; do "$KILN" gpus nd01 >"$T/nd-$i.txt" || fail "kiln gpus nd01"; done
same "kiln gpus without a driver: its status" "$(awk '$1 == "nd01" { print $3 }' "$T/nd-1.txt")" \
	no_driver
same "... and no driver or CUDA version" \
	"$(awk '$1 == "nd01" { print $9, $10 }' "$T/nd-1.txt")" "- -"
cmp -s "$T/nd-1.txt" "$T/nd-2.txt" && cmp -s "$T/nd-1.txt" "$T/nd-3.txt" &&
	pass "... the same at every run" || fail "kiln gpus nd01 differs between runs"
AGENT_TOKEN=$(cat "$T/gpu01.token")
same "an agent token cannot read nodes" "$(kiln_api GET /nodes '' "$AGENT_TOKEN")" 401
same "an agent token cannot add nodes" "$(kiln_api POST /nodes '{"name":"evil"}' "$AGENT_TOKEN")" 401
same "an agent token cannot make tokens" \
	"$(kiln_api POST /agent/tokens '{"node":"gpu02"}' "$AGENT_TOKEN")" 401
same "an agent token cannot enroll" \
	"$(kiln_api POST /agent/enroll '{"hostname":"gpu02"}' "$AGENT_TOKEN")" 401
same "an admin token cannot post reports" \
	"$(kiln_api POST /agent/report "$(sql "SELECT report FROM node_agent_state LIMIT 1")")" 401
same "a bad report names the field" \
	"$(kiln_api POST /agent/report '{"schema":"kiln.agent.report/1","report_id":"0000000000000000000000000000abcd","host":{},"nvidia":{"status":"ok"},"gpus":[{"index":"zero"}]}' "$AGENT_TOKEN")" 400
same "... as gpus[0].index" "$(jq -r .field "$KILN_BODY_FILE")" "gpus[0].index"

# A new token for the node revokes the old one.
"$KILN" agent token gpu01 >"$T/gpu01.token2" 2>/dev/null || fail "second agent token"
same "the old agent token is refused" \
	"$(kiln_api POST /agent/report "$(sql "SELECT report FROM node_agent_state LIMIT 1")" "$AGENT_TOKEN")" 401
same "the new agent token works (a duplicate)" \
	"$(kiln_api POST /agent/report "$(sql "SELECT report FROM node_agent_state WHERE node_id = $(node_id gpu01)")" "$(cat "$T/gpu01.token2")")" 200
same "... answered duplicate" "$(jq -r .status "$KILN_BODY_FILE")" duplicate
same "a duplicate adds no history row (two runs of gpu01; the spoof was refused)" "$(history_rows gpu01)" 2

# --- enrollment --------------------------------------------------------------------------
"$KILN" agent enroll-token create --name fleet >"$T/enroll.token" 2>/dev/null ||
	fail "kiln agent enroll-token create"
kiln_test_sql "UPDATE nodes SET bmc_serial = 'SN-0003' WHERE name = 'gpu03'" "$DIR" >/dev/null ||
	fail "setting gpu03's BMC serial"
# By serial: the reinstalled machine has a new host name.
agent reinstalled --once --enroll-token-file "$T/enroll.token" ||
	fail "enrollment by serial: $(tail -3 "$T/agent-reinstalled.log")"
same "enrolled by serial as gpu03" \
	"$(sql "SELECT hostname FROM node_agent_state WHERE node_id = $(node_id gpu03)")" reinstalled-host
[ -s "$T/agent-reinstalled/agent.token" ] && pass "the agent stored its node token" ||
	fail "no agent.token in the agent's state dir"
# By name ("gpu04.lab.example" -> gpu04; the placeholder serial matches nothing) an agent
# waits for an admin: the fleet token is on every node and a name proves nothing
# (test_agent_enroll.sh).
agent gpu04 --once --enroll-token-file "$T/enroll.token" && fail "enrolled by name without an admin"
"$KILN" -o json agent pending >"$T/pending.json" || fail "kiln agent pending"
same "the agent enrolling by name waits, named after gpu04" \
	"$(jq -r '.[0].candidate' "$T/pending.json")" gpu04
"$KILN" agent accept "$(jq -r '.[0].id' "$T/pending.json")" gpu04 >/dev/null ||
	fail "kiln agent accept (gpu04)"
agent gpu04 --once --enroll-token-file "$T/enroll.token" ||
	fail "enrollment by name once accepted: $(tail -3 "$T/agent-gpu04.log")"
same "enrolled by name as gpu04 once accepted" "$(history_rows gpu04)" 2
# Enrolling again waits too: the node's token is neither replaced nor revoked.
OLD4=$(cat "$T/agent-gpu04/agent.token")
same "enrolling again waits for an admin" "$(kiln_api POST /agent/enroll '{"hostname":"gpu04","dmi_serial":"x"}' "$(cat "$T/enroll.token")")" 202
same "... naming the node it resembles" "$(jq -r .node "$KILN_BODY_FILE")" gpu04
"$KILN" agent reject "$(jq -r .id "$KILN_BODY_FILE")" >/dev/null || fail "kiln agent reject"
same "... and the node's token still works" \
	"$(kiln_api POST /agent/report "$(sql "SELECT report FROM node_agent_state WHERE node_id = $(node_id gpu04)")" "$OLD4")" 200
# Report ids are unique per node: gpu04's report with the id of gpu01's is gpu04's own.
ID1=$(sql "SELECT report_id FROM node_agent_state WHERE node_id = $(node_id gpu01)")
same "another node's report id is no duplicate" \
	"$(kiln_api POST /agent/report "$(sql "SELECT report FROM node_agent_state WHERE node_id = $(node_id gpu04)" |
		jq -c --arg id "$ID1" '.report_id = $id')" "$OLD4")" 201
same "... stored for gpu04" "$(sql "SELECT report_id FROM node_agent_state WHERE node_id = $(node_id gpu04)")" "$ID1"

# Wrong and revoked enrollment tokens are refused; nothing is recorded.
echo kiln_wrong_enrollment_token_000000000000000000000 >"$T/wrong.token"
same "a wrong enrollment token" \
	"$(kiln_api POST /agent/enroll '{"hostname":"stranger"}' "$(cat "$T/wrong.token")")" 401
agent nobody --once --enroll-token-file "$T/wrong.token" && fail "the agent enrolled with a wrong token"
"$KILN" agent enroll-token create --name doomed >"$T/doomed.token" 2>/dev/null
DOOMED_ID=$("$KILN" -o json agent enroll-token list | jq -r '.[] | select(.name == "doomed") | .id')
"$KILN" agent enroll-token revoke "$DOOMED_ID" >/dev/null || fail "revoking an enrollment token"
same "a revoked enrollment token" \
	"$(kiln_api POST /agent/enroll '{"hostname":"gpu04"}' "$(cat "$T/doomed.token")")" 401
same "an API admin token cannot enroll" "$(kiln_api POST /agent/enroll '{"hostname":"gpu04"}')" 401
same "refused enrollments leave nothing pending" "$("$KILN" -o json agent pending | jq length)" 0

# An unmatched agent waits for an admin; no node is created.
agent stranger --once --enroll-token-file "$T/enroll.token" && fail "the stranger got a token"
agent stranger --once --enroll-token-file "$T/enroll.token"
"$KILN" -o json agent pending >"$T/pending.json" || fail "kiln agent pending"
same "one pending agent" "$(jq length "$T/pending.json")" 1
same "... with its host name" "$(jq -r '.[0].hostname' "$T/pending.json")" stranger
same "... and serial" "$(jq -r '.[0].dmi_serial' "$T/pending.json")" SN-STRANGER
same "... seen twice" "$(jq -r '.[0].attempts' "$T/pending.json")" 2
same "no node was created" "$(sql "SELECT count(*) FROM nodes WHERE name = 'stranger'")" 0
PID_ID=$(jq -r '.[0].id' "$T/pending.json")
"$KILN" agent accept "$PID_ID" gpu05 >/dev/null || fail "kiln agent accept"
agent stranger --once --enroll-token-file "$T/enroll.token" ||
	fail "the accepted agent did not deliver: $(tail -3 "$T/agent-stranger.log")"
same "the accepted agent's spooled and new reports arrived" "$(history_rows gpu05)" 3
same "accepted agents leave the pending list" "$("$KILN" -o json agent pending | jq length)" 0

# --- kilnd down: every report arrives once; a lost acknowledgement duplicates nothing -----
"$KILN" agent token gpu06 >"$T/gpu06.token" 2>/dev/null
FAKE_NVML_CONFIG=$NVML_CONF "$AGENT" --server "$KILND_URL" --root "$T/roots/gpu06" \
	--nvml-lib "$NVML" --state-dir "$T/agent-gpu06" --token-file "$T/gpu06.token" \
	--interval 1 >>"$T/agent-gpu06.log" 2>&1 &
AGENT6=$!
AGENT_PIDS+=("$AGENT6")
spooled() { find "$T/agent-gpu06/spool" -name '*.json' 2>/dev/null | wc -l; }
for ((i = 0; i < 100; i++)); do
	[ "$(history_rows gpu06)" -ge 2 ] && break
	sleep 0.1
done
kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
for ((i = 0; i < 100; i++)); do
	[ "$(spooled)" -ge 3 ] && break
	sleep 0.1
done
WHILE_DOWN=$(spooled)
[ "$WHILE_DOWN" -ge 3 ] && pass "$WHILE_DOWN reports spooled while kilnd was down" ||
	fail "only $WHILE_DOWN reports spooled while kilnd was down"
kiln_test_start_kilnd "$DIR" --listen "127.0.0.1:$PORT" || exit 1
for ((i = 0; i < 150; i++)); do
	[ "$(spooled)" -eq 0 ] && [ "$(history_rows gpu06)" -ge $((WHILE_DOWN + 3)) ] && break
	sleep 0.1
done
kill -TERM "$AGENT6"
wait "$AGENT6"
AGENT_PIDS=()
same "the spool drained" "$(spooled)" 0
LAST_SEQ=$(sql "SELECT $(kiln_test_json report agent.seq) FROM node_agent_state WHERE node_id = $(node_id gpu06)")
ROWS=$(history_rows gpu06)
same "every report the agent made is stored once (rows = agent seq)" "$ROWS" "$LAST_SEQ"
same "distinct report ids" \
	"$(sql "SELECT count(DISTINCT report_id) FROM agent_history WHERE node_id = $(node_id gpu06)")" "$ROWS"

# A lost acknowledgement: kilnd committed the report, the agent never heard, so the report is
# still in its spool and goes again.
mkdir -p "$T/agent-gpu06/spool"
sql "SELECT report FROM node_agent_state WHERE node_id = $(node_id gpu06)" \
	>"$T/agent-gpu06/spool/0000000000000001.json"
agent gpu06 --once --token-file "$T/gpu06.token" || fail "agent after a lost acknowledgement"
same "the resent report was a duplicate; only the new one was added" "$(history_rows gpu06)" $((ROWS + 1))
same "the spool is empty again" "$(spooled)" 0

kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	tail -20 "$KILND_LOG" >&2
	exit 1
fi
echo "all checks passed"
