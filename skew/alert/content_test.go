package alert

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/rescale"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func firingOf(t *testing.T, cfg Config, fs ...skew.Finding) Alert {
	t.Helper()
	tr := newPipe(t, cfg, atOnce)
	var firing []Alert
	for _, e := range tr.Observe(fs) {
		if e.Kind == EventFiring {
			firing = append(firing, e.Alert)
		}
	}
	if len(firing) != 1 {
		t.Fatalf("%d firing alerts, want 1", len(firing))
	}
	return firing[0]
}

// readyFindings returns an under_provisioned finding whose evidence has
// the rescale in every form, and a slow_subtask one with its TaskManager
// id and REST requests, as the engine writes them.
func readyFindings(t *testing.T) (up, slow skew.Finding) {
	t.Helper()
	const vid = "cbc357ccb763df2852fee8c4fc7d55f2"
	up = sat("j1", "agg", -1, skew.CauseUnderProvisioned, 0)
	up.Host, up.TaskAttemptID = "", ""
	up.Evidence.VertexID, up.Evidence.Parallelism, up.Evidence.MaxParallelism, up.Evidence.RecommendedParallelism = vid, 4, 128, 8
	c, err := rescale.New("j1", rescale.Vertex{ID: vid, Parallelism: 8})
	if err != nil {
		t.Fatal(err)
	}
	if up.Evidence.Rescale, err = c.Forms(); err != nil {
		t.Fatal(err)
	}
	slow = sat("j1", "Sink: es", 2, skew.CauseSlowSubtask, 0)
	slow.TaskManagerID = "10.0.0.2:6122-f1c0e9"
	slow.Evidence.VertexID = vid
	slow.Evidence.Inspect = &skew.Inspect{
		Subtask:    "GET /jobs/j1/vertices/" + vid + "/subtasks/2",
		ThreadDump: "GET /taskmanagers/10.0.0.2:6122-f1c0e9/thread-dump",
		FlameGraph: "GET /jobs/j1/vertices/" + vid + "/flamegraph?type=full&subtaskindex=2",
		Jstack:     "on host 10.0.0.2: jstack <pid> (the TaskManagerRunner's pid: jps -l)",
	}
	return up, slow
}

