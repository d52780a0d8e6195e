package skew

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// vertexOf is the JobVertexID the test metrics of a task carry.
func vertexOf(task string) string { return fmt.Sprintf("%032x", len(task)*7919) }

// TestReadyToApply checks that the findings carry what a person needs to
// act: the vertex id of every per-subtask finding, the rescale in every
// form for under_provisioned, and for slow_subtask the TaskManager id and
// the REST requests that look inside it.
func TestReadyToApply(t *testing.T) {
	const p = 8
	tests := []struct {
		name  string
		build func(j *job, w int)
		cause string
		check func(t *testing.T, f Finding)
	}{
		{
			name: "under-provisioned", cause: CauseUnderProvisioned,
			build: func(j *job, w int) {
				j.metrics(w, "source", balanced(4, 60, 800, 2000))
				j.metrics(w, "agg", balanced(p, 985, 0, 1000))
				j.metrics(w, "sink", balanced(4, 100, 0, 2000))
			},
			check: func(t *testing.T, f Finding) {
				ev := f.Evidence
				r := ev.Rescale
				if ev.VertexID != vertexOf("agg") || r == nil {
					t.Fatalf("vertex %q, rescale %+v", ev.VertexID, r)
				}
				want := vertexOf("agg") + ":16"
				if r.Overrides != want || r.FlinkRun != "-Dpipeline.jobvertex-parallelism-overrides="+want ||
					!strings.Contains(r.FlinkDeploymentPatch, `pipeline.jobvertex-parallelism-overrides: "`+want+`"`) ||
					string(r.ResourceRequirements) != `{"`+vertexOf("agg")+`":{"parallelism":{"lowerBound":1,"upperBound":16}}}` ||
					r.ResourceRequirementsPath != "/jobs/"+f.JobID+"/resource-requirements" || !strings.Contains(r.Note, "FLINK-38770") {
					t.Errorf("rescale forms %+v", r)
				}
				if ev.Inspect != nil {
					t.Errorf("inspect on under_provisioned: %+v", ev.Inspect)
				}
			},
		},
		{
			name: "slow sink", cause: CauseSlowSubtask,
			build: func(j *job, w int) {
				j.metrics(w, "source", balanced(4, 40, 900, 100))
				j.metrics(w, "agg", balanced(p, 30, 850, 50))
				s := balanced(4, 20, 0, 100)
				s[2] = sub{busy: 990, rate: 98, host: "10.0.0.169"}
				j.metrics(w, "sink", s)
			},
			check: func(t *testing.T, f Finding) {
				tm := "10.0.0.169:6122-aaaaaa"
				if f.TaskManagerID != tm || f.Host != "10.0.0.169" || f.TaskAttemptID != "attempt-sink-2" {
					t.Errorf("tm %q host %q attempt %q", f.TaskManagerID, f.Host, f.TaskAttemptID)
				}
				ev := f.Evidence
				v := "/jobs/" + f.JobID + "/vertices/" + vertexOf("sink")
				want := Inspect{
					Subtask:    "GET " + v + "/subtasks/2",
					ThreadDump: "GET /taskmanagers/" + tm + "/thread-dump",
					FlameGraph: "GET " + v + "/flamegraph?type=full&subtaskindex=2",
					Jstack:     "on host 10.0.0.169: jstack <pid> (the TaskManagerRunner's pid: jps -l)",
				}
				if ev.VertexID != vertexOf("sink") || ev.Inspect == nil || *ev.Inspect != want {
					t.Errorf("vertex %q inspect %+v, want %+v", ev.VertexID, ev.Inspect, want)
				}
				if !strings.Contains(f.Summary, "(TaskManager "+tm+", attempt attempt-sink-2) or take its thread dump (GET /taskmanagers/"+tm+"/thread-dump)") {
					t.Errorf("summary %q", f.Summary)
				}
				if ev.Rescale != nil {
					t.Errorf("rescale on slow_subtask: %+v", ev.Rescale)
				}
			},
		},
		{
			name: "hot key", cause: CauseDataSkew,
			build: func(j *job, w int) {
				j.metrics(w, "source", balanced(4, 40, 900, 1000))
				s := balanced(p, 250, 0, 300)
				s[hotSubtask("hot", p)] = sub{busy: 995, rate: 1400, host: "10.0.0.7"}
				j.metrics(w, "agg", s)
				j.metrics(w, "sink", balanced(4, 100, 0, 1000))
				j.samples(w, "agg", p, map[string]float64{"hot": 0.4}, 2000)
			},
			check: func(t *testing.T, f Finding) {
				if f.Evidence.VertexID != vertexOf("agg") || f.TaskManagerID != "10.0.0.7:6122-aaaaaa" || f.Evidence.Inspect != nil || f.Evidence.Rescale != nil {
					t.Errorf("vertex %q tm %q inspect %+v rescale %+v", f.Evidence.VertexID, f.TaskManagerID, f.Evidence.Inspect, f.Evidence.Rescale)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(t, Config{})
			j.ids = true
			for w := range 4 {
				tt.build(j, w)
				j.close(w)
			}
			sat := j.kinds(KindSaturation, tt.cause)
			if len(sat) == 0 {
				t.Fatalf("no %s finding: %s", tt.cause, dump(j.out))
			}
			tt.check(t, sat[len(sat)-1])
			// The forms are part of the findings contract: they survive
			// JSON, as findings are stored and served.
			b, err := json.Marshal(sat[len(sat)-1])
			if err != nil {
				t.Fatal(err)
			}
			var back Finding
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			tt.check(t, back)
		})
	}
}

// TestInspectWithoutIDs: without task_id or tm_id the requests that need
// them are left out, and jstack on the host remains; ids from the metrics
// are escaped in paths.
func TestInspectWithoutIDs(t *testing.T) {
	tests := []struct {
		name                      string
		job, vertex, tm, host     string
		subtask, dump, jstackHost string
	}{
		{"no ids", "j1", "", "", "", "", "", "the TaskManager's host"},
		{"vertex only", "j1", "v1", "", "h", "GET /jobs/j1/vertices/v1/subtasks/3", "", "host h"},
		{"tm to escape", "j1", "", "pod/a b", "h", "", "GET /taskmanagers/pod%2Fa%20b/thread-dump", "host h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inspect(tt.job, tt.vertex, 3, tt.tm, tt.host)
			if in.Subtask != tt.subtask || in.ThreadDump != tt.dump || !strings.HasPrefix(in.Jstack, "on "+tt.jstackHost+": jstack") {
				t.Errorf("inspect %+v", in)
			}
			if (in.FlameGraph == "") != (tt.vertex == "") {
				t.Errorf("flame graph %q with vertex %q", in.FlameGraph, tt.vertex)
			}
		})
	}
}

// TestTaskManagerIDSurvivesRestore: the tm_id a slow subtask's finding
// names is part of the saved state, as its host and attempt are.
func TestTaskManagerIDSurvivesRestore(t *testing.T) {
	j := newJob(t, Config{})
	j.ids = true
	s := balanced(4, 20, 0, 100)
	s[2] = sub{busy: 990, rate: 98, host: "10.0.0.169"}
	j.metrics(0, "sink", s)
	j.close(0)
	e2, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := restoreAll(e2, j.e.Snapshot(nil)); err != nil {
		t.Fatal(err)
	}
	var tms []string
	for _, js := range e2.Snapshot(nil) {
		for _, ts := range js.Tasks {
			for _, ss := range ts.Subtasks {
				tms = append(tms, ss.TMID)
			}
		}
	}
	if len(tms) != 4 || tms[2] != "10.0.0.169:6122-aaaaaa" {
		t.Errorf("tm ids after restore %q", tms)
	}
}
