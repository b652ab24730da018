# SPDX-License-Identifier: Apache-2.0
# Shared helpers for the ipmi tests: start N OpenIPMI ipmi_sim BMCs on 127.0.0.1 UDP ports,
# each with a fresh state dir, and stop them (by pid) when the test exits.
# Source it, then: ipmisim_require; ipmisim_start N; use IPMISIM_PORTS[i], IPMISIM_DIRS[i].

IPMISIM_KIT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IPMISIM_USER=admin
IPMISIM_PASSWORD=kiln-sim-pass
IPMISIM_PIDS=()
IPMISIM_PORTS=()
IPMISIM_DIRS=()
IPMISIM_WORK=

# Skips the test (exit 77) when the tools are missing.
ipmisim_require() {
	local tool
	for tool in ipmi_sim sdrcomp ipmitool ss; do
		if ! command -v "$tool" > /dev/null 2>&1; then
			echo "SKIP: $tool not installed (deploy/packages.sh lists openipmi, ipmitool)"
			exit 77
		fi
	done
	if [ ! -x "${KILN_BIN:-}/kiln-ipmidrive" ]; then
		echo "SKIP: ${KILN_BIN:-KILN_BIN}/kiln-ipmidrive not built"
		exit 77
	fi
}

ipmisim_cleanup() {
	local pid f
	# simulators started again by ipmisim_restart (maybe from another shell) left their pid
	for f in "${IPMISIM_DIRS[@]/%//sim.pid}"; do
		[ -s "$f" ] && kill "$(cat "$f")" 2> /dev/null
	done
	for pid in "${IPMISIM_PIDS[@]}"; do
		kill "$pid" 2> /dev/null
	done
	for pid in "${IPMISIM_PIDS[@]}"; do
		wait "$pid" 2> /dev/null
	done
	IPMISIM_PIDS=()
	if [ -n "$IPMISIM_WORK" ] && [ -z "${KILN_KEEP:-}" ]; then
		rm -rf "$IPMISIM_WORK"
	fi
}

# Is UDP port $1 on 127.0.0.1 free?
ipmisim_port_free() {
	[ -z "$(ss -Hlun "sport = :$1" 2> /dev/null)" ]
}

# Prints the first port of $1 consecutive free UDP ports, starting from a base derived from $$.
ipmisim_pick_ports() {
	local want=$1 base tries i ok
	base=$((10000 + ($$ * 97) % 20000))
	for tries in $(seq 1 50); do
		ok=1
		for ((i = 0; i < want; i++)); do
			if ! ipmisim_port_free $((base + i)); then
				ok=0
				break
			fi
		done
		if [ "$ok" = 1 ] && [ $((base + want)) -lt 32768 ]; then
			echo "$base"
			return 0
		fi
		base=$((10000 + (base - 10000 + want + 211) % 20000))
	done
	return 1
}

# ipmisim_host_uuid INDEX: the SMBIOS UUID the host of simulator INDEX shows in
# /sys/class/dmi/id/product_uuid: the system GUID its lan.conf sets (see ipmisim_start),
# written as a UUID. Get System GUID sends it least significant byte first; kiln matches
# an agent's UUID in either order (docs/identity.md).
ipmisim_host_uuid() {
	local g
	g=$(printf 'a1b2c3d4e5f60718293a4b5c6d7e%04x' "$1")
	echo "${g:0:8}-${g:8:4}-${g:12:4}-${g:16:4}-${g:20:12}"
}

