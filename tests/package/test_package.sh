#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages: configures and builds a RelWithDebInfo tree of its own (KILN_PKG_BUILD,
# kept between runs so that a rerun only rebuilds what changed; the test build carries
# sanitizers, which a package must not), runs cpack -G DEB, lintian (no errors), unpacks the
# packages into a temporary root with dpkg-deb -x (never dpkg -i), verifies the units with
# systemd-analyze, runs the unpacked kilnd with the packaged kilnd.conf on a temporary state
# dir (and with a TLS certificate as systemd credentials) and the unpacked kiln against it,
# renders the man pages and completes through the installed bash completion.
set -uo pipefail
. "$KILN_SRC/tests/integration/lib.sh"
FAILS=0
PB=${KILN_PKG_BUILD:-$KILN_TEST_TMP/build}
for tool in cpack lintian dpkg-deb dpkg-shlibdeps systemd-analyze man scdoc openssl; do
	command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (deploy/packages.sh)"; exit 1; }
done

# build: only the programs and the docs, no tests
if ! { cmake -S "$KILN_SRC" -B "$PB" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_TESTS=OFF \
	-DCMAKE_INSTALL_PREFIX=/usr -DKILN_WERROR=ON -DKILN_SANITIZE= &&
	cmake --build "$PB" -j"$(nproc)"; } >"$KILN_TEST_TMP/build.log" 2>&1; then
	tail -30 "$KILN_TEST_TMP/build.log"
	echo "FAIL: the RelWithDebInfo build failed"
	exit 1
fi
rm -f "$PB"/*.deb
(cd "$PB" && cpack -G DEB) >"$KILN_TEST_TMP/cpack.log" 2>&1
check "cpack -G DEB" $? "$(tail -20 "$KILN_TEST_TMP/cpack.log")"
debs=()
V=$(sed -n 's/^project(kiln VERSION \([0-9.]*\).*/\1/p' "$KILN_SRC/CMakeLists.txt")-1
for p in kiln-server kiln-cli kiln-agent; do
	deb=$PB/${p}_${V}_$(dpkg --print-architecture).deb
	if [ -f "$deb" ]; then pass "$p package built"; else fail "no $deb"; continue; fi
	debs+=("$deb")
done
[ "${#debs[@]}" -eq 3 ] || { echo "$FAILS check(s) failed"; exit 1; }

lintian --fail-on error --tag-display-limit 0 "${debs[@]}" >"$KILN_TEST_TMP/lintian.log" 2>&1
check "lintian reports no errors" $? "$(grep '^E:' "$KILN_TEST_TMP/lintian.log")"
grep -q '^E:' "$KILN_TEST_TMP/lintian.log"
same "lintian prints no E: line" "$?" 1
grep '^W:' "$KILN_TEST_TMP/lintian.log" | sed 's/^/lintian: /'

# what each package holds, and what dpkg-shlibdeps found
R=$KILN_TEST_TMP/root
mkdir -p "$R"
for deb in "${debs[@]}"; do
	dpkg-deb -x "$deb" "$R"
done
for f in usr/bin/kilnd lib/systemd/system/kilnd.service etc/kiln/kilnd.conf \
	usr/share/man/man8/kilnd.8.gz usr/share/man/man5/kilnd.conf.5.gz \
	usr/share/doc/kiln-server/copyright usr/share/doc/kiln-server/changelog.Debian.gz \
	usr/bin/kiln usr/share/man/man1/kiln.1.gz usr/share/bash-completion/completions/kiln \
	usr/share/zsh/vendor-completions/_kiln usr/share/doc/kiln-cli/examples/cli.conf.example \
	usr/bin/kiln-agent lib/systemd/system/kiln-agent.service etc/default/kiln-agent \
	usr/share/man/man8/kiln-agent.8.gz usr/share/doc/kiln-server/examples/prometheus/kiln-rules.yml \
	usr/share/doc/kiln-server/examples/grafana/kiln-dashboard.json; do
	[ -e "$R/$f" ]
	check "/$f is packaged" $? "missing"
done
same "kiln-server's conffiles" "$(dpkg-deb -f "${debs[0]}" Package) $(dpkg-deb --ctrl-tarfile "${debs[0]}" | tar -xO ./conffiles)" \
	"kiln-server /etc/kiln/kilnd.conf"
same "kiln-agent's conffiles" "$(dpkg-deb --ctrl-tarfile "${debs[2]}" | tar -xO ./conffiles)" \
	"/etc/default/kiln-agent"
dpkg-deb -f "${debs[0]}" Depends | grep -q 'libmicrohttpd.*libsqlite3\|libsqlite3.*libmicrohttpd'
check "kiln-server's Depends come from dpkg-shlibdeps" $? "$(dpkg-deb -f "${debs[0]}" Depends)"
readelf -S "$R/usr/bin/kilnd" | grep -q -e '\.debug_info' -e '\.symtab'
same "the packaged kilnd is stripped" "$?" 1

