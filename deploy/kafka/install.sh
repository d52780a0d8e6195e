#!/usr/bin/env bash
# install.sh DIR: puts the jars of a single-node Apache Kafka broker into
# DIR/libs, fetched from Maven Central with pom.xml beside this script.
# It does nothing when DIR/libs already holds a complete set (marked by
# DIR/libs/.complete, written last, naming the pom's checksum). Downloads
# are cached in ~/.m2 as usual. Safe to run concurrently for one DIR: a
# lock (flock on DIR/.install.lock) serialises the runs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:?usage: install.sh DIR}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
libs="$dir/libs"
stamp="$(sha256sum "$here/pom.xml" | cut -c1-16)"

complete() { [[ -f "$libs/.complete" && "$(cat "$libs/.complete")" == "$stamp" ]]; }

exec 9>"$dir/.install.lock"
flock 9
if complete; then
	exit 0
fi

command -v java >/dev/null || { echo "install.sh: java (17+) is not installed" >&2; exit 1; }
command -v mvn >/dev/null || { echo "install.sh: mvn is not installed" >&2; exit 1; }

tmp="$dir/libs.tmp.$$"
rm -rf "$tmp"
if ! mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
	-DoutputDirectory="$tmp" -DincludeScope=runtime >"$dir/install.log" 2>&1; then
	echo "install.sh: mvn failed; tail of $dir/install.log:" >&2
	tail -n 30 "$dir/install.log" >&2
	rm -rf "$tmp"
	exit 1
fi
if ! ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1; then
	echo "install.sh: mvn ran but no kafka_2.13 jar is in $tmp" >&2
	exit 1
fi
rm -rf "$libs"
mv "$tmp" "$libs"
echo "$stamp" >"$libs/.complete"
