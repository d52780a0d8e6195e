package io.github.skewlens.flink.salting;

import java.io.Serializable;

import org.apache.flink.api.common.functions.RuntimeContext;

/**
 * A hook that phase 1 of {@link TwoPhaseAggregation} calls for every record
 * with its <b>original</b> key, in the keyed task skewlens diagnoses: the
 * place for skewlens' key sampler, which must report original keys so that
 * skewlens keeps seeing a salted key as hot and keeps its plan. Every
 * method defaults to doing nothing.
 *
 * <pre>{@code
 * cfg.perRecord = new PerRecord() {
 *     transient KeySampler sampler;
 *     public void open(RuntimeContext ctx) { sampler = KeySampler.open(ctx, samplerCfg); }
 *     public void onRecord(String key) { sampler.sample(key); }
 *     public void close() { sampler.close(); }
 * };
 * }</pre>
 *
 * <p>Called by the phase-1 subtask's task thread only, so an implementation
 * needs no locks; {@link #onRecord} is on the record path and must not
 * block. The hook is diagnostics and must not fail the job: an exception
 * from {@link #open} disables it for the subtask, one from
 * {@link #onRecord} is logged (rate-limited) and the record is processed.
 */
public interface PerRecord extends Serializable {
    /** The hook that does nothing. */
    PerRecord NONE = new PerRecord() {
        private static final long serialVersionUID = 1L;
    };

    /** Called once in the phase-1 subtask's open(), with that subtask's RuntimeContext. */
    default void open(RuntimeContext ctx) throws Exception {}

    /** Called for every record phase 1 processes, with the record's original (unsalted) key. */
    default void onRecord(String originalKey) {}

    /** Called once when the phase-1 subtask closes. */
    default void close() throws Exception {}
}
