#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The kiln demo lab: kilnd on its embedded SQLite with simulated BMCs (kiln-bmcsim serving the
# project's iDRAC-, iLO- and generic-shaped fixtures, two OpenIPMI ipmi_sim BMCs with a serial
# side each) and an agent per node with simulated GPUs (the fake NVML), all on 127.0.0.1.
#
#   deploy/lab.sh          install what is missing, build, start the lab, print how to use it
#   deploy/lab.sh down     stop everything the lab started
#   deploy/lab.sh status   kiln status of the running lab
#
# Each simulated BMC's power hook stops the node's agent when the node powers off and starts
# it with a new boot id when it powers on, so power actions and reinstalls are visible end to
# end; an IPMI node that powers on prints boot text on its serial console. Environment: KILN_LAB_DIR (default .lab in the repository), KILN_LAB_PORT (8470;
# 0 picks a free port), KILN_LAB_BUILD_DIR (default build), KILN_LAB_NO_BUILD=1 (use the
# binaries already in KILN_LAB_BUILD_DIR; the tests do).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB=${KILN_LAB_DIR:-$REPO/.lab}
PORT=${KILN_LAB_PORT:-8470}
BUILD=${KILN_LAB_BUILD_DIR:-$REPO/build}
BIN=$BUILD/bin
# The BMCs' power hooks run this script again: they must find the same lab and build.
export KILN_LAB_DIR=$LAB KILN_LAB_BUILD_DIR=$BUILD
AGENT_INTERVAL=10

say() { printf 'lab: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# --- stopping -------------------------------------------------------------------------

# stop_pidfile FILE [SECONDS]: SIGTERM, up to SECONDS (default 10) to exit, then SIGKILL;
# returns once the process is gone.
stop_pidfile() {
	local f=$1 secs=${2:-10} pid i
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < secs * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		fi
	fi
	rm -f "$f"
}

lab_down() {
	local f node
	[ -d "$LAB/run" ] || { say "no lab is running in $LAB"; return 0; }
	# kilnd first (its poller could act on a node), then the BMCs (their power hooks start
	# agents), then the agents under each node's hook lock, then the IPMI simulators and
	# their serial sides.
	stop_pidfile "$LAB/run/kilnd.pid" 30
	# then every BMC at once (each stop waits on its own), then every agent at once, each
	# under its node's hook lock, then the IPMI simulators and their serial sides
	for f in "$LAB"/run/bmcsim-*.pid; do [ -e "$f" ] && stop_pidfile "$f" & done
	wait
	for f in "$LAB"/run/agent-*.pid; do
		[ -e "$f" ] || continue
		node=$(basename "$f" .pid)
		node=${node#agent-}
		(
			exec 9>"$LAB/run/agent-$node.lock"
			flock -w 15 9 || say "$node: its power hook holds the lock; stopping the agent anyway"
			stop_pidfile "$f"
		) &
	done
	wait
	for f in "$LAB"/run/ipmisim-*.pid "$LAB"/run/serialsim-*.pid; do
		[ -e "$f" ] && stop_pidfile "$f" &
	done
	wait
	say "stopped the lab in $LAB"
}

# --- agents (also called by the BMCs' power hooks) ------------------------------------

# agent_start NODE: starts NODE's agent with a fresh boot id, unless it runs already.
agent_start() {
	local node=$1 root=$LAB/roots/$1 pidf=$LAB/run/agent-$1.pid conf
	if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; then return 0; fi
	cat /proc/sys/kernel/random/uuid >"$root/proc/sys/kernel/random/boot_id"
	conf=$(cat "$LAB/nodes/$node.nvml")
	FAKE_NVML_CONFIG=$conf setsid "$BIN/kiln-agent" --server "$(cat "$LAB/kilnd/kilnd.url")" \
		--enroll-token-file "$LAB/enroll.token" --root "$root" \
		--nvml-lib "$(cat "$LAB/nodes/$node.lib")" --state-dir "$LAB/agents/$node" \
		--interval "$AGENT_INTERVAL" >>"$LAB/logs/agent-$node.log" 2>&1 </dev/null 9>&- &
	echo $! >"$pidf"
}

agent_stop() {
	stop_pidfile "$LAB/run/agent-$1.pid"
}

# hook KIND INDEX on|off: kiln-bmcsim's --power-hook.
lab_hook() {
	local node
	node=$(cat "$LAB/nodes/by-bmc/$1-$2" 2>/dev/null) || return 0
	# Hooks are not waited for: an "on" may arrive while the "off" is still stopping the
	# agent, so each node's hooks take turns on a lock.
	exec 9>"$LAB/run/agent-$node.lock"
	flock 9
	case "$3" in
	on) agent_start "$node" ;;
	off) agent_stop "$node" ;;
	esac
}

