# SPDX-License-Identifier: Apache-2.0
# Integration: the CLI's contract (README "The CLI", issue 18) against kilnd and kiln-bmcsim:
# unknown names in a range stop every command before anything is sent (exit 2; kilnd 404
# with "field":"range" and the names, on every endpoint that takes a range), an empty range is
# an answer for reads and an error for actions, usage and parse errors exit 2, kiln gpus over
# nodes without a report and a failing --tail, destructive actions on two nodes ask, the
# threshold from cli.conf, two tokens in the environment, a refused action in the audit log,
# errors that say what to do, numbers as people read them and an uncut audit outcome.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${KILN_SRC:-$(cd "$HERE/../.." && pwd)}
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=../sim/bmcsim.sh
. "$SRC/tests/sim/bmcsim.sh"

KILN=$KILN_BIN/kiln
command -v setsid >/dev/null || { echo "skipped: setsid (util-linux) is not installed"; exit 77; }
command -v openssl >/dev/null || { echo "skipped: openssl is not installed"; exit 77; }
FAILS=0
on_exit() {
	bmcsim_stop_all
	kiln_test_cleanup
}
trap on_exit EXIT
T=$KILN_TEST_TMP

# expect DESC RC CMD...: runs CMD without a terminal (setsid: no /dev/tty to confirm on),
# stdout in $T/out, stderr in $T/err.
expect() {
	local desc=$1 want=$2 got
	shift 2
	setsid -w "$@" </dev/null >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" -eq "$want" ]; then
		pass "$desc"
	else
		fail "$desc: exit $got, want $want: $(head -c 400 "$T/out") $(head -c 400 "$T/err")"
	fi
}
# says DESC TEXT: the last command's stderr (or stdout) holds TEXT
says() {
	if grep -qF -- "$2" "$T/err" "$T/out"; then pass "$1"; else
		fail "$1: no '$2' in: $(head -c 400 "$T/out") $(head -c 400 "$T/err")"; fi
}

printf '[poller]\ninterval = 3600s\n[bmc]\naction_timeout = 20s\n' >"$T/kilnd.conf"
bmcsim_start "$T/sim" "$SRC/tests/sim/fixtures/generic" --count 3 --power-delay-ms 100 || exit 1
PORTS=("${BMCSIM_PORTS[@]}")
kiln_test_start_kilnd "" --config "$T/kilnd.conf" || exit 1
export HOME=$T/home XDG_CONFIG_HOME=$T/home/.config
mkdir -p "$XDG_CONFIG_HOME/kiln"
unset KILN_TOKEN KILN_CONFIRM_THRESHOLD KILN_CA KILN_FINGERPRINT

printf 'password\n' >"$T/bmc.pw"
for i in 1 2 3; do
	"$KILN" node add "gpu0$i" --bmc "redfish+http://127.0.0.1:${PORTS[$((i - 1))]}" \
		--bmc-user admin --bmc-password-file "$T/bmc.pw" --group lab >/dev/null ||
		{ echo "node add gpu0$i failed" >&2; exit 1; }
done
"$KILN" node add agent01 --group agents >/dev/null || exit 1
# gpu02's agent reports (a GPU drawing 612.345 W); the others never did (switched off)
[ "$(kiln_api POST /agent/tokens '{"node":"gpu02"}')" = 201 ] || fail "agent token"
atok=$(jq -r .token "$KILN_BODY_FILE")
report=$(jq -cn --arg time "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '{
  schema: "kiln.agent.report/1", report_id: "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c01", time: $time, agent: {version: "t"},
  host: {hostname: "gpu02", boot_id: "b1", kernel: "6.1.0"},
  nvidia: {status: "ok", driver_version: "550.54.15", kernel_module_version: "550.54.15",
           cuda_driver_version: "12.4"},
  cuda_toolkits: [], cudnn_version: null,
  gpus: [{index: 0, uuid: "GPU-c-0", name: "NVIDIA H100 80GB HBM3", pci_bus_id: "00000000:18:00.0",
          memory_total_bytes: 85899345920, power_draw_w: 612.34500000000003, temperature_c: 41}],
  xid_events: [], disks: []}')
