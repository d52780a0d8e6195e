package io.github.skewlens.flink.scenario;

import io.github.skewlens.flink.salting.PerRecord;
import io.github.skewlens.flink.sampler.KeySampler;
import io.github.skewlens.flink.sampler.SamplingHook;

/**
 * The skewlens parts of the scenario job that other packages of this module
 * provide: the Kafka metric reporter (io.github.skewlens.flink.reporter)
 * and the key sampler (io.github.skewlens.flink.sampler), both on with
 * --kafka-bootstrap.
 */
final class Plugins {
    private Plugins() {}

    static final String REPORTER_FACTORY = "io.github.skewlens.flink.reporter.SkewlensReporterFactory";

    /** The key sampler as the keyed task's per-record hook; NONE without --kafka-bootstrap. */
    static PerRecord keyedHook(ScenarioOptions o) {
        if (o.kafkaBootstrap == null) {
            return PerRecord.NONE;
        }
        KeySampler.Config c = KeySampler.Config.of(o.kafkaBootstrap);
        c.sender.topic = o.samplesTopic;
        c.sampleRate = o.sampleRate();
        c.validate();
        return new SamplingHook(c);
    }
}
