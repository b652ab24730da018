#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The dashboard in headless Chromium (issue 22) over a small lab: three simulated BMCs with
# agents on the fake NVML. dashboard.test.js logs in as a viewer and an operator and checks
# what the issue's "Done when" lists; screenshots land in $KILN_TEST_OUT (default
# build/test-output/browser). KILN_BROWSER_SCALE=1 adds the 10,000-node render measure.
# Skips (77) only where Chromium, node or npm are missing or npm cannot install the lockfile.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
KILN_LIB=${KILN_LIB:?"KILN_LIB must name the build's lib/ folder"}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
for tool in "$CHROMIUM" node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "skipped: $tool is not installed (deploy/packages.sh installs chromium; node and npm come with the machine)"
		exit 77
	fi
done
# npm for the test only, from the committed lockfile; the C build never needs it.
if [ ! -d "$HERE/node_modules/puppeteer-core" ] || [ "$HERE/package-lock.json" -nt "$HERE/node_modules" ]; then
	if ! (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1); then
		echo "skipped: npm ci could not install puppeteer-core (no registry?)"
		exit 77
	fi
fi
# shellcheck source=../integration/lib.sh
. "$SRC/tests/integration/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"
# shellcheck source=../integration/agent_fleet.sh
. "$SRC/tests/integration/agent_fleet.sh"
FAILS=0
T=$KILN_TEST_TMP
OUT=${KILN_TEST_OUT:-$KILN_BIN/../test-output/browser}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
printf '[poller]\ninterval = 5s\nhealth_every = 1s\n[health]\nagent_interval = 2s\nhung_intervals = 3\n' \
	>"$T/kilnd.conf"
on_exit() {
	fleet_agents_stop
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT

bmcsim_start "$T/sim" "$MOCKUP" --count 3 || exit 1
PORTS=("${BMCSIM_PORTS[@]}")
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
i=0
for n in gpu01 gpu02 gpu03; do
	fleet_node_add "$n" "${PORTS[$i]}" && fleet_agent_start "$n" || exit 1
	i=$((i + 1))
done
healthy() {
	"$KILN" status -o json | jq -e 'length == 3 and all(.health == "ok")' >/dev/null
}
wait_for "the lab's three nodes are ok" 60 healthy || { "$KILN" status; exit 1; }
viewer=$(kiln_test_token viewer night-viewer) || exit 1
operator=$(kiln_test_token operator night-op) || exit 1

ADMIN_TOKEN=$(cat "$KILN_TOKEN_FILE") VIEWER_TOKEN=$viewer OPERATOR_TOKEN=$operator \
	VIEWER_NAME=night-viewer OPERATOR_NAME=night-op OUT=$OUT CHROMIUM=$CHROMIUM \
	HUNG_NODE=gpu03 STOP_AGENT="kill -TERM ${AGENT_PID[gpu03]}" \
	CYCLE_NODE=gpu01 CYCLE_SIM="http://127.0.0.1:${PORTS[0]}/_sim" MODE=lab \
	timeout 240 node "$HERE/dashboard.test.js"
check "the lab in the browser" $? "see the FAIL lines above"
unset "AGENT_PID[gpu03]"

if [ "${KILN_BROWSER_SCALE:-0}" = 1 ]; then
	fleet_agents_stop
	kiln_test_stop_kilnd || fail "kilnd exited non-zero: $(tail -20 "$KILND_LOG")"
	kiln_test_start_kilnd || exit 1
	jq -n '{nodes: [range(10000) | {name: ("n" + ("0000" + tostring)[-5:])}]}' >"$T/import.json"
	code=$(curl -s -o "$KILN_BODY_FILE" -w '%{http_code}' -H "Authorization: Bearer $(cat "$KILN_TOKEN_FILE")" \
		-H 'Content-Type: application/json' --data-binary "@$T/import.json" "$KILN_URL/api/v1/nodes/import")
	same "import 10,000 nodes" "$code" 201
	viewer=$(kiln_test_token viewer scale-viewer) || exit 1
	ADMIN_TOKEN=$(cat "$KILN_TOKEN_FILE") VIEWER_TOKEN=$viewer OUT=$OUT CHROMIUM=$CHROMIUM MODE=scale \
		timeout 120 node "$HERE/dashboard.test.js"
	check "10,000 nodes in the browser" $? "see the FAIL lines above"
fi
kiln_test_stop_kilnd || fail "kilnd exited non-zero (sanitizer report?): $(tail -20 "$KILND_LOG")"
echo "screenshots: $OUT"
[ "$FAILS" -eq 0 ] && echo "all checks passed"
exit $((FAILS > 0))