status=$(kiln_api POST /agent/report "$report" "$atok")
case $status in 200 | 201 | 202) ;; *) fail "agent report: $status $(cat "$KILN_BODY_FILE")" ;; esac
sent() { # POSTs and resets the simulated BMCs saw, all three
	local p
	for p in "${PORTS[@]}"; do
		curl -sf "http://127.0.0.1:$p/_sim/state" | jq -c '[.requests.POST, (.resets | length)]'
	done | tr -d '\n'
}

# --- unknown names: exit 2 before anything is sent ---------------------------------------
expect "kiln status gpu99: exit 2" 2 "$KILN" status gpu99
says "  ... names the unknown node" "gpu99"
expect "kiln status @nosuch: exit 2" 2 "$KILN" status @nosuch
says "  ... names the unknown group" "@nosuch"
before=$(sent)
expect "power cycle gpu[01-02],gpu99 --yes: exit 2" 2 "$KILN" power cycle 'gpu[01-02],gpu99' --yes
says "  ... lists the unknown name" "gpu99"
same "  ... nothing reached a BMC" "$(sent)" "$before"
expect "power status gpu01,gpu99: exit 2" 2 "$KILN" power status gpu01,gpu99
expect "gpus gpu99: exit 2" 2 "$KILN" gpus gpu99
expect "node list gpu99: exit 2" 2 "$KILN" node list gpu99
expect "events gpu99: exit 2" 2 "$KILN" events gpu99
expect "audit gpu99 (versions): exit 2" 2 "$KILN" audit gpu99
expect "boot @nosuch pxe --yes: exit 2" 2 "$KILN" boot @nosuch pxe --yes
expect "node maintenance gpu99 on: exit 2" 2 "$KILN" node maintenance gpu99 on --reason x
same "  ... nothing reached a BMC" "$(sent)" "$before"
# every endpoint that takes a range answers 404, "field":"range", with the names
api_unknown() { # DESC METHOD PATH [BODY]
	local status
	status=$(kiln_api "$2" "$3" "${4:-}")
	if [ "$status" = 404 ] && jq -e '.field == "range" and (.unknown | index("gpu99")) != null' \
		"$KILN_BODY_FILE" >/dev/null; then
		pass "API $1: 404 field range, unknown gpu99"
	else
		fail "API $1: $status $(cat "$KILN_BODY_FILE")"
	fi
}
[ "$(kiln_api POST /images '{"name":"pxe-img","pxe":true}')" = 201 ] || fail "image add"
R='gpu01,gpu99'
api_unknown "GET /nodes" GET "/nodes?range=$R"
api_unknown "DELETE /nodes" DELETE "/nodes?range=$R"
api_unknown "GET /status" GET "/status?range=$R"
api_unknown "GET /hung" GET "/hung?range=$R"
api_unknown "GET /events" GET "/events?range=$R"
api_unknown "GET /gpus" GET "/gpus?range=$R"
api_unknown "GET /jobs" GET "/jobs?range=$R"
api_unknown "GET /versions/audit" GET "/versions/audit?range=$R"
api_unknown "GET /power" GET "/power?range=$R"
api_unknown "GET /sensors" GET "/sensors?range=$R"
api_unknown "GET /sel" GET "/sel?range=$R"
api_unknown "GET /inventory" GET "/inventory?range=$R"
api_unknown "POST /power" POST /power "{\"range\":\"$R\",\"action\":\"off\"}"
api_unknown "POST /boot" POST /boot "{\"range\":\"$R\",\"device\":\"pxe\"}"
api_unknown "POST /reinstall" POST /reinstall "{\"range\":\"$R\",\"image\":\"pxe-img\"}"
api_unknown "POST /nodes/maintenance" POST /nodes/maintenance "{\"range\":\"$R\",\"on\":false}"
api_unknown "POST /console/capture" POST /console/capture "{\"range\":\"$R\",\"enabled\":false}"
status=$(kiln_api GET "/status?range=@nosuch")
same "API GET /status?range=@nosuch: 404 naming @nosuch" \
	"$status $(jq -c .unknown "$KILN_BODY_FILE")" '404 ["@nosuch"]'
