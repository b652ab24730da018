# SPDX-License-Identifier: Apache-2.0
# Integration: GPU compute processes guard disruptive actions. gpu01's agent (fake NVML)
# reports two training processes and nvidia-persistenced; gpu02 is idle (its one process holds
# no GPU memory on an idle GPU: not work). `kiln power cycle
# gpu01` is refused naming the work (not the ignored daemon), exit 1, nothing sent to the BMC,
# audited as refused; over gpu[01-02] gpu02 cycles and gpu01 is refused (exit 3); --force
# cycles gpu01, audited as forced with the work; once gpu01's agent is silent longer than
# [work] report_fresh its last report no longer blocks (a hung node's cycle). kiln gpus and
# kiln status show the work.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
# shellcheck source=agent_fleet.sh
. "$HERE/agent_fleet.sh"

FAILS=0
T=$KILN_TEST_TMP
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
health_every = 1s
[work]
report_fresh = 5s
EOF
on_exit() {
	fleet_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" --count 2 || exit 1
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
fleet_node_add gpu01 "${BMCSIM_PORTS[0]}" || exit 1
fleet_node_add gpu02 "${BMCSIM_PORTS[1]}" || exit 1
# gpu01 trains: alice's python3 and torchrun, and the persistence daemon (not work)
{
	cat "$T/fleet-nvml.conf"
	echo "gpu.0.processes = 4242:42949672960,4243:1073741824,4244:1048576"
	echo "gpu.1.processes = 4242:42949672960"
	echo "process_names = 4242:/usr/bin/python3,4244:/usr/bin/nvidia-persistenced"
} >"$T/busy-nvml.conf"
R=$T/roots/gpu01
mkdir -p "$R/proc/4242" "$R/proc/4243"
printf 'Name:\tpython3\nUid:\t1001\t1001\t1001\t1001\n' >"$R/proc/4242/status"
printf 'torchrun\n' >"$R/proc/4243/comm"
printf 'root:x:0:0:root:/root:/bin/bash\nalice:x:1001:1001::/home/alice:/bin/bash\n' >"$R/etc/passwd"
fleet_agent_start gpu01 "$T/busy-nvml.conf"
# gpu02 is idle: its GPUs do nothing, and a process on GPU 1 holds no GPU memory (not work)
{
	sed 's/^gpu\.\*\.util_gpu = .*/gpu.*.util_gpu = 0/' "$T/fleet-nvml.conf"
	echo "gpu.1.processes = 4800:0"
} >"$T/idle-nvml.conf"
fleet_agent_start gpu02 "$T/idle-nvml.conf"
reported() { [ "$("$KILN" gpus -o json | jq '[.[] | select(.report_id)] | length')" = 2 ]; }
wait_for "both agents reported" 30 reported || exit 1
on_both() { [ "$("$KILN" status -o json | jq -r '[.[] | .power] | join(",")')" = on,on ]; }
wait_for "both nodes read on" 30 on_both || exit 1
resets() { curl -s "http://127.0.0.1:$1/_sim/state" | jq -c '.resets'; }

# --- refused, naming the work ---------------------------------------------------------------
out=$("$KILN" power cycle gpu01 --yes 2>&1)
same "busy gpu01: exit 1" "$?" 1
check "the refusal names python3 and its user" "$(grep -q 'gpu process 4242 python3 (alice, 40960 MiB on gpu 0)' <<<"$out"; echo $?)" "$out"
check "the refusal names torchrun" "$(grep -q 'gpu process 4243 torchrun' <<<"$out"; echo $?)" "$out"
check "nvidia-persistenced is not work" "$(grep -q 'persistenced' <<<"$out"; [ $? = 1 ]; echo $?)" "$out"
check "the refusal says what to do" "$(grep -q -- '--force acts now' <<<"$out"; echo $?)" "$out"
check "... and offers no --drain, with no scheduler to drain in" \
	"$(grep -q -- 'drains it in Slurm' <<<"$out"; [ $? = 1 ]; echo $?)" "$out"

# --drain with no scheduler: refused at once, saying so and what --force does (issue 37: it
# printed nothing and waited up to an hour, and the action stayed in flight after Ctrl-C)
t0=$(date +%s)
out=$(timeout 60 "$KILN" power cycle gpu01 --drain --yes 2>&1)
rc=$?
check "--drain without a scheduler: refused (exit $rc)" "$([ "$rc" = 1 ] || [ "$rc" = 2 ]; echo $?)" "$out"
check "... at once" "$([ $(($(date +%s) - t0)) -lt 10 ]; echo $?)" "$(($(date +%s) - t0)) s"
check "... saying a scheduler is needed" "$(grep -q 'needs a scheduler' <<<"$out"; echo $?)" "$out"
check "... and what --force does" "$(grep -q -- '--force acts although work runs' <<<"$out"; echo $?)" "$out"
check "... and the node is free for the next action" \
	"$("$KILN" power cycle gpu01 --yes 2>&1 | grep -q 'in flight'; [ $? = 1 ]; echo $?)" ""
same "nothing reached gpu01's BMC" "$(resets "${BMCSIM_PORTS[0]}")" '[]'
refused=$("$KILN" audit log -o json | jq -r '[.[] | select(.target == "gpu01" and .action == "power.cycle")][0].outcome')
check "audited as refused" "$(grep -q '^refused: work running: gpu process 4242' <<<"$refused"; echo $?)" "$refused"

# --- a range: the idle node acts, the busy one is refused (exit 3) --------------------------
"$KILN" power cycle 'gpu[01-02]' --yes -o json >"$T/range.json" 2>"$T/range.err"
same "range: exit 3" "$?" 3
same "range: gpu02 cycled, gpu01 refused" \
	"$(jq -r '[.[] | .node + ":" + (if .error then (.error | .[0:21]) else .result end)] | join(",")' "$T/range.json")" \
	"gpu01:refused: work running,gpu02:ok"
same "range: gpu02's BMC was cycled" "$(resets "${BMCSIM_PORTS[1]}" | jq 'length > 0')" true

# --- the work is shown ------------------------------------------------------------------------
same "kiln gpus: gpu01's work" "$("$KILN" gpus gpu01 -o json | jq -r '.[0].work.gpu_processes | map(.pid) | join(",")')" 4242,4243
check "kiln gpus: gpu 0's WORK names the processes" \
	"$("$KILN" gpus gpu01 | grep -q ' 0 .*4242 python3 (alice), 4243 torchrun$'; echo $?)" "$("$KILN" gpus gpu01)"
same "kiln status: WORK" "$("$KILN" status -o json | jq -r '[.[] | .node + ":" + .work] | join(",")')" "gpu01:2 procs,gpu02:-"
check "kiln status table has a WORK column" "$("$KILN" status | head -1 | grep -q WORK; echo $?)" "$("$KILN" status | head -1)"

# --- a reinstall is refused before anything is sent; --force queues one that goes ahead -------
"$KILN" image add pxe-img --pxe >/dev/null || fail "image add pxe-img"
timeout 20 "$KILN" reinstall gpu01 --image pxe-img --yes --wait >"$T/ri.out" 2>&1
same "reinstall of busy gpu01: exit 1" "$?" 1
check "the job failed naming the work" "$(grep -q 'refused: work running: gpu process 4242 python3' "$T/ri.out"; echo $?)" "$(cat "$T/ri.out")"
same "reinstall refused: no boot override sent" "$(curl -s "http://127.0.0.1:${BMCSIM_PORTS[0]}/_sim/state" | jq -c '.requests.PATCH')" 0

# --- --force acts and is audited as forced ----------------------------------------------------
out=$("$KILN" power cycle gpu01 --yes --force 2>&1)
same "--force: exit 0" "$?" 0
same "--force: gpu01's BMC was cycled" "$(resets "${BMCSIM_PORTS[0]}" | jq 'length > 0')" true
forced=$("$KILN" audit log -o json | jq -c '[.[] | select(.target == "gpu01" and .action == "power.cycle")][0] | [.outcome, .detail.forced, (.detail.work | .[0:16])]')
same "audited as forced, with the work" "$forced" '["ok",true,"gpu process 4242"]'

# --- a silent agent's last report does not block ----------------------------------------------
fleet_agent_stop gpu01
sleep 6
out=$("$KILN" power cycle gpu01 --yes 2>&1)
same "stale report: the cycle goes ahead (exit 0)" "$?" 0
same "kiln status: stale processes shown so" "$("$KILN" status -o json | jq -r '.[] | select(.node == "gpu01") | .work')" "2 procs (stale)"

# --- reinstall --force goes ahead (last: the job holds gpu01 until kilnd stops) ---------------
fleet_agent_start gpu01 "$T/busy-nvml.conf"
fresh() { [ "$("$KILN" status -o json | jq -r '.[] | select(.node == "gpu01") | .work')" = "2 procs" ]; }
wait_for "gpu01 reports its work again" 20 fresh
"$KILN" reinstall gpu01 --image pxe-img --yes --force >/dev/null 2>&1
same "reinstall --force: queued (exit 0)" "$?" 0
boot_set() { [ "$(curl -s "http://127.0.0.1:${BMCSIM_PORTS[0]}/_sim/state" | jq -c '.requests.PATCH')" -gt 0 ]; }
wait_for "reinstall --force: the boot override was sent" 20 boot_set

kiln_test_stop_kilnd || fail "kilnd did not stop cleanly"
[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all checks passed"
