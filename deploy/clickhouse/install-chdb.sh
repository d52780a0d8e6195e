#!/usr/bin/env bash
# install-chdb.sh installs libchdb.so (chDB, the in-process ClickHouse) from
# the npm package @chdb/lib-linux-x64-gnu into .state/chdb of the repo
# (gitignored) when it is not there yet, and prints the library's path.
# Tests load it with github.com/chdb-io/chdb-go via CHDB_LIB_PATH.
#
# Usage: deploy/clickhouse/install-chdb.sh [PREFIX]   (default REPO/.state/chdb)
# Needs npm and access to the npm registry on the first run only.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
prefix=${1:-$root/.state/chdb}
lib=$prefix/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so

if [ ! -s "$lib" ]; then
	mkdir -p "$prefix"
	exec 9>"$prefix/.install.lock"
	flock 9
	if [ ! -s "$lib" ]; then
		if ! command -v npm >/dev/null 2>&1; then
			echo "install-chdb.sh: npm is required (apt-get install -y npm)" >&2
			exit 1
		fi
		npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error @chdb/lib-linux-x64-gnu >&2
	fi
fi
if [ ! -s "$lib" ]; then
	echo "install-chdb.sh: $lib missing after npm install" >&2
	exit 1
fi
echo "$lib"
