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

# shellcheck source=../apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/../apt-install.sh"
apt_install prometheus prometheus prometheus