# Starts $1 simulated BMCs. Sets IPMISIM_PORTS, IPMISIM_DIRS (each DIR/chassis holds the
# chassis state files power, boot, history), and installs the cleanup trap.
ipmisim_start() {
	local n=$1 base i dir port guid
	IPMISIM_WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-ipmisim.XXXXXX") || return 1
	trap ipmisim_cleanup EXIT
	trap 'exit 130' INT TERM
	sdrcomp -o "$IPMISIM_WORK/sdr.20.main" "$IPMISIM_KIT/node.sdrs" || return 1
	base=$(ipmisim_pick_ports "$n") || { echo "no free UDP port range"; return 1; }
	for ((i = 0; i < n; i++)); do
		port=$((base + i))
		dir=$IPMISIM_WORK/bmc$i
		mkdir -p "$dir/chassis" "$dir/state/ipmi_sim/sim$i"
		cp "$IPMISIM_WORK/sdr.20.main" "$dir/state/ipmi_sim/sim$i/sdr.20.main"
		echo 0 > "$dir/chassis/power"
		guid=$(printf 'a1b2c3d4e5f60718293a4b5c6d7e%04x' "$i")
		sed -e "s|@NAME@|sim$i|" -e "s|@PORT@|$port|" -e "s|@GUID@|$guid|" \
			-e "s|@CHASSIS@|$IPMISIM_KIT/chassis.sh|" -e "s|@CHASSIS_DIR@|$dir/chassis|" \
			-e "s|@SOLPORT@|$((port + 1000))|" -e "s|@USER@|$IPMISIM_USER|" \
			-e "s|@PASSWORD@|$IPMISIM_PASSWORD|" \
			"$IPMISIM_KIT/lan.conf.in" > "$dir/lan.conf"
		# ipmi_sim connects to its serial side once, at start: a test that wants one
		# defines ipmisim_on_sol_port INDEX PORT to start it first
		if declare -F ipmisim_on_sol_port > /dev/null; then
			ipmisim_on_sol_port "$i" $((port + 1000)) || return 1
		fi
		(cd "$dir" && exec ipmi_sim -c lan.conf -f "$IPMISIM_KIT/node.emu" -s state -n \
			> "$dir/sim.log" 2>&1 < /dev/null) &
		IPMISIM_PIDS+=("$!")
		echo "$!" > "$dir/sim.pid"
		IPMISIM_PORTS+=("$port")
		IPMISIM_DIRS+=("$dir")
	done
	for ((i = 0; i < n; i++)); do
		local waited=0
		while ipmisim_port_free "${IPMISIM_PORTS[$i]}"; do
			if ! kill -0 "${IPMISIM_PIDS[$i]}" 2> /dev/null; then
				echo "ipmi_sim $i exited:"; cat "${IPMISIM_DIRS[$i]}/sim.log"
				return 1
			fi
			waited=$((waited + 1))
			[ "$waited" -lt 100 ] || { echo "ipmi_sim $i did not listen"; return 1; }
			sleep 0.1
		done
	done
}

# ipmitool against BMC $1 (an index) with the remaining arguments.
ipmisim_ipmitool() {
	local i=$1
	shift
	ipmitool -I lanplus -C 3 -H 127.0.0.1 -p "${IPMISIM_PORTS[$i]}" -U "$IPMISIM_USER" \
		-P "$IPMISIM_PASSWORD" "$@"
}

# Writes a kiln-ipmidrive targets file: one line per BMC index given (name host port user
# password-file), with a shared password file.
ipmisim_targets() {
	local out=$1 i
	shift
	printf '%s\n' "$IPMISIM_PASSWORD" > "$IPMISIM_WORK/password"
	: > "$out"
	for i in "$@"; do
		printf 'sim%s 127.0.0.1 %s\n' "$i" "${IPMISIM_PORTS[$i]}" >> "$out"
	done
}

# Fails the test with a message.
fail() {
	echo "FAIL: $*"
	exit 1
}

# Runs kiln-ipmidrive with the simulators' credentials and the opensesspriv workaround
# ipmi_sim needs: ipmisim_drive TARGETS_FILE [options...] OP [ARG]. Prints its JSON.
ipmisim_drive() {
	local targets=$1
	shift
	mkdir -p "$IPMISIM_WORK/kiln"
	"$KILN_BIN/kiln-ipmidrive" --state-dir "$IPMISIM_WORK/kiln" --targets "$targets" \
		--password-file "$IPMISIM_WORK/password" --user "$IPMISIM_USER" \
		--workarounds opensesspriv "$@"
}

# Adds a SEL entry (a temperature threshold event) to BMC $1 the way a BMC would log it.
ipmisim_sel_inject() {
	ipmisim_ipmitool "$1" raw 0x0a 0x44 0x00 0x00 0x02 0x00 0x00 0x00 0x00 0x20 0x00 0x04 \
		0x01 0x01 0x01 0x57 0x00 0x00 > /dev/null
}