func TestAlertContent(t *testing.T) {
	up, slow := readyFindings(t)
	up.Evidence.ChainableWith = []string{"Sink: es"}
	upUneven := sat("j1", "agg", -1, skew.CauseUnderProvisioned, 0)
	upUneven.Host = ""
	upUneven.Evidence.Parallelism, upUneven.Evidence.MaxParallelism, upUneven.Evidence.RecommendedParallelism = 90, 128, 100
	rot := sat("j1", "agg", 5, skew.CauseRotatingHotKey, 0)
	rot.Evidence.TimeBucketKey = "u42|1593004200000"
	rotMoved := sat("j1", "agg", 5, skew.CauseRotatingHotKey, 0)
	rotMoved.Evidence.PreviousHotSubtask = intp(2)
	ds := sat("j1", "Window agg", 3, skew.CauseDataSkew, 0)
	ds.Evidence.HotKeys = []skew.KeyShare{{Key: "u42", Share: 0.31}}
	ckpt := sat("j1", "Sink: es", 2, skew.CauseCheckpointRisk, 0)
	ckpt.Host = ""
	ckpt.Evidence.LastCheckpointMs, ckpt.Evidence.CheckpointTimeoutMs = 400_000, 600_000
	forecast := ckptForecast(ckpt, 150_000, 2.5)
	timingOut := ckptForecast(ckpt, 0, 0)
	version := func(job, task string) (uint64, bool) { return 7, job == "j1" && task == "Window agg" }
	hotMargin := hot("j1", "agg", 2, "customer-42", 0.18, 0)
	hotMargin.ShareMargin, hotMargin.Rule, hotMargin.SubtaskShare, hotMargin.SubtaskShareMargin = 0.031, "subtask", 0.46, 0.081
	hotMargin.SubtaskExcess, hotMargin.ExcessExplained = 0.6, 0.77
	dsSub := sat("j1", "agg", 3, skew.CauseDataSkew, 0)
	dsSub.Evidence.HotKeys = []skew.KeyShare{{Key: "u42", Share: 0.31, SubtaskShare: 0.62}, {Key: "u7", Share: 0.062}}
	tests := []struct {
		name       string
		cfg        Config
		fs         []skew.Finding
		labels     map[string]string
		annotation map[string]string // substrings
		absent     []string          // annotations that must not be there
	}{
		{
			name: "slow subtask",
			fs:   []skew.Finding{sat("j1", "Sink: es", 2, skew.CauseSlowSubtask, 0)},
			labels: map[string]string{"alertname": "FlinkSlowSubtask", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "Sink: es", "subtask": "2", "cause": "slow_subtask", "host": "10.0.0.2"},
			annotation: map[string]string{
				"summary":  `Subtask 2 of "Sink: es" is saturated (slow_subtask).`,
				"runbook":  "jstack the TaskManager on host 10.0.0.2 (task attempt 14fc6da2) and check the sink client",
				"evidence": `"busy_ms_per_s":990`, "host": "10.0.0.2", "task_attempt_id": "14fc6da2", "subtask": "2",
				"window_start": "1970-01-01T00:00:00.000Z", "window_end": "1970-01-01T00:00:10.000Z",
			},
			absent: []string{"salting_plan", "hot_keys"},
		},
		{
			name: "data skew with a known plan version",
			cfg:  Config{PlanVersion: version, SaltingURL: "http://skewlens:8080/", Severities: map[string]string{skew.CauseDataSkew: "page"}},
			fs:   []skew.Finding{ds},
			labels: map[string]string{"alertname": "FlinkSubtaskSkew", "severity": "page", "job_id": "j1", "job_name": "name-j1",
				"task_name": "Window agg", "subtask": "3", "cause": "data_skew", "host": "10.0.0.2"},
			annotation: map[string]string{
				"runbook": "Apply salting plan v7 (GET http://skewlens:8080/v1/salting/j1/Window%20agg) or enable TWO_PHASE aggregation (SQL: table.optimizer.agg-phase-strategy=TWO_PHASE; DataStream: pre-aggregate on the salted key, then merge on the key). " +
					"With the Flink autoscaler on, keep it off this vertex while the plan is in force (job.autoscaler.vertex.exclude.ids: GET http://skewlens:8080/v1/actions/j1).",
				"salting_plan":         "http://skewlens:8080/v1/salting/j1/Window%20agg",
				"salting_plan_version": "7",
				"hot_keys":             `"u42" 31.0%`,
			},
		},
		{
			name: "data skew without a plan version",
			fs:   []skew.Finding{sat("j2", "agg", 3, skew.CauseDataSkew, 0)},
			labels: map[string]string{"alertname": "FlinkSubtaskSkew", "severity": "warning", "job_id": "j2", "job_name": "name-j2",
				"task_name": "agg", "subtask": "3", "cause": "data_skew", "host": "10.0.0.2"},
			annotation: map[string]string{"runbook": "Apply the current salting plan (GET /v1/salting/j2/agg) or enable TWO_PHASE"},
			absent:     []string{"salting_plan_version"},
		},
		{
			name: "hot keys",
			fs:   []skew.Finding{hot("j1", "agg", 4, "b", 0.12, 0), hot("j1", "agg", 4, "a", 0.3, 0)},
			labels: map[string]string{"alertname": "FlinkHotKey", "severity": "info", "job_id": "j1",
				"task_name": "agg", "subtask": "4", "cause": "hot_key"},
			annotation: map[string]string{
				"summary":  `2 hot keys on subtask 4 of "agg": "a" 30.0%, "b" 12.0%.`,
				"hot_keys": `"a" 30.0%, "b" 12.0%`,
				"evidence": `{"subtask_index":4,"keys":[{"key":"a","share":0.3,"estimated_records":30000},{"key":"b","share":0.12,"estimated_records":12000}]}`,
				"runbook":  "Apply the current salting plan (GET /v1/salting/j1/agg)",
			},
			absent: []string{"host"},
		},
		{
			name: "one hot key of unknown subtask",
			fs:   []skew.Finding{hot("j1", "agg", -1, "a", 0.3, 0)},
			labels: map[string]string{"alertname": "FlinkHotKey", "severity": "info", "job_id": "j1",
				"task_name": "agg", "cause": "hot_key"},
			annotation: map[string]string{"summary": `Key "a" carries 30.0% of the sampled input of "agg" (about 30000 records in the window).`},
			absent:     []string{"subtask"},
		},
		{
			name: "one hot key with its margin and its subtask's share",
			fs:   []skew.Finding{hotMargin},
			labels: map[string]string{"alertname": "FlinkHotKey", "severity": "info", "job_id": "j1",
				"task_name": "agg", "subtask": "2", "cause": "hot_key"},
			annotation: map[string]string{
				"summary":  `Key "customer-42" carries 18% ± 3 of the sampled input of "agg" and 46% ± 8 of subtask 2's (about 18000 records in the window).`,
				"hot_keys": `"customer-42" 18% ± 3 (46% ± 8 of subtask 2)`,
				"evidence": `"share":0.18,"estimated_records":18000,"share_margin":0.031,"rule":"subtask"`,
			},
		},
		{
			name: "one hot key with its margin on a subtask",
			fs: []skew.Finding{func() skew.Finding {
				f := hot("j1", "agg", 2, "a", 0.3, 0)
				f.ShareMargin = 0.004
				return f
			}()},
			labels: map[string]string{"alertname": "FlinkHotKey", "severity": "info", "job_id": "j1",
				"task_name": "agg", "subtask": "2", "cause": "hot_key"},
			annotation: map[string]string{
				"summary":  `Key "a" carries 30% ± 0.4 of the sampled input of "agg" (about 30000 records in the window) and is routed to subtask 2.`,
				"hot_keys": `"a" 30% ± 0.4`,
			},
		},
		{
			name: "data skew with the keys' subtask shares",
			fs:   []skew.Finding{dsSub},
			labels: map[string]string{"alertname": "FlinkSubtaskSkew", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "agg", "subtask": "3", "cause": "data_skew", "host": "10.0.0.2"},
			annotation: map[string]string{"hot_keys": `"u42" 31.0% (62.0% of subtask 3), "u7" 6.2%`},
		},
		{
			name: "rotating hot key with a time bucket",
			fs:   []skew.Finding{rot},
			labels: map[string]string{"alertname": "FlinkRotatingHotKey", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "agg", "cause": "rotating_hot_key"},
			annotation: map[string]string{
				"runbook":         `The key "u42|1593004200000" embeds a time bucket, so its hot spot moves to another subtask with every bucket`,
				"time_bucket_key": "u42|1593004200000", "subtask": "5",
			},
		},
		{
			name: "rotating hot key that moved",
			fs:   []skew.Finding{rotMoved},
			labels: map[string]string{"alertname": "FlinkRotatingHotKey", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "agg", "cause": "rotating_hot_key"},
			annotation: map[string]string{"runbook": "(it was subtask 2 before)"},
		},
		{
			name: "under provisioned",
			fs:   []skew.Finding{up},
			labels: map[string]string{"alertname": "FlinkUnderProvisioned", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "agg", "cause": "under_provisioned"},
			annotation: map[string]string{
				"runbook": `Raise the parallelism of "agg" from 4 to 8 (a divisor of its max parallelism 128, so every subtask owns as many key groups); the input is balanced, so salting will not help. ` +
					`Flink 1.x: stop the job with a savepoint and resubmit it with -Dpipeline.jobvertex-parallelism-overrides=cbc357ccb763df2852fee8c4fc7d55f2:8 (on Kubernetes, apply the evidence's rescale.flink_deployment_patch to the FlinkDeployment); ` +
					`Flink 2.x ignores that for DataStream jobs (FLINK-38770): with jobmanager.scheduler: adaptive, PUT {"cbc357ccb763df2852fee8c4fc7d55f2":{"parallelism":{"lowerBound":1,"upperBound":8}}} to /jobs/j1/resource-requirements. ` +
					`At that parallelism it matches "Sink: es": over a forward edge Flink can chain them and save a network shuffle.`,
				"recommended_parallelism": "8", "parallelism": "4",
				"parallelism_overrides": "cbc357ccb763df2852fee8c4fc7d55f2:8",
				"flink_run":             "-Dpipeline.jobvertex-parallelism-overrides=cbc357ccb763df2852fee8c4fc7d55f2:8",
				"evidence":              `"rescale":{"overrides":"cbc357ccb763df2852fee8c4fc7d55f2:8",`,
			},
			absent: []string{"salting_plan", "host", "thread_dump"},
		},
		{
			name: "under provisioned where no divisor is near, without a vertex id",
			fs:   []skew.Finding{upUneven},
			labels: map[string]string{"alertname": "FlinkUnderProvisioned", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "agg", "cause": "under_provisioned"},
			annotation: map[string]string{
				"runbook": `Raise the parallelism of "agg" from 90 to 100 (no divisor of its max parallelism 128 is near: key groups stay uneven; raise the max parallelism too); the input is balanced, so salting will not help.`,
			},
			absent: []string{"parallelism_overrides", "flink_run"},
		},
		{
			name: "slow subtask with its TaskManager id",
			fs:   []skew.Finding{slow},
			labels: map[string]string{"alertname": "FlinkSlowSubtask", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "Sink: es", "subtask": "2", "cause": "slow_subtask", "host": "10.0.0.2"},
			annotation: map[string]string{
				"runbook": "jstack the TaskManager on host 10.0.0.2 (task attempt 14fc6da2) and check the sink client for blocked requests; look at GC. " +
					"From Flink's REST API, the threads of TaskManager 10.0.0.2:6122-f1c0e9: GET /taskmanagers/10.0.0.2:6122-f1c0e9/thread-dump; " +
					"the subtask's own (with rest.flamegraph.enabled: true): GET /jobs/j1/vertices/cbc357ccb763df2852fee8c4fc7d55f2/flamegraph?type=full&subtaskindex=2; " +
					"the TaskManager it runs in now (taskmanager-id): GET /jobs/j1/vertices/cbc357ccb763df2852fee8c4fc7d55f2/subtasks/2. " +
					"Its input is no larger than its peers', so more parallelism or salting will not help.",
				"tm_id": "10.0.0.2:6122-f1c0e9", "thread_dump": "GET /taskmanagers/10.0.0.2:6122-f1c0e9/thread-dump",
				"evidence": `"inspect":{"subtask":"GET /jobs/j1/vertices/`,
			},
			absent: []string{"salting_plan", "flink_run"},
		},
		{
			name: "checkpoint risk",
			fs:   []skew.Finding{ckpt},
			labels: map[string]string{"alertname": "FlinkCheckpointRisk", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "Sink: es", "cause": "checkpoint_risk"},
			annotation: map[string]string{
				"runbook": `subtask 2 of "Sink: es" holds up the checkpoint barrier: relieve it first`,
			},
			absent: []string{"salting_plan"},
		},
		{
			name: "checkpoint risk forecast",
			fs:   []skew.Finding{forecast},
			labels: map[string]string{"alertname": "FlinkCheckpointRisk", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "Sink: es", "cause": "checkpoint_risk"},
			annotation: map[string]string{
				"runbook":  `Checkpoints are forecast to reach the checkpoint timeout in about 2.5 checkpoint intervals (2m30s), and subtask 2 of "Sink: es" holds up the checkpoint barrier: relieve it first`,
				"evidence": `"forecast_timeout_in_ms":150000,"forecast_intervals":2.5,"checkpoint_interval_ms":60000,"checkpoint_interval_measured":true,"checkpoint_trend":"exponential","checkpoint_trend_ms_per_interval":90000`,
			},
		},
		{
			name: "checkpoint risk timing out",
			fs:   []skew.Finding{timingOut},
			labels: map[string]string{"alertname": "FlinkCheckpointRisk", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "Sink: es", "cause": "checkpoint_risk"},
			annotation: map[string]string{
				"runbook": `Checkpoints reach the checkpoint timeout now, and subtask 2 of "Sink: es" holds up the checkpoint barrier`,
			},
		},
		{
			name: "invalid UTF-8 is cleaned",
			fs: []skew.Finding{func() skew.Finding {
				f := sat("j1", "bad\xff", 1, skew.CauseSlowSubtask, 0)
				f.Summary = "bad\xff summary"
				return f
			}()},
			labels: map[string]string{"alertname": "FlinkSlowSubtask", "severity": "warning", "job_id": "j1", "job_name": "name-j1",
				"task_name": "bad\uFFFD", "subtask": "1", "cause": "slow_subtask", "host": "10.0.0.2"},
			annotation: map[string]string{"summary": "bad\uFFFD summary"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := firingOf(t, tt.cfg, tt.fs...)
			if !maps.Equal(a.Labels, tt.labels) {
				t.Errorf("labels = %v\nwant     %v", a.Labels, tt.labels)
			}
			for k, want := range tt.annotation {
				if got, ok := a.Annotations[k]; !ok || !strings.Contains(got, want) {
					t.Errorf("annotation %s = %q, want it to contain %q", k, got, want)
				}
			}
			for _, k := range tt.absent {
				if v, ok := a.Annotations[k]; ok {
					t.Errorf("annotation %s = %q, want none", k, v)
				}
			}
			if a.Status != StatusFiring || a.ID != a.Identity().String() || !a.EndsAt.IsZero() {
				t.Errorf("status %q id %q ends %v", a.Status, a.ID, a.EndsAt)
			}
		})
	}
}

