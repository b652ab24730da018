# SPDX-License-Identifier: Apache-2.0
# Shell helpers for script tests that need kiln-bmcsim: start it on kernel-chosen ports (or
# given ones), wait until it listens, stop it by pid. Source it after setting KILN_BIN;
# call bmcsim_stop_all from your EXIT trap (bmcsim_start does not install one).

BMCSIM=${BMCSIM:-${KILN_BIN:?"KILN_BIN must name the build's bin/ folder"}/kiln-bmcsim}
BMCSIM_ALL_PIDS=()

# bmcsim_start DIR MOCKUP [ARGS...]
# Starts kiln-bmcsim serving MOCKUP with ARGS (default --listen 127.0.0.1:0), writing its log
# and ports file under DIR. Sets BMCSIM_PID, BMCSIM_PORTS (array), BMCSIM_PORT (first),
# BMCSIM_URL (http://127.0.0.1:PORT of the first) and BMCSIM_LOG. Returns 1 with the log
# printed when it exits or is not listening within 60 s.
bmcsim_start() {
	local dir=$1 mockup=$2 listen=(--listen 127.0.0.1:0) arg i scheme=http
	shift 2
	for arg in "$@"; do
		[ "$arg" = "--listen" ] && listen=()
		[ "$arg" = "--tls" ] && scheme=https
	done
	mkdir -p "$dir"
	BMCSIM_LOG=$dir/bmcsim.log
	rm -f "$dir/ports"
	"$BMCSIM" --mockup "$mockup" "${listen[@]}" --ports-file "$dir/ports" "$@" 2>>"$BMCSIM_LOG" &
	BMCSIM_PID=$!
	BMCSIM_ALL_PIDS+=("$BMCSIM_PID")
	for ((i = 0; i < 600; i++)); do
		if ! kill -0 "$BMCSIM_PID" 2>/dev/null; then
			echo "kiln-bmcsim exited during start; its log:" >&2
			cat "$BMCSIM_LOG" >&2
			return 1
		fi
		if [ -s "$dir/ports" ]; then
			mapfile -t BMCSIM_PORTS <"$dir/ports"
			BMCSIM_PORT=${BMCSIM_PORTS[0]}
			BMCSIM_URL=$scheme://127.0.0.1:$BMCSIM_PORT
			return 0
		fi
		sleep 0.1
	done
	echo "kiln-bmcsim did not start listening within 60 s; its log:" >&2
	cat "$BMCSIM_LOG" >&2
	return 1
}

# bmcsim_stop PID: SIGTERM, wait, and return its exit status (non-zero when the sanitizers
# found a leak or it crashed).
bmcsim_stop() {
	local pid=$1 rc=0
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return $?; }
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || rc=$?
	return $rc
}

bmcsim_stop_all() {
	local pid
	for pid in "${BMCSIM_ALL_PIDS[@]}"; do
		kill -0 "$pid" 2>/dev/null && bmcsim_stop "$pid"
	done
	BMCSIM_ALL_PIDS=()
}

# bmcsim_system_field MOCKUP FIELD: that field of the tree's (first) system.
bmcsim_system_field() {
	local sys
	sys=$(jq -r '.Members[0]."@odata.id"' "$1/Systems/index.json" 2>/dev/null) || return 1
	jq -r --arg f "$2" '.[$f] // empty' "$1/Systems/${sys##*/}/index.json"
}
# bmcsim_serial MOCKUP: the serial the tree's (first) system reports.
bmcsim_serial() { bmcsim_system_field "$1" SerialNumber; }
# bmcsim_uuid MOCKUP: the system's UUID, which the host's DMI shows as its product_uuid.
bmcsim_uuid() { bmcsim_system_field "$1" UUID; }
# bmcsim_host_serial MOCKUP: what the host of that system shows as its DMI product_serial:
# on a Dell the service tag, the System's SKU (its SerialNumber is the board's); elsewhere
# the System's SerialNumber. An agent on a simulated node reports it: kilnd refuses a
# report the BMC does not vouch for (tests/integration/test_agent_identity.sh).
bmcsim_host_serial() {
	if [ "$(bmcsim_system_field "$1" Manufacturer)" = "Dell Inc." ]; then
		bmcsim_system_field "$1" SKU
	else
		bmcsim_serial "$1"
	fi
}
