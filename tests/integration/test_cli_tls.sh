# SPDX-License-Identifier: Apache-2.0
# Integration: the kiln CLI's trust in an HTTPS kilnd: --ca, --fingerprint (also from the
# environment and cli.conf), refusal without trust or with a wrong fingerprint.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
if ! command -v openssl >/dev/null 2>&1; then
	echo "skipped: openssl (to make a test certificate) is not installed"
	exit 77
fi
KILN=$KILN_BIN/kiln
FAILS=0
# expect DESC RC CMD...
expect() {
	local desc=$1 want=$2 got
	shift 2
	"$@" >"$KILN_TEST_TMP/out" 2>"$KILN_TEST_TMP/err"
	got=$?
	if [ "$got" -eq "$want" ]; then
		pass "$desc"
	else
		fail "$desc: exit $got, want $want: $(cat "$KILN_TEST_TMP/out" "$KILN_TEST_TMP/err")"
	fi
}

C=$KILN_TEST_TMP/tls
mkdir -p "$C"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=kilnd-test \
	-addext "subjectAltName=IP:127.0.0.1" -keyout "$C/key.pem" -out "$C/cert.pem" 2>/dev/null ||
	{ echo "openssl could not make a certificate" >&2; exit 1; }
fp=$(openssl x509 -in "$C/cert.pem" -noout -fingerprint -sha256 | sed 's/.*=//')
plain=$(echo "$fp" | tr -d : | tr 'A-F' 'a-f')
wrong=$(printf '%064d' 0)

kiln_test_start_kilnd "" --tls-cert "$C/cert.pem" --tls-key "$C/key.pem" || exit 1
case "$KILN_URL" in
https://*) pass "kilnd serves HTTPS" ;;
*) fail "kilnd's URL is $KILN_URL"; exit 1 ;;
esac
export HOME=$KILN_TEST_TMP/home
mkdir -p "$HOME/.config/kiln"
unset KILN_CA KILN_FINGERPRINT XDG_CONFIG_HOME

expect "no trust: refused" 1 "$KILN" node list
expect "--fingerprint with colons" 0 "$KILN" --fingerprint "$fp" node list
expect "--fingerprint sha256: lowercase" 0 "$KILN" --fingerprint "sha256:$plain" node list
expect "wrong fingerprint: refused" 1 "$KILN" --fingerprint "$wrong" node list
expect "malformed fingerprint: refused" 1 "$KILN" --fingerprint nonsense node list
# the instances of one fleet: several pins, any one matches
expect "a list of fingerprints with the right one second" 0 "$KILN" --fingerprint "$wrong,sha256:$plain" node list
expect "a list of wrong fingerprints: refused" 1 "$KILN" --fingerprint "$wrong,$wrong" node list
expect "a list with a malformed entry: refused" 1 "$KILN" --fingerprint "$fp,nonsense" node list
expect "--ca" 0 "$KILN" --ca "$C/cert.pem" node list
expect "KILN_FINGERPRINT" 0 env KILN_FINGERPRINT="$plain" "$KILN" node list
printf 'fingerprint = %s\n' "$fp" >"$HOME/.config/kiln/cli.conf"
expect "fingerprint from cli.conf" 0 "$KILN" node list
expect "--fingerprint wins over cli.conf" 1 "$KILN" --fingerprint "$wrong" node list
printf 'ca = %s\n' "$C/cert.pem" >"$HOME/.config/kiln/cli.conf"
expect "ca from cli.conf" 0 "$KILN" node add tls01 -o json

if [ "$FAILS" -ne 0 ]; then
	echo "$FAILS check(s) failed" >&2
	exit 1
fi
echo "all checks passed"
