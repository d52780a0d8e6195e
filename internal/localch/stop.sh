#!/usr/bin/env bash
# stop.sh stops a server started by start.sh: it sends SIGTERM to the pid in
# DIR/pid, waits up to 20 s for it to exit, then sends SIGKILL. It succeeds
# when no server is running from DIR.
#
# Usage: internal/localch/stop.sh DIR
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
pidfile=$1/pid
[ -f "$pidfile" ] || exit 0
pid=$(cat "$pidfile")
if kill -0 "$pid" 2>/dev/null; then
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "stop.sh: pid $pid did not exit after SIGTERM; sending SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.2
	fi
fi
rm -f "$pidfile"
