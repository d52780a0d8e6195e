package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// What the job matrix (TestJobMatrix) reads from the topics as the jobs
// send it: the key samples and the busy-time readings.

// sampleTap counts the key samples of one key per job and subtask, read
// from the samples topic as the jobs send them.
type sampleTap struct {
	mu     sync.Mutex
	counts map[string]map[string]map[int]int // job -> key -> subtask -> samples
	firstT map[string]int64                  // job -> its first sample's time (epoch ms)
}

func tapSamples(t *testing.T, brokers []string, topic string) *sampleTap {
	s := &sampleTap{counts: map[string]map[string]map[int]int{}, firstT: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		// A group reads every partition (run created the topic).
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, GroupID: "matrix-tap", StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond})
		defer r.Close()
		for {
			msg, err := r.ReadMessage(ctx)
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(msg.Value), "\n") {
				var smp struct {
					TS      int64  `json:"ts"`
					JobID   string `json:"job_id"`
					Key     string `json:"key"`
					Subtask int    `json:"subtask_index"`
				}
				if json.Unmarshal([]byte(line), &smp) != nil {
					continue
				}
				s.mu.Lock()
				if f, ok := s.firstT[smp.JobID]; !ok || smp.TS < f {
					s.firstT[smp.JobID] = smp.TS
				}
				if smp.Key != matrixHotKey {
					s.mu.Unlock()
					continue
				}
				if s.counts[smp.JobID] == nil {
					s.counts[smp.JobID] = map[string]map[int]int{}
				}
				if s.counts[smp.JobID][smp.Key] == nil {
					s.counts[smp.JobID][smp.Key] = map[int]int{}
				}
				s.counts[smp.JobID][smp.Key][smp.Subtask]++
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *sampleTap) total(job, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.counts[job][key] {
		n += c
	}
	return n
}

// first is the time of the job's first key sample.
func (s *sampleTap) first(job string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.UnixMilli(s.firstT[job])
}

func (s *sampleTap) on(job, key string, subtask int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[job][key][subtask]
}

// readingTap records in which windows each subtask of the keyed task of
// each job reported busy-time readings, read from the metrics topic as
// the reporters deliver them.
type readingTap struct {
	mu    sync.Mutex
	seen  map[string]map[int]map[int64]int // job -> subtask -> window start -> readings
	first map[string]map[int]int64         // job -> subtask -> its first reading (epoch ms)
	last  map[string]int64                 // job -> its latest reading (epoch ms)
}

func tapReadings(t *testing.T, brokers []string, topic string) *readingTap {
	r := &readingTap{seen: map[string]map[int]map[int64]int{}, first: map[string]map[int]int64{}, last: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	w := matrixWindow.Milliseconds()
	go func() {
		defer close(done)
		readBusyCounters(ctx, brokers, topic, "matrix-readings", func(c busyCounter) {
			if c.task != matrixTask {
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.seen[c.jobID] == nil {
				r.seen[c.jobID], r.first[c.jobID] = map[int]map[int64]int{}, map[int]int64{}
			}
			if r.seen[c.jobID][c.subtask] == nil {
				r.seen[c.jobID][c.subtask] = map[int64]int{}
				r.first[c.jobID][c.subtask] = c.ts
			}
			r.seen[c.jobID][c.subtask][c.ts/w*w]++
			r.first[c.jobID][c.subtask] = min(r.first[c.jobID][c.subtask], c.ts)
			r.last[c.jobID] = max(r.last[c.jobID], c.ts)
		})
	}()
	return r
}

// has reports whether the subtask's readings let run compute its busy
// time in the window: one in it and one before (in it or earlier), the
// counter's difference (skew's doc, "Busy time").
func (r *readingTap) has(job string, subtask int, windowStart int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.seen[job][subtask][windowStart]
	return n >= 2 || n == 1 && r.first[job][subtask] < windowStart
}

// around describes the subtask's readings in the window starting at
// windowStart and the ones on either side, for a failure message.
func (r *readingTap) around(job string, subtask int, windowStart int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := matrixWindow.Milliseconds()
	seen := r.seen[job][subtask]
	return fmt.Sprintf("readings in the windows before, at and after: %d, %d, %d; first at %s",
		seen[windowStart-w], seen[windowStart], seen[windowStart+w], time.UnixMilli(r.first[job][subtask]).Format(time.TimeOnly))
}

// latest is the time of the job's latest reading read so far.
func (r *readingTap) latest(job string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[job]
}