same "  ... nothing reached a BMC" "$(sent)" "$before"

# --- a range that exclusions empty: an answer for reads, an error for actions -------------
expect "power status @agents,-agent01: exit 0" 0 "$KILN" power status '@agents,-agent01'
says "  ... says so" "no nodes in @agents,-agent01"
expect "gpus @agents,-agent01: exit 0" 0 "$KILN" gpus '@agents,-agent01'
says "  ... says so" "no nodes"
expect "power off @lab,-@lab --yes: exit 2" 2 "$KILN" power off '@lab,-@lab' --yes
says "  ... says it matches no node" "matches no node"

# --- usage and parse errors exit 2 ----------------------------------------------------------
expect "status 'gpu[01-': exit 2" 2 "$KILN" status 'gpu[01-'
expect "power status 'gpu[01-': exit 2" 2 "$KILN" power status 'gpu[01-'
printf '[group lab]\ndriverr = 550.54.15\n' >"$T/policy.ini"
expect "audit --policy with an unknown key: exit 2" 2 "$KILN" audit --policy "$T/policy.ini"
says "  ... names the key" "driverr"
expect "unknown command: exit 2" 2 "$KILN" stauts
says "  ... names the nearest" "did you mean 'status'?"
expect "unknown verb: exit 2" 2 "$KILN" node lsit
says "  ... names the nearest" "did you mean 'list'?"

# --- kiln gpus over nodes without a report; a --tail that shows no live console ------------
expect "gpus over nodes that never reported (off): exit 0" 0 "$KILN" gpus all
says "  ... says which" "no agent report yet"
says "  ... and shows the one that did" "NVIDIA H100"
expect "console --tail with capture off: exit 1" 1 "$KILN" console gpu01 --tail
says "  ... says why" "capture is off"

# --- destructive actions on more than one node ask; the threshold in cli.conf ---------------
before=$(sent)
expect "power off gpu[01-02] without --yes: refused" 1 "$KILN" power off 'gpu[01-02]'
says "  ... needs --yes" "needs --yes"
expect "power reset gpu[01-02]: refused" 1 "$KILN" power reset 'gpu[01-02]'
expect "boot gpu[01-02] pxe: refused" 1 "$KILN" boot 'gpu[01-02]' pxe
# (media takes one node: kilnd refuses a range there, so it never asks)
expect "media insert gpu[01-02]: one node only" 2 "$KILN" media insert 'gpu[01-02]' \
	http://repo.example/x.iso
expect "reinstall gpu[01-02]: refused" 2 "$KILN" reinstall 'gpu[01-02]' --image pxe-img
same "  ... nothing reached a BMC" "$(sent)" "$before"
expect "power on gpu[01-03] (not destructive): no question" 0 "$KILN" power on 'gpu[01-03]'
printf 'confirm_above = 2\n' >"$XDG_CONFIG_HOME/kiln/cli.conf"
expect "confirm_above = 2 in cli.conf: power off gpu[01-02] goes" 0 "$KILN" power off 'gpu[01-02]'
expect "  ... power off gpu[01-03] still asks" 1 "$KILN" power off 'gpu[01-03]'
rm "$XDG_CONFIG_HOME/kiln/cli.conf"

# --- one result word for power actions: ok when read back, noop when already there ---------
"$KILN" power on gpu01 --yes -o json >"$T/on.json" 2>&1
same "redfish: power on of an off node" "$(jq -r '.[0].result' "$T/on.json")" ok
"$KILN" power on gpu01 --yes -o json >"$T/on.json" 2>&1
same "redfish: power on of an on node" "$(jq -r '.[0].result' "$T/on.json")" noop

