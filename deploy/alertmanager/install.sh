#!/usr/bin/env bash
# install.sh installs Prometheus Alertmanager from the distribution's apt
# repository (Debian package prometheus-alertmanager; 0.25 on bookworm) when
# the prometheus-alertmanager binary is missing. It never starts, and never
# leaves enabled, the package's system service: skewlens tests and local
# runs start their own process with start.sh. Idempotent; concurrent runs
# are serialised with flock.
#
# Usage: deploy/alertmanager/install.sh
# Needs root (apt-get) when the binary is missing.
set -euo pipefail

present() {
	command -v prometheus-alertmanager >/dev/null 2>&1 || [ -x /usr/bin/prometheus-alertmanager ]
}

if present; then
	exit 0
fi

# Serialise concurrent installs (several test processes may call us).
exec 9>/tmp/skewlens-alertmanager-install.lock
flock 9
if present; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install.sh: prometheus-alertmanager is not installed and installing it needs root" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive

# Keep maintainer scripts from starting the service: invoke-rc.d honours
# policy-rc.d exit code 101 ("action forbidden"). Only add ours if none
# exists, and remove it again on exit.
policy=/usr/sbin/policy-rc.d
ours=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	ours=1
fi
cleanup() { if [ "$ours" = 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

apt-get update -q
apt-get install -y -q --no-install-recommends prometheus-alertmanager

# Belt and braces: if the packaged service got started or enabled anyway,
# stop and disable it so that it cannot hold port 9093 or its cluster port.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
	systemctl disable --now prometheus-alertmanager.service >/dev/null 2>&1 || true
fi
if command -v service >/dev/null 2>&1; then
	service prometheus-alertmanager stop >/dev/null 2>&1 || true
fi

present || {
	echo "install.sh: prometheus-alertmanager still missing after apt-get install" >&2
	exit 1
}
