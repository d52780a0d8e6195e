package io.github.skewlens.flink.scenario;

import java.io.Serializable;

import org.apache.flink.api.common.functions.RuntimeContext;

/**
 * Optional per-record code of the keyed task: skewlens' key sampler
 * (io.github.skewlens.flink.sampler) plugs in here behind --kafka-bootstrap.
 */
final class Hooks {
    private Hooks() {}

    /** Called once per record with the record's original key. */
    interface PerRecord extends AutoCloseable {
        void record(String key) throws Exception;

        @Override
        void close() throws Exception;
    }

    /** Opens a subtask's hook; serialized with the job. */
    interface Factory extends Serializable {
        PerRecord open(RuntimeContext ctx) throws Exception;
    }
}