# --- credentials: two tokens in the environment; a refused action in the audit log ----------
viewer=$(kiln_test_token viewer alice) || exit 1
expect "KILN_TOKEN and KILN_TOKEN_FILE both set: exit 2" 2 env KILN_TOKEN="$viewer" "$KILN" \
	power off gpu03 --yes
says "  ... says so" "both KILN_TOKEN and KILN_TOKEN_FILE are set"
expect "a viewer's power off: refused" 1 env -u KILN_TOKEN_FILE KILN_TOKEN="$viewer" "$KILN" \
	power off gpu03 --yes
"$KILN" audit log -o json >"$T/audit.json"
same "  ... the refusal is in the audit log with who tried" \
	"$(jq -r '[.[] | select(.action == "denied" and .actor == "alice")][0] | .target + " " + (.outcome | startswith("refused:") | tostring)' "$T/audit.json")" \
	"POST /api/v1/power true"

# --- errors that say what to do --------------------------------------------------------------
expect "kilnd unreachable: exit 1" 1 env KILN_URL=http://127.0.0.1:9 "$KILN" status
says "  ... says what to do" "cannot reach kilnd at http://127.0.0.1:9: is it running? set KILN_URL or --url"
expect "https to a plain http kilnd" 1 env KILN_URL="${KILN_URL/http:/https:}" "$KILN" status
says "  ... says so" "does not speak https"
C=$T/tls
mkdir -p "$C"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=kilnd-test \
	-addext "subjectAltName=IP:127.0.0.1" -keyout "$C/key.pem" -out "$C/cert.pem" 2>/dev/null ||
	{ echo "openssl could not make a certificate" >&2; exit 1; }
plain_url=$KILN_URL plain_token=$KILN_TOKEN_FILE
kiln_test_start_kilnd "" --tls-cert "$C/cert.pem" --tls-key "$C/key.pem" || exit 1
tls_url=$KILN_URL
expect "a kilnd with a certificate not trusted here" 1 "$KILN" status
says "  ... names --fingerprint" "--fingerprint"
says "  ... and where kilnd logged it" "TLS certificate SHA-256 fingerprint"
says "  ... and --ca" "--ca FILE"
expect "http to an https kilnd" 1 env KILN_URL="${tls_url/https:/http:}" "$KILN" status
says "  ... says so" "does not answer plain http"
export KILN_URL=$plain_url KILN_TOKEN_FILE=$plain_token

# --- numbers as people read them; the audit outcome whole -----------------------------------
expect "node show gpu02" 0 "$KILN" node show gpu02
says "  ... power as people read it" "612.3 W"
says "  ... memory too" "80 GiB"
if grep -q "612.34500" "$T/out"; then fail "  ... still prints $(grep -o '612.34500[0-9]*' "$T/out")"; fi
# gpu03 is off: a cycle without --on-if-off fails with a long reason
"$KILN" power off gpu03 --yes >/dev/null 2>&1
"$KILN" power cycle gpu03 --yes >/dev/null 2>&1
want=$("$KILN" audit log -o json | jq -r '[.[] | select(.action == "power.cycle")][0].outcome')
[ "${#want}" -gt 64 ] || fail "the cycle's outcome is short ('$want'): the check below proves nothing"
expect "audit log (table)" 0 "$KILN" audit log
says "  ... the outcome whole" "$want"

# a fleet where no agent ever reported: kiln gpus still answers (kilnd once crashed there)
kiln_test_start_kilnd "" || exit 1
"$KILN" node add lone01 >/dev/null || fail "node add lone01"
expect "gpus where no agent reported: exit 0" 0 "$KILN" gpus
says "  ... says so" "lone01: no agent report yet"

if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	exit 1
fi
