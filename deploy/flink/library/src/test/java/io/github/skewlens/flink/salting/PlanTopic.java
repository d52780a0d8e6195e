package io.github.skewlens.flink.salting;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import io.github.skewlens.flink.testing.KafkaBroker;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** A fresh compacted plans topic on the test broker, written like skewlens' planpub writes it. */
final class PlanTopic implements AutoCloseable {
    final String name;
    private final KafkaProducer<String, byte[]> producer;

    PlanTopic(int partitions) {
        name = "skewlens.salting-plans-" + UUID.randomUUID();
        KafkaBroker.createTopic(name, partitions, Map.of("cleanup.policy", "compact"));
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaBroker.bootstrap());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        producer = new KafkaProducer<>(p);
    }

    /** Writes a plan (or any bytes) under job/task, with the version header when given (>= 0). */
    void send(String job, String task, byte[] value, long version) throws Exception {
        ProducerRecord<String, byte[]> r = new ProducerRecord<>(name, job + "/" + task, value);
        if (version >= 0) {
            r.headers().add("skewlens-plan-version", Long.toString(version).getBytes(StandardCharsets.UTF_8));
            r.headers().add("skewlens-plan-source", "engine".getBytes(StandardCharsets.UTF_8));
        }
        producer.send(r).get(30, TimeUnit.SECONDS);
    }

    void send(String job, String task, String value) throws Exception {
        send(job, task, value.getBytes(StandardCharsets.UTF_8), -1);
    }

    /** The tombstone that retires a task's plan. */
    void retire(String job, String task) throws Exception {
        ProducerRecord<String, byte[]> r = new ProducerRecord<>(name, job + "/" + task, null);
        r.headers().add("skewlens-plan-retired", "true".getBytes(StandardCharsets.UTF_8));
        producer.send(r).get(30, TimeUnit.SECONDS);
    }

    /**
     * Writes a lineage message as skewlens does: under the job name's
     * lineage key of the task, the plan of the name's newest run (its
     * job id and version in the headers), or a tombstone for null.
     */
    void sendLineage(String jobName, String task, byte[] plan, String ofJob, long version) throws Exception {
        ProducerRecord<String, byte[]> r = new ProducerRecord<>(name, KafkaPlanConsumer.lineageKey(jobName, task), plan);
        if (plan != null) {
            r.headers().add("skewlens-plan-version", Long.toString(version).getBytes(StandardCharsets.UTF_8));
            r.headers().add("skewlens-plan-source", "engine".getBytes(StandardCharsets.UTF_8));
            r.headers().add("skewlens-plan-lineage", ofJob.getBytes(StandardCharsets.UTF_8));
        }
        producer.send(r).get(30, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        producer.close();
    }
}
