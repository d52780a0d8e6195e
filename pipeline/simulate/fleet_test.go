package simulate

import (
	"bytes"
	"crypto/sha256"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFleetShapes checks the shapes a fleet draws against what FleetConfig
// promises: parallelism in [1, MaxParallelism], 3-8 tasks, every metric
// format, about SampledTasks of the tasks sampled, the incidents placed on
// jobs that can show them, and the subtask target met.
func TestFleetShapes(t *testing.T) {
	tests := []struct {
		name string
		cfg  FleetConfig
	}{
		{"300 jobs", FleetConfig{Seed: 1, Jobs: 300}},
		{"300 jobs other seed", FleetConfig{Seed: 99, Jobs: 300, Incidents: 12}},
		{"subtask target", FleetConfig{Seed: 3, Subtasks: 50000}},
		{"small parallelism", FleetConfig{Seed: 4, Jobs: 200, MaxParallelism: 8, SampledTasks: 0.2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs, err := FleetJobs(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg := tt.cfg.withDefaults()
			if cfg.Jobs > 0 && len(jobs) != cfg.Jobs {
				t.Fatalf("%d jobs, want %d", len(jobs), cfg.Jobs)
			}
			formats := map[string]int{}
			scenarios := map[Scenario]int{}
			sideCounts := map[int]int{}
			var tasks, sampled, subtasks, maxPar, minPar = 0, 0, 0, 0, 1 << 30
			for _, jc := range jobs {
				if err := jc.withDefaults().Validate(); err != nil {
					t.Fatalf("%s: %v", jc.JobName, err)
				}
				n := FleetMinTasks + len(jc.SideTasks)
				if n < FleetMinTasks || n > FleetMaxTasks {
					t.Errorf("%s: %d tasks, want 3-8", jc.JobName, n)
				}
				sideCounts[len(jc.SideTasks)]++
				for _, p := range append([]int{jc.SourceParallelism, jc.Parallelism, jc.SinkParallelism}, jc.SideTasks...) {
					if p < 1 || p > cfg.MaxParallelism {
						t.Errorf("%s: parallelism %d outside [1, %d]", jc.JobName, p, cfg.MaxParallelism)
					}
					maxPar, minPar = max(maxPar, p), min(minPar, p)
				}
				tasks += n
				if !jc.NoKeySamples {
					sampled++
				}
				subtasks += jobSubtasks(&jc)
				formats[jc.MetricFormat]++
				scenarios[jc.Scenario]++
				if jc.Scenario != Healthy && (jc.Parallelism < incidentMinParallelism || jc.SinkParallelism < 2) {
					t.Errorf("%s: %s on parallelism %d, sink %d", jc.JobName, jc.Scenario, jc.Parallelism, jc.SinkParallelism)
				}
				if (jc.Scenario == HotKey || jc.Scenario == RotatingHotKey) && jc.NoKeySamples {
					t.Errorf("%s: %s without key samples", jc.JobName, jc.Scenario)
				}
			}
			for _, f := range []string{FormatInflux, FormatPrometheus, FormatJSON} {
				if formats[f] == 0 {
					t.Errorf("no job reports %s: %v", f, formats)
				}
			}
			for k := range MaxSideTasks + 1 {
				if sideCounts[k] == 0 {
					t.Errorf("no job with %d tasks: %v", FleetMinTasks+k, sideCounts)
				}
			}
			if minPar != 1 || maxPar < cfg.MaxParallelism/2 {
				t.Errorf("parallelism spans [%d, %d], want 1 to near %d", minPar, maxPar, cfg.MaxParallelism)
			}
			// Sampled tasks: a binomial count around the share; 3.5 sigma.
			want := cfg.SampledTasks * float64(tasks)
			if d := float64(sampled) - want; d*d > 12.25*want {
				t.Errorf("%d of %d tasks sampled, want about %.0f", sampled, tasks, want)
			}
			incidents := len(jobs) - scenarios[Healthy]
			if incidents != min(cfg.Incidents, len(jobs)) {
				t.Errorf("%d incidents, want %d: %v", incidents, cfg.Incidents, scenarios)
			}
			for _, sc := range incidentScenarios {
				if w := cfg.Incidents / len(incidentScenarios); scenarios[sc] < w {
					t.Errorf("%s placed %d times, want at least %d: %v", sc, scenarios[sc], w, scenarios)
				}
			}
			if cfg.Subtasks > 0 {
				last := jobSubtasks(&jobs[len(jobs)-1])
				if subtasks < cfg.Subtasks || subtasks-last >= cfg.Subtasks {
					t.Errorf("%d subtasks (last job %d) for a target of %d", subtasks, last, cfg.Subtasks)
				}
			}
		})
	}
}

// TestFleetIncidentPlacement: the incidents land on different jobs for
// different seeds, none when asked for none, and capped at the jobs.
func TestFleetIncidentPlacement(t *testing.T) {
	placed := func(cfg FleetConfig) []int {
		t.Helper()
		jobs, err := FleetJobs(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var at []int
		for i, jc := range jobs {
			if jc.Scenario != Healthy {
				at = append(at, i)
			}
		}
		return at
	}
	tests := []struct {
		name string
		cfg  FleetConfig
		want int
	}{
		{"default", FleetConfig{Seed: 1, Jobs: 50}, DefaultFleetConfig().Incidents},
		{"none", FleetConfig{Seed: 1, Jobs: 50, Incidents: -1}, 0},
		{"more than jobs", FleetConfig{Seed: 1, Jobs: 3, Incidents: 10}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := placed(tt.cfg); len(got) != tt.want {
				t.Errorf("incidents on %v, want %d", got, tt.want)
			}
		})
	}
	a, b := placed(FleetConfig{Seed: 1, Jobs: 200}), placed(FleetConfig{Seed: 2, Jobs: 200})
	if slices.Equal(a, b) {
		t.Errorf("seeds 1 and 2 place the incidents on the same jobs %v", a)
	}
}

func TestFleetConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     FleetConfig
		wantErr string
	}{
		{"jobs", FleetConfig{Jobs: 1}, ""},
		{"subtasks", FleetConfig{Subtasks: 1}, ""},
		{"neither", FleetConfig{}, "set exactly one"},
		{"both", FleetConfig{Jobs: 1, Subtasks: 1}, "set exactly one"},
		{"too many jobs", FleetConfig{Jobs: 1_000_001}, "jobs 1000001"},
		{"too many subtasks", FleetConfig{Subtasks: 10_000_001}, "subtasks 10000001"},
		{"max parallelism too small", FleetConfig{Jobs: 1, MaxParallelism: 3}, "fleet-max-parallelism 3"},
		{"sampled share above 1", FleetConfig{Jobs: 1, SampledTasks: 1.5}, "sampled-tasks 1.5"},
		{"interval", FleetConfig{Jobs: 1, Interval: time.Millisecond}, "interval 1ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FleetJobs(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one about %q", err, tt.wantErr)
			}
		})
	}
}

