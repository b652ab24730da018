# SPDX-License-Identifier: Apache-2.0
# Integration: deploy/prometheus and deploy/grafana as shipped. promtool check rules and
# promtool test rules (kiln-rules.test.yml: each alert fires on its case and not on its
# neighbours), promtool check config of the scrape config (its /etc paths pointed here), and
# the dashboard: valid JSON whose every query names only kiln_ metrics (that each of those
# has samples in a scrape is test_metrics_prometheus.sh's check).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../../deploy/packages.sh
. "$SRC/deploy/packages.sh"
if ! command -v promtool >/dev/null; then
	kiln_install_packages prometheus >/dev/null 2>&1
	if ! command -v promtool >/dev/null; then
		echo "SKIP: the Debian package prometheus (promtool) cannot be installed here"
		exit 77
	fi
fi
FAILS=0
T=$KILN_TEST_TMP
P=$SRC/deploy/prometheus

promtool check rules "$P/kiln-rules.yml" >"$T/check.out" 2>&1
check "promtool check rules kiln-rules.yml" $? "$(cat "$T/check.out")"
(cd "$P" && promtool test rules kiln-rules.test.yml) >"$T/test.out" 2>&1
check "promtool test rules kiln-rules.test.yml" $? "$(cat "$T/test.out")"
for a in KilnNodeHung KilnGpuLost KilnXidCritical KilnEccUncorrectedRising KilnDriverModuleMismatch \
	KilnInletHot KilnPsuRedundancyLost KilnBmcUnreachable KilnDown; do
	grep -q "alert: $a\$" "$P/kiln-rules.yml" || fail "kiln-rules.yml has no alert $a"
	grep -q "alertname: $a\$" "$P/kiln-rules.test.yml" || fail "kiln-rules.test.yml does not test $a"
done
pass "every alert the issue lists is there and tested"

# the scrape config with its files here
mkdir -p "$T/etc"
cp "$P/kiln-rules.yml" "$T/etc/kiln-rules.yml"
printf 'kiln_example\n' >"$T/etc/kiln-metrics.token"
printf '' >"$T/etc/kiln-ca.crt"
sed "s|/etc/prometheus/|$T/etc/|g" "$P/prometheus.yml" >"$T/prometheus.yml"
promtool check config "$T/prometheus.yml" >"$T/config.out" 2>&1
check "promtool check config prometheus.yml" $? "$(cat "$T/config.out")"

D=$SRC/deploy/grafana/kiln-dashboard.json
jq -e . "$D" >/dev/null 2>&1
check "the dashboard is JSON" $? "jq cannot read $D"
n=$(jq '[.. | objects | select(has("targets")) | .targets[]] | length' "$D")
[ "$n" -gt 0 ] || fail "the dashboard has no query"
empty=$(jq -r '.. | objects | select(has("targets")) | select([.targets[] | .expr // ""] | any(. == "")) | .title' "$D")
same "every panel's target has a query" "$empty" ""
foreign=$(jq -r '.. | objects | (.expr, .definition) | strings' "$D" | grep -o '[a-zA-Z_:][a-zA-Z0-9_:]*{\?' |
	grep -E '^[a-z_]+_(total|bytes|seconds|celsius|watts|ratio|info|on|level|reason|hung|silent|pending|bucket)' |
	grep -v '^kiln_' | sort -u)
same "the dashboard's queries name no metric but kiln_ ones" "$foreign" ""
for panel in "Fleet overview" "Node drill-down: \$node" "Versions"; do
	jq -e --arg t "$panel" '[.panels[] | select(.type == "row" and .title == $t)] | length == 1' "$D" >/dev/null ||
		fail "the dashboard has no row '$panel'"
done
jq -e '[.panels[] | .targets[]? | .expr | select(test("kiln_gpu_"))] | length >= 4' "$D" >/dev/null
check "the drill-down has GPU panels" $? "fewer than 4 GPU queries"

if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	exit 1
fi
echo "all Prometheus rule and dashboard checks passed"
