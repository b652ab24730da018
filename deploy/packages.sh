# SPDX-License-Identifier: Apache-2.0
# Debian packages kiln needs, and a function that installs the missing ones.
# Sourced by deploy/test.sh and deploy/lab.sh.
KILN_BUILD_PACKAGES=(build-essential cmake pkg-config libcurl4-openssl-dev libjansson-dev
	libfreeipmi-dev libipmiconsole-dev libipmimonitoring-dev libsqlite3-dev
	libmicrohttpd-dev libgnutls28-dev libsodium-dev libinih-dev libssl-dev zlib1g-dev
	scdoc dpkg-dev libjs-chart.js libpq-dev)
KILN_TEST_PACKAGES=(libcmocka-dev openipmi ipmitool freeipmi-tools curl jq sqlite3 procps iproute2
	python3 bsdutils openssl lintian systemd man-db zsh binutils prometheus chromium
	clang libclang-rt-14-dev slurm-wlm munge postgresql)
# The browser tests' npm (tests/browser): Debian's nodejs/npm only where no node/npm is there
# already (a NodeSource install conflicts with Debian's packages).
command -v node >/dev/null 2>&1 || KILN_TEST_PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || KILN_TEST_PACKAGES+=(npm)
KILN_LAB_PACKAGES=(libcmocka-dev openipmi curl jq procps iproute2)

kiln_install_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "installing: ${missing[*]}" >&2
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
