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

# shellcheck source=../apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/../apt-install.sh"
apt_install alertmanager prometheus-alertmanager prometheus-alertmanager
