#!/usr/bin/env bash
# start.sh starts a private, standalone ZooKeeper server for tests (the
# coordination service of a replicated ClickHouse cluster).
#
# Usage: deploy/zookeeper/start.sh DIR PORT
#
# It writes DIR/zoo.cfg (standalone; data and transaction log under
# DIR/data; client port PORT on 127.0.0.1 only; the admin HTTP server
# off; the four-letter words ruok, srvr and conf allowed), starts the
# server (logging to DIR/log/stderr.log through slf4j-simple, when the
# distribution has it) in the background as the current user with a small heap, writes its pid
# to DIR/pid and waits until it answers (at most SKEWLENS_ZK_START_TIMEOUT
# seconds, default 30). The check asks for `conf` and looks for DIR/data
# in the answer, so an answer from another server on the same port does
# not count. On failure it prints the tail of the server log and exits
# non-zero.
#
# If SKEWLENS_ZK_WATCH_PID is set, a small watchdog stops the server when
# that process exits, so a crashed test binary does not leak a server.
#
# Stop it with deploy/zookeeper/stop.sh DIR.
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
timeout=${SKEWLENS_ZK_START_TIMEOUT:-30}
jar=/usr/share/java/zookeeper.jar
if [ ! -s "$jar" ]; then
	echo "start.sh: $jar missing; run deploy/zookeeper/install.sh" >&2
	exit 1
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
mkdir -p "$dir/data" "$dir/log"

if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
	echo "start.sh: a server is already running from $dir (pid $(cat "$dir/pid"))" >&2
	exit 1
fi

cat >"$dir/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,conf
autopurge.purgeInterval=0
CFG

# The package's jar names its dependencies in its manifest but no slf4j
# binding: without one the server logs nothing. slf4j-simple writes to
# stderr.
cp=$jar
if [ -s /usr/share/java/slf4j-simple.jar ]; then
	cp=$cp:/usr/share/java/slf4j-simple.jar
fi

# Refuse a port that something already listens on: the readiness check
# below would otherwise talk to that server.
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	echo "start.sh: 127.0.0.1:$port is already in use (Address already in use)" >&2
	exit 1
fi

log_tail() {
	for f in "$dir/log/stderr.log"; do
		if [ -s "$f" ]; then
			echo "--- tail of $f" >&2
			tail -n 40 "$f" >&2
		fi
	done
}

# ask sends a four-letter word and prints the answer.
ask() {
	local out
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf '%s' "$1" >&3
	out=$(timeout 2 cat <&3 || true)
	exec 3<&-
	printf '%s' "$out"
}

# setsid detaches the server from the caller's process group and terminal;
# java runs in the foreground of its own session, so $! is its pid.
# The heap is small: the tests keep a few hundred znodes.
cd "$dir"
setsid java -Xms32m -Xmx256m -XX:+UseSerialGC \
	-Dzookeeper.jmx.log4j.disable=true \
	-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
	</dev/null >"$dir/log/stdout.log" 2>"$dir/log/stderr.log" &
pid=$!
echo "$pid" >"$dir/pid"

if [ -n "${SKEWLENS_ZK_WATCH_PID:-}" ]; then
	watch=$SKEWLENS_ZK_WATCH_PID
	setsid bash -c '
		while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
		kill "$2" 2>/dev/null || true
	' watchdog "$watch" "$pid" </dev/null >/dev/null 2>&1 &
fi

deadline=$((SECONDS + timeout))
while :; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "start.sh: zookeeper (pid $pid) exited during startup" >&2
		log_tail
		rm -f "$dir/pid"
		exit 1
	fi
	got=$(ask conf 2>/dev/null || true)
	if [[ $got == *"dataDir=$dir/data"* ]] && [ "$(ask ruok 2>/dev/null || true)" = imok ]; then
		break
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		echo "start.sh: zookeeper on 127.0.0.1:$port not ready after ${timeout}s" >&2
		log_tail
		kill "$pid" 2>/dev/null || true
		exit 1
	fi
	sleep 0.2
done
echo "start.sh: zookeeper pid $pid ready on 127.0.0.1:$port (dir $dir)"
