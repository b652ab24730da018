#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# chassis_control program for ipmi_sim: keeps power and boot state as files in the folder $1.
# ipmi_sim calls "chassis.sh DIR get power [boot]" and "chassis.sh DIR set power 0|1 ...".
dir=$1
op=$2
shift 2
printf '%s %s\n' "$op" "$*" >> "$dir/calls"
if [ "$op" = get ]; then
	for name in "$@"; do
		case $name in
		power) printf 'power:%s\n' "$(cat "$dir/power" 2>/dev/null || echo 0)" ;;
		boot) printf 'boot:%s\n' "$(cat "$dir/boot" 2>/dev/null || echo default)" ;;
		*) echo "unknown parameter $name"; exit 1 ;;
		esac
	done
	exit 0
fi
[ "$op" = set ] || exit 1
while [ $# -ge 2 ]; do
	name=$1
	value=$2
	shift 2
	case $name in
	power) printf '%s\n' "$value" > "$dir/power"; echo "power $value" >> "$dir/history" ;;
	reset) echo reset >> "$dir/history" ;;
	shutdown) echo 0 > "$dir/power"; echo shutdown >> "$dir/history" ;;
	boot) printf '%s\n' "$value" > "$dir/boot" ;;
	identify) ;;
	*) echo "unknown parameter $name"; exit 1 ;;
	esac
done
exit 0