// TestLabelsFixedWhileFiring checks that a label value that changes in a
// later finding (the host) does not change the alert's labels (which
// would make it another alert in Alertmanager), while the annotations
// follow the latest finding.
func TestLabelsFixedWhileFiring(t *testing.T) {
	tr := newPipe(t, Config{}, atOnce)
	tr.Observe([]skew.Finding{sat("j1", "agg", 3, skew.CauseSlowSubtask, 0)})
	f := sat("j1", "agg", 3, skew.CauseSlowSubtask, win)
	f.Host = "10.0.0.9"
	tr.Observe([]skew.Finding{f})
	var resolved Alert
	for _, e := range tr.Advance(10 * win) {
		resolved = e.Alert
	}
	if resolved.Labels["host"] != "10.0.0.2" || resolved.Annotations["host"] != "10.0.0.9" {
		t.Errorf("label host %q (want the first, 10.0.0.2), annotation host %q (want the latest, 10.0.0.9)", resolved.Labels["host"], resolved.Annotations["host"])
	}
	if resolved.Status != StatusResolved || resolved.EndsAt.UnixMilli() != 2*win || resolved.Annotations["resolved_reason"] != incident.ReasonAbsent {
		t.Errorf("resolved alert: status %q ends %v reason %q", resolved.Status, resolved.EndsAt, resolved.Annotations["resolved_reason"])
	}
}

