package planpub

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/skew/plans"
)

// fakeLister is the plans table: it fails the first failures reads with
// err, then returns ps and the unreadable.
type fakeLister struct {
	ps         []plans.Plan
	unreadable []plans.RefusedJob
	failures   int
	err        error
	reads      int
}

func (l *fakeLister) RestorablePlans(context.Context) (plans.Stored, error) {
	l.reads++
	if l.reads <= l.failures {
		return plans.Stored{}, l.err
	}
	return plans.Stored{Plans: l.ps, Unreadable: l.unreadable}, nil
}

func TestRestoreFromTheTable(t *testing.T) {
	changes := enginePlans(t, "j", "agg")
	v1, v2 := *changes[0].Plan, *changes[1].Plan
	broken := v2
	broken.TaskName, broken.JobID = "other", "" // no job: the Manager refuses it
	policy := retry.Policy{MaxRetries: 3, MinBackoff: time.Microsecond, MaxBackoff: time.Microsecond}
	tests := []struct {
		name        string
		lister      fakeLister
		wantErr     string
		wantVersion uint64 // of j/agg after Restore; 0: none
		wantReads   int
		wantWarn    string // the job named in a WARN of a refused state
	}{
		{name: "latest plan", lister: fakeLister{ps: []plans.Plan{v2}}, wantVersion: v2.Version, wantReads: 1},
		{name: "an older plan", lister: fakeLister{ps: []plans.Plan{v1}}, wantVersion: v1.Version, wantReads: 1},
		{name: "nothing stored", lister: fakeLister{}, wantReads: 1},
		{name: "retryable failures are retried", lister: fakeLister{ps: []plans.Plan{v2}, failures: 2, err: errors.New("connection refused")},
			wantVersion: v2.Version, wantReads: 3},
		{name: "retries used up", lister: fakeLister{failures: 10, err: errors.New("connection refused")},
			wantErr: "restore salting plans from the ClickHouse", wantReads: 4},
		{name: "permanent error", lister: fakeLister{failures: 10, err: retry.Permanent("read plans", errors.New("no such table"))},
			wantErr: "no such table", wantReads: 1},
		{name: "a bad plan is skipped, the others restored", lister: fakeLister{ps: []plans.Plan{broken, v2}},
			wantVersion: v2.Version, wantReads: 1, wantWarn: `job=""`},
		{name: "an unreadable plan is skipped, the others restored", lister: fakeLister{ps: []plans.Plan{v2},
			unreadable: []plans.RefusedJob{{JobID: "k9", Err: errors.New("plan of task \"agg\" does not decode")}}},
			wantVersion: v2.Version, wantReads: 1, wantWarn: "job=k9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mgr, err := plans.NewManager(plans.Config{})
			if err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logged, nil))
			err = Restore(context.Background(), mgr, nil, &tt.lister, policy, log)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Restore = %v, want an error containing %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if tt.lister.reads != tt.wantReads {
				t.Errorf("reads = %d, want %d", tt.lister.reads, tt.wantReads)
			}
			var got uint64
			if p := mgr.Plan("j", "agg"); p != nil {
				got = p.Version
			}
			if got != tt.wantVersion {
				t.Errorf("restored version of j/agg = %d, want %d", got, tt.wantVersion)
			}
			warned := strings.Contains(logged.String(), "level=WARN msg=\"saved state of a job refused; it restarts without it\" part=plans "+tt.wantWarn)
			if warned != (tt.wantWarn != "") || uint64(strings.Count(logged.String(), "level=WARN")) != mgr.Stats().RefusedJobs {
				t.Errorf("warned = %v, want %q; refused jobs counted %d; log:\n%s", warned, tt.wantWarn, mgr.Stats().RefusedJobs, logged.String())
			}
		})
	}
}
