package io.github.skewlens.flink.scenario;

import org.apache.flink.api.common.functions.RuntimeContext;

import io.github.skewlens.flink.salting.PerRecord;
import io.github.skewlens.flink.sampler.KeySampler;

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
        c.sampleRate = o.sampleRate;
        c.validate();
        return new SamplerHook(c);
    }

    /**
     * Samples every record's original key (with salting too: the hook runs
     * in phase 1 with the unsalted key) on the keyed subtask that processes
     * it.
     */
    static final class SamplerHook implements PerRecord {
        private static final long serialVersionUID = 1L;
        private final KeySampler.Config config;
        private transient KeySampler sampler;

        SamplerHook(KeySampler.Config config) {
            this.config = config;
        }

        @Override
        public void open(RuntimeContext ctx) {
            sampler = KeySampler.open(ctx, config);
        }

        @Override
        public void onRecord(String originalKey) {
            sampler.sample(originalKey);
        }

        @Override
        public void close() {
            if (sampler != null) {
                sampler.close();
            }
        }
    }
}