// TestAlertJSONGolden pins the JSON of a firing and a resolved alert of
// every cause (the webhook and Kafka contract). Run with -update to
// rewrite testdata/alerts.golden after a deliberate change.
func TestAlertJSONGolden(t *testing.T) {
	up, slow := readyFindings(t)
	rot := sat("j1", "agg", 5, skew.CauseRotatingHotKey, 0)
	rot.Evidence.TimeBucketKey = "u42|1593004200000"
	ds := sat("j1", "agg", 3, skew.CauseDataSkew, 0)
	ds.Evidence.HotKeys = []skew.KeyShare{{Key: "u42", Share: 0.31, SubtaskShare: 0.62}}
	ds.Evidence.SubtaskExcess, ds.Evidence.ExcessExplained = 0.67, 0.93
	// The hot key as the engine now writes it: its share with a margin,
	// the rule that named it and its share of its subtask.
	hk := hot("j1", "agg", 3, "u42", 0.31, 0)
	hk.ShareMargin, hk.Rule, hk.ShareLowerBound, hk.Threshold = 0.029, "task", 0.285, 0.1
	hk.EvidenceWindows, hk.EvidenceRecords = 2, 2000
	hk.SubtaskShare, hk.SubtaskShareMargin, hk.SubtaskExcess, hk.ExcessExplained = 0.62, 0.042, 0.67, 0.93
	tr := newPipe(t, Config{PlanVersion: func(string, string) (uint64, bool) { return 3, true }}, atOnce)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	// The checkpoint risk as the engine now writes it, with its
	// forecast.
	ckpt := sat("j1", "Sink: es", 2, skew.CauseCheckpointRisk, 0)
	ckpt.Evidence.LastCheckpointMs, ckpt.Evidence.CheckpointTimeoutMs = 400_000, 600_000
	ckpt = ckptForecast(ckpt, 150_000, 2.5)
	events := tr.Observe([]skew.Finding{ds, hk, rot, up, slow, ckpt})
	events = append(events, tr.Advance(100_000)...)
	for _, e := range events {
		if e.Notify() {
			if err := enc.Encode(e.Alert); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := filepath.Join("testdata", "alerts.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("alert JSON differs from %s (go test -update rewrites it):\n%s", path, buf.String())
	}
}

// ckptForecast is a copy of the checkpoint_risk finding f with a
// forecast of a timeout in inMs, intervals checkpoint intervals of 60 s.
func ckptForecast(f skew.Finding, inMs int64, intervals float64) skew.Finding {
	sat, ev := *f.Saturation, *f.Evidence
	ev.ForecastTimeoutInMs, ev.ForecastIntervals = &inMs, &intervals
	ev.CheckpointIntervalMs, ev.CheckpointIntervalMeasured = 60000, true
	ev.CheckpointTrend, ev.CheckpointTrendMsPerInterval, ev.BarrierTrendMsPerInterval, ev.ForecastPoints = "exponential", 90000, 85000, 4
	sat.Evidence = &ev
	f.Saturation = &sat
	return f
}

// TestNaNEvidence checks that non-finite numbers in a finding (which JSON
// cannot carry) give an alert with 0 in their place, as the findings
// contract has them, not a panic or a lost alert, and that its state can
// be saved.
func TestNaNEvidence(t *testing.T) {
	f := sat("j1", "agg", 1, skew.CauseSlowSubtask, 0)
	f.Evidence.InputRatio = math.Inf(1)
	h := hot("j1", "agg", 2, "k", math.NaN(), 0)
	tr := newPipe(t, Config{}, atOnce)
	tr.Observe([]skew.Finding{f, h})
	active := tr.Active()
	if len(active) != 2 {
		t.Fatalf("%d alerts, want 2", len(active))
	}
	for _, a := range active {
		if ev := a.Annotations["evidence"]; strings.Contains(ev, "error") || ev == "" {
			t.Errorf("%s: evidence %q, want the numbers", a.ID, ev)
		}
		if _, err := json.Marshal(a); err != nil {
			t.Errorf("%s: %v", a.ID, err)
		}
	}
	if _, err := tr.Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
}
