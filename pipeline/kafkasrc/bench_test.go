package kafkasrc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// BenchmarkBareConsumer measures a bare kafka-go Reader (one partition, no
// group, no skewlens code) reading pre-produced Flink-metric-sized records
// from kfake: the ceiling for the pipeline's end-to-end figures. One op
// reads the whole corpus with a fresh Reader; MB/s and records/s are per
// corpus.
func BenchmarkBareConsumer(b *testing.B) {
	const records = 20000
	brokers := fakeCluster(b, "bench")
	msgs := make([]kafka.Message, records)
	size := 0
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil,
			`{"name":"busyTimeMsPerSecond","time_stamp":%d,"value":%d.0,"host":"tm-%d","job_id":"7a1e0c3b9f","task_name":"KeyedProcess","subtask_index":%d}`,
			1593004193363+int64(i), i%1000, i%8, i%96)}
		size += len(msgs[i].Value)
	}
	for i := 0; i < records; i += 1000 {
		produceMsgs(b, brokers, "bench", msgs[i:i+1000])
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "bench", MinBytes: 1,
			MaxBytes: DefaultConfig().MaxBytes, MaxWait: 100 * time.Millisecond, QueueCapacity: DefaultConfig().QueueCapacity})
		for n := 0; n < records; n++ {
			if _, err := r.FetchMessage(ctx); err != nil {
				b.Fatalf("fetch %d: %v", n, err)
			}
		}
		total += time.Since(start)
		_ = r.Close()
	}
	b.ReportMetric(float64(records*b.N)/total.Seconds(), "records/s")
}
