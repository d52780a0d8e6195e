package skew

import (
	"fmt"
	"strings"
	"testing"
)

// TestCheckpointLink checks that a saturation finding says when the job's
// checkpoints are slow or failing, and names the subtask that holds them up.
func TestCheckpointLink(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		lastMs    float64
		failed    []float64 // numberOfFailedCheckpoints per window
		delayNs   float64   // checkpointStartDelayNanos of subtask 2 (others 1 ms)
		alignNs   float64   // checkpointAlignmentTime of subtask 2 (others 0)
		want      string    // in the last window's summary; "" for no link
		wantCount int       // findings of the last window that carry it
	}{
		{"slow by the default timeout", Config{}, 400000, nil, 30e9, 1e9,
			` Checkpoints take 6.7 min because subtask 2 of "sink" holds up the barrier (start delay 30.0 s, alignment 1.0 s).`, 1},
		{"fast", Config{}, 20000, nil, 30e9, 1e9, "", 0},
		{"failing", Config{}, 20000, []float64{0, 0, 1}, 30e9, 1e9,
			` Checkpoints take 20.0 s and 1 failed in this window because subtask 2 of "sink" holds up the barrier`, 1},
		{"failures before the window only", Config{}, 20000, []float64{1, 1, 1}, 30e9, 1e9, "", 0},
		{"slow by a short timeout", Config{CheckpointTimeoutMs: 30000}, 20000, nil, 30e9, 1e9,
			` Checkpoints take 20.0 s because subtask 2 of`, 1},
		{"fraction above the duration", Config{CheckpointTimeoutMs: 30000, CheckpointRiskFraction: 0.9}, 20000, nil, 30e9, 1e9, "", 0},
		{"no subtask times: the busiest saturated subtask", Config{}, 400000, nil, 0, 0,
			` Checkpoints take 6.7 min because subtask 3 of "sink" holds up the barrier (it is saturated).`, 1},
		// Flink's -1 ("none yet", Metric.NoValue) for the duration and size.
		{"no checkpoint yet, failing", Config{}, -1, []float64{0, 0, 1}, 30e9, 1e9,
			` No checkpoint of the job has completed yet, and 1 failed in this window because subtask 2 of "sink" holds up the barrier`, 1},
		{"no checkpoint yet, checkpointing off", Config{}, -1, nil, 30e9, 1e9, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(t, tt.cfg)
			const windows = 3
			var start int
			for w := range windows {
				subs := balanced(4, 950, 0, 100)
				subs[3].busy = 990
				j.metrics(w, "source", balanced(4, 50, 900, 100))
				j.metrics(w, "sink", subs)
				ts := t0 + int64(w)*10000 + 6000
				for i := range 4 {
					delay, align := 1e6, 0.0
					if i == 2 {
						delay, align = tt.delayNs, tt.alignNs
					}
					if tt.delayNs == 0 {
						delay = 0
					}
					for _, kv := range []struct {
						n MetricName
						v float64
					}{{CheckpointStartDelayNanos, delay}, {CheckpointAlignmentTime, align}} {
						m := Metric{TS: ts, JobID: j.id, JobName: j.name, TaskName: "sink", Subtask: int32(i), Name: kv.n, Value: kv.v}
						if v := j.e.AddMetric(&m); v != Accepted {
							t.Fatalf("subtask metric: %v", v)
						}
					}
				}
				job := []Metric{{Name: LastCheckpointDuration, Value: tt.lastMs}, {Name: LastCheckpointSize, Value: 3e9 + float64(w)}}
				noneYet := tt.lastMs < 0
				if noneYet {
					job = []Metric{{Name: LastCheckpointDuration, NoValue: true}, {Name: LastCheckpointSize, NoValue: true}}
				}
				if tt.failed != nil {
					job = append(job, Metric{Name: NumberOfFailedCheckpoints, Value: tt.failed[w]})
				}
				for _, m := range job {
					m.TS, m.JobID, m.JobName, m.Subtask = ts, j.id, j.name, -1
					if v := j.e.AddMetric(&m); v != Accepted {
						t.Fatalf("job metric: %v", v)
					}
				}
				start = len(j.out)
				j.close(w)
			}
			last := j.out[start:]
			if len(j.kinds(KindSaturation, CauseUnderProvisioned)) == 0 {
				t.Fatalf("no under_provisioned finding: %s", dump(j.out))
			}
			n := 0
			var risks []Finding
			for _, f := range last {
				if f.Cause == CauseCheckpointRisk {
					risks = append(risks, f)
					continue
				}
				if strings.Contains(f.Summary, "Checkpoints") || strings.Contains(f.Summary, "checkpoints failed") || strings.Contains(f.Summary, "No checkpoint") {
					n++
					if tt.want == "" || !strings.Contains(f.Summary, tt.want) {
						t.Errorf("summary %q, want it to contain %q", f.Summary, tt.want)
					}
				}
				if f.Kind != KindSaturation || f.Evidence == nil {
					continue
				}
				if tt.lastMs < 0 {
					if !f.Evidence.NoCheckpointYet || f.Evidence.LastCheckpointMs != 0 || f.Evidence.LastCheckpointBytes != 0 {
						t.Errorf("evidence %+v, want no checkpoint yet and no duration or size", f.Evidence)
					}
					continue
				}
				if f.Evidence.NoCheckpointYet {
					t.Error("evidence says no checkpoint yet for a job with one")
				}
				if f.Evidence.LastCheckpointMs != tt.lastMs {
					t.Errorf("evidence last checkpoint %v ms, want %v", f.Evidence.LastCheckpointMs, tt.lastMs)
				}
				if f.Evidence.LastCheckpointBytes != 3e9+windows-1 {
					t.Errorf("evidence last checkpoint size %v bytes, want %v", f.Evidence.LastCheckpointBytes, 3e9+windows-1)
				}
			}
			slow := tt.lastMs >= j.e.cfg.CheckpointRiskFraction*float64(j.e.cfg.CheckpointTimeoutMs)
			switch {
			case !slow && len(risks) != 0:
				t.Errorf("checkpoint_risk for a fast checkpoint: %s", dump(risks))
			case slow && len(risks) != 1:
				t.Errorf("%d checkpoint_risk findings, want 1: %s", len(risks), dump(last))
			case slow:
				f := risks[0]
				if f.Kind != KindSaturation || f.Evidence.CheckpointTimeoutMs != j.e.cfg.CheckpointTimeoutMs ||
					f.TaskName != "sink" || f.SubtaskIndex == nil || !strings.Contains(tt.want, fmt.Sprintf("subtask %d of", *f.SubtaskIndex)) ||
					!strings.Contains(f.Summary, "checkpoint timeout: they fail when they reach it; subtask") {
					t.Errorf("checkpoint_risk finding: %s", dump(risks))
				}
			}
			if n != tt.wantCount {
				t.Errorf("%d summaries link checkpoints, want %d: %s", n, tt.wantCount, dump(last))
			}
		})
	}
}
