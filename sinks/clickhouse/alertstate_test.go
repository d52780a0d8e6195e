package clickhouse

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew/alert"
)

// TestAlertStateRoundTrip saves alert state twice for one consumer group
// and once for another: LoadAlertState returns the latest state of each
// job of the group asked for, with hostile job IDs and states intact, and
// leaves out a job whose latest state is empty (its alerts are over).
func TestAlertStateRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ClickHouse")
	}
	s, _ := newTestSink(t, Config{Database: testDatabase("alertstate")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	hostile := "j'); DROP TABLE alert_state; --\n\\"
	v1 := []alert.JobSnapshot{
		{JobID: "a", State: []byte(`{"v":1,"job_id":"a","now":1}`)},
		{JobID: "b", State: []byte(`{"v":1,"job_id":"b","now":1}`)},
		{JobID: hostile, State: []byte("{\"v\":1,\"job_id\":\"x\\u0000'\"}")},
	}
	v2 := []alert.JobSnapshot{
		{JobID: "a", State: []byte(`{"v":1,"job_id":"a","now":2}`)},
		{JobID: "b"}, // over
	}
	other := []alert.JobSnapshot{{JobID: "a", State: []byte(`{"v":1,"job_id":"a","now":99}`)}}
	for _, step := range []struct {
		group   string
		version uint64
		states  []alert.JobSnapshot
	}{{"g", 1, v1}, {"g", 2, v2}, {"other", 5, other}} {
		if err := s.Writer().SaveAlertState(ctx, step.group, step.version, step.states); err != nil {
			t.Fatalf("SaveAlertState %s v%d: %v", step.group, step.version, err)
		}
	}
	got, err := s.Writer().LoadAlertState(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	want := []alert.JobSnapshot{v2[0], v1[2]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadAlertState:\n got %q\nwant %q", got, want)
	}
	none, err := s.Writer().LoadAlertState(ctx, "nobody")
	if err != nil || len(none) != 0 {
		t.Fatalf("LoadAlertState of an unknown group: %v, %v", none, err)
	}
	if err := s.Writer().SaveAlertState(ctx, "g", 3, []alert.JobSnapshot{{}}); err == nil {
		t.Fatal("a state without a job_id was saved")
	}
}
