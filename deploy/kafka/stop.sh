#!/usr/bin/env bash
# stop.sh DIR: stops the broker that start.sh started from DIR (SIGTERM,
# which makes Kafka shut down cleanly; SIGKILL after 30 s) and waits until
# it is gone. Stopping a stopped broker is not an error. The data under
# DIR/data is kept, so start.sh DIR PORT resumes it.
set -euo pipefail

dir="${1:?usage: stop.sh DIR}"
pidfile="$dir/pid"
[[ -f "$pidfile" ]] || exit 0
pid="$(cat "$pidfile")"
# Only signal the process if it is still the broker we started.
if kill -0 "$pid" 2>/dev/null && grep -q kafka.Kafka "/proc/$pid/cmdline" 2>/dev/null; then
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "stop.sh: broker $pid did not stop within 30 s; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
		while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	fi
fi
rm -f "$pidfile"
