#!/usr/bin/env bash
# install.sh installs the ClickHouse server and client from the distribution's
# apt repository when they are not installed yet. It never starts, and never
# leaves enabled, a system service: skewlens starts its own server with
# start.sh. Idempotent; safe to run concurrently with itself only under
# flock (see below).
#
# Usage: internal/localch/install.sh
# Needs root (apt-get). On Debian bookworm this gives ClickHouse 18.16.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }
server_present() {
	have clickhouse-server || have clickhouse || [ -x /usr/bin/clickhouse ]
}
client_present() {
	have clickhouse-client || have clickhouse || [ -x /usr/bin/clickhouse ]
}

if server_present && client_present; then
	exit 0
fi

# Serialise concurrent installs (several test processes may call us).
exec 9>/tmp/skewlens-clickhouse-install.lock
flock 9
if server_present && client_present; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install.sh: clickhouse is not installed and installing it needs root" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive

# Keep maintainer scripts from starting a service: invoke-rc.d honours
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
apt-get install -y -q --no-install-recommends clickhouse-server clickhouse-client

# Belt and braces: if a service got started or enabled anyway, stop and
# disable it so that it cannot hold ports or files.
if have systemctl && [ -d /run/systemd/system ]; then
	systemctl disable --now clickhouse-server.service >/dev/null 2>&1 || true
fi
if have service; then
	service clickhouse-server stop >/dev/null 2>&1 || true
fi
if [ -f /var/run/clickhouse-server/clickhouse-server.pid ]; then
	kill "$(cat /var/run/clickhouse-server/clickhouse-server.pid)" 2>/dev/null || true
fi
