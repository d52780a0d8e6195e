package clickhouse

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// TestStateRoundTrip saves engine state twice for one consumer group and
// once for another: LoadState returns the latest version of each job of
// the group asked for, with hostile job IDs intact.
func TestStateRoundTrip(t *testing.T) {
	s, _ := newTestSink(t, Config{Database: testDatabase("state")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	failed := 3.0
	hostile := "j'); DROP TABLE engine_state; --\n\\"
	v1 := []skew.JobState{
		{WindowMs: 10000, JobID: "a", ClosedUpTo: 10000, Tasks: []skew.TaskState{{Name: "t", LastDominant: -1, PrevDominant: -1}}},
		{WindowMs: 10000, JobID: hostile, ClosedUpTo: 10000},
	}
	v2 := []skew.JobState{
		{WindowMs: 10000, JobID: "a", JobName: "billing", ClosedUpTo: 20000, LastFailed: &failed, Tasks: []skew.TaskState{{
			Name: "t", Parallelism: 4, MaxParallelism: 128, LastDominant: 2, PrevDominant: 1, UpSustained: 3,
			Subtasks: []skew.SubtaskState{{Host: "10.0.0.1", Sustained: 2, Count: 5, CountTS: 19000, HasCount: true}},
		}}},
	}
	other := []skew.JobState{{WindowMs: 10000, JobID: "a", ClosedUpTo: 99000}}
	for _, step := range []struct {
		group   string
		version uint64
		states  []skew.JobState
	}{{"g", 1, v1}, {"g", 2, v2}, {"other", 5, other}} {
		if err := s.Writer().SaveState(ctx, step.group, step.version, step.states); err != nil {
			t.Fatalf("SaveState %s v%d: %v", step.group, step.version, err)
		}
	}
	got, err := s.Writer().LoadState(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	want := []skew.JobState{v2[0], v1[1]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadState:\n got %+v\nwant %+v", got, want)
	}
	none, err := s.Writer().LoadState(ctx, "nobody")
	if err != nil || len(none) != 0 {
		t.Fatalf("LoadState of an unknown group: %v, %v", none, err)
	}
	// The restored states are valid engine state.
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Restore(got); err != nil {
		t.Fatal(err)
	}
}
