package skew

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestPrometheusFilter(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"KeyedProcess -> enrich", "KeyedProcess____enrich"},
		{"sink: Writer", "sink:_Writer"},
		{"Source: Kafka[1] -> Map", "Source:_Kafka_1_____Map"},
		{"already_filtered:ok9", "already_filtered:ok9"},
		{"", ""},
		{"Ünïcode 日本", "_n_code___"}, // one '_' per code point, as Java's regex
		{"emoji 😀!", "emoji___"},     // a surrogate pair in Java, still one code point
		{"bad\xff\xfeutf8", "bad__utf8"},
		{"10.0.0.2", "10_0_0_2"},
	}
	for _, tt := range tests {
		got := string(appendFiltered(nil, tt.in))
		if got != tt.want {
			t.Errorf("filter(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if isFiltered(tt.in) != (tt.in == tt.want) {
			t.Errorf("isFiltered(%q) = %v", tt.in, isFiltered(tt.in))
		}
		if !sameFiltered(tt.in, tt.want) || !sameFiltered(tt.want, tt.in) {
			t.Errorf("sameFiltered(%q, %q) = false", tt.in, tt.want)
		}
		if sameFiltered(tt.in, tt.want+"x") || sameFiltered(tt.in+"x", tt.want) {
			t.Errorf("sameFiltered(%q, %q+x) = true", tt.in, tt.want)
		}
	}
	if sameFiltered("a b", "a:b") || !sameFiltered("a b", "a-b") {
		t.Error("sameFiltered compares filtered forms")
	}
}

const (
	humanName = "KeyedProcess -> enrich"
	promName  = "KeyedProcess____enrich"
	enrichID  = "cbc357ccb763df2852fee8c4fc7d55f2"
)

// tjob feeds one job's events in windows of 10 s, each event spelled as
// the test says.
type tjob struct {
	t   *testing.T
	e   *Engine
	out []Finding
}

func newTJob(t *testing.T, cfg Config) *tjob {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &tjob{t: t, e: e}
}

// metric adds one metric of subtask sub in window w at second sec.
func (j *tjob) metric(w, sec int, jobName, taskID, task string, sub int, name MetricName, v float64) {
	j.t.Helper()
	m := Metric{TS: t0 + int64(w)*10000 + int64(sec)*1000, JobID: "job1", JobName: jobName, TaskID: taskID, TaskName: task,
		Subtask: int32(sub), Name: name, Value: v, Host: "10.0.0." + string(rune('1'+sub%8)), TaskAttemptID: "attempt-" + taskID + "-" + string(rune('a'+sub))}
	if got := j.e.AddMetric(&m); got != Accepted {
		j.t.Fatalf("metric %+v: %v", m, got)
	}
}

// subtasks reports busy and input rate for every subtask.
func (j *tjob) subtasks(w int, jobName, taskID string, name func(sub int) string, busy, rate []float64) {
	j.t.Helper()
	for i := range busy {
		j.metric(w, 5, jobName, taskID, name(i), i, BusyTimeMsPerSecond, busy[i])
		j.metric(w, 5, jobName, taskID, name(i), i, NumRecordsInPerSecond, rate[i])
	}
}

// samples adds n samples in window w: key hot with the given share, the
// rest spread.
func (j *tjob) samples(w int, jobName, taskID, task string, p int, hot string, share float64, n int) {
	j.t.Helper()
	for i := range n {
		key := "user" + string(rune('A'+i%50)) + string(rune('a'+i/50%26))
		if float64(i) < share*float64(n) {
			key = hot
		}
		s := KeySample{TS: t0 + int64(w)*10000 + 1000, JobID: "job1", JobName: jobName, TaskID: taskID, TaskName: task, Key: key,
			Weight: 1, SampleRate: 0.01, Parallelism: int32(p), Subtask: -1}
		if got := j.e.AddSample(&s); got != Accepted {
			j.t.Fatalf("sample %+v: %v", s, got)
		}
	}
}

func (j *tjob) close(w int) { j.out = j.e.Advance(t0+int64(w+1)*10000, j.out) }