# --- the IPMI nodes' serial consoles ---------------------------------------------------

# serial_boot INDEX: IPMI node INDEX "boots": kernel lines and a login prompt on its serial
# side (what kiln-serialsim finds appended to its tx file goes out on the BMC's SOL).
serial_boot() {
	local node
	node=$(cat "$LAB/nodes/by-bmc/ipmi-$1" 2>/dev/null) || return 0
	printf '%s\r\n' "" "kiln lab BIOS 2.19.1: booting from disk" \
		"[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian 6.1.76-1" \
		"[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-6.1.0-18-amd64 root=/dev/sda2 ro console=ttyS1,115200n8" \
		"[    0.004211] DMI: kiln lab simulated node $node, BIOS 2.19.1 01/01/2026" \
		"[    2.318420] nvidia: loading out-of-tree module taints kernel." \
		"[    3.902117] systemd[1]: Reached target multi-user.target - Multi-User System." \
		"" "Debian GNU/Linux 12 $node ttyS1" "" >>"$LAB/ipmi/bmc$1/serial.tx"
	printf '%s login: ' "$node" >>"$LAB/ipmi/bmc$1/serial.tx"
}

# ipmi-chassis INDEX get|set ...: ipmi_sim's chassis_control, the tests' chassis.sh; a power
# on or reset boots the node again on its serial console, a moment later as a BIOS would.
lab_ipmi_chassis() {
	local i=$1 boot=
	shift
	case "$*" in
	"set power 1" | "set reset 1") boot=1 ;;
	esac
	"$REPO/tests/ipmi/chassis.sh" "$LAB/ipmi/bmc$i/chassis" "$@" || return
	if [ -n "$boot" ]; then
		(sleep 2 && serial_boot "$i") >/dev/null 2>&1 </dev/null &
	fi
	return 0
}

# --- starting -------------------------------------------------------------------------

build() {
	if [ "${KILN_LAB_NO_BUILD:-}" = 1 ]; then
		local b
		for b in kilnd kiln kiln-agent kiln-bmcsim kiln-serialsim; do
			[ -x "$BIN/$b" ] || die "$BIN/$b is missing (KILN_LAB_NO_BUILD=1 builds nothing)"
		done
		return 0
	fi
	. "$REPO/deploy/packages.sh"
	kiln_install_packages "${KILN_BUILD_PACKAGES[@]}" "${KILN_LAB_PACKAGES[@]}"
	say "building into $BUILD"
	cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$LAB/logs/cmake.log" 2>&1 ||
		{ cat "$LAB/logs/cmake.log" >&2; die "cmake failed"; }
	cmake --build "$BUILD" -j"$(nproc)" --target kilnd kiln kiln-agent kiln-bmcsim kiln-serialsim \
		fake-nvml fake-nvml-old >>"$LAB/logs/cmake.log" 2>&1 ||
		{ tail -40 "$LAB/logs/cmake.log" >&2; die "build failed (log: $LAB/logs/cmake.log)"; }
}

start_kilnd() {
	cat >"$LAB/kilnd.conf" <<EOF
[poller]
interval = 10s
[health]
agent_interval = ${AGENT_INTERVAL}s
EOF
	setsid "$BIN/kilnd" --state-dir "$LAB/kilnd" --listen "127.0.0.1:$PORT" \
		--config "$LAB/kilnd.conf" >>"$LAB/logs/kilnd.log" 2>&1 </dev/null &
	echo $! >"$LAB/run/kilnd.pid"
	for _ in $(seq 1 100); do
		if [ -s "$LAB/kilnd/kilnd.url" ] &&
			curl -fsS "$(cat "$LAB/kilnd/kilnd.url")/api/v1/health" >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$(cat "$LAB/run/kilnd.pid")" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$LAB/logs/kilnd.log" >&2
	die "kilnd did not start (is port $PORT taken? set KILN_LAB_PORT)"
}

