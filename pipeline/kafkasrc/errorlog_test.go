package kafkasrc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/pipeline/stream"
)

// TestKafkaErrorLevel: kafka-go's error lines about timed-out reads (an
// idle partition) are Debug; every other one stays a warning.
func TestKafkaErrorLevel(t *testing.T) {
	ioTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	tests := []struct {
		name string
		args []any
		want slog.Level
	}{
		{"i/o timeout on an empty partition", []any{0, "skewlens.keys", int64(0), ioTimeout}, slog.LevelDebug},
		{"wrapped deadline", []any{fmt.Errorf("read: %w", os.ErrDeadlineExceeded)}, slog.LevelDebug},
		{"kafka request timed out", []any{kafka.RequestTimedOut}, slog.LevelDebug},
		{"a closed reader's lag read", []any{1, "flink-metrics", fmt.Errorf("read lag: %w", context.Canceled)}, slog.LevelDebug},
		{"connection refused", []any{0, "t", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}, slog.LevelWarn},
		{"not leader", []any{0, "t", int64(5), kafka.NotLeaderForPartition}, slog.LevelWarn},
		{"no error argument", []any{0, "t", int64(5)}, slog.LevelWarn},
		{"no arguments", nil, slog.LevelWarn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kafkaErrorLevel(tt.args); got != tt.want {
				t.Errorf("kafkaErrorLevel(%v) = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
}

// TestErrorLoggerLevels: the logger handed to kafka-go as ErrorLogger
// writes kafka-go's "unknown error reading partition … i/o timeout" line
// (a dozen a minute on make run) at Debug, and other errors at Warn.
func TestErrorLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := &Source{log: log}
	el := s.errorLogger()
	ioTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	el.Printf("the kafka reader got an unknown error reading partition %d of %s at offset %d: %s", 0, "skewlens.keys", int64(0), ioTimeout)
	el.Printf("failed to read from current broker for partition %d of %s at offset %d: %v", 1, "skewlens.keys", int64(7), kafka.NotLeaderForPartition)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	if !strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[0], "i/o timeout") {
		t.Errorf("timeout line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "kafka-go: failed to read") {
		t.Errorf("not-leader line: %s", lines[1])
	}
	// At the default level the timeout is not logged at all.
	buf.Reset()
	s.log = slog.New(slog.NewTextHandler(&buf, nil))
	s.errorLogger().Printf("unknown error reading partition %d: %s", 0, ioTimeout)
	if buf.Len() != 0 {
		t.Errorf("timeout logged at Info level: %s", buf.String())
	}
}

// TestErrorLoggerCountsReadFailures: kafka-go's errors count as read
// failures (stream.ReadFailures), a dial that timed out too (a broker out
// of reach), but not a read that timed out (an idle partition) or a
// cancelled one.
func TestErrorLoggerCountsReadFailures(t *testing.T) {
	s := &Source{log: slog.New(slog.DiscardHandler)}
	el := s.errorLogger()
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	el.Printf("unknown error reading partition %d: %s", 0, readTimeout)
	el.Printf("read lag: %s", fmt.Errorf("read lag: %w", context.Canceled))
	if n := s.ReadFailures(); n != 0 {
		t.Fatalf("%d read failures after an idle partition's timeout", n)
	}
	el.Printf("error initializing the kafka reader for partition %d of %s: %s", 0, "t", dialTimeout)
	el.Printf("failed to read from current broker for partition %d of %s at offset %d: %v", 1, "t", int64(7), kafka.NotLeaderForPartition)
	if n := ForStream(s).(stream.ReadFailures).ReadFailures(); n != 2 {
		t.Fatalf("%d read failures after a dial timeout and a lost leader, want 2", n)
	}
}
