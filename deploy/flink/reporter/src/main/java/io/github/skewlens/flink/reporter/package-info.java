/**
 * A Flink metric reporter that writes task and job metrics as JSON lines to
 * a Kafka topic, in the metric-JSON shape skewlens decodes. Turn it on in
 * the Flink configuration:
 *
 * <pre>
 * metrics.reporter.skewlens.factory.class: io.github.skewlens.flink.reporter.SkewlensReporterFactory
 * metrics.reporter.skewlens.interval: 10 s
 * metrics.reporter.skewlens.bootstrap.servers: kafka-1:9092
 * </pre>
 *
 * <p>{@link io.github.skewlens.flink.reporter.SkewlensReporter.Config} lists
 * every option and its default.
 */
package io.github.skewlens.flink.reporter;
