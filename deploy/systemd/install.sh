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

# shellcheck source=../apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/../apt-install.sh"
apt_install systemd - systemd
