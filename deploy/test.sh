#!/usr/bin/env bash
# Installs what the build and the tests need, builds kiln with sanitizers and -Werror,
# and runs every test (ctest), then the store and integration tests again on a throw-away
# PostgreSQL server. Usage: deploy/test.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/packages.sh
kiln_install_packages "${KILN_BUILD_PACKAGES[@]}" "${KILN_TEST_PACKAGES[@]}"

build=${KILN_TEST_BUILD_DIR:-build-test}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DKILN_WERROR=ON \
	-DKILN_SANITIZE=address,undefined -DKILN_TESTS=ON
cmake --build "$build" -j"$(nproc)"
(cd "$build" && ctest --output-on-failure -j"$(nproc)" "$@")

# The PostgreSQL leg: one throw-away server (tests/pg/pg-server.sh) for the store unit tests
# and the integration label, each test on databases of its own. The tests mostly wait
# (kilnd, agents, BMC simulators), so more run at once than there are CPUs.
# KILN_TEST_PG_LEG=0 leaves it out.
if [ "${KILN_TEST_PG_LEG:-1}" != 0 ]; then
	pgdir=$(mktemp -d /tmp/kiln-pg.XXXXXX)
	eval "$(tests/pg/pg-server.sh start "$pgdir")"
	export KILN_TEST_PG
	start=$(date +%s)
	rc=0
	(cd "$build" && ctest --output-on-failure -j"${KILN_TEST_PG_JOBS:-$(($(nproc) * 2))}" \
		-L 'store|integration' "$@") || rc=$?
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
