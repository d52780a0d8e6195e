#!/usr/bin/env bash
# install.sh installs kubernetes-validate (PyPI), an offline validator that
# ships the Kubernetes JSON schemas inside its package, into a virtual
# environment of its own, when it is missing, and prints the path of its
# command. deploy/kubernetes's tests validate the manifests with it.
# Idempotent; concurrent runs are serialised with flock.
#
# Usage: deploy/kubernetes/install.sh [DIR]   (default ~/.cache/skewlens/kubernetes-validate)
# Needs root (apt-get) only when python3's venv module is missing.
set -euo pipefail

version=1.37.0
dir=${1:-$HOME/.cache/skewlens/kubernetes-validate}
tool=$dir/bin/kubernetes-validate

present() { [ -x "$tool" ] && "$tool" --version 2>/dev/null | grep -q "$version"; }

if present; then
	echo "$tool"
	exit 0
fi

mkdir -p "$(dirname "$dir")"
exec 9>"$(dirname "$dir")/.kubernetes-validate.lock"
flock 9
if present; then
	echo "$tool"
	exit 0
fi

if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install.sh: python3's venv module is missing and installing it needs root" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends python3-venv >&2
fi

rm -rf "$dir"
python3 -m venv "$dir" >&2
"$dir/bin/pip" install -q "kubernetes-validate==$version" >&2

present || {
	echo "install.sh: kubernetes-validate $version still missing after pip install" >&2
	exit 1
}
echo "$tool"
