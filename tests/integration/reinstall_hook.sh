#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# kiln-bmcsim power hook for test_reinstall.sh: "reinstall_hook.sh SIM INDEX on|off" stops the
# node's agent on off and, on on, writes a new boot id and (a new OS) a new machine id into
# its root and starts the agent (after the node's boot_delay seconds; never when the node has
# a no_agent file).
# "reinstall_hook.sh start NODE" starts an agent without changing the boot id.
# Environment: RH_DIR (per-node folders, SIM-INDEX -> node files, url: kilnd's URL), RH_AGENT,
# RH_NVML, RH_NVML_CONF.
set -u
RH_URL=$(cat "$RH_DIR/url")
start_agent() { # NODE
	d=$RH_DIR/$1
	FAKE_NVML_CONFIG=$RH_NVML_CONF "$RH_AGENT" --server "$RH_URL" --root "$d/root" \
		--nvml-lib "$RH_NVML" --state-dir "$d/agent-state" --token-file "$d/token" \
		--interval 1 >>"$d/agent.log" 2>&1 </dev/null &
	echo $! >"$d/agent.pid"
}
stop_agent() { # NODE
	f=$RH_DIR/$1/agent.pid
	if [ -s "$f" ]; then
		kill -TERM "$(cat "$f")" 2>/dev/null
		: >"$f"
	fi
}
if [ "$1" = start ]; then
	start_agent "$2"
	exit 0
fi
node=$(cat "$RH_DIR/$1-$2" 2>/dev/null) || exit 0
d=$RH_DIR/$node
echo "$(date +%s) $3" >>"$d/hook.log"
case $3 in
off)
	stop_agent "$node"
	;;
on)
	stop_agent "$node"
	[ -e "$d/no_agent" ] && exit 0
	cat /proc/sys/kernel/random/uuid >"$d/root/proc/sys/kernel/random/boot_id"
	tr -d '-' </proc/sys/kernel/random/uuid >"$d/root/etc/machine-id"
	delay=$(cat "$d/boot_delay" 2>/dev/null || echo 1)
	sleep "$delay"
	[ -e "$RH_DIR/stopping" ] || start_agent "$node"
	;;
esac