// TestFleetDeterministic: the same FleetConfig writes the same bytes, and
// another seed other bytes; a larger fleet starts with the same shapes.
func TestFleetDeterministic(t *testing.T) {
	write := func(cfg FleetConfig) ([32]byte, int64) {
		t.Helper()
		f, err := NewFleet(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := f.WriteTo(h)
		if err != nil {
			t.Fatal(err)
		}
		return [32]byte(h.Sum(nil)), n
	}
	small := FleetConfig{Seed: 5, Jobs: 4, Duration: time.Minute, MaxParallelism: 16}
	a, n := write(small)
	if b, _ := write(small); a != b {
		t.Error("two fleets of one config differ")
	}
	other := small
	other.Seed = 6
	if b, _ := write(other); a == b {
		t.Error("seeds 5 and 6 write the same fleet")
	}
	if n == 0 {
		t.Fatal("fleet wrote nothing")
	}
	few, err := FleetJobs(FleetConfig{Seed: 5, Jobs: 10, Incidents: -1})
	if err != nil {
		t.Fatal(err)
	}
	many, err := FleetJobs(FleetConfig{Seed: 5, Jobs: 20, Incidents: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range few {
		if few[i].Seed != many[i].Seed || few[i].Parallelism != many[i].Parallelism || !slices.Equal(few[i].SideTasks, many[i].SideTasks) {
			t.Fatalf("job %d: %+v in 10 jobs, %+v in 20", i, few[i], many[i])
		}
	}
}

var attemptRE = regexp.MustCompile(`task_attempt_id\W+([0-9a-f]{32})`)

// TestFleetOutput checks what a small fleet writes: every job's every
// subtask of every task reports in its job's format, key samples come only
// from the sampled jobs, and the lines of each interval stay in it.
func TestFleetOutput(t *testing.T) {
	f, err := NewFleet(FleetConfig{Seed: 8, Jobs: 12, Duration: 30 * time.Second, MaxParallelism: 12, SampledTasks: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := f.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	jobs, truths := f.Jobs(), f.Truths()
	byID := map[string]int{}
	for i, tr := range truths {
		byID[tr.JobID] = i
	}
	if len(byID) != len(jobs) {
		t.Fatalf("%d distinct job ids for %d jobs", len(byID), len(jobs))
	}
	samples := make([]int, len(jobs))
	subtasks := make([]map[string]bool, len(jobs)) // task_attempt_id seen
	for i := range subtasks {
		subtasks[i] = map[string]bool{}
	}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		j := -1
		for id, i := range byID {
			if strings.Contains(line, id) {
				j = i
				break
			}
		}
		if j < 0 {
			t.Fatalf("line of no job: %s", line)
		}
		if strings.HasPrefix(line, `{"ts":`) {
			samples[j]++
			continue
		}
		if m := attemptRE.FindStringSubmatch(line); m != nil {
			subtasks[j][m[1]] = true
		}
		var format string
		switch {
		case strings.HasPrefix(line, "{"):
			format = FormatJSON
		case strings.HasPrefix(line, "flink_"):
			format = FormatPrometheus
		default:
			format = FormatInflux
		}
		if format != jobs[j].MetricFormat {
			t.Fatalf("%s reports %s, configured %s: %s", jobs[j].JobName, format, jobs[j].MetricFormat, line)
		}
	}
	for j, jc := range jobs {
		if got := len(subtasks[j]); got != jobSubtasks(&jc) {
			t.Errorf("%s: %d subtasks report, want %d", jc.JobName, got, jobSubtasks(&jc))
		}
		if (samples[j] > 0) == jc.NoKeySamples {
			t.Errorf("%s: %d key samples with NoKeySamples %v", jc.JobName, samples[j], jc.NoKeySamples)
		}
	}
}

// TestSideTasks: side tasks report like any task, take the side output's
// share of the source's records down their chain, are never saturated or
// back-pressured in any scenario, and leave the main path's truth alone.
func TestSideTasks(t *testing.T) {
	side := []int{3, 8, 1, 5, 2}
	names := []string{"Map: audit", "Filter: audit", "Process: audit-enrich", "Window: audit-count", sideSinkName}
	for _, sc := range Scenarios() {
		t.Run(string(sc), func(t *testing.T) {
			cfg := Config{Scenario: sc, Seed: 3, SideTasks: side, NoKeySamples: true, Duration: 4 * time.Minute}
			g, ivs := run(t, cfg)
			plain, err := New(Config{Scenario: sc, Seed: 3, Duration: 4 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if a, b := g.Truth(), plain.Truth(); a.Cause != b.Cause || a.TaskName != b.TaskName || a.Subtask != b.Subtask {
				t.Errorf("truth with side tasks %+v, without %+v", a, b)
			}
			if n := len(g.Subtasks()); n != 4+8+4+3+8+1+5+2 {
				t.Errorf("%d subtasks", n)
			}
			for _, iv := range ivs[7:] { // after the meters' first minute
				if len(iv.samples) != 0 {
					t.Fatalf("%d key samples with NoKeySamples", len(iv.samples))
				}
				srcOut := 0.0
				for i := range 4 {
					srcOut += iv.get(SourceTaskName, i, "numRecordsOutPerSecond")
				}
				want := srcOut * sideShare
				for k, name := range names {
					var in float64
					for i := range side[k] {
						busy, bp := iv.get(name, i, "busyTimeMsPerSecond"), iv.get(name, i, "backPressuredTimeMsPerSecond")
						if busy > 1000*sideMaxBusy || bp != 0 {
							t.Fatalf("%s #%d at %d: busy %v, back-pressured %v", name, i, iv.from, busy, bp)
						}
						in += iv.get(name, i, "numRecordsInPerSecond")
						if out := iv.get(name, i, "numRecordsOutPerSecond"); name == sideSinkName && out != 0 {
							t.Fatalf("side sink writes %v records/s downstream", out)
						}
					}
					if want > 10 && (in < 0.9*want || in > 1.1*want) {
						t.Fatalf("%s receives %.0f/s, want about %.0f (source out %.0f)", name, in, want, srcOut)
					}
					want *= sideFilter
				}
			}
		})
	}
}
