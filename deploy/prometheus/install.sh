#!/usr/bin/env bash
# install.sh installs promtool, which deploy/prometheus's tests run on the
# alert rules, from the distribution's apt repository (Debian package
# prometheus; 2.42 on bookworm) when it is missing. It never starts, and
# never leaves enabled, the package's Prometheus service: the tests only
# run promtool. Idempotent; concurrent runs are serialised with flock.
#
# Usage: deploy/prometheus/install.sh
# Needs root (apt-get) when promtool is missing.
set -euo pipefail

present() { command -v promtool >/dev/null 2>&1; }

if present; then
	exit 0
fi

# Serialise concurrent installs (several test processes may call us).
exec 9>/tmp/skewlens-prometheus-install.lock
flock 9
if present; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install.sh: promtool is not installed and installing it (Debian package prometheus) needs root" >&2
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
apt-get install -y -q --no-install-recommends prometheus

# Belt and braces: if the packaged service got started or enabled anyway,
# stop and disable it so that it cannot hold port 9090.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
	systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
if command -v service >/dev/null 2>&1; then
	service prometheus stop >/dev/null 2>&1 || true
fi

present || {
	echo "install.sh: promtool still missing after apt-get install prometheus" >&2
	exit 1
}