func (j *tjob) kind(kind string) []Finding {
	var out []Finding
	for _, f := range j.out {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

func (j *tjob) snapshotTasks() []TaskState {
	snap := j.e.Snapshot(nil)
	if len(snap) != 1 {
		j.t.Fatalf("snapshot of %d jobs", len(snap))
	}
	return snap[0].Tasks
}

// TestJoinAcrossSpellings: a hot key sampled under the human name
// "KeyedProcess -> enrich" and saturation reported by PrometheusReporter
// under "KeyedProcess____enrich" (with task_id) are one task: one
// data_skew finding per window with the hot key joined, named as people
// wrote it, whatever arrives first and whether the samples carry the
// task_id.
func TestJoinAcrossSpellings(t *testing.T) {
	const p = 8
	hot := "u42"
	hs := hotSubtask(hot, p)
	prom := func(int) string { return promName }
	tests := []struct {
		name         string
		sampleID     string               // task_id on the key samples
		metricsFirst bool                 // a window's metrics come before its samples
		spell        func(int) string     // the task name each subtask's metrics carry
		metricJob    string               // the job name the metrics carry
		mutate       func(j *tjob, w int) // extra events
	}{
		{name: "samples with task_id", sampleID: enrichID, spell: prom, metricJob: "enrich_job"},
		{name: "samples by name only, first (the race)", spell: prom, metricJob: "enrich_job"},
		{name: "samples by name only, after the metrics", metricsFirst: true, spell: prom, metricJob: "enrich_job"},
		{name: "samples with task_id, after the metrics", sampleID: enrichID, metricsFirst: true, spell: prom, metricJob: "enrich_job"},
		{name: "Prometheus and Influx subtasks mixed", spell: func(i int) string {
			if i%2 == 1 {
				return humanName
			}
			return promName
		}, metricJob: "enrich job"},
		{name: "other tasks of the job by name only", spell: prom, metricJob: "enrich_job", mutate: func(j *tjob, w int) {
			for i := range 2 {
				j.metric(w, 6, "enrich job", "", "Source: Kafka", i, BusyTimeMsPerSecond, 50)
				j.metric(w, 6, "enrich job", "", "Source: Kafka", i, BackPressuredTimeMsPerSecond, 900)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newTJob(t, Config{})
			for w := range 4 {
				busy, rate := make([]float64, p), make([]float64, p)
				for i := range p {
					busy[i], rate[i] = 250, 300
				}
				busy[hs], rate[hs] = 995, 1400
				if !tt.metricsFirst {
					j.samples(w, "enrich job", tt.sampleID, humanName, p, hot, 0.4, 1000)
				}
				j.subtasks(w, tt.metricJob, enrichID, tt.spell, busy, rate)
				if tt.metricsFirst {
					j.samples(w, "enrich job", tt.sampleID, humanName, p, hot, 0.4, 1000)
				}
				if tt.mutate != nil {
					tt.mutate(j, w)
				}
				j.close(w)
			}
			sat := j.kind(KindSaturation)
			if len(sat) != 3 { // sustain 2: windows 1, 2 and 3
				t.Fatalf("%d saturation findings, want 3: %s", len(sat), dump(j.out))
			}
			for _, f := range sat {
				if f.Cause != CauseDataSkew || *f.SubtaskIndex != hs || f.TaskName != humanName || f.JobName != "enrich job" ||
					len(f.Evidence.HotKeys) != 1 || f.Evidence.HotKeys[0].Key != hot {
					t.Fatalf("finding %s", dump([]Finding{f}))
				}
				if !strings.Contains(f.Summary, `"KeyedProcess -> enrich"`) || !strings.Contains(f.Summary, `hot key "u42"`) {
					t.Errorf("summary %q", f.Summary)
				}
			}
			if tt.mutate != nil && !slices.Equal(sat[0].Evidence.UpstreamBackPressed, []string{"Source: Kafka"}) {
				t.Errorf("back-pressured tasks %v", sat[0].Evidence.UpstreamBackPressed)
			}
			hk, plans := j.kind(KindHotKey), j.kind(KindSaltingPlan)
			// Plans only in the windows with a data_skew finding.
			if len(hk) != 4 || len(plans) != len(sat) {
				t.Fatalf("%d hot keys and %d plans, want 4 and %d", len(hk), len(plans), len(sat))
			}
			for _, f := range append(hk, plans...) {
				if f.TaskName != humanName || f.JobName != "enrich job" {
					t.Errorf("%s finding on %q/%q", f.Kind, f.JobName, f.TaskName)
				}
			}
			if b, _ := json.Marshal(j.out); strings.Contains(string(b), promName) || strings.Contains(string(b), "enrich_job") {
				t.Errorf("a finding shows the filtered spelling: %s", b)
			}
			tasks := j.snapshotTasks()
			n := 0
			for _, ts := range tasks {
				if ts.ID == enrichID {
					n++
					if ts.Name != humanName || ts.Parallelism != p || len(ts.Subtasks) != p {
						t.Errorf("task state %+v", ts)
					}
				}
			}
			want := 1 // the keyed task only, or with the source as well
			if tt.mutate != nil {
				want = 2
			}
			if n != 1 || len(tasks) != want {
				t.Errorf("tasks %+v", tasks)
			}
		})
	}
}

// TestSameNameTwoTasks: two task_ids with one name stay two tasks; events
// of that name without a task_id cannot tell them apart and go to a
// shared task of their own, before or after the ambiguity arose.
func TestSameNameTwoTasks(t *testing.T) {
	const p = 4
	j := newTJob(t, Config{})
	name := func(int) string { return "Map" }
	balanced := []float64{200, 200, 200, 200}
	rates := []float64{100, 100, 100, 100}
	slow := []float64{200, 200, 990, 200}
	// A name-only sample first: it becomes task A's when A's first metric
	// names the id (the usual race); B then makes the name ambiguous.
	j.samples(0, "", "", "Map", p, "k", 0.5, 10)
	for w := range 3 {
		j.subtasks(w, "", "A", name, balanced, rates)
		j.subtasks(w, "", "B", name, slow, rates)
		j.samples(w, "", "", "Map", p, "k", 0.5, 10)
		j.close(w)
	}
	sat := j.kind(KindSaturation)
	if len(sat) != 2 {
		t.Fatalf("%d findings, want 2 (task B, windows 1 and 2): %s", len(sat), dump(j.out))
	}
	for _, f := range sat {
		if f.Cause != CauseSlowSubtask || *f.SubtaskIndex != 2 || f.TaskAttemptID != "attempt-B-c" || f.Evidence.Subtasks != p {
			t.Fatalf("finding %s", dump([]Finding{f}))
		}
	}
	tasks := j.snapshotTasks()
	if len(tasks) != 3 || tasks[0].ID != "" || !tasks[0].Shared || tasks[1].ID != "A" || tasks[2].ID != "B" ||
		tasks[1].Parallelism != p || tasks[0].Parallelism != p || tasks[2].Parallelism != 0 {
		t.Fatalf("tasks %+v", tasks)
	}
}

// TestAliasAfterForgetting: once one of two task_ids of a name is
// forgotten, events by name only reach the other again; a shared task,
// once made, keeps the name until it is forgotten itself.
func TestAliasAfterForgetting(t *testing.T) {
	cfg := Config{HistoryWindows: 3, RotationLookbackWindows: 3}
	name := func(int) string { return "Map" }
	one := []float64{100}
	for _, withShared := range []bool{false, true} {
		j := newTJob(t, cfg)
		j.subtasks(0, "", "A", name, one, one)
		j.subtasks(0, "", "B", name, one, one)
		j.close(0)
		for w := 1; w < 6; w++ {
			j.subtasks(w, "", "A", name, one, one)
			if withShared {
				j.samples(w, "", "", "Map", 1, "k", 1, 1)
			}
			j.close(w)
		}
		j.samples(6, "", "", "Map", 1, "k", 1, 1)
		j.close(6)
		var got []string
		for _, ts := range j.snapshotTasks() {
			got = append(got, ts.ID+"/"+ts.Name+"/"+strings.Repeat("p", ts.Parallelism))
		}
		want := "A/Map/p"
		if withShared {
			want = "/Map/p,A/Map/"
		}
		if strings.Join(got, ",") != want {
			t.Errorf("shared %v: tasks %v, want %s", withShared, got, want)
		}
	}
}

// TestJobNameSpellings: a job keeps the unfiltered spelling of its name.
func TestJobNameSpellings(t *testing.T) {
	for _, order := range [][]string{{"enrich_job", "enrich job"}, {"enrich job", "enrich_job"}, {"enrich job", "enrich_job", "enrich-job"}} {
		j := newTJob(t, Config{EmitStats: true})
		for _, n := range order {
			j.metric(0, 1, n, "", "t", 0, BusyTimeMsPerSecond, 10)
		}
		j.close(0)
		if f := j.out[0]; f.JobName != "enrich job" {
			t.Errorf("%v: job name %q", order, f.JobName)
		}
	}
	// A name that filters differently is a new name: the last one wins.
	j := newTJob(t, Config{EmitStats: true})
	j.metric(0, 1, "old", "", "t", 0, BusyTimeMsPerSecond, 10)
	j.metric(0, 2, "new", "", "t", 0, BusyTimeMsPerSecond, 10)
	j.close(0)
	if j.out[0].JobName != "new" {
		t.Errorf("renamed job: %q", j.out[0].JobName)
	}
}

// TestHostSpellings: the host shown is the unfiltered one, whichever
// reporter came first, and alternating spellings are not a new attempt.
func TestHostSpellings(t *testing.T) {
	e, _ := New(Config{EmitStats: true})
	for i, h := range []string{"10_0_0_2", "10.0.0.2", "10_0_0_2"} {
		m := Metric{TS: t0 + int64(i), JobID: "j", TaskName: "t", Name: BusyTimeMsPerSecond, Value: 10, Host: h, TaskAttemptID: "a_b_0_0"}
		e.AddMetric(&m)
	}
	out := e.Flush(nil)
	if len(out) != 1 || out[0].Stats.Host != "10.0.0.2" {
		t.Fatalf("%s", dump(out))
	}
}

// TestJoinAllocs: the steady state of events that alternate spellings,
// with and without task_id, allocates nothing.
func TestJoinAllocs(t *testing.T) {
	e, _ := New(Config{})
	samples := []KeySample{
		{TS: t0, JobID: "j", JobName: "enrich job", TaskID: enrichID, TaskName: humanName, Key: "k", Weight: 1, SampleRate: 1, Parallelism: 4, Subtask: -1},
		{TS: t0, JobID: "j", JobName: "enrich job", TaskName: humanName, Key: "k", Weight: 1, SampleRate: 1, Parallelism: 4, Subtask: -1},
		{TS: t0, JobID: "j", JobName: "enrich job", TaskName: "KeyedProcess->enrich", Key: "k", Weight: 1, SampleRate: 1, Parallelism: 4, Subtask: -1},
	}
	metrics := []Metric{
		{TS: t0, JobID: "j", JobName: "enrich_job", TaskID: enrichID, TaskName: promName, Name: BusyTimeMsPerSecond, Value: 1, Host: "10_0_0_2"},
		{TS: t0, JobID: "j", JobName: "enrich job", TaskID: enrichID, TaskName: humanName, Name: AccumulateBusyTimeMs, Value: 1, Host: "10.0.0.2"},
	}
	step := func() {
		for i := range samples {
			if e.AddSample(&samples[i]) != Accepted {
				panic("sample")
			}
		}
		for i := range metrics {
			if e.AddMetric(&metrics[i]) != Accepted {
				panic("metric")
			}
		}
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Errorf("%v allocs per step", n)
	}
}

// TestSnapshotKeepsIdentity: a restored engine joins as the original
// did, and gives the same findings.
func TestSnapshotKeepsIdentity(t *testing.T) {
	const p = 8
	hs := hotSubtask("u42", p)
	feed := func(j *tjob, w int) {
		busy, rate := make([]float64, p), make([]float64, p)
		for i := range p {
			busy[i], rate[i] = 250, 300
		}
		busy[hs], rate[hs] = 995, 1400
		j.subtasks(w, "enrich_job", enrichID, func(int) string { return promName }, busy, rate)
		j.samples(w, "enrich job", "", humanName, p, "u42", 0.4, 1000)
		j.subtasks(w, "", "A", func(int) string { return "Map" }, busy[:2], rate[:2])
		j.subtasks(w, "", "B", func(int) string { return "Map" }, busy[:2], rate[:2])
		j.samples(w, "", "", "Map", 2, "k", 0.5, 10)
		j.close(w)
	}
	whole := newTJob(t, Config{})
	for w := range 4 {
		feed(whole, w)
	}
	first := newTJob(t, Config{})
	feed(first, 0)
	feed(first, 1)
	b, err := json.Marshal(first.e.Snapshot(nil))
	if err != nil {
		t.Fatal(err)
	}
	var states []JobState
	if err := json.Unmarshal(b, &states); err != nil {
		t.Fatal(err)
	}
	second := newTJob(t, Config{})
	if err := restoreAll(second.e, states); err != nil {
		t.Fatal(err)
	}
	feed(second, 2)
	feed(second, 3)
	if got, want := dump(append(first.out, second.out...)), dump(whole.out); got != want {
		t.Fatalf("restored run differs:\n got %s\nwant %s", got, want)
	}
	if got, want := second.snapshotTasks(), whole.snapshotTasks(); !slices.EqualFunc(got, want, func(a, b TaskState) bool {
		return a.Name == b.Name && a.ID == b.ID && a.Shared == b.Shared
	}) {
		t.Errorf("tasks after restore %+v, want %+v", got, want)
	}
}

// TestRestoreOlderState: a state saved before task_ids were kept has the
// filtered and the unfiltered spelling of a task as two tasks; restored,
// they are one, which the first event with the task_id then claims.
func TestRestoreOlderState(t *testing.T) {
	old := `[{"job_id":"job1","window_ms":10000,"closed_up_to":1593004210000,"last_seen":1593004200000,"tasks":[
		{"name":"KeyedProcess -> enrich","parallelism":8,"last_seen":1593004200000,"last_dominant":-1,"prev_dominant":-1},
		{"name":"KeyedProcess____enrich","last_seen":1593004200000,"last_dominant":3,"prev_dominant":-1,
		 "subtasks":[{},{},{},{"host":"10.0.0.4","sustained":1,"count_ts":1593004205000,"count":5,"has_count":true}]}]}]`
	var states []JobState
	if err := json.Unmarshal([]byte(old), &states); err != nil {
		t.Fatal(err)
	}
	j := newTJob(t, Config{})
	if err := restoreAll(j.e, states); err != nil {
		t.Fatal(err)
	}
	j.metric(1, 5, "", enrichID, promName, 3, BusyTimeMsPerSecond, 990)
	j.close(1)
	tasks := j.snapshotTasks()
	if len(tasks) != 1 {
		t.Fatalf("tasks %+v", tasks)
	}
	ts := tasks[0]
	if ts.Name != humanName || ts.ID != enrichID || ts.Parallelism != 8 || ts.LastDominant != 3 || len(ts.Subtasks) != 4 ||
		ts.Subtasks[3].Sustained != 2 || ts.Subtasks[3].Host != "10.0.0.4" || !ts.Subtasks[3].HasCount {
		t.Fatalf("merged task %+v", ts)
	}
}

func TestRestoreRejectsBadIdentity(t *testing.T) {
	task := func(name, id string, shared bool) TaskState {
		return TaskState{Name: name, ID: id, Shared: shared, LastDominant: -1, PrevDominant: -1}
	}
	for _, tc := range []struct {
		name  string
		tasks []TaskState
		want  string
	}{
		{"task_id twice", []TaskState{task("a", "x", false), task("b", "x", false)}, "task_id \"x\" twice"},
		{"shared with task_id", []TaskState{task("a", "x", true)}, "shared_name with a task_id"},
		{"name-only and task_id", []TaskState{task("a b", "", false), task("a-b", "x", false)}, "known by name only"},
		{"two shared", []TaskState{task("a b", "", true), task("a_b", "", true)}, "two name-only tasks"},
		{"bad task_id", []TaskState{task("a", "x\xff", false)}, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := New(Config{})
			err := restoreAll(e, []JobState{{JobID: "j", WindowMs: 10000, Tasks: tc.tasks}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore: %v, want %q", err, tc.want)
			}
		})
	}
}
