# SPDX-License-Identifier: Apache-2.0
# Integration: the guard against a real Slurm on loopback (munged with a test key, slurmctld
# and two slurmd, n1 and n2, from a slurm.conf written here; no stand-in commands; kiln's
# nodes n1.lab and n2.lab are Slurm's n1 and n2 through [scheduler] node_name = {short}). A job
# on n1 makes `kiln power cycle n1` refuse naming it; --drain drains n1 with kiln's reason,
# waits for the job's end, cycles, and resumes n1 once its agent reported again; at
# --drain-timeout nothing is cycled and n1 is resumed (and a reinstall --drain fails so); a
# node drained by hand with another
# reason stays drained after kiln's cycle; a node kiln flags hung is drained with kiln's
# reason, `kiln power cycle --hung` still cycles it, and it is resumed once its agent is back;
# automatic remediation of a hung node waits while Slurm runs a job there, then cycles it.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
for c in munged slurmctld slurmd scontrol squeue sbatch scancel; do
	command -v "$c" >/dev/null || [ -x "/usr/sbin/$c" ] ||
		{ echo "SKIP: $c is not installed (deploy/packages.sh installs slurm-wlm and munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: slurmd runs jobs as their user: run as root"; exit 77; }
PATH=$PATH:/usr/sbin
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
# shellcheck source=agent_fleet.sh
. "$HERE/agent_fleet.sh"