# start_bmcsim KIND COUNT: one kiln-bmcsim process serving tests/sim/fixtures/KIND.
start_bmcsim() {
	local kind=$1 count=$2
	rm -f "$LAB/run/bmcsim-$kind.ports"
	setsid "$BIN/kiln-bmcsim" --mockup "$REPO/tests/sim/fixtures/$kind" --listen 127.0.0.1:0 \
		--count "$count" --drift 5 --unique-serials --ports-file "$LAB/run/bmcsim-$kind.ports" \
		--power-hook "$REPO/deploy/lab.sh hook $kind" >>"$LAB/logs/bmcsim-$kind.log" 2>&1 </dev/null &
	echo $! >"$LAB/run/bmcsim-$kind.pid"
	for _ in $(seq 1 100); do
		[ -s "$LAB/run/bmcsim-$kind.ports" ] && return 0
		sleep 0.1
	done
	die "kiln-bmcsim ($kind) did not start; see $LAB/logs/bmcsim-$kind.log"
}

# ipmisim_guid INDEX: the system GUID of ipmi_sim INDEX, which its host shows as its DMI
# product_uuid (kilnd binds the node's agent by it).
ipmisim_guid() { printf 'a1b2c3d4-e5f6-0718-293a-4b5c6d7f%04x\n' "$1"; }

