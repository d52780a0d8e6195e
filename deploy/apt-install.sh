# apt-install.sh is sourced by the install.sh scripts of deploy/* that
# install a Debian package when what the tests need is missing. It defines
# apt_install; the caller defines present(), which says whether what it
# needs is there.
#
#   apt_install NAME SERVICE PACKAGE...
#
# returns at once when present() holds. Otherwise it serialises concurrent
# installs (several test processes may call the same script) with a flock
# on /tmp/skewlens-NAME-install.lock, checks present() again, and, as root,
# installs PACKAGE... with apt-get without recommended packages. No
# packaged service is started meanwhile: maintainer scripts go through
# invoke-rc.d, which honours /usr/sbin/policy-rc.d's exit code 101
# ("action forbidden"); one is added for the install when none exists and
# removed after. SERVICE ("-" for none) names the package's service, which
# is stopped and disabled after the install should it have started
# anyway: skewlens tests and local runs start their own processes. It
# fails when it is not root, when apt-get fails, or when present() still
# does not hold after the install. Needs bash.

apt_install() {
	local name=$1 service=$2
	shift 2
	if present; then
		return 0
	fi
	exec 9>"/tmp/skewlens-$name-install.lock"
	flock 9
	if present; then
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "install.sh: $name is not installed and installing it (Debian package $*) needs root" >&2
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	local policy=/usr/sbin/policy-rc.d
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		# Removed on exit, also when apt-get fails.
		trap 'rm -f '"$policy" EXIT
	fi
	apt-get update -q
	apt-get install -y -q --no-install-recommends "$@"
	if [ "$service" != - ]; then
		if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
			systemctl disable --now "$service.service" >/dev/null 2>&1 || true
		fi
		if command -v service >/dev/null 2>&1; then
			service "$service" stop >/dev/null 2>&1 || true
		fi
	fi
	if ! present; then
		echo "install.sh: $name still missing after apt-get install $*" >&2
		return 1
	fi
}
