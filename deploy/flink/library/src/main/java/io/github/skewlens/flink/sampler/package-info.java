/**
 * Samples the keys of a keyed stream, in the keyed operator's own subtask,
 * and sends each sample as a JSON line to Kafka in the key-sample shape
 * skewlens decodes. See {@link io.github.skewlens.flink.sampler.KeySampler}
 * (call it from your own keyed function) and
 * {@link io.github.skewlens.flink.sampler.SamplingPassThrough} (a chained
 * pass-through in front of a keyed operator).
 */
package io.github.skewlens.flink.sampler;
