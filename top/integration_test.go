package top_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/sinks/topstore"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/top"
)

// TestMain stops the ClickHouse server chtest starts, after all tests.
func TestMain(m *testing.M) { chtest.Main(m) }

// The ClickHouse store's top reader is a topstore.Reader.
var _ topstore.Reader = (*clickhouse.TopReader)(nil)

// newSink connects to the chtest server with a database of its own,
// dropped when the test ends.
func newSink(t *testing.T, suffix string) *clickhouse.Store {
	t.Helper()
	addr := chtest.Start(t)
	db := fmt.Sprintf("skewlens_top_%d_%s", os.Getpid(), suffix)
	s, err := clickhouse.New(context.Background(), clickhouse.Config{Addr: addr, Database: db, FlushInterval: -1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		conn, err := ch.Open(&ch.Options{Addr: []string{addr}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Errorf("drop %s: %v", db, err)
			return
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+db+"`"); err != nil {
			t.Errorf("drop %s: %v", db, err)
		}
	})
	return s
}

// TestOnceAgainstClickHouse draws one frame from findings written to the
// real server, with a 64 KB key that tries to clear the screen.
func TestOnceAgainstClickHouse(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newSink(t, "once")
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Minute).UnixMilli()
	start -= start % 10_000
	sub := func(i int) *int { return &i }
	hostile := "\x1b[2J\x1b[31m" + strings.Repeat("k", 64<<10)
	fs := []skew.Finding{
		{Kind: skew.KindHotKey, JobID: "job-1", JobName: "orders", TaskName: "Window", SubtaskIndex: sub(2),
			WindowStart: start, WindowEnd: start + 10_000, HotKey: &skew.HotKey{Key: hostile, Share: 0.7, EstimatedRecords: 5000}},
		{Kind: skew.KindSaturation, JobID: "job-1", JobName: "orders", TaskName: "Window", SubtaskIndex: sub(2),
			WindowStart: start, WindowEnd: start + 10_000, Summary: "Subtask 2 of Window is saturated by a hot key.",
			Saturation: &skew.Saturation{Cause: skew.CauseDataSkew, Host: "tm-2", Evidence: &skew.Evidence{
				BusyMsPerSecond: 980, BackPressuredMsPerSecond: 5, SkewScore: 71, MaxMedianRatio: 6}}},
	}
	if err := s.Writer().Write(ctx, 1, fs); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tp, err := top.New(top.Config{Once: true, Color: top.ColorNever}, s.Top(), &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Run(ctx); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	got := out.String()
	top.CheckSafe(t, got)
	top.CheckAligned(t, got, false)
	for _, want := range []string{
		"JOB orders  job-1",
		"TASK SKEW (1)", "Window  71.0        6.00",
		"HOT KEYS (1)", `"\x1b[2J\x1b[31m` + strings.Repeat("k", 22) + `"…  70.0%`,
		"SATURATED SUBTASKS (1)", "data_skew        980                   5  tm-2",
		"Subtask 2 of Window is saturated by a hot key.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("frame lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ERROR") {
		t.Errorf("frame shows an error:\n%s", got)
	}
}

// TestOnceWithoutSchema shows the server's error: the tables do not exist.
func TestOnceWithoutSchema(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newSink(t, "noschema")
	var out bytes.Buffer
	tp, err := top.New(top.Config{Once: true}, s.Top(), &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tp.Run(ctx)
	if !retry.IsPermanent(err) {
		t.Fatalf("Run = %v, want a permanent error", err)
	}
	got := out.String()
	top.CheckSafe(t, got)
	if !strings.Contains(got, "ERROR: clickhouse: top view: read newest windows: fatal:") ||
		!strings.Contains(got, "no data read yet") {
		t.Errorf("frame lacks the error:\n%s", got)
	}
}
