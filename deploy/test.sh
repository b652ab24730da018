#!/usr/bin/env bash
# Installs what the build and the tests need, builds kiln with sanitizers and -Werror,
# and runs every test (ctest). Usage: deploy/test.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/packages.sh
kiln_install_packages "${KILN_BUILD_PACKAGES[@]}" "${KILN_TEST_PACKAGES[@]}"

build=${KILN_TEST_BUILD_DIR:-build-test}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DKILN_WERROR=ON \
	-DKILN_SANITIZE=address,undefined -DKILN_TESTS=ON
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
