#!/usr/bin/env bash
# Records the Flink fixtures under testdata/flink (`make flink-fixtures`):
# builds the test code of deploy/flink's scenarios module (and the modules
# it depends on), then runs
# io.github.skewlens.flink.scenario.Recorder, which plays each scenario on a
# real Flink MiniCluster for --duration (default 150 s) and captures what
# Flink's PrometheusReporter (twice), InfluxdbReporter and skewlens' Kafka
# reporter and key sampler emit, and with checkpointing every checkpoint as
# Flink's REST API reports it (checkpoints.jsonl.gz, truth.json). About 3
# minutes per scenario.
#
#   deploy/flink/record-fixtures.sh [--out DIR] [--scenarios hot_key,slow_sink] [--duration 150s] [ScenarioJob flags]
#
# Without --scenarios: hot_key, modest_hot_key, slow_sink, under_provisioned;
# `make flink-fixtures` records hot_key_onset (200 s), checkpoint_timeout
# (520 s) and checkpoint_recover (360 s) too.
#
# The Kafka captures use the broker of deploy/kafka (started and stopped by
# the recorder), or SKEWLENS_KAFKA_BROKERS when set.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"
mkdir -p target
(
  # The same lock as internal/testenv/flinktest: one build of target/ at a time.
  exec 9>target/.build.lock
  flock 9
  mvn -B -q -DskipTests test-compile dependency:build-classpath -pl scenarios -am \
    -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt
)
cp="$here/scenarios/target/test-classes:$(cat scenarios/target/test-classpath.txt)"
args=("$@")
case " ${args[*]-} " in
  *" --out "*) ;;
  *) args=(--out "$root/testdata/flink" "${args[@]+"${args[@]}"}") ;;
esac
exec java -Xmx512m -cp "$cp" io.github.skewlens.flink.scenario.Recorder "${args[@]}"
