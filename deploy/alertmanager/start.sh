#!/usr/bin/env bash
# start.sh starts a private Prometheus Alertmanager for tests and local runs.
#
# Usage: deploy/alertmanager/start.sh DIR PORT [WEBHOOK_URL | CONFIG_FILE]
#
# It listens on 127.0.0.1:PORT with gossip off (an empty
# --cluster.listen-address: a single instance needs no cluster port), keeps
# its data (silences, notification log) under DIR/data and its output in
# DIR/alertmanager.log, runs in the background in its own session as the
# current user, writes its pid to DIR/pid and waits until /-/ready answers
# (at most SKEWLENS_AM_START_TIMEOUT seconds, default 30). It never uses the
# package's system service.
#
# The third argument picks the configuration:
#   - an http:// or https:// URL: DIR/alertmanager.yml is written with one
#     route to one webhook receiver ("skewlens-webhook") at that URL, with
#     send_resolved on and the timings below;
#   - a file: it is copied to DIR/alertmanager.yml as it is;
#   - absent: the written configuration has a receiver that sends nothing
#     (alerts are still listed by GET /api/v2/alerts).
# Timings of the written configuration, from the environment (Alertmanager
# durations):
#   SKEWLENS_AM_GROUP_WAIT       default 1s
#   SKEWLENS_AM_GROUP_INTERVAL   default 1s
#   SKEWLENS_AM_REPEAT_INTERVAL  default 1h
#   SKEWLENS_AM_RESOLVE_TIMEOUT  default 5m (only for alerts without endsAt)
#
# A server already answering on PORT makes start.sh fail ("Address already
# in use"), so a readiness answer always comes from ours. If
# SKEWLENS_AM_WATCH_PID is set, a small watchdog stops Alertmanager when
# that process exits, so a crashed test binary does not leak one. On failure
# it prints the tail of the log and exits non-zero.
#
# Stop it with deploy/alertmanager/stop.sh DIR.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 DIR PORT [WEBHOOK_URL | CONFIG_FILE]" >&2
	exit 2
fi
dir=$1
port=$2
target=${3:-}
case $port in '' | *[!0-9]*)
	echo "start.sh: PORT must be a number, got '$port'" >&2
	exit 2
	;;
esac
timeout=${SKEWLENS_AM_START_TIMEOUT:-30}

bin=""
for c in prometheus-alertmanager /usr/bin/prometheus-alertmanager alertmanager; do
	if command -v "$c" >/dev/null 2>&1; then
		bin=$(command -v "$c")
		break
	fi
done
if [ -z "$bin" ]; then
	echo "start.sh: no prometheus-alertmanager binary; run deploy/alertmanager/install.sh" >&2
	exit 1
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
mkdir -p "$dir/data"

if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
	echo "start.sh: an Alertmanager is already running from $dir (pid $(cat "$dir/pid"))" >&2
	exit 1
fi

config=$dir/alertmanager.yml
timings() {
	cat <<YAML
route:
  receiver: $1
  group_by: ['alertname', 'job_id', 'task_name', 'subtask', 'cause']
  group_wait: ${SKEWLENS_AM_GROUP_WAIT:-1s}
  group_interval: ${SKEWLENS_AM_GROUP_INTERVAL:-1s}
  repeat_interval: ${SKEWLENS_AM_REPEAT_INTERVAL:-1h}
YAML
}
case $target in
http://* | https://*)
	{
		printf '# Written by deploy/alertmanager/start.sh.\n'
		printf 'global:\n  resolve_timeout: %s\n' "${SKEWLENS_AM_RESOLVE_TIMEOUT:-5m}"
		timings skewlens-webhook
		printf 'receivers:\n  - name: skewlens-webhook\n    webhook_configs:\n'
		printf '      - url: "%s"\n        send_resolved: true\n' "$target"
	} >"$config"
	;;
"")
	{
		printf '# Written by deploy/alertmanager/start.sh.\n'
		printf 'global:\n  resolve_timeout: %s\n' "${SKEWLENS_AM_RESOLVE_TIMEOUT:-5m}"
		timings skewlens-null
		printf 'receivers:\n  - name: skewlens-null\n'
	} >"$config"
	;;
*)
	if [ ! -f "$target" ]; then
		echo "start.sh: '$target' is neither an http(s) URL nor a file" >&2
		exit 2
	fi
	cp "$target" "$config"
	;;
esac

# Refuse a port that something already listens on: the readiness check
# below would otherwise talk to that server.
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	echo "start.sh: 127.0.0.1:$port is already in use (Address already in use)" >&2
	exit 1
fi

log=$dir/alertmanager.log
log_tail() {
	if [ -s "$log" ]; then
		echo "--- tail of $log" >&2
		tail -n 40 "$log" >&2
	fi
}

# setsid detaches Alertmanager from the caller's process group and
# terminal; it runs in the foreground of its own session, so $! is its pid.
cd "$dir"
setsid "$bin" \
	--config.file="$config" \
	--storage.path="$dir/data" \
	--web.listen-address="127.0.0.1:$port" \
	--web.external-url="http://127.0.0.1:$port/" \
	--cluster.listen-address= \
	</dev/null >"$log" 2>&1 &
pid=$!
echo "$pid" >"$dir/pid"

if [ -n "${SKEWLENS_AM_WATCH_PID:-}" ]; then
	watch=$SKEWLENS_AM_WATCH_PID
	setsid bash -c '
		while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
		kill "$2" 2>/dev/null || true
	' watchdog "$watch" "$pid" </dev/null >/dev/null 2>&1 &
fi

ready() {
	if command -v curl >/dev/null 2>&1; then
		curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$port/-/ready"
		return
	fi
	# No curl: a bare HTTP/1.0 request over bash's /dev/tcp.
	local status
	status=$(
		exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
		printf 'GET /-/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
		timeout 1 head -n 1 <&3
	) 2>/dev/null || return 1
	case $status in *" 200"*) return 0 ;; esac
	return 1
}

deadline=$((SECONDS + timeout))
while :; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "start.sh: prometheus-alertmanager (pid $pid) exited during startup" >&2
		log_tail
		rm -f "$dir/pid"
		exit 1
	fi
	if ready && kill -0 "$pid" 2>/dev/null; then
		break
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		echo "start.sh: prometheus-alertmanager on 127.0.0.1:$port not ready after ${timeout}s" >&2
		log_tail
		kill "$pid" 2>/dev/null || true
		rm -f "$dir/pid"
		exit 1
	fi
	sleep 0.1
done
echo "start.sh: prometheus-alertmanager pid $pid ready on 127.0.0.1:$port (dir $dir)"