# start_ipmisim INDEX PORT NODE: one ipmi_sim BMC with the project's kit from tests/ipmi, and
# its serial side: kiln-serialsim on PORT + 1000, answering what is typed like NODE's getty.
# Text appended to DIR/serial.tx is what the node prints (serial_boot); what is typed into
# its console lands in DIR/serial.rx.
start_ipmisim() {
	local i=$1 port=$2 node=$3 kit=$REPO/tests/ipmi dir=$LAB/ipmi/bmc$1 solport=$(($2 + 1000))
	mkdir -p "$dir/chassis" "$dir/state/ipmi_sim/lab$i"
	sdrcomp -o "$dir/state/ipmi_sim/lab$i/sdr.20.main" "$kit/node.sdrs"
	echo 1 >"$dir/chassis/power"
	: >"$dir/serial.tx"
	sed -e "s|@NAME@|lab$i|" -e "s|@PORT@|$port|" \
		-e "s|@GUID@|$(ipmisim_guid "$i" | tr -d -)|" \
		-e "s|@CHASSIS@|$REPO/deploy/lab.sh ipmi-chassis|" -e "s|@CHASSIS_DIR@|$i|" \
		-e "s|@SOLPORT@|$solport|" -e "s|@USER@|admin|" -e "s|@PASSWORD@|password|" \
		"$kit/lan.conf.in" >"$dir/lan.conf"
	# ipmi_sim connects to its serial side as it starts: the serial side listens first
	setsid "$BIN/kiln-serialsim" --port "$solport" --tx "$dir/serial.tx" --rx "$dir/serial.rx" \
		--prompt "$node login: " >>"$LAB/logs/serialsim-$i.log" 2>&1 </dev/null &
	echo $! >"$LAB/run/serialsim-$i.pid"
	for _ in $(seq 1 50); do
		[ -n "$(ss -Hltn "sport = :$solport" 2>/dev/null)" ] && break
		sleep 0.1
	done
	(cd "$dir" && exec setsid ipmi_sim -c lan.conf -f "$kit/node.emu" -s state -n \
		>>"$LAB/logs/ipmisim-$i.log" 2>&1 </dev/null) &
	echo $! >"$LAB/run/ipmisim-$i.pid"
	for _ in $(seq 1 50); do
		[ -n "$(ss -Hlun "sport = :$port" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	say "ipmi_sim $i does not listen on UDP $port; see $LAB/logs/ipmisim-$i.log"
}

# add_node NAME BMC GROUP RACK NVML_CONFIG [LIB]
add_node() {
	local name=$1 bmc=$2 group=$3 rack=$4 nvml=$5 lib=${6:-fake-nvml} root=$LAB/roots/$1
	local extra=()
	# ipmi_sim's bugs (tests/ipmi): it answers Open Session with privilege 0 (opensesspriv),
	# reports SOL payload sizes byte-swapped (solpayloadsize), and dies of a segfault on the
	# Get Channel Payload Support that libipmiconsole sends before SOL (solchannelsupport).
	case "$bmc" in
	ipmi://*) extra=(--ipmi-workarounds opensesspriv,solpayloadsize,solchannelsupport) ;;
	esac
	"$BIN/kiln" node add "$name" --bmc "$bmc" --bmc-user admin --bmc-password-file "$LAB/bmc.pw" \
		--group "$group" --group lab --rack "$rack" "${extra[@]}" >/dev/null
	mkdir -p "$LAB/roots"
	cp -r "$REPO/tests/fixtures/agent/roots/h100" "$root"
	printf '%s\n' "$name" >"$root/proc/sys/kernel/hostname"
	# the serial its BMC reports, as on a real machine: kilnd refuses an agent whose DMI
	# serial is not its BMC's, and enrolls an agent by that serial only (the IPMI
	# simulators report none: their agents get tokens from the admin below)
	case "$bmc" in
	redfish*) sim_serial "${bmc##*:}" ;;
	*) printf 'LAB-%s\n' "$name" ;;
	esac >"$root/sys/class/dmi/id/product_serial"
	# and the system UUID its BMC reports (the Redfish simulators of one tree share theirs,
	# which binds nothing; an IPMI simulator has a GUID of its own)
	case "$bmc" in
	ipmi://*) ipmisim_guid "$LAB_IPMI_INDEX" >"$root/sys/class/dmi/id/product_uuid" ;;
	esac
	[ "$name" = gpu03 ] || : >"$root/dev/kmsg"
	# A healthy lab: the fixture's NVML Xid events are left out, and but for gpu03 its GPU
	# ECC errors and pending row remap (gpu03 keeps those and its kernel log's Xids so that
	# the status shows what a GPU fallen off the bus and a failing GPU memory look like).
	# Only gpu08 trains (its GPU compute processes refuse a power cycle without --drain or
	# --force); the other nodes are idle.
	if [ "$name" = gpu03 ]; then
		grep -Ev 'xid_events|^gpu\.0\.processes' "$REPO/tests/fake-nvml/configs/$nvml.conf"
	elif [ "$name" = gpu08 ]; then
		grep -Ev 'xid_events|^gpu\.[0-9]+\.(ecc|remap)_' "$REPO/tests/fake-nvml/configs/$nvml.conf"
	else
		grep -Ev 'xid_events|^gpu\.[0-9]+\.(ecc|remap)_|^gpu\.0\.processes' \
			"$REPO/tests/fake-nvml/configs/$nvml.conf"
	fi >"$LAB/nodes/$name.nvml.conf"
	# gpu02's GPU 3 is held down by heat while busy (NVML's hw_thermal_slowdown, 0x40): a
	# warning that wants its cooling looked at
	[ "$name" = gpu02 ] && printf '%s\n' 'gpu.3.clock_event_reasons = 0x40' \
		'gpu.3.clock_sm_mhz = 1005' 'gpu.3.temperature_c = 88' >>"$LAB/nodes/$name.nvml.conf"
	echo "$LAB/nodes/$name.nvml.conf" >"$LAB/nodes/$name.nvml"
	echo "$BUILD/lib/$lib/libnvidia-ml.so.1" >"$LAB/nodes/$name.lib"
}

# sim_serial PORT: the serial the simulated BMC on PORT reports for its system.
sim_serial() {
	local sys
	sys=$(curl -fsS -u admin:password "http://127.0.0.1:$1/redfish/v1/Systems" | jq -r '.Members[0]."@odata.id"') &&
		curl -fsS -u admin:password "http://127.0.0.1:$1$sys" | jq -r '.SerialNumber // empty'
}