FAILS=0
T=$KILN_TEST_TMP
S=$T/slurm
mkdir -p "$S/state" "$S/spool-n1" "$S/spool-n2"
chmod 755 "$T" "$S"
BASE=$((20000 + RANDOM % 10000))
declare -A SPID
on_exit() {
	if [ -n "${SPID[ctld]:-}" ]; then
		local jobs=()
		mapfile -t jobs < <(squeue -h -o %i 2>/dev/null)
		[ ${#jobs[@]} -eq 0 ] || scancel --quiet --full "${jobs[@]}" 2>/dev/null
		for _ in $(seq 20); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.5; done
	fi
	fleet_agents_stop
	bmcsim_stop_all
	for p in n1 n2 ctld munge; do
		[ -n "${SPID[$p]:-}" ] && kill -TERM "${SPID[$p]}" 2>/dev/null
	done
	for p in n1 n2 ctld munge; do
		[ -n "${SPID[$p]:-}" ] || continue
		for _ in $(seq 20); do kill -0 "${SPID[$p]}" 2>/dev/null || break; sleep 0.25; done
		kill -KILL "${SPID[$p]}" 2>/dev/null
		wait "${SPID[$p]}" 2>/dev/null
	done
	kiln_test_cleanup
}
trap on_exit EXIT

# --- munge and Slurm ------------------------------------------------------------------------
head -c 1024 /dev/urandom >"$S/munge.key"
chmod 600 "$S/munge.key"
munged -F -f --socket="$S/munge.sock" --key-file="$S/munge.key" --pid-file="$S/munged.pid" \
	--seed-file="$S/munged.seed" --log-file="$S/munged.log" >"$S/munged.out" 2>&1 &
SPID[munge]=$!
cat >"$S/slurm.conf" <<EOF
ClusterName=kilntest
SlurmctldHost=localhost
SlurmctldPort=$BASE
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmUser=root
SlurmdUser=root
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd-%n.pid
SlurmdSpoolDir=$S/spool-%n
StateSaveLocation=$S/state
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd-%n.log
SchedulerType=sched/builtin
SelectType=select/linear
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=2
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((BASE + 1)) CPUs=1 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((BASE + 2)) CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
slurmctld -D -i >"$S/slurmctld.out" 2>&1 &
SPID[ctld]=$!
for n in n1 n2; do
	slurmd -D -N "$n" >"$S/slurmd-$n.out" 2>&1 &
	SPID[$n]=$!
done
idle() { [ "$(sinfo -h -o '%T %D' 2>/dev/null)" = "idle 2" ]; }
wait_for "slurm: n1 and n2 idle" 30 idle || { tail -5 "$S"/*.log >&2; exit 1; }
sstate() { scontrol -o show node "$1" | grep -o 'State=[^ ]*' | cut -d= -f2; }
sreason() { scontrol -o show node "$1" | sed -n 's/.* Reason=\(.*\) \[.*/\1/p'; }
drained() { case "$(sstate "$1")" in *DRAIN*) return 0 ;; esac; return 1; }

# --- kilnd with n1.lab and n2.lab: Slurm's n1 and n2 ([scheduler] node_name = {short}) --------
cat >"$T/kilnd.conf" <<EOF
[poller]
interval = 5s
health_every = 1s
[health]
agent_interval = 2s
hung_intervals = 2
[scheduler]
type = slurm
drain_poll = 500ms
view_interval = 1s
node_name = {short}
EOF
bmcsim_start "$T/sim" "$MOCKUP" --count 2 || exit 1
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
fleet_node_add n1.lab "${BMCSIM_PORTS[0]}" && fleet_node_add n2.lab "${BMCSIM_PORTS[1]}" || exit 1
fleet_agent_start n1.lab
fleet_agent_start n2.lab
on_both() { [ "$("$KILN" status -o json | jq -r '[.[] | .power + "/" + (.agent_age_s != null | tostring)] | join(",")')" = on/true,on/true ]; }
wait_for "n1 and n2 on, their agents reported" 30 on_both || exit 1
resets() { curl -s "http://127.0.0.1:$1/_sim/state" | jq '.resets | length'; }
last_seen() { "$KILN" status -o json | jq -r --arg n "$1" '.[] | select(.node == $n) | .agent_last_seen'; }

# --- a job refuses the cycle, named ---------------------------------------------------------
job=$(sbatch --parsable -w n1 -J train --wrap 'sleep 300' -o /dev/null)
running() { [ "$(squeue -h -j "$1" -o %T)" = RUNNING ]; }
wait_for "job $job runs on n1" 20 running "$job" || exit 1
out=$("$KILN" power cycle n1.lab --yes 2>&1)
same "n1 running a job: exit 1" "$?" 1
check "the refusal names the job" "$(grep -q "slurm job $job (root, train)" <<<"$out"; echo $?)" "$out"
same "nothing reached n1's BMC" "$(resets "${BMCSIM_PORTS[0]}")" 0
work() { "$KILN" status -o json | jq -r --arg n "$1" '.[] | select(.node == $n) | .work'; }
one_job() { [ "$(work n1.lab)/$(work n2.lab)" = "1 job/-" ]; }
wait_for "kiln status: n1's WORK is its job" 10 one_job
same "n1 not drained by a refusal" "$(sstate n1 | sed 's/+NOT_RESPONDING//')" ALLOCATED

# --- --drain-timeout: nothing is done, kiln's drain undone -----------------------------------
out=$("$KILN" power cycle n1.lab --yes --drain --drain-timeout 2s 2>&1)
same "drain timed out: exit 1" "$?" 1
check "drain timed out, naming the job" "$(grep -q "drain timed out: still running after 2s: slurm job $job" <<<"$out"; echo $?)" "$out"
same "drain timed out: nothing reached n1's BMC" "$(resets "${BMCSIM_PORTS[0]}")" 0
# (Slurm may add +NOT_RESPONDING on a loaded machine: the drain is what counts)
same "drain timed out: n1 resumed" "$(sstate n1 | sed 's/+NOT_RESPONDING//')" ALLOCATED
audit=$("$KILN" audit log -o json | jq -r '[.[] | select(.target == "n1.lab")][0].outcome')
check "audited as drain timed out" "$(grep -q '^drain timed out' <<<"$audit"; echo $?)" "$audit"

# --- reinstall --drain: the job waits queued, drained; at its timeout it fails, undrained ----
"$KILN" image add pxe-img --pxe >/dev/null || fail "image add pxe-img"
patches() { curl -s "http://127.0.0.1:$1/_sim/state" | jq '.requests.PATCH'; }
before=$(patches "${BMCSIM_PORTS[0]}")
timeout 30 "$KILN" reinstall n1.lab --image pxe-img --yes --drain --drain-timeout 3s --wait \
	>"$T/ri.out" 2>&1 &
cli=$!
wait_for "reinstall --drain: n1 drained for the reinstall" 10 drained n1
same "reinstall --drain: kiln's reason" "$(sreason n1)" "kiln: reinstall by admin"
wait "$cli"
same "reinstall --drain timed out: exit 1" "$?" 1
check "reinstall --drain timed out, naming the job" \
	"$(grep -q "drain timed out: still running after 3s: slurm job $job" "$T/ri.out"; echo $?)" "$(cat "$T/ri.out")"
same "reinstall --drain timed out: nothing reached n1's BMC" "$(patches "${BMCSIM_PORTS[0]}")" "$before"
same "reinstall --drain timed out: n1 resumed" "$(sstate n1 | sed 's/+NOT_RESPONDING//')" ALLOCATED
scancel "$job"

# --- --drain: drained with kiln's reason, waits for the job, cycles, resumes ----------------
job=$(sbatch --parsable -w n1 -J short --wrap 'sleep 4' -o /dev/null)
wait_for "job $job runs on n1" 20 running "$job" || exit 1
"$KILN" power cycle n1.lab --yes --drain -o json >"$T/drain.json" 2>"$T/drain.err" &
cli=$!
wait_for "n1 drained while the job runs" 10 drained n1
same "kiln's reason" "$(sreason n1)" "kiln: power cycle by admin"
same "no cycle while the job runs" "$(resets "${BMCSIM_PORTS[0]}")" 0
wait "$cli"
same "--drain: exit 0 once the job ended" "$?" 0
same "--drain: the job had ended before the cycle" "$(squeue -h -j "$job" -o %T 2>/dev/null)" ""
check "--drain: n1's BMC was cycled" "$([ "$(resets "${BMCSIM_PORTS[0]}")" -gt 0 ]; echo $?)" "$(cat "$T/drain.json" "$T/drain.err")"
resumed() { [ "$(sstate n1 | sed 's/+NOT_RESPONDING//')" = IDLE ]; }
wait_for "n1 resumed after its agent reported again" 20 resumed || cat "$KILND_LOG" >&2

# --- drained by hand: left drained after kiln's cycle ----------------------------------------
job=$(sbatch --parsable -w n2 -J other --wrap 'sleep 3' -o /dev/null)
wait_for "job $job runs on n2" 20 running "$job" || exit 1
scontrol update NodeName=n2 State=DRAIN "Reason=hardware check by bob"
seen=$(last_seen n2.lab)
"$KILN" power cycle n2.lab --yes --drain >/dev/null 2>&1
same "n2: --drain waited and cycled (exit 0)" "$?" 0
reported() { [ "$(last_seen n2.lab)" -gt "$seen" ]; }
wait_for "n2's agent reported again" 15 reported
sleep 2
same "n2 still drained" "$(sstate n2 | sed 's/+NOT_RESPONDING//')" IDLE+DRAIN
same "n2 keeps bob's reason" "$(sreason n2)" "hardware check by bob"
scontrol update NodeName=n2 State=RESUME

# --- hung: drained with kiln's reason, the night playbook cycles it, resumed later ----------
fleet_agent_stop n1.lab
wait_for "n1 drained as hung" 30 drained n1
check "n1's reason is kiln's hung" "$(sreason n1 | grep -q '^kiln: hung:'; echo $?)" "$(sreason n1)"
before=$(resets "${BMCSIM_PORTS[0]}")
out=$("$KILN" power cycle --hung --yes 2>&1)
same "kiln power cycle --hung: exit 0 without --force" "$?" 0
check "--hung cycled n1" "$([ "$(resets "${BMCSIM_PORTS[0]}")" -gt "$before" ]; echo $?)" "$out"
fleet_agent_start n1.lab
wait_for "n1 resumed once its agent is back" 20 resumed

# --- automatic remediation waits while Slurm runs a job on the hung node ---------------------
kiln_test_stop_kilnd || fail "kilnd did not stop cleanly"
printf '[remediation]\nenabled = yes\ngrace = 1s\nmax_per_hour = 10\n' >>"$T/kilnd.conf"
kiln_test_start_kilnd "$KILND_DIR" --config "$T/kilnd.conf" || exit 1
job=$(sbatch --parsable -w n2 -J long --wrap 'sleep 300' -o /dev/null)
wait_for "job $job runs on n2" 20 running "$job" || exit 1
before=$(resets "${BMCSIM_PORTS[1]}")
fleet_agent_stop n2.lab
wait_for "n2 drained as hung" 30 drained n2
waits() { "$KILN" events -o json | jq -e '[.[] | select(.node == "n2.lab" and (.message | test("automatic power cycle waits: slurm job")))] | length > 0' >/dev/null; }
wait_for "remediation says it waits for the job" 15 waits
sleep 2
same "no automatic cycle while the job runs" "$(resets "${BMCSIM_PORTS[1]}")" "$before"
scancel "$job"
cycled() { [ "$(resets "${BMCSIM_PORTS[1]}")" -gt "$before" ]; }
wait_for "the automatic cycle once the job ended" 20 cycled
same "audited as kilnd's power cycle" \
	"$("$KILN" audit log -o json | jq -r '[.[] | select(.target == "n2.lab" and .actor == "kilnd")][0].action')" power.cycle

kiln_test_stop_kilnd || fail "kilnd did not stop cleanly"
[ "$FAILS" -eq 0 ] || grep -i 'not responding\|error' "$S/slurmctld.log" | tail -5 >&2
[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
echo "all checks passed"
