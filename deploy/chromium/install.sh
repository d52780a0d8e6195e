#!/usr/bin/env bash
# install.sh installs Debian's Chromium (package chromium) when
# /usr/bin/chromium is missing: the web view's browser test drives it
# headless (internal/testenv/browsertest). Idempotent; concurrent runs are
# serialised with flock.
#
# Usage: deploy/chromium/install.sh
# Needs root (apt-get) when the binary is missing.
set -euo pipefail

present() { [ -x /usr/bin/chromium ]; }

# shellcheck source=../apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/../apt-install.sh"
# fonts-dejavu-core: the screenshot needs a font that has the page's glyphs.
apt_install chromium - chromium fonts-dejavu-core fonts-liberation