sim_power() {
	curl -fsS "http://127.0.0.1:$1/_sim/state" 2>/dev/null | jq -r .power
}

lab_up() {
	if [ -f "$LAB/run/kilnd.pid" ] && kill -0 "$(cat "$LAB/run/kilnd.pid")" 2>/dev/null; then
		say "the lab is already running (deploy/lab.sh down stops it)"
		print_usage
		return 0
	fi
	rm -rf "$LAB"
	mkdir -p "$LAB"/{run,logs,nodes/by-bmc,agents,ipmi}
	build
	command -v ipmi_sim >/dev/null || die "ipmi_sim is missing (package openipmi)"

	say "starting kilnd on 127.0.0.1:$PORT"
	start_kilnd
	export KILN_URL KILN_TOKEN_FILE=$LAB/kilnd/admin.token
	KILN_URL=$(cat "$LAB/kilnd/kilnd.url")

	say "starting simulated BMCs: 3 iDRAC 9, 2 iLO 5, 3 generic Redfish, 2 IPMI"
	start_bmcsim idrac9 3
	start_bmcsim ilo5 2
	start_bmcsim generic 3
	local ipmi_base=$((16000 + RANDOM % 8000))

	printf 'password\n' >"$LAB/bmc.pw"
	local n=0 kind i port name rack nvml lib
	for kind in idrac9 ilo5 generic; do
		i=0
		while read -r port; do
			n=$((n + 1))
			name=$(printf 'gpu%02d' "$n")
			rack=r$(((n - 1) / 5 + 1))
			nvml=h100-8gpu lib=fake-nvml
			[ "$n" = 4 ] && nvml=consumer
			[ "$n" = 7 ] && { nvml=old-driver; lib=fake-nvml-old; }
			add_node "$name" "redfish+http://127.0.0.1:$port" "$kind" "$rack" "$nvml" "$lib"
			echo "$name" >"$LAB/nodes/by-bmc/$kind-$i"
			echo "$port" >"$LAB/nodes/$name.port"
			i=$((i + 1))
		done <"$LAB/run/bmcsim-$kind.ports"
	done
	local ipmi_nodes=()
	for i in 0 1; do
		n=$((n + 1))
		name=$(printf 'gpu%02d' "$n")
		start_ipmisim "$i" $((ipmi_base + i)) "$name"
		LAB_IPMI_INDEX=$i add_node "$name" "ipmi://127.0.0.1:$((ipmi_base + i))" legacy r2 h100-8gpu
		echo "$name" >"$LAB/nodes/by-bmc/ipmi-$i"
		ipmi_nodes+=("$name")
	done
	# kilnd keeps the IPMI nodes' SOL sessions open and their output (kiln console --tail)
	"$BIN/kiln" console "$(IFS=,; echo "${ipmi_nodes[*]}")" --capture on >/dev/null

	"$BIN/kiln" agent enroll-token create --name lab >"$LAB/enroll.token.out"
	grep -o 'kiln_[A-Za-z0-9_-]*' "$LAB/enroll.token.out" | head -1 >"$LAB/enroll.token"
	chmod 600 "$LAB/enroll.token"
	[ -s "$LAB/enroll.token" ] || die "could not create an enrollment token"
	# An agent enrolls by itself only with the serial its node's BMC reported (the fleet
	# token proves nothing); the IPMI simulators report none, so their nodes' agents get
	# their tokens from the admin, as a site would hand them out for such machines.
	for name in "${ipmi_nodes[@]}"; do
		mkdir -p "$LAB/agents/$name"
		(umask 077 && "$BIN/kiln" agent token "$name" >"$LAB/agents/$name/agent.token") ||
			die "could not make $name's agent token"
	done

	say "starting an agent on every powered-on node (simulated GPUs)"
	for f in "$LAB"/nodes/gpu*.nvml; do
		name=$(basename "$f" .nvml)
		if [ -f "$LAB/nodes/$name.port" ] && [ "$(sim_power "$(cat "$LAB/nodes/$name.port")")" != On ]; then
			continue
		fi
		agent_start "$name"
	done

	# gpu06's BMC rates a fan failed: what a dead fan looks like (a part to replace)
	curl -fsS -X POST -d '{"sensor":{"name":"Fan1","reading":0,"health":"Critical"}}' \
		"http://127.0.0.1:$(cat "$LAB/nodes/gpu06.port")/_sim/inject" >/dev/null ||
		die "could not fail gpu06's fan on its simulated BMC"
	# and kilnd reads it now, as it would at its next sensor poll
	"$BIN/kiln" sensors gpu06 >/dev/null 2>&1 || say "gpu06's sensors were not read now"

	lab_settle
	say "booting the IPMI nodes on their serial consoles"
	for i in 0 1; do
		for _ in $(seq 1 100); do
			[ "$("$BIN/kiln" -o json console "${ipmi_nodes[$i]}" --tail 1 2>/dev/null |
				jq -r .session 2>/dev/null)" = open ] && break
			sleep 0.1
		done
		serial_boot "$i"
	done
	print_usage
}

