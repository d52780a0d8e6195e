#!/usr/bin/env bash
# install.sh installs ZooKeeper from the distribution's apt repository
# (Debian package zookeeper: 3.8 on bookworm; the server's classes in
# /usr/share/java/zookeeper.jar) when it is missing. The package has no
# service (that is zookeeperd), so nothing is started: skewlens tests
# start their own server with start.sh. Idempotent; concurrent runs are
# serialised with flock.
#
# Usage: deploy/zookeeper/install.sh
# Needs root (apt-get) when the package is missing. The server needs Java
# (the package depends on a JRE).
set -euo pipefail

jar=/usr/share/java/zookeeper.jar
present() { [ -s "$jar" ] && command -v java >/dev/null 2>&1; }

if present; then
	exit 0
fi

# Serialise concurrent installs (several test processes may call us).
exec 9>/tmp/skewlens-zookeeper-install.lock
flock 9
if present; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install.sh: zookeeper is not installed and installing it needs root" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive

# Keep maintainer scripts from starting a service, should a dependency
# bring one: invoke-rc.d honours policy-rc.d exit code 101 ("action
# forbidden"). Only add ours if none exists, and remove it again on exit.
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
apt-get install -y -q --no-install-recommends zookeeper

present || {
	echo "install.sh: $jar or java still missing after apt-get install zookeeper" >&2
	exit 1
}
