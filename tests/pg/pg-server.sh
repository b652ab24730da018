#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A throw-away PostgreSQL server for the tests: initdb + pg_ctl on DIR, listening on a free
# port of 127.0.0.1 only, run as an unprivileged user (postgres, or kiln-pgtest made here)
# when called as root. The role kiln_test logs in from 127.0.0.1 without a password (trust)
# and may CREATE DATABASE; nothing else may log in over TCP. kiln_test may also use the Unix
# socket in DIR/run (DIR/socket holds that connection string).
#
#   tests/pg/pg-server.sh start DIR   prints export KILN_TEST_PG='...' (also in DIR/env)
#   tests/pg/pg-server.sh stop DIR    stops it and removes DIR
#
#   eval "$(tests/pg/pg-server.sh start /tmp/kiln-pg)"; ...; tests/pg/pg-server.sh stop /tmp/kiln-pg
#
# The data is thrown away, so the server does not fsync; KILN_PG_DURABLE=1 keeps fsync and
# synchronous_commit on (benchmarks: a commit reaches the disk, as SQLite's does).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

pgbin=${KILN_PG_BIN:-}
if [ -z "$pgbin" ]; then
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && pgbin=$d
	done
fi
[ -n "$pgbin" ] && [ -x "$pgbin/initdb" ] ||
	{ echo "$0: no PostgreSQL server binaries (initdb); install postgresql" >&2; exit 1; }

# as_user CMD...: runs CMD as the server's user.
pg_user=""
if [ "$(id -u)" = 0 ]; then
	if getent passwd postgres >/dev/null; then
		pg_user=postgres
	else
		getent passwd kiln-pgtest >/dev/null ||
			useradd --system --no-create-home --home-dir /nonexistent \
				--shell /usr/sbin/nologin kiln-pgtest
		pg_user=kiln-pgtest
	fi
fi
as_user() {
	if [ -n "$pg_user" ]; then
		runuser -u "$pg_user" -- "$@"
	else
		"$@"
	fi
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	[ ! -e "$dir/data" ] || { echo "$0: $dir/data exists: stop it first" >&2; exit 1; }
	mkdir -p "$dir/data" "$dir/run"
	chmod 0755 "$dir"
	if [ -n "$pg_user" ]; then
		chown "$pg_user" "$dir/data" "$dir/run"
		as_user test -x "$dir" ||
			{ echo "$0: $pg_user cannot reach $dir (a parent folder is closed)" >&2; exit 1; }
	fi
	as_user "$pgbin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=reject \
		--encoding=UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
	# Only kiln_test over TCP, only from 127.0.0.1; the superuser only on the socket in DIR.
	as_user sh -c "cat > '$dir/data/pg_hba.conf'" <<-HBA
		local all postgres trust
		local all kiln_test trust
		host  all kiln_test 127.0.0.1/32 trust
	HBA
	# Many kilnd at once, each with a connection per thread. Throw-away data: no fsync.
	as_user sh -c "cat >> '$dir/data/postgresql.conf'" <<-CONF
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$dir/run'
		max_connections = 600
	CONF
	if [ "${KILN_PG_DURABLE:-0}" != 1 ]; then
		as_user sh -c "cat >> '$dir/data/postgresql.conf'" <<-CONF
			fsync = off
			synchronous_commit = off
			full_page_writes = off
		CONF
	fi
	local port tries=0
	while :; do
		port=$(free_port)
		if as_user "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/run/server.log" -w -t 60 \
			-o "-p $port" start >"$dir/pg_ctl.log" 2>&1; then
			break
		fi
		tries=$((tries + 1))
		if [ "$tries" -ge 5 ]; then
			cat "$dir/pg_ctl.log" "$dir/run/server.log" >&2
			exit 1
		fi
	done
	as_user "$pgbin/psql" -h "$dir/run" -p "$port" -U postgres -d postgres -qAt \
		-c "CREATE ROLE kiln_test LOGIN CREATEDB" >/dev/null
	echo "$port" >"$dir/port"
	# the same server over its Unix socket (benchmarks: kilnd beside its database)
	echo "host=$dir/run port=$port user=kiln_test dbname=postgres" >"$dir/socket"
	echo "export KILN_TEST_PG='host=127.0.0.1 port=$port user=kiln_test dbname=postgres'" |
		tee "$dir/env"
}

stop() {
	[ -d "$dir/data" ] || { echo "$0: no server in $dir" >&2; exit 1; }
	as_user "$pgbin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
	rm -rf "$dir"
}

case $cmd in
start) start ;;
stop) stop ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