# Stops simulated BMC $1 and starts it again on the same port with the same state: its
# sessions are gone. Works from another shell too (an --between command that sourced this
# file and set IPMISIM_PORTS and IPMISIM_DIRS): the new pid goes to DIR/sim.pid.
ipmisim_restart() {
	local i=$1 dir=${IPMISIM_DIRS[$1]} old waited=0
	old=$(cat "$dir/sim.pid")
	kill "$old" 2> /dev/null
	while kill -0 "$old" 2> /dev/null || ! ipmisim_port_free "${IPMISIM_PORTS[$i]}"; do
		waited=$((waited + 1))
		[ "$waited" -lt 100 ] || { echo "ipmi_sim $i did not stop"; return 1; }
		sleep 0.05
	done
	(cd "$dir" && exec ipmi_sim -c lan.conf -f "$IPMISIM_KIT/node.emu" -s state -n \
		>> "$dir/sim.log" 2>&1 < /dev/null) &
	echo "$!" > "$dir/sim.pid"
	waited=0
	while ipmisim_port_free "${IPMISIM_PORTS[$i]}"; do
		waited=$((waited + 1))
		[ "$waited" -lt 100 ] || { echo "ipmi_sim $i did not listen again"; return 1; }
		sleep 0.05
	done
}

# Puts a kiln-udpcount relay in front of simulated BMC $1: IPMISIM_RELAY[$1] is its port,
# DIR/count its counters (ipmisim_opens), DIR/drop its drop file (see kiln-udpcount).
IPMISIM_RELAY=()
ipmisim_relay() {
	local i=$1 dir=${IPMISIM_DIRS[$1]} port waited=0
	port=$(ipmisim_pick_ports 1) || return 1
	"$KILN_BIN/kiln-udpcount" --listen "$port" --to "${IPMISIM_PORTS[$i]}" \
		--out "$dir/count" --drop-file "$dir/drop" &
	IPMISIM_PIDS+=("$!")
	IPMISIM_RELAY[$i]=$port
	while [ ! -s "$dir/count" ]; do
		waited=$((waited + 1))
		[ "$waited" -lt 100 ] || { echo "kiln-udpcount for $i did not start"; return 1; }
		sleep 0.05
	done
}

# RMCP+ sessions opened through BMC $1's relay so far (Open Session Requests).
ipmisim_opens() {
	awk '$1 == "opens" { print $2 }' "${IPMISIM_DIRS[$1]}/count"
}

# Client sockets seen by BMC $1's relay so far: every session kiln starts to open uses a
# new one, also when the BMC never gets as far as an Open Session Request.
ipmisim_sockets() {
	awk '$1 == "clients" { print $2 }' "${IPMISIM_DIRS[$1]}/count"
}

# Sessions active on BMC $1 as it reports them (Get Session Info), this query's own included.
ipmisim_active() {
	ipmisim_ipmitool "$1" session info active | awk -F: '/active sessions/ { gsub(/ /, "", $2); print $2 }'
}

# ipmisim_serial_side DIR: gives the simulators started next a serial side, one
# kiln-serialsim each, whose console output is what is appended to DIR/tx and whose typed
# input lands in DIR/rx (one pair shared by all). Sets SERIAL_DIR and SERIAL_PIDS;
# ipmisim_serial_stop stops them.
ipmisim_serial_side() {
	SERIAL_DIR=$1
	SERIAL_PIDS=()
	mkdir -p "$SERIAL_DIR"
	: > "$SERIAL_DIR/tx"
	: > "$SERIAL_DIR/rx"
}
ipmisim_on_sol_port() {
	local port=$2 waited=0
	[ -n "${SERIAL_DIR:-}" ] || return 0
	"$KILN_BIN/kiln-serialsim" --port "$port" --rx "$SERIAL_DIR/rx" --tx "$SERIAL_DIR/tx" \
		2>> "$SERIAL_DIR/log" < /dev/null &
	SERIAL_PIDS+=("$!")
	while [ -z "$(ss -Hltn "sport = :$port" 2> /dev/null)" ]; do
		waited=$((waited + 1))
		[ "$waited" -lt 100 ] || { echo "kiln-serialsim did not listen on $port"; return 1; }
		sleep 0.05
	done
}
ipmisim_serial_stop() {
	local pid
	for pid in "${SERIAL_PIDS[@]}"; do
		kill "$pid" 2> /dev/null
		wait "$pid" 2> /dev/null
	done
	SERIAL_PIDS=()
}
