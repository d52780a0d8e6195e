package io.github.skewlens.flink.scenario;

/**
 * One record of the scenario job: a key and a payload of 1–2 KB, so that
 * Flink's 32 KB network buffers hold a few dozen records and a slow subtask
 * back-pressures its producers within a second. A Flink POJO (public fields,
 * public no-argument constructor).
 */
public class Event {
    public String key;
    public long seq;
    /** Generation time, epoch ms. */
    public long ts;
    /** How many records of this key its keyed subtask has seen (set by the keyed task). */
    public long count;
    public String payload;

    public Event() {}

    public Event(String key, long seq, long ts, String payload) {
        this.key = key;
        this.seq = seq;
        this.ts = ts;
        this.payload = payload;
    }
}
