package io.github.skewlens.flink.kafka;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * For benchmarks: a LineSender whose producer acknowledges every record at
 * once and keeps nothing, so that a benchmark measures the sender's callers
 * and thread, not a broker.
 */
public final class NullSenders {
    private NullSenders() {}

    /** A started sender for cfg (bootstrap servers are not contacted); close it. */
    public static LineSender start(LineSender.Config cfg) {
        return new LineSender(cfg, new MockProducer<>() {
            @Override
            public synchronized Future<RecordMetadata> send(ProducerRecord<String, byte[]> r, Callback cb) {
                RecordMetadata md = new RecordMetadata(new TopicPartition(r.topic(), 0), 0, 0, 0, 0, r.value().length);
                if (cb != null) {
                    cb.onCompletion(md, null);
                }
                return CompletableFuture.completedFuture(md);
            }
        });
    }
}
