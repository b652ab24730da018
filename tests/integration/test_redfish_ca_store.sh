#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Redfish driver's CA trust (a node's tls: ca file, loaded once and shared by its
# connections): the right CA is trusted, another one is refused, a CA file replaced on disk is
# read again, and a file of two CAs serves two BMCs.
set -u

SIM="$KILN_BIN/kiln-bmcsim"
RF="$KILN_BIN/kiln-rfdrive"
FIX="$KILN_SRC/tests/sim/fixtures"
for b in "$SIM" "$RF"; do
	[ -x "$b" ] || { echo "SKIP: $b is not built"; exit 77; }
done
[ -d "$FIX/generic" ] || { echo "SKIP: $FIX has no fixtures yet"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq is not installed"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl is not installed"; exit 77; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

FAILS=0
check() { # check NAME CONDITION-RESULT(0/1) DETAIL
	if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; FAILS=$((FAILS + 1)); fi
}

# start_sim NAME: a TLS simulator of one BMC with its own certificate in $WORK/NAME.pem;
# sets PORT.
start_sim() {
	"$SIM" --mockup "$FIX/generic" --listen 127.0.0.1:0 --tls --cert-out "$WORK/$1.pem" \
		--ports-file "$WORK/$1.ports" >"$WORK/$1.log" 2>&1 &
	PIDS+=("$!")
	for _ in $(seq 1 100); do
		[ -s "$WORK/$1.ports" ] && [ -s "$WORK/$1.pem" ] && break
		sleep 0.1
	done
	[ -s "$WORK/$1.ports" ] || { echo "kiln-bmcsim did not start:"; cat "$WORK/$1.log"; exit 1; }
	PORT=$(head -1 "$WORK/$1.ports")
}
start_sim a
PA=$PORT
start_sim b
PB=$PORT
rf() { "$RF" --timeout-ms 5000 "$@" 2>>"$WORK/rf.err"; }

# 1. The BMC's own certificate as the CA: read.
out=$(rf --url "redfish://127.0.0.1:$PA" --ca "$WORK/a.pem" power-get)
check "trusted CA: power read" $([ "$(echo "$out" | jq -r '.[0].power')" = on ] && echo 0 || echo 1) \
	"$(echo "$out" | jq -c '.[0]')"

# 2. Another certificate as the CA: refused as a certificate problem, no request made.
out=$(rf --url "redfish://127.0.0.1:$PA" --ca "$WORK/b.pem" power-get)
err=$(echo "$out" | jq -r '.[0].error // ""')
check "other CA: refused" $(echo "$err" | grep -qi "certificate" && echo 0 || echo 1) "error '$err'"

# 3. Both BMCs in one engine trusting one file that holds both certificates: both read,
# three rounds on the shared store.
cat "$WORK/a.pem" "$WORK/b.pem" >"$WORK/both.pem"
out=$(rf --url "redfish://127.0.0.1:$PA" --url "redfish://127.0.0.1:$PB" --ca "$WORK/both.pem" \
	--repeat 3 power-get)
check "one file of two CAs: both BMCs, three rounds" \
	$([ "$(echo "$out" | jq -r '[.[] | select(.power == "on")] | length')" = 2 ] && echo 0 || echo 1) \
	"$(echo "$out" | jq -c .)"

# 4. The CA file replaced on disk while the engine runs: round 1 (wrong CA) fails, round 2
# (after the file now holds the right CA, a new connection) reads.
cp "$WORK/b.pem" "$WORK/moving.pem"
rf --url "redfish://127.0.0.1:$PA" --ca "$WORK/moving.pem" --repeat 2 --pause-ms 3000 \
	power-get >"$WORK/moving.out" &
RPID=$!
sleep 1.5
cp "$WORK/a.pem" "$WORK/moving.pem.new" && mv "$WORK/moving.pem.new" "$WORK/moving.pem"
wait "$RPID"
rc=$?
check "CA file replaced: round 1 failed (exit 3), round 2 read" \
	$([ "$rc" = 3 ] && [ "$(jq -r '.[0].power' "$WORK/moving.out")" = on ] && echo 0 || echo 1) \
	"exit $rc, last round $(jq -c '.[0]' "$WORK/moving.out")"

# 5. Two entries for one BMC trusting different CA files must not share a connection: the
# driver spreads BMCs over 64 curl multi handles in order, so entries 1 and 65 share one
# handle (and its connection cache). Entry 1 trusts a.pem (right), entry 65 b.pem (wrong); in
# round 2 entry 1's connection is kept and idle, and entry 65 must still be refused.
args=(--url "redfish://127.0.0.1:$PA" --url-ca "$WORK/a.pem")
for _ in $(seq 2 64); do
	args+=(--url "redfish://127.0.0.1:$PB" --url-ca "$WORK/b.pem")
done
args+=(--url "redfish://127.0.0.1:$PA" --url-ca "$WORK/b.pem")
rf "${args[@]}" --repeat 2 --pause-ms 300 power-get >"$WORK/shared.out"
first=$(jq -r '.[0].power // .[0].error' "$WORK/shared.out")
last=$(jq -r '.[64].power // ""' "$WORK/shared.out")
lerr=$(jq -r '.[64].error // ""' "$WORK/shared.out")
check "one BMC, two CA files, one multi handle: the wrong CA stays refused" \
	$([ "$first" = on ] && [ "$last" != on ] && echo "$lerr" | grep -qi certificate &&
		echo 0 || echo 1) "entry 1 '$first', entry 65 '$last' '$lerr'"

# 6. The same with certificate pins: entry 65 pinned to b's certificate must not ride on
# entry 1's connection to a (pinned to a's).
fpa=$(openssl x509 -in "$WORK/a.pem" -noout -fingerprint -sha256 | cut -d= -f2)
fpb=$(openssl x509 -in "$WORK/b.pem" -noout -fingerprint -sha256 | cut -d= -f2)
args=(--url "redfish://127.0.0.1:$PA" --url-fingerprint "$fpa")
for _ in $(seq 2 64); do
	args+=(--url "redfish://127.0.0.1:$PB" --url-fingerprint "$fpb")
done
args+=(--url "redfish://127.0.0.1:$PA" --url-fingerprint "$fpb")
rf "${args[@]}" --repeat 2 --pause-ms 300 power-get >"$WORK/pinned.out"
first=$(jq -r '.[0].power // .[0].error' "$WORK/pinned.out")
last=$(jq -r '.[64].power // ""' "$WORK/pinned.out")
lerr=$(jq -r '.[64].error // ""' "$WORK/pinned.out")
check "one BMC, two pins, one multi handle: the wrong pin stays refused" \
	$([ "$first" = on ] && [ "$last" != on ] && [ -n "$lerr" ] && echo 0 || echo 1) \
	"entry 1 '$first', entry 65 '$last' '$lerr'"

[ "$FAILS" = 0 ] && echo "all passed" || { echo "$FAILS failed"; exit 1; }
