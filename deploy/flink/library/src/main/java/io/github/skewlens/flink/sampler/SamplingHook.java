package io.github.skewlens.flink.sampler;

import org.apache.flink.api.common.functions.RuntimeContext;

import io.github.skewlens.flink.salting.PerRecord;

/**
 * The key sampler as the per-record hook of skewlens' two-phase
 * aggregation ({@code TwoPhaseConfig.perRecord}): it samples the original,
 * unsalted key of every record phase 1 processes, on the subtask that
 * processes it, so that skewlens keeps seeing a salted hot key as hot and
 * keeps its plan (docs/salting-plans.md, "A working plan stays").
 *
 * <p>Blocking and safety are those of {@link KeySampler}: {@link #onRecord}
 * never blocks and never throws. One instance per operator; Flink
 * serialises it with the job and calls {@link #open} in each subtask.
 */
public final class SamplingHook implements PerRecord {
    private static final long serialVersionUID = 1L;

    private final KeySampler.Config config;
    private transient KeySampler sampler;

    /** A hook that samples with config (see {@link KeySampler.Config}). */
    public SamplingHook(KeySampler.Config config) {
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
