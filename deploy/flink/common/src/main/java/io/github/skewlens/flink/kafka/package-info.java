/**
 * Kafka plumbing shared by the metric reporter and the key sampler: a
 * non-blocking, bounded line sender keyed by job id, and the JSON writing
 * both use.
 */
package io.github.skewlens.flink.kafka;
