# SPDX-License-Identifier: Apache-2.0
# Integration: enrollment cannot impersonate (issue 17). Whoever holds the fleet enrollment
# token (it is on every node) gets no node's token by naming the node: a host name match, or
# a node that already has an agent, waits for an admin; the node's token is never revoked.
# The BMC's serial takes a node without an agent, and a running reinstall job takes one
# enrollment. Enrollments are limited per address (429, Retry-After) and the agent waits.
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
	echo "skipped: the sqlite3 shell is not installed"
	exit 77
fi
FAILS=0
AGENTS=24

T=$KILN_TEST_TMP
# A small burst and rate, so that two dozen agents starting at once meet the limit (the
# checks before them use all 10 of the burst).
cat >"$T/kilnd.conf" <<CONF
[http]
enroll_burst = 10
enroll_rate = 1
CONF
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
sql() { kiln_test_sql "$1"; }
node_id() { sql "SELECT id FROM nodes WHERE name = '$1'"; }

# mkroot NAME HOSTNAME DMI_SERIAL MACHINE_ID BOOT_ID: the H100 fixture root as another machine.
mkroot() {
	local r=$T/roots/$1
	mkdir -p "$T/roots"
	rm -rf "$r"
	cp -r "$ROOT" "$r"
	printf '%s\n' "$2" >"$r/proc/sys/kernel/hostname"
	printf '%s\n' "$3" >"$r/sys/class/dmi/id/product_serial"
	printf '%s\n' "$4" >"$r/etc/machine-id"
	printf '%s\n' "$5" >"$r/proc/sys/kernel/random/boot_id"
}
agent() {
	local name=$1
	shift
	FAKE_NVML_CONFIG=$NVML_CONF timeout 60 "$AGENT" --server "$KILND_URL" --root "$T/roots/$name" \
		--nvml-lib "$NVML" --state-dir "$T/agent-$name" --once "$@" >>"$T/agent-$name.log" 2>&1
}
enroll() { kiln_api POST /agent/enroll "$1" "$(cat "$T/enroll.token")"; }
report_of() { sql "SELECT report FROM node_agent_state WHERE node_id = $(node_id "$1")"; }

"$KILN" agent enroll-token create --name fleet >"$T/enroll.token" 2>/dev/null ||
	fail "kiln agent enroll-token create"
for ((i = 1; i <= AGENTS; i++)); do
	n=$(printf 'gpu%02d' "$i")
	"$KILN" node add "$n" >/dev/null || fail "node add $n"
	# what the poller stores from each BMC's inventory
	sql "UPDATE nodes SET bmc_serial = 'SN-$n' WHERE name = '$n'"
	mkroot "$n" "$n" "SN-$n" "$(printf '%032x' "$i")" "$(printf '%08x-1111-4111-8111-111111111111' "$i")"
done

# A field the host could not read (no /sys/class/dmi/id/product_serial) may come as null: it
# is an absent one, not a "must be a string" refusal (issue 37).
same "a null field is an absent one" "$(enroll '{"dmi_serial":null,"machine_id":null}')" 400
same "... the request lacks what it needs" \
	"$(jq -r .error "$KILN_BODY_FILE" | grep -c "needs a 'dmi_serial' or a 'hostname'")" 1

# --- the BMC's serial takes a node without an agent -------------------------------------
agent gpu03 --enroll-token-file "$T/enroll.token" ||
	fail "gpu03 enrolling by its BMC's serial: $(tail -3 "$T/agent-gpu03.log")"
TOKEN3=$(cat "$T/agent-gpu03/agent.token" 2>/dev/null)
[ -n "$TOKEN3" ] && pass "gpu03 enrolled by serial" || fail "gpu03 has no token"

# --- an impostor with the fleet token gets nothing --------------------------------------
same "host name of a node with an agent: waits" "$(enroll '{"hostname":"gpu03"}')" 202
same "... no token in the answer" "$(jq -r '.token // "none"' "$KILN_BODY_FILE")" none
same "its first label: waits" "$(enroll '{"hostname":"gpu03.example.com"}')" 202
same "the node's BMC serial, but the node has an agent: waits" \
	"$(enroll '{"hostname":"evil","dmi_serial":"SN-gpu03","machine_id":"e1"}')" 202
same "... saying why" "$(jq -r .message "$KILN_BODY_FILE" | grep -c 'already has an agent token')" 1
same "host name of a node without an agent: waits too" "$(enroll '{"hostname":"gpu05"}')" 202
same "the real agent's token still works" \
	"$(kiln_api POST /agent/report "$(report_of gpu03)" "$TOKEN3")" 200
same "gpu03 has one live token" \
	"$(sql "SELECT count(*) FROM agent_tokens WHERE node_id = $(node_id gpu03) AND revoked_at IS NULL")" 1
"$KILN" -o json agent pending >"$T/pending.json" || fail "kiln agent pending"
same "the impostors wait in kiln agent pending" "$(jq length "$T/pending.json")" 4
same "... each with the node it resembles" \
	"$(jq -r '[.[].candidate] | sort | join(",")' "$T/pending.json")" "gpu03,gpu03,gpu03,gpu05"
same "... and its reason" "$(jq -r '.[0].reason' "$T/pending.json" | grep -c 'only an admin binds by name')" 1
"$KILN" agent pending >"$T/pending.txt" 2>&1
same "kiln agent pending shows the reason" "$(grep -c 'only an admin binds' "$T/pending.txt")" 3
for id in $(jq -r '.[].id' "$T/pending.json"); do
	"$KILN" agent reject "$id" >/dev/null || fail "kiln agent reject $id"
