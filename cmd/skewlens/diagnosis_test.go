package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
)

// finding is the findings contract as a reader outside skewlens sees it.
type finding struct {
	Kind          string  `json:"kind"`
	JobID         string  `json:"job_id"`
	JobName       string  `json:"job_name"`
	TaskName      string  `json:"task_name"`
	SubtaskIndex  *int    `json:"subtask_index"`
	WindowStart   int64   `json:"window_start"`
	WindowEnd     int64   `json:"window_end"`
	Key           string  `json:"key"`
	Share         float64 `json:"share"`
	Cause         string  `json:"cause"`
	Host          string  `json:"host"`
	TaskAttemptID string  `json:"task_attempt_id"`
	Summary       string  `json:"summary"`
	Evidence      struct {
		RecommendedParallelism int     `json:"recommended_parallelism"`
		LastCheckpointMs       float64 `json:"last_checkpoint_duration_ms"`
		FailedCheckpoints      float64 `json:"failed_checkpoints_in_window"`
	} `json:"evidence"`
	Plan *struct {
		Keys []struct {
			Key    string `json:"key"`
			Salted []struct {
				Key     string `json:"key"`
				Subtask int    `json:"subtask"`
			} `json:"salted"`
		} `json:"keys"`
	} `json:"plan"`
}

func parseFindings(t *testing.T, out string) []finding {
	t.Helper()
	var fs []finding
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var f finding
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("finding %q: %v", l, err)
		}
		fs = append(fs, f)
	}
	return fs
}

// checkDiagnosis compares analyze's findings with the simulator's ground
// truth: the right cause on the right task and subtask, nothing else, and
// found soon after the incident starts.
func checkDiagnosis(t *testing.T, truth simulate.Truth, window, interval time.Duration, fs []finding) {
	t.Helper()
	var sat, hot []finding
	for _, f := range fs {
		switch f.Kind {
		case "saturation":
			sat = append(sat, f)
		case "hot_key":
			hot = append(hot, f)
		}
	}
	if truth.Cause == simulate.CauseNone {
		if len(sat)+len(hot) > 0 {
			t.Fatalf("healthy job: %d saturation and %d hot_key findings, first %+v", len(sat), len(hot), append(sat, hot...)[0])
		}
		return
	}
	if len(sat) == 0 {
		t.Fatalf("no saturation finding for %s", truth.Cause)
	}
	sub := func(f finding) int {
		if f.SubtaskIndex == nil {
			return -1
		}
		return *f.SubtaskIndex
	}
	for _, f := range sat {
		if f.Cause != string(truth.Cause) || f.TaskName != truth.TaskName || f.JobID != truth.JobID {
			t.Fatalf("want %s on %q, got %s on %q subtask %d at %d: %s", truth.Cause, truth.TaskName, f.Cause, f.TaskName, sub(f), f.WindowStart, f.Summary)
		}
		switch truth.Cause {
		case simulate.CauseRotatingHotKey:
			ok := false
			for _, h := range truth.Hot {
				ok = ok || h.Subtask == sub(f)
			}
			if !ok {
				t.Fatalf("rotating finding on subtask %d, not a hot subtask of %+v", sub(f), truth.Hot)
			}
		case simulate.CauseUnderProvisioned:
			if sub(f) != -1 || f.Evidence.RecommendedParallelism <= 0 {
				t.Fatalf("under_provisioned finding with subtask %d, recommendation %d", sub(f), f.Evidence.RecommendedParallelism)
			}
		default:
			if sub(f) != truth.Subtask || f.Host != truth.Host || f.TaskAttemptID != truth.TaskAttemptID {
				t.Fatalf("finding on subtask %d host %s attempt %s, want %d %s %s", sub(f), f.Host, f.TaskAttemptID, truth.Subtask, truth.Host, truth.TaskAttemptID)
			}
		}
	}
	// Found early: the meters Flink reports average over 60 s, so allow
	// two minutes of ramp-up after the incident starts.
	if first := sat[0].WindowStart; first > truth.From+120000 {
		t.Errorf("first finding at +%ds, want within 120 s", (first-truth.From)/1000)
	}
	// And found in most windows while it lasts.
	windows := map[int64]bool{}
	for _, f := range sat {
		windows[f.WindowStart] = true
	}
	span := min(truth.To, truth.From+int64(10*time.Minute/time.Millisecond)) - truth.From
	// Reports arrive once per interval, so only windows with a report can
	// carry a finding.
	if expect := span / max(window, interval).Milliseconds() / 2; int64(len(windows)) < expect && truth.Cause != simulate.CauseUnderProvisioned {
		t.Errorf("found in %d windows, want at least %d", len(windows), expect)
	}
	if truth.Cause == simulate.CauseDataSkew || truth.Cause == simulate.CauseRotatingHotKey {
		want := map[string]int{}
		for _, h := range truth.Hot {
			want[h.Key] = h.Subtask
		}
		seen := map[string]bool{}
		for _, f := range hot {
			if s, ok := want[f.Key]; !ok || s != sub(f) {
				t.Fatalf("hot key %q on subtask %d; truth %+v", f.Key, sub(f), truth.Hot)
			}
			seen[f.Key] = true
		}
		if len(seen) != len(want) {
			t.Errorf("hot keys found %v, want %v", seen, want)
		}
		plans := 0
		for _, f := range fs {
			if f.Kind != "salting_plan" {
				continue
			}
			plans++
			for _, k := range f.Plan.Keys {
				at := map[int]bool{}
				for _, s := range k.Salted {
					if at[s.Subtask] {
						t.Fatalf("plan salts %q twice onto subtask %d", k.Key, s.Subtask)
					}
					at[s.Subtask] = true
				}
			}
		}
		if plans == 0 {
			t.Error("no salting plan")
		}
	}
}

