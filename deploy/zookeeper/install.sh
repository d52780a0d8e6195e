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

# shellcheck source=../apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/../apt-install.sh"
apt_install zookeeper - zookeeper