# lab_settle: waits until every BMC has been read, every agent started has reported and the
# health sweeps agree (two kiln status snapshots a sweep apart the same), so that the status
# printed is the lab's settled one (at most 120 s); says every 10 s which nodes it waits for.
lab_settle() {
	local agents i waiting snap last=""
	agents=$(for f in "$LAB"/run/agent-*.pid; do
		[ -e "$f" ] || continue
		f=$(basename "$f" .pid)
		echo "${f#agent-}"
	done | jq -Rcs 'split("\n") | map(select(. != ""))')
	say "waiting for every BMC's first read, every agent's first report and the health verdicts"
	for ((i = 0; i < 120; i++)); do
		if "$BIN/kiln" status -o json >"$LAB/settle.json" 2>/dev/null; then
			waiting=$(jq -r --argjson a "$agents" '.[] | select(.power == null or
				.power == "unknown" or (.node as $n | ($a | index($n)) != null and
				.agent_last_seen == null)) | .node' "$LAB/settle.json" | tr '\n' ' ')
			snap=$(jq -c 'map([.node, .health, .reasons, .work])' "$LAB/settle.json")
		else
			waiting="kilnd" snap=""
		fi
		if [ -z "$waiting" ]; then
			# a sweep after the last change: the same verdicts twice, 11 s apart
			[ -n "$last" ] && [ "$snap" = "$last" ] && return 0
			last=$snap
			sleep 11
			i=$((i + 10))
			continue
		fi
		last=""
		[ $((i % 10)) = 9 ] && say "still waiting for: $waiting"
		sleep 1
	done
	say "the lab has not settled in 120 s (still waiting for: ${waiting:-verdicts that keep changing}); its status as it is:"
}

print_usage() {
	local url
	url=$(cat "$LAB/kilnd/kilnd.url")
	cat <<EOF

The kiln demo lab is running (logs in $LAB/logs). To use it:

export KILN_URL=$url
export KILN_TOKEN_FILE=$LAB/kilnd/admin.token
export PATH=$BIN:\$PATH

Try: kiln status, kiln power cycle gpu01, kiln gpus gpu01, kiln audit, kiln events --since 1h.
Serial console of an IPMI node: kiln console gpu10 (Enter shows its login prompt, ~. leaves),
kiln console gpu10 --tail (what it printed), kiln power cycle gpu10 (watch it boot).
Stop it with: deploy/lab.sh down

EOF
	KILN_URL=$url KILN_TOKEN_FILE=$LAB/kilnd/admin.token "$BIN/kiln" status || true
}

case "${1:-up}" in
up) lab_up ;;
down) lab_down ;;
status) KILN_URL=$(cat "$LAB/kilnd/kilnd.url") KILN_TOKEN_FILE=$LAB/kilnd/admin.token "$BIN/kiln" status ;;
hook) shift; lab_hook "$@" ;;
agent-start) agent_start "$2" ;;
ipmi-chassis) shift; lab_ipmi_chassis "$@" ;;
*) echo "usage: deploy/lab.sh [up|down|status]" >&2; exit 2 ;;
esac
