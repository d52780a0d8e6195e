#!/usr/bin/env bash
# install.sh installs systemd-analyze, which deploy/systemd's tests run on
# the unit files, from the distribution's apt repository (Debian package
# systemd) when it is missing. It starts nothing and enables nothing: the
# tests only read unit files. Idempotent; concurrent runs are serialised
# with flock.
#
# Usage: deploy/systemd/install.sh
# Needs root (apt-get) when the tool is missing.
set -euo pipefail

present() { command -v systemd-analyze >/dev/null 2>&1; }

if present; then
	exit 0
fi

# Serialise concurrent installs (several test processes may call us).
exec 9>/tmp/skewlens-systemd-install.lock
flock 9
if present; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install.sh: systemd-analyze is not installed and installing it needs root" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends systemd

present || {
	echo "install.sh: systemd-analyze still missing after apt-get install systemd" >&2
	exit 1
}
