#!/usr/bin/env bash
# install.sh installs Debian's Chromium (package chromium) when
# /usr/bin/chromium is missing: the web view's browser test drives it
# headless (deploy/testenv/browsertest). Idempotent; concurrent runs are
# serialised with flock.
#
# Usage: deploy/chromium/install.sh
# Needs root (apt-get) when the binary is missing.
set -euo pipefail

present() { [ -x /usr/bin/chromium ]; }

if present; then
	exit 0
fi

exec 9>/tmp/skewlens-chromium-install.lock
flock 9
if present; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install.sh: chromium is not installed and installing it needs root" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# fonts-dejavu-core: the screenshot needs a font that has the page's glyphs.
apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core fonts-liberation

present || {
	echo "install.sh: /usr/bin/chromium still missing after apt-get install" >&2
	exit 1
}