done

# --- a running reinstall job takes one enrollment by the BMC's serial --------------------
# (the reinstalled OS lost the token and has a new machine id; tests/integration/
# test_reinstall.sh runs whole jobs, here the job row is enough)
# a job waiting for the new boot after its power cycle, as kilnd's jobs thread leaves it
NOW=$(date +%s)
sql "INSERT INTO jobs (node_id, image, image_kind, state, step, step_started, boot_id_before,
     cycle_sent_at, cycle_done, created_by, created_at, started_at, updated_at)
     VALUES ($(node_id gpu03), 'img', 'pxe', 'running', 'wait_boot', $NOW,
     '$(cat "$T/roots/gpu03/proc/sys/kernel/random/boot_id")', $NOW, 1, 'test', $NOW, $NOW, $NOW)"
mkroot gpu03-new gpu03 SN-gpu03 "$(printf '%032x' 333)" 33333333-2222-4222-8222-222222222222
agent gpu03-new --enroll-token-file "$T/enroll.token" ||
	fail "the reinstalled gpu03 did not enroll: $(tail -3 "$T/agent-gpu03-new.log")"
same "... matched by its reinstall" "$(sql "SELECT $(kiln_test_json detail matched_by) FROM audit_log
	WHERE action = 'agent.enroll' ORDER BY id DESC LIMIT 1")" reinstall
same "... and its report was stored (the job takes the new machine id)" \
	"$(sql "SELECT machine_id FROM node_agent_state WHERE node_id = $(node_id gpu03)")" "$(printf '%032x' 333)"
same "a second enrollment during the same job waits" \
	"$(enroll '{"hostname":"gpu03","dmi_serial":"SN-gpu03","machine_id":"m2"}')" 202
same "the old token was not revoked" \
	"$(sql "SELECT count(*) FROM agent_tokens WHERE node_id = $(node_id gpu03) AND revoked_at IS NULL")" 2
sql "UPDATE jobs SET state = 'done'"
"$KILN" agent reject "$(jq -r .id "$KILN_BODY_FILE")" >/dev/null

# An agent that asked before the poller had its BMC's serial waits, and enrolls once it has.
"$KILN" node add spare >/dev/null || fail "node add spare"
SPARE='{"hostname":"spare","dmi_serial":"SN-spare","machine_id":"5"}'
same "before the BMC's serial is known: waits" "$(enroll "$SPARE")" 202
sql "UPDATE nodes SET bmc_serial = 'SN-spare' WHERE name = 'spare'"
same "... then enrolls by it" "$(enroll "$SPARE")" 201
same "... and leaves the pending list" "$("$KILN" -o json agent pending | jq length)" 0

# --- the rate limit: 429 and Retry-After, which the agents wait out ----------------------
PIDS=()
for ((i = 1; i <= AGENTS; i++)); do
	n=$(printf 'gpu%02d' "$i")
	[ "$n" = gpu03 ] && continue
	agent "$n" --enroll-token-file "$T/enroll.token" &
	PIDS+=($!)
done
OK=0
for p in "${PIDS[@]}"; do
	wait "$p" && OK=$((OK + 1))
done
same "every agent enrolled, all at once from one address" "$OK" $((AGENTS - 1))
WAITED=$(cat "$T"/agent-gpu*.log | grep -c 'enroll again in')
[ "$WAITED" -gt 0 ] && pass "$WAITED enrollment(s) were told to come back and did" ||
	fail "no agent met the rate limit (burst 10 for $((AGENTS - 1)) agents)"
GAVE_UP=$(grep -li 'not delivered' "$T"/agent-gpu*.log)
[ -z "$GAVE_UP" ] && pass "no agent gave up" ||
	fail "agents gave up: $(for f in $GAVE_UP; do
		n=$(basename "$f" .log); n=${n#agent-}
		echo "--- $n's log:"; cat "$f"
		echo "--- its enrollments in the audit log:"
		sql "SELECT id, time, outcome, detail FROM audit_log WHERE action = 'agent.enroll'
		     AND target = '$n' ORDER BY id"
		echo "--- its tokens:"
		sql "SELECT id, created_at, revoked_at, last_used_at FROM agent_tokens
		     WHERE node_id = $(node_id "$n")"
	done; echo "--- pending:"; "$KILN" -o json agent pending
	grep 'enroll.* 5[0-9][0-9]' "$KILND_LOG" | tail -3)"
for ((i = 0; i < 6; i++)); do enroll '{"hostname":"stranger"}' >/dev/null; done
STATUS=$(curl -sk -o /dev/null -D "$T/headers" -w '%{http_code}' -X POST \
	-H "Authorization: Bearer $(cat "$T/enroll.token")" --data-binary '{"hostname":"stranger"}' \
	"$KILND_URL/api/v1/agent/enroll")
same "a burst is answered 429" "$STATUS" 429
grep -qi '^Retry-After: [1-9]' "$T/headers" && pass "... with Retry-After" ||
	fail "no Retry-After: $(cat "$T/headers")"

# An error message that echoes bytes that are not UTF-8 keeps its text ('?' for each), and
# not "{}" (issue 17, finding 9).
same "a non-UTF-8 name in a 404" "$(kiln_api GET '/nodes/a%FFb')" 404
same "... keeps its message" "$(jq -r .error "$KILN_BODY_FILE")" "no node 'a?b'"

kiln_test_stop_kilnd || fail "kilnd exited with status $? (sanitizer report in $KILND_LOG?)"
[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
