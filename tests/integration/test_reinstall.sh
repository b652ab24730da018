# SPDX-License-Identifier: Apache-2.0
# Integration: kiln reinstall against kiln-bmcsim and agents with the fake NVML. The BMCs'
# power hook (reinstall_hook.sh) stops a node's agent when it powers off and starts it with a
# new boot id when it powers on. Checks the virtual-media path (InsertMedia, a CD boot
# override, one Reset, EjectMedia, the new boot id), the PXE path, a job that resumes after
# kilnd is killed mid-job without cycling the node twice, and a step timeout naming the step.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
T=$KILN_TEST_TMP
# shellcheck source=reinstall_env.sh
. "$HERE/reinstall_env.sh"

FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
same() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', want '$3'"; fi
}
# wait_for DESC SECONDS COMMAND...: retries COMMAND every 0.5 s.
wait_for() {
	local desc=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		if "$@"; then return 0; fi
		sleep 0.5
	done
	fail "$desc (waited ${secs}s)"
	return 1
}

cat >"$T/kilnd.conf" <<CONF
[jobs]
boot_timeout = 25s
retry_interval = 1s
CONF

on_exit() {
	reinstall_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

# generic: iso01, iso02 (killed mid-job), slow01 (its agent never comes back); idrac9: pxe01.
bmcsim_start "$T/sim-generic" "$SRC/tests/sim/fixtures/generic" --count 3 \
	--power-delay-ms 300 --power-hook "$HOOK generic" || exit 1
GEN_PORTS=("${BMCSIM_PORTS[@]}")
bmcsim_start "$T/sim-idrac" "$SRC/tests/sim/fixtures/idrac9" --count 1 \
	--power-delay-ms 300 --settle-ms 200 --power-hook "$HOOK idrac" || exit 1
IDRAC_PORT=${BMCSIM_PORTS[0]}
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
KILND_PORT=${KILND_URL##*:}
printf '%s\n' "$KILND_URL" >"$RH_DIR/url"

reinstall_node_add iso01 "${GEN_PORTS[0]}" generic 0
reinstall_node_add iso02 "${GEN_PORTS[1]}" generic 1
reinstall_node_add slow01 "${GEN_PORTS[2]}" generic 2
reinstall_node_add pxe01 "$IDRAC_PORT" idrac 0
echo 6 >"$RH_DIR/iso02/boot_delay"  # room to kill kilnd while it waits for the new boot
touch "$RH_DIR/slow01/no_agent"       # never comes back: wait_boot times out
for n in iso01 iso02 slow01 pxe01; do
	"$HOOK" start "$n" || { echo "starting the agent of $n failed" >&2; exit 1; }
done

agent_of() { "$KILN" node show "$1" -o json 2>/dev/null | jq -r "if type == \"array\" then .[0] else . end | .agent.$2 // empty"; }
boot_id() { agent_of "$1" boot_id; }
all_reported() {
	local n
	for n in iso01 iso02 slow01 pxe01; do
		[ "$(boot_id "$n")" = "$(cat "$RH_DIR/$n/root/proc/sys/kernel/random/boot_id")" ] || return 1
	done
}
wait_for "every agent reported its boot id" 30 all_reported && pass "4 agents reported"

"$KILN" image add iso-img --iso http://images.example/ubuntu-22.04.iso --os "Ubuntu 22.04" >/dev/null ||
	fail "image add iso-img"
"$KILN" image add pxe-img --pxe >/dev/null || fail "image add pxe-img"
"$KILN" image add bad --iso 'ftp://x' >/dev/null 2>&1
same "image add with a bad URL is refused (kilnd's 400: a usage error)" "$?" 2
"$KILN" image add both --iso http://x/y.iso --pxe >/dev/null 2>&1
same "--iso and --pxe together is a usage error" "$?" 2
same "kiln image list -o json" "$("$KILN" image list -o json | jq -r '[.[] | .name + ":" + .kind] | join(",")')" \
	"iso-img:iso,pxe-img:pxe"

# --dry-run: the targets and the steps, nothing queued.
out=$("$KILN" reinstall iso01 --image iso-img --dry-run) || fail "dry run failed"
echo "$out" | grep -q '^iso01: would reinstall from iso-img: boot_id, media_insert, boot_set, power_cycle, wait_boot, media_eject$' &&
	pass "dry run lists the steps" || fail "dry run: $out"
same "dry run queued nothing" "$("$KILN" jobs -o json | jq length)" 0

# More than 10 nodes: without a terminal to type the count on, --yes is required.
for i in $(seq -w 1 11); do
	"$KILN" node add "many$i" --bmc "redfish+http://127.0.0.1:1" --bmc-user admin \
		--bmc-password-file "$T/bmc.pw" >/dev/null || fail "node add many$i"
done
"$KILN" reinstall 'many[01-11]' --image pxe-img </dev/null >"$T/many.out" 2>&1
same "11 nodes without --yes and no terminal is a usage error" "$?" 2
grep -q -- '--yes' "$T/many.out" && pass "it asks for --yes" || fail "11 nodes: $(cat "$T/many.out")"
same "nothing was queued for them" "$("$KILN" jobs 'many[01-11]' -o json | jq length)" 0
"$KILN" node rm 'many[01-11]' --yes >/dev/null || fail "node rm many[01-11]"

# --- the virtual-media path -----------------------------------------------------------------
GEN0=http://127.0.0.1:${GEN_PORTS[0]}
curl -s -o /dev/null -X DELETE "$GEN0/_sim/requests"
old=$(boot_id iso01)
old_machine=$(agent_of iso01 machine_id)
"$KILN" reinstall iso01 --image iso-img --wait >"$T/iso01.out" 2>&1
same "kiln reinstall iso01 --image iso-img --wait exits 0" "$?" 0
grep -q '^1 done, 0 failed$' "$T/iso01.out" && pass "summary line" || fail "summary: $(cat "$T/iso01.out")"
grep -q 'wait_boot' "$T/iso01.out" && pass "--wait printed the steps as they went" ||
	fail "no step lines: $(cat "$T/iso01.out")"
new=$(boot_id iso01)
[ -n "$new" ] && [ "$new" != "$old" ] && pass "kiln node show has the new boot id" ||
	fail "boot id: before '$old', after '$new'"
same "iso01's boot id is the one the hook wrote" "$new" "$(cat "$RH_DIR/iso01/root/proc/sys/kernel/random/boot_id")"
# The new OS has a new machine id: the reinstall job takes it without an admin, once.
same "iso01's machine id is the reinstalled OS's" "$(agent_of iso01 machine_id)" \
	"$(cat "$RH_DIR/iso01/root/etc/machine-id")"
[ "$(agent_of iso01 machine_id)" != "$old_machine" ] && pass "and not the one before ($old_machine)" ||
	fail "iso01's machine id did not change: $old_machine"
curl -s "$GEN0/_sim/requests" >"$T/iso01.req"
order=$(jq -r '[.[] | select(.method != "GET") |
	if (.path | test("InsertMedia$")) then "insert"
	elif (.method == "PATCH" and ((.body // "") | tostring | test("Cd"))) then "boot-cd"
	elif (.path | test("ComputerSystem.Reset$")) then "reset"
	elif (.path | test("EjectMedia$")) then "eject" else empty end] | join(",")' "$T/iso01.req")
same "the BMC saw InsertMedia, the CD boot override, one Reset, then EjectMedia" "$order" \
	"insert,boot-cd,reset,eject"
same "iso01's media is ejected" "$(curl -s "$GEN0/_sim/state" | jq '[.media[] | select(.Inserted == true)] | length')" 0
same "the job is done at 6/6" "$("$KILN" jobs iso01 -o json | jq -r '.[-1] | "\(.state) \(.step_index)/\(.step_total)"')" "done 6/6"
kiln_api GET /audit >/dev/null
for a in reinstall media.insert boot.set power.cycle media.eject; do
	same "audit row $a for iso01 by admin, ok" \
		"$(jq -r --arg a "$a" '[.[] | select(.action == $a and .target == "iso01")][0] | "\(.actor) \(.outcome)"' "$KILN_BODY_FILE")" \
		"admin ok"
done

# --- the PXE path ---------------------------------------------------------------------------
old=$(boot_id pxe01)
"$KILN" reinstall pxe01 --image pxe-img --wait -o json >"$T/pxe01.json" 2>"$T/pxe01.err"
same "kiln reinstall pxe01 --image pxe-img --wait exits 0" "$?" 0
same "-o json gives the finished job" "$(jq -r '.[0] | "\(.node) \(.state) \(.step)"' "$T/pxe01.json")" "pxe01 done done"
same "the BMC's one-time boot is Pxe" \
	"$(curl -s "http://127.0.0.1:$IDRAC_PORT/_sim/state" | jq -r '"\(.boot.BootSourceOverrideTarget) \(.boot.BootSourceOverrideEnabled)"')" "Pxe Once"
new=$(boot_id pxe01)
[ -n "$new" ] && [ "$new" != "$old" ] && pass "pxe01 came back with a new boot id" || fail "pxe01 boot id '$old' -> '$new'"
same "no virtual media on the PXE path" \
	"$(curl -s "http://127.0.0.1:$IDRAC_PORT/_sim/requests" | jq '[.[] | select(.path | test("Media$"))] | length')" 0

# --- a node with a job in flight is refused --------------------------------------------------
"$KILN" reinstall iso02 --image iso-img >"$T/iso02.out" 2>&1 || fail "reinstall iso02: $(cat "$T/iso02.out")"
"$KILN" reinstall iso02 --image iso-img >"$T/iso02b.out" 2>&1
same "a second reinstall of iso02 fails" "$?" 1
grep -q 'action in flight' "$T/iso02b.out" && pass "it says an action is in flight" || fail "refusal: $(cat "$T/iso02b.out")"
kiln_api POST /power '{"range":"iso02","action":"cycle"}' >/dev/null
same "a power action on iso02 during its reinstall is refused" \
	"$(jq -r 'if type == "array" then .[0].error else .error end' "$KILN_BODY_FILE" | grep -c 'in flight')" 1

# --- kill kilnd mid-job; the restarted one resumes without cycling again ----------------------
at_wait() { [ "$("$KILN" jobs iso02 -o json | jq -r '.[-1].step')" = wait_boot ]; }
wait_for "iso02's job reached wait_boot" 30 at_wait
kill -KILL "$KILND_PID"
wait "$KILND_PID" 2>/dev/null
pass "kilnd killed (SIGKILL) during wait_boot"
sleep 1
kiln_test_start_kilnd "$KILND_DIR" --config "$T/kilnd.conf" --listen "127.0.0.1:$KILND_PORT" || exit 1
iso02_done() { [ "$("$KILN" jobs iso02 -o json | jq -r '.[-1].state')" = done ]; }
wait_for "iso02's job finished after the restart" 40 iso02_done && pass "the job resumed and finished"
grep -q 'resuming at step wait_boot' "$KILND_LOG" && pass "kilnd logged the resume" || fail "no resume line in the log"
same "iso02 was cycled once" "$(curl -s "http://127.0.0.1:${GEN_PORTS[1]}/_sim/state" | jq '.resets | length')" 1
same "iso02's media is ejected" "$(curl -s "http://127.0.0.1:${GEN_PORTS[1]}/_sim/state" | jq '[.media[] | select(.Inserted == true)] | length')" 0

# --- a step timeout fails the job and names the step -----------------------------------------
"$KILN" reinstall slow01 --image pxe-img --wait >"$T/slow01.out" 2>&1
same "kiln reinstall of a node that never comes back exits 1" "$?" 1
same "the job failed naming wait_boot" "$("$KILN" jobs slow01 -o json | jq -r '.[-1] | "\(.state): \(.error)"')" \
	"failed: step wait_boot timed out after 25s: no new boot id from the agent"
"$KILN" events slow01 -o json | jq -e 'any(.[]; .kind == "reinstall" and (.message | test("failed")))' >/dev/null &&
	pass "a failed event" || fail "no failed event for slow01"

kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizers?): $(tail -20 "$KILND_LOG")"
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed; kilnd log tail:" >&2; tail -40 "$KILND_LOG" >&2; exit 1; }
echo "all reinstall checks passed"
