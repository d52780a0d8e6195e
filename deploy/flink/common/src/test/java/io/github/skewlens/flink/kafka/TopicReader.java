package io.github.skewlens.flink.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.Predicate;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

import io.github.skewlens.flink.testing.KafkaBroker;

/**
 * Reads a topic from the beginning in tests: each record's key and its
 * lines. Not thread-safe; close it.
 */
public final class TopicReader implements AutoCloseable {
    /** One line of a record, with the record's key. */
    public record KeyedLine(String key, String line) {}

    private final KafkaConsumer<String, String> consumer;
    private final List<KeyedLine> lines = new ArrayList<>();
    private int records;

    /** Reads topic on the shared test broker. */
    public TopicReader(String topic) {
        this(KafkaBroker.bootstrap(), topic);
    }

    /** Reads topic on the broker at bootstrap. */
    public TopicReader(String bootstrap, String topic) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        consumer = new KafkaConsumer<>(cp);
        // Assigned, not subscribed: no group join (the broker delays the
        // first rebalance of a group by 3 s).
        List<TopicPartition> parts = new ArrayList<>();
        for (PartitionInfo p : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
            parts.add(new TopicPartition(topic, p.partition()));
        }
        consumer.assign(parts);
        consumer.seekToBeginning(parts);
    }

    /** Polls until done holds for the lines read so far, or timeoutMs passes; returns all lines. */
    public List<KeyedLine> readUntil(Predicate<List<KeyedLine>> done, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!done.test(lines) && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                records++;
                for (String l : r.value().split("\n")) {
                    if (!l.isEmpty()) {
                        lines.add(new KeyedLine(r.key(), l));
                    }
                }
            }
        }
        return new ArrayList<>(lines);
    }

    /** Records read so far. */
    public int records() {
        return records;
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(2));
    }
}
