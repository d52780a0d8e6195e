#!/usr/bin/env bash
# start.sh DIR PORT [CONTROLLER_PORT]: starts a single-node Apache Kafka
# broker in KRaft mode (broker and controller in one JVM) from the jars in
# DIR/libs (see install.sh), listening on 127.0.0.1:PORT, and returns once
# it answers a Kafka Metadata request that lists a broker (60 s at most).
#
# Files, all under DIR: server.properties, log4j2.properties, data/ (the
# log dirs: kept across stop/start, so a restart resumes the same data),
# server.log (everything the JVM writes), pid.
#
# CONTROLLER_PORT defaults to the one a previous start in DIR used, else to
# the first port above PORT that nothing listens on.
# Environment:
#   KAFKA_HEAP_OPTS   JVM heap flags (default -Xmx512m -Xms128m)
#   KAFKA_WATCH_PID   when set, a watcher stops the broker once that process
#                     is gone (used by the Go tests so that a crashed test
#                     run leaves no broker behind)
# Exit status: 0 when ready; 1 otherwise, with the tail of server.log on
# stderr (the JVM is stopped again in that case).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:?usage: start.sh DIR PORT [CONTROLLER_PORT]}"
port="${2:?usage: start.sh DIR PORT [CONTROLLER_PORT]}"
dir="$(cd "$dir" && pwd)"
libs="$dir/libs"
[[ -f "$libs/.complete" ]] || { echo "start.sh: $libs is not installed; run install.sh $dir" >&2; exit 1; }

if [[ -f "$dir/pid" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
	echo "start.sh: a broker already runs from $dir (pid $(cat "$dir/pid"))" >&2
	exit 1
fi

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cport="${3:-}"
if [[ -z "$cport" && -f "$dir/controller.port" ]]; then
	cport="$(cat "$dir/controller.port")"
fi
if [[ -z "$cport" ]]; then
	cport=$((port + 1))
	while listening "$cport"; do cport=$((cport + 1)); done
fi
echo "$cport" >"$dir/controller.port"

mkdir -p "$dir/data"
cat >"$dir/server.properties" <<PROPS
# Written by deploy/kafka/start.sh: a single-node KRaft test broker.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=3000
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
log.retention.hours=1
log.segment.bytes=16777216
PROPS

cat >"$dir/log4j2.properties" <<'LOG'
# Everything to stdout, which start.sh sends to DIR/server.log.
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
LOG

heap="${KAFKA_HEAP_OPTS:--Xmx512m -Xms128m}"
jvm=(java $heap -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto
	-Djava.awt.headless=true
	-Dlog4j2.configurationFile="$dir/log4j2.properties"
	-cp "$libs/*")

# Format the storage once; a restart keeps the data (meta.properties).
if [[ ! -f "$dir/data/meta.properties" ]]; then
	cluster_id="c2tld2xlbnMtdGVzdC0xAA" # any 22-char base64 UUID will do
	if ! "${jvm[@]}" kafka.tools.StorageTool format --ignore-formatted \
		-t "$cluster_id" -c "$dir/server.properties" >>"$dir/server.log" 2>&1; then
		echo "start.sh: formatting the storage failed; tail of $dir/server.log:" >&2
		tail -n 40 "$dir/server.log" >&2
		exit 1
	fi
fi

echo "=== start.sh $(date -u +%FT%TZ) port=$port controller=$cport" >>"$dir/server.log"
setsid "${jvm[@]}" kafka.Kafka "$dir/server.properties" </dev/null >>"$dir/server.log" 2>&1 &
pid=$!
echo "$pid" >"$dir/pid"

if [[ -n "${KAFKA_WATCH_PID:-}" ]]; then
	# Stops the broker when the watched process is gone. It ends by itself
	# when the broker stops first.
	setsid bash -c '
		while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
		if kill -0 "$2" 2>/dev/null; then kill -TERM "$2"; sleep 20; kill -KILL "$2" 2>/dev/null; fi
	' watch "$KAFKA_WATCH_PID" "$pid" </dev/null >/dev/null 2>&1 &
fi

# ready: a Metadata v1 request (all topics) is answered with >= 1 broker.
# Request: size, api_key 3, version 1, correlation id 7, client id "ready",
# topics null (-1).
ready() {
	local out
	out="$(timeout 2 bash -c '
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf "\x00\x00\x00\x13\x00\x03\x00\x01\x00\x00\x00\x07\x00\x05ready\xff\xff\xff\xff" >&3
		head -c 12 <&3 | od -An -tu1
	' ready "$port" 2>/dev/null)" || return 1
	# bytes 4..7: correlation id 7; bytes 8..11: broker count.
	read -r -a b <<<"$out"
	[[ ${#b[@]} -eq 12 && ${b[7]} -eq 7 ]] || return 1
	((b[8] + b[9] + b[10] + b[11] > 0))
}

deadline=$((SECONDS + 60))
while ! ready; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "start.sh: the broker exited during startup; tail of $dir/server.log:" >&2
		tail -n 40 "$dir/server.log" >&2
		rm -f "$dir/pid"
		exit 1
	fi
	if ((SECONDS >= deadline)); then
		echo "start.sh: the broker is not ready after 60 s; tail of $dir/server.log:" >&2
		tail -n 40 "$dir/server.log" >&2
		"$here/stop.sh" "$dir" >/dev/null 2>&1 || true
		exit 1
	fi
	sleep 0.2
done
