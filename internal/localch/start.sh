#!/usr/bin/env bash
# start.sh starts a private ClickHouse server for tests and local runs.
#
# Usage: internal/localch/start.sh DIR PORT
#
# It writes DIR/config.xml and DIR/users.xml (root element <yandex>, which
# every ClickHouse release since 18.x accepts), keeps data, temporary files
# and logs under DIR, listens on 127.0.0.1:PORT (native protocol only; the
# HTTP and interserver ports are disabled), starts the server in the
# background as the current user, writes its pid to DIR/pid and waits until
# it answers a query (at most SKEWLENS_CH_START_TIMEOUT seconds, default
# 30); the query reads a marker file from DIR, so an answer from another
# server on the same port does not count. On failure it prints the tail of the server log and exits non-zero.
#
# If SKEWLENS_CH_WATCH_PID is set, a small watchdog stops the server when
# that process exits, so a crashed test binary does not leak a server.
#
# Stop it with internal/localch/stop.sh DIR.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 DIR PORT" >&2
	exit 2
fi
dir=$1
port=$2
case $port in '' | *[!0-9]*)
	echo "start.sh: PORT must be a number, got '$port'" >&2
	exit 2
	;;
esac
timeout=${SKEWLENS_CH_START_TIMEOUT:-30}

find_bin() {
	local name
	for name in "$@"; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
		for d in /usr/sbin /usr/bin /usr/local/bin; do
			if [ -x "$d/$name" ]; then
				echo "$d/$name"
				return 0
			fi
		done
	done
	return 1
}

# The Debian package installs /usr/sbin/clickhouse-server and
# /usr/bin/clickhouse-client; official builds ship one `clickhouse` binary.
if server=$(find_bin clickhouse-server); then
	server_cmd=("$server")
elif server=$(find_bin clickhouse); then
	server_cmd=("$server" server)
else
	echo "start.sh: no clickhouse-server binary; run internal/localch/install.sh" >&2
	exit 1
fi
if client=$(find_bin clickhouse-client); then
	client_cmd=("$client")
elif client=$(find_bin clickhouse); then
	client_cmd=("$client" client)
else
	echo "start.sh: no clickhouse-client binary; run internal/localch/install.sh" >&2
	exit 1
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas" "$dir/log"

if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
	echo "start.sh: a server is already running from $dir (pid $(cat "$dir/pid"))" >&2
	exit 1
fi

cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>$dir/log/clickhouse-server.log</log>
        <errorlog>$dir/log/clickhouse-server.err.log</errorlog>
        <size>100M</size>
        <count>2</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>$port</tcp_port>
    <max_connections>256</max_connections>
    <max_concurrent_queries>32</max_concurrent_queries>
    <keep_alive_timeout>3</keep_alive_timeout>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <mark_cache_size>67108864</mark_cache_size>
    <path>$dir/data/</path>
    <tmp_path>$dir/tmp/</tmp_path>
    <user_files_path>$dir/user_files/</user_files_path>
    <format_schema_path>$dir/format_schemas/</format_schema_path>
    <users_config>$dir/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
    <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
</yandex>
XML

cat >"$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>1000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <load_balancing>random</load_balancing>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
XML

# Refuse a port that something already listens on: the readiness check
# below would otherwise talk to that server.
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	echo "start.sh: 127.0.0.1:$port is already in use (Address already in use)" >&2
	exit 1
fi

# A marker only this server can read (file() reads user_files_path) proves
# that the server answering on PORT is ours.
marker="$(date +%s%N)-$$"
printf '%s\n' "$marker" >"$dir/user_files/skewlens-marker"

log_tail() {
	for f in "$dir/log/stderr.log" "$dir/log/clickhouse-server.err.log" "$dir/log/clickhouse-server.log"; do
		if [ -s "$f" ]; then
			echo "--- tail of $f" >&2
			tail -n 40 "$f" >&2
		fi
	done
}

# setsid detaches the server from the caller's process group and terminal;
# the server runs in the foreground of its own session (no --daemon), so $!
# is its pid.
cd "$dir"
setsid "${server_cmd[@]}" --config-file="$dir/config.xml" \
	</dev/null >"$dir/log/stdout.log" 2>"$dir/log/stderr.log" &
pid=$!
echo "$pid" >"$dir/pid"

if [ -n "${SKEWLENS_CH_WATCH_PID:-}" ]; then
	watch=$SKEWLENS_CH_WATCH_PID
	setsid bash -c '
		while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
		kill "$2" 2>/dev/null || true
	' watchdog "$watch" "$pid" </dev/null >/dev/null 2>&1 &
fi

deadline=$((SECONDS + timeout))
while :; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "start.sh: clickhouse-server (pid $pid) exited during startup" >&2
		log_tail
		rm -f "$dir/pid"
		exit 1
	fi
	got=$("${client_cmd[@]}" --host 127.0.0.1 --port "$port" \
		-q "SELECT s FROM file('skewlens-marker', 'TSV', 's String')" 2>/dev/null || true)
	if [ "$got" = "$marker" ] && kill -0 "$pid" 2>/dev/null; then
		break
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		echo "start.sh: clickhouse-server on 127.0.0.1:$port not ready after ${timeout}s" >&2
		log_tail
		kill "$pid" 2>/dev/null || true
		exit 1
	fi
	sleep 0.1
done
echo "start.sh: clickhouse-server pid $pid ready on 127.0.0.1:$port (dir $dir)"