# cmake --install --prefix of the test build (not configured for /usr: DESTDIR keeps this
# safe either way) gives the whole tree under the prefix
B=$KILN_BIN/..
if grep -q '^CMAKE_INSTALL_PREFIX:PATH=/usr$' "$B/CMakeCache.txt"; then
	echo "skipped the --prefix tree: $B is configured for /usr"
else
	D=$KILN_TEST_TMP/destdir
	DESTDIR=$D cmake --install "$B" --prefix /opt/kiln >"$KILN_TEST_TMP/install.log" 2>&1
	check "cmake --install --prefix" $? "$(tail -5 "$KILN_TEST_TMP/install.log")"
	missing=
	for f in bin/kilnd bin/kiln bin/kiln-agent etc/kiln/kilnd.conf etc/default/kiln-agent \
		lib/systemd/system/kilnd.service lib/systemd/system/kiln-agent.service \
		share/man/man1/kiln.1.gz share/man/man5/kilnd.conf.5.gz share/man/man8/kilnd.8.gz \
		share/man/man8/kiln-agent.8.gz share/bash-completion/completions/kiln \
		share/zsh/vendor-completions/_kiln share/doc/kiln-cli/examples/cli.conf.example; do
		[ -e "$D/opt/kiln/$f" ] || missing="$missing $f"
	done
	same "the --prefix tree is complete" "$missing" ""
	same "and nothing lands outside the prefix" "$(ls "$D")" "opt"
fi

# the units, as installed: systemd-analyze reads the unpacked binaries and man pages
mkdir -p "$KILN_TEST_TMP/units"
for u in kilnd kiln-agent; do
	sed "s|=/usr/bin/|=$R/usr/bin/|" "$R/lib/systemd/system/$u.service" >"$KILN_TEST_TMP/units/$u.service"
done
out=$(MANPATH=$R/usr/share/man systemd-analyze verify "$KILN_TEST_TMP/units/kilnd.service" \
	"$KILN_TEST_TMP/units/kiln-agent.service" 2>&1)
same "systemd-analyze verify passes on both units, silently" "$? $out" "0 "

# what the units start: the packaged configuration, and the agent's server from its own file
exec_of() { sed -n 's/^ExecStart=//p' "$R/lib/systemd/system/$1.service"; }
conf=$(exec_of kilnd | sed -n 's/.*--config \([^ ]*\).*/\1/p')
[ -n "$conf" ] && [ -f "$R$conf" ]
check "kilnd.service's --config is the packaged $conf" $? "ExecStart=$(exec_of kilnd)"
grep -q '^User=kiln$' "$R/lib/systemd/system/kilnd.service" &&
	! grep -q '^DynamicUser=yes' "$R/lib/systemd/system/kilnd.service"
check "kilnd.service runs as the kiln user the postinst creates" $? "no User=kiln"
dpkg-deb --ctrl-tarfile "${debs[0]}" | tar -xO ./postinst | grep -q 'adduser --system'
check "kiln-server's postinst creates it" $? "no adduser in postinst"
# The postinst run for real, in a mount namespace over copies of /etc and /var/lib (this
# machine's users and folders untouched): the user and its 0700 state directory, with not
# a word on stderr (issue 37: adduser warned that the home it was given did not exist yet),
# and run again (an upgrade) changing nothing.
dpkg-deb --ctrl-tarfile "${debs[0]}" | tar -xO ./postinst >"$KILN_TEST_TMP/postinst"
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
	ns=$KILN_TEST_TMP/ns
	mkdir -p "$ns/varlib"
	cp -a /etc "$ns/etc" 2>/dev/null
	unshare -m sh -c "mount --bind '$ns/etc' /etc && mount --bind '$ns/varlib' /var/lib &&
		sh '$KILN_TEST_TMP/postinst' configure 2>'$ns/err1' >/dev/null &&
		stat -c '%U %a' /var/lib/kiln >'$ns/dir' &&
		sh '$KILN_TEST_TMP/postinst' configure 0.1.0-1 2>'$ns/err2' >/dev/null" 2>"$ns/err"
	same "the postinst makes the kiln user and its state directory" \
		"$(cat "$ns/dir" 2>/dev/null)" "kiln 700"
	same "... without a warning" "$(cat "$ns/err" "$ns/err1" 2>/dev/null)" ""
	same "... and again on upgrade, silently" "$(cat "$ns/err2" 2>/dev/null)" ""
else
	echo "note: not root, or no mount namespaces: the postinst is not run"
fi
env_file=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$R/lib/systemd/system/kiln-agent.service")
[ -n "$env_file" ] && [ -f "$R$env_file" ] && grep -q '^KILN_SERVER=' "$R$env_file"
check "kiln-agent.service reads the packaged $env_file" $? "EnvironmentFile=$env_file"
case $(exec_of kiln-agent) in
*'--server ${KILN_SERVER}'*) pass "kiln-agent.service takes the server from it" ;;
*) fail "kiln-agent.service's server is not from its config: $(exec_of kiln-agent)" ;;
esac