// TestDiagnosisMatrix runs every scenario with other parallelisms, keys,
// timings and formats than the defaults, end to end through the analyze
// command, and checks the findings against the simulator's ground truth.
func TestDiagnosisMatrix(t *testing.T) {
	type variant struct {
		name   string
		cfg    simulate.Config
		window time.Duration
	}
	variants := []variant{
		{"defaults", simulate.Config{}, 10 * time.Second},
		{"p4 influx omit-subtask", simulate.Config{Parallelism: 4, MetricFormat: "influx", OmitSubtask: true, Seed: 7}, 10 * time.Second},
		{"p16 prometheus legacy", simulate.Config{Parallelism: 16, SinkParallelism: 8, MetricFormat: "prometheus", Naming: "legacy", Seed: 11}, 10 * time.Second},
		{"p48 max256 json 30s reports", simulate.Config{Parallelism: 48, MaxParallelism: 256, SourceParallelism: 12, SinkParallelism: 6, Interval: 30 * time.Second, Duration: 15 * time.Minute, Seed: 3}, 10 * time.Second},
		{"p96 small hot key influx", simulate.Config{Parallelism: 96, SourceParallelism: 16, SinkParallelism: 16, HotShare: 0.04, MetricFormat: "influx", Duration: 6 * time.Minute, SamplesPerInterval: 5000, Seed: 5}, 10 * time.Second},
		{"p12 mixed 5s reports 30s window", simulate.Config{Parallelism: 12, Interval: 5 * time.Second, Seed: 99, HotShare: 0.25, MetricFormat: "mixed", Naming: "mixed"}, 30 * time.Second},
	}
	for _, sc := range simulate.Scenarios() {
		for _, v := range variants {
			t.Run(string(sc)+"/"+v.name, func(t *testing.T) {
				cfg := v.cfg
				cfg.Scenario = sc
				if cfg.SamplesPerInterval == 0 {
					cfg.SamplesPerInterval = 1000
				}
				g, err := simulate.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				var in bytes.Buffer
				if _, err := g.WriteTo(&in); err != nil {
					t.Fatal(err)
				}
				code, out, errOut := runCLI(t, in.String(), "analyze", "-i", "-", "--window", v.window.String())
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				if !strings.Contains(errOut, " 0 late, 0 rejected, 0 bad") {
					t.Errorf("input not clean: %s", errOut)
				}
				checkDiagnosis(t, g.Truth(), v.window, g.Config().Interval, parseFindings(t, out))
			})
		}
	}
}
