#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Redfish driver's behaviour toward a BMC, asserted on kiln-bmcsim's /_sim/state and
# /_sim/requests, on the simulator's own fixtures (no ../shared needed).
set -u

SIM="$KILN_BIN/kiln-bmcsim"
RF="$KILN_BIN/kiln-rfdrive"
FIX="$KILN_SRC/tests/sim/fixtures"
for b in "$SIM" "$RF"; do
	[ -x "$b" ] || { echo "SKIP: $b is not built"; exit 77; }
done
[ -d "$FIX/idrac9" ] || { echo "SKIP: $FIX has no fixtures yet"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq is not installed"; exit 77; }

WORK=$(mktemp -d)
SIM_PID=""
cleanup() {
	[ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

FAILS=0
check() { # check NAME CONDITION-RESULT(0/1) DETAIL
	if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; FAILS=$((FAILS + 1)); fi
}

# start_sim FIXTURE [simulator options...]: sets PORT, URL, CTL (the first BMC)
start_sim() {
	local fixture="$1"
	shift
	rm -f "$WORK/ports"
	"$SIM" --mockup "$FIX/$fixture" --listen 127.0.0.1:0 --ports-file "$WORK/ports" \
		--power-delay-ms 200 "$@" >"$WORK/sim.log" 2>&1 &
	SIM_PID=$!
	for _ in $(seq 1 100); do
		[ -s "$WORK/ports" ] && break
		kill -0 "$SIM_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$WORK/ports" ] || { echo "kiln-bmcsim did not start:"; cat "$WORK/sim.log"; exit 1; }
	PORT=$(head -1 "$WORK/ports")
	URL="redfish+http://127.0.0.1:$PORT"
	CTL="http://127.0.0.1:$PORT/_sim"
}
stop_sim() {
	kill "$SIM_PID" 2>/dev/null
	wait "$SIM_PID" 2>/dev/null
	SIM_PID=""
}
state() { curl -s "$CTL/state" | jq -r "$1"; }
requests() { curl -s "$CTL/requests" | jq -r "$1"; }
rf() { "$RF" --timeout-ms 3000 --action-timeout-ms 20000 "$@" 2>>"$WORK/rf.err"; }

# 1. One session across 100 polls, deleted when kilnd stops.
start_sim idrac9
out=$(rf --url "$URL" --repeat 100 power-get)
created=$(state .sessions_created)
deleted=$(state .sessions_deleted)
gets=$(state .requests.GET)
check "one session for 100 polls, deleted at shutdown" \
	$([ "$created" = 1 ] && [ "$deleted" = 1 ] && [ "$(state .sessions)" = 0 ] &&
	  [ "$(echo "$out" | jq -r '.[0].power')" = on ] && echo 0 || echo 1) \
	"created $created, deleted $deleted, GETs $gets, last: $(echo "$out" | jq -c '.[0]')"
tokens=$(requests '[.[] | select(.path | test("Systems/System.Embedded.1$")) | .headers["X-Auth-Token"]] | unique | length')
check "every poll used the session token" $([ "$tokens" = 1 ] && echo 0 || echo 1) "$tokens distinct tokens"
stop_sim

# 2. The session cap: a login answered 503 (iDRAC RAC0218) uses HTTP Basic instead (which
# Redfish requires services to accept); no more sessions are opened, no login retried.
start_sim idrac9 --session-cap 1
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
	-d '{"UserName":"admin","Password":"password"}' "http://127.0.0.1:$PORT/redfish/v1/SessionService/Sessions"
out=$(rf --url "$URL" power-get)
posts=$(requests '[.[] | select(.method == "POST" and (.path | test("Sessions")))] | length')
basic=$(requests '[.[] | select(.path | test("Systems")) | .headers.Authorization] | unique | join(",")')
check "session cap: the read works with Basic" \
	$([ "$(echo "$out" | jq -r '.[0].power')" = on ] && [ "$basic" = Basic ] &&
	  [ "$(state .sessions)" = 1 ] && echo 0 || echo 1) "out $(echo "$out" | jq -c .), auth '$basic'"
check "session cap: one login attempt" $([ "$posts" = 2 ] && echo 0 || echo 1) \
	"$posts POST Sessions (the test's own and kiln's)"
stop_sim

# 3. Re-login after 401: the session expires between two polls.
start_sim ilo5 --session-timeout 1
out=$(rf --url "$URL" --repeat 2 --pause-ms 2500 power-get)
n401=$(requests '[.[] | select(.status == 401)] | length')
check "re-login after 401" \
	$([ "$(echo "$out" | jq -r '.[0].power')" = off ] && [ "$(state .sessions_created)" = 2 ] &&
	  [ "$n401" -ge 1 ] && echo 0 || echo 1) \
	"result $(echo "$out" | jq -c '.[0]'), sessions created $(state .sessions_created), 401s $n401"
stop_sim

# 4. The 412 ETag retry: one stale If-Match, then a fresh ETag succeeds.
start_sim ilo5 --fault 412:count=1
out=$(rf --url "$URL" boot pxe)
patches=$(requests '[.[] | select(.method == "PATCH")] | length')
with_etag=$(requests '[.[] | select(.method == "PATCH" and .headers["If-Match"] != null)] | length')
check "412: one retry with a fresh ETag" \
	$([ "$(echo "$out" | jq -r '.[0].target')" = Pxe ] && [ "$patches" = 2 ] && [ "$with_etag" = 2 ] &&
	  [ "$(state .boot.BootSourceOverrideTarget)" = Pxe ] && echo 0 || echo 1) \
	"result $(echo "$out" | jq -c '.[0]'), PATCHes $patches (with If-Match $with_etag)"
stop_sim

# 5. A 202 task monitor is followed to completion.
start_sim generic --async --task-ms 600
out=$(rf --url "$URL" power cycle)
monitor_gets=$(requests '[.[] | select(.method == "GET" and (.path | test("Task"; "i")))] | length')
check "202 task monitor followed" \
	$([ "$(echo "$out" | jq -r '.[0].result')" = ok ] && [ "$monitor_gets" -ge 1 ] && echo 0 || echo 1) \
	"result $(echo "$out" | jq -c '.[0]'), task monitor GETs $monitor_gets"
stop_sim

# 6. A ResetType the BMC does not allow is never sent (iLO 5 lists no PowerCycle).
start_sim ilo5
rf --url "$URL" power on >/dev/null
out=$(rf --url "$URL" power cycle)
bad=$(requests '[.[] | select(.method == "POST" and ((.body // "") | test("PowerCycle")))] | length')
check "disallowed ResetType never sent" \
	$([ "$bad" = 0 ] && [ "$(echo "$out" | jq -r '.[0].result')" = ok ] &&
	  [ "$(echo "$out" | jq -r '.[0].reset_type')" = "ForceOff+On" ] && echo 0 || echo 1) \
	"PowerCycle POSTs $bad, result $(echo "$out" | jq -c '.[0]')"
stop_sim

# 7. A BMC that never answers does not delay the others.
start_sim generic --count 3 --fault hang:index=1
P0=$(sed -n 1p "$WORK/ports"); P1=$(sed -n 2p "$WORK/ports"); P2=$(sed -n 3p "$WORK/ports")
out=$("$RF" --timeout-ms 2000 --url "redfish+http://127.0.0.1:$P0" --url "redfish+http://127.0.0.1:$P1" \
	--url "redfish+http://127.0.0.1:$P2" power-get 2>>"$WORK/rf.err")
fast=$(echo "$out" | jq '[.[0], .[2]] | map(select(.power == "on" and .elapsed_ms < 1000)) | length')
hung=$(echo "$out" | jq -r '.[1].error // ""')
check "a hanging BMC does not delay the others" \
	$([ "$fast" = 2 ] && echo "$hung" | grep -qi "timeout\|timed out" && echo 0 || echo 1) \
	"$(echo "$out" | jq -c '[.[] | {node, elapsed_ms, power, error}]')"
# A power read gives up on a hung BMC after the status timeout, first contact included (each
# kiln-rfdrive run is a first contact); other operations keep the request timeout.
out=$("$RF" --timeout-ms 2500 --status-timeout-ms 500 --url "redfish+http://127.0.0.1:$P0" \
	--url "redfish+http://127.0.0.1:$P1" --url "redfish+http://127.0.0.1:$P2" power-get 2>>"$WORK/rf.err")
inv=$("$RF" --timeout-ms 2500 --status-timeout-ms 500 --url "redfish+http://127.0.0.1:$P1" \
	inventory 2>>"$WORK/rf.err")
fast=$(echo "$out" | jq '[.[0], .[2]] | map(select(.power == "on")) | length')
hung_ms=$(echo "$out" | jq '.[1].elapsed_ms')
inv_ms=$(echo "$inv" | jq '.[0].elapsed_ms')
check "a first-contact power read stops at the status timeout, other operations at the request timeout" \
	$([ "$fast" = 2 ] && [ "$hung_ms" -ge 450 ] && [ "$hung_ms" -lt 1500 ] &&
	  echo "$out" | jq -r '.[1].error // ""' | grep -qi "timed out" &&
	  [ "$inv_ms" -ge 2400 ] && echo 0 || echo 1) \
	"power-get $(echo "$out" | jq -c '[.[] | {elapsed_ms, power, error}]'), inventory $inv_ms ms"
stop_sim

# 8. Malformed JSON and truncated bodies: a clear error, no crash.
for kind in malformed truncated; do
	start_sim generic --fault "$kind:all"
	out=$(rf --url "$URL" inventory)
	rc=$?
	err=$(echo "$out" | jq -r '.[0].error // ""')
	check "$kind bodies give a clear error" \
		$([ "$rc" = 3 ] && echo "$err" | grep -qi "$( [ $kind = malformed ] && echo 'malformed JSON' || echo 'truncated\|malformed')" &&
		  echo 0 || echo 1) "rc $rc, error '$err'"
	stop_sim
done

# 9. Wrong credentials: tried twice, then left alone until they change.
start_sim idrac9
out=$(rf --url "$URL" --password wrong --repeat 4 power-get)
failures=$(state .auth_failures)
err=$(echo "$out" | jq -r '.[0].error // ""')
check "wrong credentials tried twice, not more" \
	$([ "$failures" = 2 ] && echo "$err" | grep -q "credentials rejected" && echo 0 || echo 1) \
	"auth failures $failures, error '$err'"
stop_sim

if [ "$FAILS" -gt 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all Redfish driver checks passed"