# the man pages render
for page in man1/kiln.1 man8/kilnd.8 man8/kiln-agent.8 man5/kilnd.conf.5; do
	warn=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$R/usr/share/man/$page.gz" 2>&1 >/dev/null)
	same "man -l $page renders without warnings" "$warn" ""
done

# the unpacked kilnd with the packaged configuration (the listen address overridden)
KILND=$R/usr/bin/kilnd
export PATH=$R/usr/bin:$PATH
kiln_test_start_kilnd "" --config "$R/etc/kiln/kilnd.conf" || exit 1
same "the unpacked kilnd runs the packaged build" "$(curl -s "$KILND_URL/api/v1/health" | jq -r .version)" \
	"${V%-1}"
kiln node add gpu01 --group a100 >/dev/null && kiln node add gpu02 --group a100 >/dev/null
check "the unpacked kiln adds nodes" $? "kiln node add failed"
same "the unpacked kiln lists them" "$(kiln -o json node list | jq -r '[.[].name] | join(",")')" \
	"gpu01,gpu02"
KILN_COMPLETION=$R/usr/share/bash-completion/completions/kiln XDG_CACHE_HOME=$KILN_TEST_TMP/cache \
	bash -c '. "$KILN_COMPLETION"; COMP_WORDS=(kiln power cycle @); COMP_CWORD=3; _kiln_complete
		printf "%s " "${COMPREPLY[@]}"; COMP_WORDS=(kiln po); COMP_CWORD=1; _kiln_complete
		printf "%s" "${COMPREPLY[*]}"' >"$KILN_TEST_TMP/comp"
same "the installed completion: kiln power cycle @<TAB>, kiln po<TAB>" "$(cat "$KILN_TEST_TMP/comp")" \
	"@a100 power"
kiln_test_stop_kilnd

# an upgrade: a database as the previous release left it (every migration but the last, and
# a node) is migrated by the new kilnd on its first start, and keeps what it held
U=$KILN_TEST_TMP/upgrade
mkdir -p "$U"
last=$(ls "$KILN_SRC"/schema/[0-9][0-9][0-9]_*.sql | tail -1)
n=$(basename "$last" | sed 's/^0*\([0-9]*\)_.*/\1/')
{
	for f in "$KILN_SRC"/schema/[0-9][0-9][0-9]_*.sql; do
		[ "$f" = "$last" ] || cat "$f"
	done
	echo "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
	echo " applied_at INTEGER NOT NULL);"
	for f in "$KILN_SRC"/schema/[0-9][0-9][0-9]_*.sql; do
		[ "$f" = "$last" ] && continue
		b=$(basename "$f" .sql)
		echo "INSERT INTO schema_version VALUES (${b%%_*}, '$b', 0);"
	done
	echo "INSERT INTO nodes (name, created_at, updated_at) VALUES ('old01', 0, 0);"
} | sqlite3 "$U/kiln.db"
check "an older schema's database is made" $? "sqlite3 failed"
kiln_test_start_kilnd "$U" --config "$R/etc/kiln/kilnd.conf" || exit 1
same "the first start migrates it to schema $n" "$(curl -s "$KILND_URL/api/v1/health" | jq .schema)" "$n"
same "and keeps what it held" "$(kiln -o json node list | jq -r '.[].name')" "old01"
kiln_test_stop_kilnd

# a site certificate handed over as systemd credentials (LoadCredential=tls.crt, tls.key)
C=$KILN_TEST_TMP/credentials
mkdir -p "$C"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$C/tls.key" -out "$C/tls.crt" >/dev/null 2>&1
CREDENTIALS_DIRECTORY=$C kiln_test_start_kilnd "" --config "$R/etc/kiln/kilnd.conf" || exit 1
case $KILND_URL in https://*) pass "kilnd serves HTTPS with the credentials" ;;
*) fail "kilnd did not take the credentials: $KILND_URL" ;; esac
same "the certificate is the credential's" \
	"$(curl -s --proto =https --cacert "$C/tls.crt" -o /dev/null -w '%{http_code}' "$KILND_URL/api/v1/health")" 200
kiln_test_stop_kilnd
rm "$C/tls.key"
CREDENTIALS_DIRECTORY=$C timeout -s INT 20 "$KILND" --state-dir "$KILN_TEST_TMP/s2" --listen 127.0.0.1:0 \
	>/dev/null 2>"$KILN_TEST_TMP/half.log"
same "a certificate without its key stops kilnd" "$?" 1
grep -q "tls.crt and tls.key go together" "$KILN_TEST_TMP/half.log"
check "and says why" $? "$(cat "$KILN_TEST_TMP/half.log")"

[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
echo "all package checks passed"
