#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what the build and the tests need, builds kiln with sanitizers and -Werror,
# and runs every test (ctest), then the tests whose code differs by backend again on a
# throw-away PostgreSQL server (label pg: tests/CMakeLists.txt says which), the fuzzers for a
# short smoke run, and prints the ten slowest tests. Usage: deploy/test.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/packages.sh
kiln_install_packages "${KILN_BUILD_PACKAGES[@]}" "${KILN_TEST_PACKAGES[@]}"

build=${KILN_TEST_BUILD_DIR:-build-test}
begun=$(date +%s)
times=$(mktemp /tmp/kiln-test-times.XXXXXX)
# The ten slowest tests of both legs, and the whole run's time, at the end (also on failure).
# It keeps the run's exit status, and reads all it sorts (no early close: a SIGPIPE under
# pipefail would be the script's status).
slowest() {
	local rc=$?
	set +e
	echo "the ten slowest tests (seconds; a test of both legs counted on each):"
	sed -nE 's/^.*Test +#[0-9]+: ([^ ]+) .*(Passed|Failed|Skipped|Timeout).* ([0-9.]+) sec$/\3 \1/p' \
		"$times" | sort -rn | sed -n '1,10s/^/  /p'
	echo "deploy/test.sh: $(($(date +%s) - begun)) s in all"
	rm -f "$times"
	exit "$rc"
}
trap slowest EXIT
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DKILN_WERROR=ON \
	-DKILN_SANITIZE=address,undefined -DKILN_TESTS=ON
cmake --build "$build" -j"$(nproc)"
# The tests mostly wait (kilnd, agents, BMC simulators, Slurm), so twice as many run at once
# as there are CPUs (KILN_TEST_JOBS sets it); the one that measures latency runs alone.
(cd "$build" && ctest --output-on-failure -j"${KILN_TEST_JOBS:-$(($(nproc) * 2))}" "$@") |
	tee -a "$times"

# The PostgreSQL leg: one throw-away server (tests/pg/pg-server.sh) for the label pg, each
# test on databases of its own. The tests mostly wait (kilnd, agents, BMC simulators), so
# more run at once than there are CPUs.
# KILN_TEST_PG_LEG=0 leaves it out.
if [ "${KILN_TEST_PG_LEG:-1}" != 0 ]; then
	pgdir=$(mktemp -d /tmp/kiln-pg.XXXXXX)
	eval "$(tests/pg/pg-server.sh start "$pgdir")"
	export KILN_TEST_PG
	start=$(date +%s)
	rc=0
	(cd "$build" && ctest --output-on-failure -j"${KILN_TEST_PG_JOBS:-$(($(nproc) * 2))}" \
		-L pg "$@") | tee -a "$times" || rc=$?
	echo "PostgreSQL leg: $(($(date +%s) - start)) s"
	tests/pg/pg-server.sh stop "$pgdir"
	unset KILN_TEST_PG
	[ "$rc" = 0 ] || exit "$rc"
fi

# The libFuzzer harnesses of tests/fuzz, each for about 10 s from its seeds (a longer run:
# tests/fuzz/README.md). Their corpus replays ran above with the unit tests.
if command -v clang >/dev/null 2>&1; then
	fuzz=${KILN_FUZZ_BUILD_DIR:-build-fuzz}
	CC=clang cmake -S . -B "$fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON >/dev/null
	mapfile -t harnesses < <(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
	cmake --build "$fuzz" -j"$(nproc)" --target "${harnesses[@]}"
	for h in "${harnesses[@]}"; do
		work=$(mktemp -d)
		cp "tests/fuzz/corpus/${h#fuzz_}/"* "$work/"
		echo "fuzzing $h for 10 s"
		"$fuzz/fuzz/$h" -max_total_time=10 -timeout=10 -artifact_prefix="$fuzz/" "$work" \
			>"$fuzz/$h.log" 2>&1 || { tail -40 "$fuzz/$h.log"; rm -rf "$work"; exit 1; }
		rm -rf "$work"
	done
else
	echo "clang is not installed: the fuzz harnesses ran as corpus replays only"
fi
