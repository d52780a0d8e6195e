package serve

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skewlens/skewlens/internal/testenv/browsertest"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/rescale"
)

// pageStore is an in-memory store for the web view's browser test that
// filters as the ClickHouse store does (by job, kind and task), so the
// page's per-job requests get per-job answers.
type pageStore struct {
	*fakeStore
	findings  []skew.Finding
	stats     []skew.Finding
	incidents []incident.Incident
}

// marshalAll returns the JSON of the items keep selects.
func marshalAll[T any](items []T, keep func(T) bool) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, it := range items {
		if !keep(it) {
			continue
		}
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (p *pageStore) Findings(_ context.Context, q servestore.FindingsQuery) ([]json.RawMessage, error) {
	return marshalAll(p.findings, func(f skew.Finding) bool {
		return (q.JobID == "" || f.JobID == q.JobID) && (q.Kind == "" || f.Kind == q.Kind)
	})
}

func (p *pageStore) Stats(_ context.Context, q servestore.StatsQuery) ([]json.RawMessage, error) {
	return marshalAll(p.stats, func(f skew.Finding) bool {
		return (q.JobID == "" || f.JobID == q.JobID) && (q.TaskName == "" || f.TaskName == q.TaskName)
	})
}

func (p *pageStore) Incidents(_ context.Context, q servestore.IncidentsQuery) ([]json.RawMessage, error) {
	return marshalAll(p.incidents, func(in incident.Incident) bool {
		return (q.JobID == "" || in.JobID == q.JobID) && (q.State == "" || in.State == q.State)
	})
}

// TestWebViewEscapesHostileNames loads the web view in a real headless
// Chromium against a store whose job, task and key names are hostile
// (markup, quotes, newlines, 64 KiB) and checks that none of them runs as
// script or becomes markup, that each reaches the page intact as text,
// and that the page still shows what it should: the job with an open
// incident first, its hot subtask marked on the heat map, the incident
// listed and the plan's salted keys with their subtasks.
func TestWebViewEscapesHostileNames(t *testing.T) {
	ctx := browsertest.New(t, 2*time.Minute)

	const (
		hostileJob  = "job-hostile"
		quietJob    = "job-quiet"
		hotSubtask  = 2
		parallelism = 4
	)
	jobName := "<script>window.pwned=1</script>\"double\" 'single'\nsecond line"
	taskName := `<img src=x onerror="window.pwned=2"> Sink: es`
	key := "</td><script>window.pwned=3</script>\n" + strings.Repeat("k", 64<<10)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	const win = int64(10_000)

	st := &pageStore{fakeStore: newFakeStore()}
	plan := testPlan(hostileJob, taskName, 3, time.UnixMilli(start+6*win), key)
	plan.JobName = jobName
	plan.ExpiresAt = time.Now().Add(time.Hour).UTC()
	st.fakeStore.plans = append(st.fakeStore.plans, plan)
	for w := int64(0); w < 6; w++ {
		ws, we := start+w*win, start+(w+1)*win
		for sub := 0; sub < parallelism; sub++ {
			busy, bp := 100.0, 0.0
			if sub == hotSubtask {
				busy = 990
			} else if sub == 0 {
				bp = 700 // back-pressure apart from busy time
			}
			st.stats = append(st.stats, skew.Finding{Kind: skew.KindSubtaskStats, JobID: hostileJob, JobName: jobName, TaskName: taskName,
				SubtaskIndex: ptr(sub), WindowStart: ws, WindowEnd: we,
				Stats: &skew.SubtaskStats{BusyMsPerSecond: busy, BackPressuredMsPerSecond: bp, Saturated: sub == hotSubtask}})
		}
		st.stats = append(st.stats, skew.Finding{Kind: skew.KindSubtaskStats, JobID: quietJob, JobName: "aaa quiet", TaskName: "Map",
			SubtaskIndex: ptr(0), WindowStart: ws, WindowEnd: we, Stats: &skew.SubtaskStats{BusyMsPerSecond: 50}})
		if w >= 2 {
			st.findings = append(st.findings,
				skew.Finding{Kind: skew.KindSaturation, JobID: hostileJob, JobName: jobName, TaskName: taskName, SubtaskIndex: ptr(hotSubtask),
					WindowStart: ws, WindowEnd: we, Saturation: &skew.Saturation{Cause: skew.CauseDataSkew, Evidence: &skew.Evidence{BusyMsPerSecond: 990, VertexID: vidWindow}},
					Summary: "Subtask 2 of " + taskName + " is saturated because of " + key[:60]},
				skew.Finding{Kind: skew.KindHotKey, JobID: hostileJob, JobName: jobName, TaskName: taskName, SubtaskIndex: ptr(hotSubtask),
					WindowStart: ws, WindowEnd: we, HotKey: &skew.HotKey{Key: key, Share: 0.18, ShareMargin: 0.031, Rule: "subtask",
						SubtaskShare: 0.46, SubtaskShareMargin: 0.081, SubtaskExcess: 0.6, ExcessExplained: 0.77, Saturated: ptr(true), SkewsSubtask: true}},
				// A key written before the engine gave margins, and a
				// tiny one with a margin under a point.
				skew.Finding{Kind: skew.KindHotKey, JobID: hostileJob, JobName: jobName, TaskName: taskName, SubtaskIndex: ptr(1),
					WindowStart: ws, WindowEnd: we, HotKey: &skew.HotKey{Key: "old-key", Share: 0.12, Saturated: ptr(true)}},
				skew.Finding{Kind: skew.KindHotKey, JobID: hostileJob, JobName: jobName, TaskName: taskName, SubtaskIndex: ptr(3),
					WindowStart: ws, WindowEnd: we, HotKey: &skew.HotKey{Key: "tiny-key", Share: 0.004, ShareMargin: 0.002, Rule: "task", Saturated: ptr(true)}},
				// A key a plan salted: its finding names no subtask
				// (subtask_index null) but the subtasks it spread over.
				skew.Finding{Kind: skew.KindHotKey, JobID: hostileJob, JobName: jobName, TaskName: taskName,
					WindowStart: ws, WindowEnd: we, HotKey: &skew.HotKey{Key: "salted-key", Share: 0.15, ShareMargin: 0.02, Rule: "task",
						Saturated: ptr(false), Subtasks: []int{0, 1, 2, 3}}})
		}
	}
	// An under_provisioned task with its rescale in every form.
	c, err := rescale.New(hostileJob, rescale.Vertex{ID: vidAgg, Parallelism: 8})
	if err != nil {
		t.Fatal(err)
	}
	forms, err := c.Forms()
	if err != nil {
		t.Fatal(err)
	}
	st.findings = append(st.findings, skew.Finding{Kind: skew.KindSaturation, JobID: hostileJob, JobName: jobName, TaskName: "agg",
		WindowStart: start + 5*win, WindowEnd: start + 6*win, Summary: "agg is too small",
		Saturation: &skew.Saturation{Cause: skew.CauseUnderProvisioned, Evidence: &skew.Evidence{VertexID: vidAgg, Parallelism: 4,
			MaxParallelism: 128, RecommendedParallelism: 8, ChainableWith: []string{"sink"}, Rescale: forms}}})
	st.incidents = []incident.Incident{
		{ID: "inc-up", JobID: hostileJob, JobName: jobName, TaskName: "agg", Subtask: -1, Cause: skew.CauseUnderProvisioned,
			State: incident.StateOpen, Start: start + 4*win, LastSeen: start + 6*win, Windows: 2},
		{ID: "inc-open", JobID: hostileJob, JobName: jobName, TaskName: taskName, Subtask: hotSubtask, Cause: skew.CauseDataSkew,
			State: incident.StateOpen, Start: start + 2*win, LastSeen: start + 6*win, Windows: 4, Summary: "summary with " + jobName},
		{ID: "inc-closed", JobID: quietJob, JobName: "aaa quiet", TaskName: "Map", Subtask: 0, Cause: skew.CauseSlowSubtask,
			State: incident.StateClosed, Start: start, End: start + win, LastSeen: start + win, Windows: 1},
		{ID: "inc-fixed", JobID: hostileJob, JobName: jobName, TaskName: taskName, Subtask: hotSubtask, Cause: skew.CauseDataSkew,
			State: incident.StateClosed, Start: start, End: start + 2*win, LastSeen: start + 2*win, Windows: 2, Resolution: "resolved by plan v3",
			Plan: &incident.PlanEffect{Version: 3, At: start + 2*win, BusyBefore: 995.4, BusyAfter: 510.2, KeySubtasks: 4, RelievedAt: start + 6*win}},
	}
	store := storeOf(st.fakeStore)
	store.Findings, store.Stats, store.Incidents = st, st, st
	s, _ := newStoreServer(t, Config{}, store)
	web := httptest.NewServer(s.Handler())
	defer web.Close()

	var got pageView
	err = chromedp.Do(ctx,
		chromedp.Navigate(web.URL+"/?refresh=0"),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.body.dataset.loaded !== undefined || !document.getElementById("error").hidden`,
				chromedp.WithPollingTimeout(30*time.Second))(ctx, tg)
			return err
		}),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
			got, err = chromedp.Evaluate[pageView](pageProbe(hostileJob, key))(ctx, tg)
			return err
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got.Error != "" {
		t.Fatalf("the page shows an error: %s", got.Error)
	}
	if got.Pwned != nil || got.Scripts != 1 || got.Images != 0 {
		t.Errorf("a hostile name became markup: window.pwned=%v, %d scripts (want 1), %d images (want 0)", got.Pwned, got.Scripts, got.Images)
	}
	if !slices.Equal(got.Order, []string{hostileJob, quietJob}) {
		t.Errorf("jobs in order %q, want the one with an open incident first", got.Order)
	}
	// The job list names each run by name and short id (skew.JobLabel's
	// JavaScript twin), the hostile name cut to 40 characters and escaped.
	if want := []string{
		strings.ReplaceAll(jobName, "\n", `\x0a`)[:40] + "… (" + hostileJob[:skew.ShortJobID] + ") · 2 open",
		skew.JobLabel("aaa quiet", quietJob),
	}; !slices.Equal(got.Nav, want) {
		t.Errorf("job list %q, want %q", got.Nav, want)
	}
	if got.JobName != jobName || got.TaskName != taskName {
		t.Errorf("names did not reach the page intact: job %q task %q", got.JobName, got.TaskName)
	}
	if want := `<script>window.pwned=1</script>"double" 'single'\x0asecond line`; got.Heading != want {
		t.Errorf("heading shows %q, want %q (markup as text, the newline visible)", got.Heading, want)
	}
	if !slices.Equal(got.Hot, []string{"2"}) || got.HotCause != skew.CauseDataSkew || !slices.Equal(got.BPHot, []string{"2"}) {
		t.Errorf("hot subtask marked %q (%q) on busy, %q on back-pressure; want subtask 2, data_skew", got.Hot, got.HotCause, got.BPHot)
	}
	if got.BPValue != "700" {
		t.Errorf("back-pressure heat map, subtask 0: %q ms/s, want 700", got.BPValue)
	}
	if !slices.Equal(got.Incidents, []string{"inc-up", "inc-open"}) {
		t.Errorf("open incidents listed %q, want inc-up, inc-open", got.Incidents)
	}
	// The changes ready to apply (GET /v1/actions): the rescale in its
	// forms, the plan in force, and the autoscaler kept off the vertex.
	if want := []string{"salting_plan|inc-open", "rescale|inc-up", "autoscaler_exclude|"}; !slices.Equal(got.Actions, want) {
		t.Errorf("actions %q, want %q", got.Actions, want)
	}
	if want := "-Dpipeline.jobvertex-parallelism-overrides=" + vidAgg + ":8"; got.FlinkRun != want {
		t.Errorf("flink run form %q, want %q", got.FlinkRun, want)
	}
	if want := "spec:\n  flinkConfiguration:\n    pipeline.jobvertex-parallelism-overrides: \"" + vidAgg + ":8\"\n"; got.Patch != want {
		t.Errorf("FlinkDeployment patch %q, want %q (its lines kept)", got.Patch, want)
	}
	if want := "job.autoscaler.vertex.exclude.ids: " + vidWindow; got.Exclude != want {
		t.Errorf("autoscaler exclusion %q, want %q", got.Exclude, want)
	}
	// The fix's receipt, as -o text writes it.
	if want := "resolved by plan v3: busy 995 → 510 ms/s, key on 4 subtasks, 40s after the plan"; got.Receipt != want {
		t.Errorf("receipt of the fixed incident %q, want %q", got.Receipt, want)
	}
	if got.KeyRow != 1 {
		t.Errorf("%d hot-key rows carry the 64 KiB key intact, want 1", got.KeyRow)
	}
	// Each key's latest share with its margin, and its subtask's share.
	if want := []string{"hostile|18% ± 3|46% ± 8|subtask", "salted-key|15% ± 2||task", "old-key|12.0%||", "tiny-key|0.4% ± 0.2||task"}; !slices.Equal(got.Shares, want) {
		t.Errorf("hot-key shares %q, want %q", got.Shares, want)
	}
	// Each key's subtask; a salted key's are the subtasks it spread
	// over, and no cell or tooltip shows a null.
	if want := []string{"hostile|2", "salted-key|salted: 0, 1, 2, 3", "old-key|1", "tiny-key|3"}; !slices.Equal(got.KeySubtasks, want) {
		t.Errorf("hot-key subtasks %q, want %q", got.KeySubtasks, want)
	}
	if len(got.HotKeyNulls) != 0 {
		t.Errorf("the hot-key table shows null or undefined: %q", got.HotKeyNulls)
	}
	var want []string
	for _, s := range plan.HotKeys[0].Salted {
		want = append(want, strings.TrimPrefix(s.Key, key)+"→"+strconv.Itoa(s.Subtask))
	}
	if !slices.Equal(got.Salted, want) {
		t.Errorf("plan shows salted keys %q, want %q", got.Salted, want)
	}
}

// pageView is what pageProbe reads off the page.
type pageView struct {
	Pwned     any      `json:"pwned"`
	Scripts   int      `json:"scripts"`
	Images    int      `json:"images"`
	Order     []string `json:"order"`
	Nav       []string `json:"nav"`
	JobName   string   `json:"jobName"`
	Heading   string   `json:"heading"`
	TaskName  string   `json:"taskName"`
	Hot       []string `json:"hot"`
	HotCause  string   `json:"hotCause"`
	BPHot     []string `json:"bpHot"`
	BPValue   string   `json:"bpValue"`
	Incidents []string `json:"incidents"`
	Receipt   string   `json:"receipt"`
	KeyRow    int      `json:"keyRow"`
	Salted    []string `json:"salted"`
	Actions   []string `json:"actions"`
	FlinkRun  string   `json:"flinkRun"`
	Patch     string   `json:"patch"`
	Exclude   string   `json:"exclude"`
	Shares    []string `json:"shares"`
	// KeySubtasks are the hot-key rows' subtask cells, HotKeyNulls the
	// texts and tooltips of the hot-key table that say null or undefined.
	KeySubtasks []string `json:"keySubtasks"`
	HotKeyNulls []string `json:"hotKeyNulls"`
	Error       string   `json:"error"`
}

// pageProbe is the script that reads, from the rendered page, what a
// person would see of one job.
func pageProbe(jobID, key string) string {
	k, _ := json.Marshal(key)
	j, _ := json.Marshal(jobID)
	return `(() => {
  const key = ` + string(k) + `;
  const sec = [...document.querySelectorAll("section.job")].find((s) => s.dataset.jobId === ` + string(j) + `);
  const err = document.getElementById("error");
  const task = sec.querySelector("div.task");
  return {
    pwned: window.pwned === undefined ? null : window.pwned,
    scripts: document.scripts.length,
    images: document.images.length,
    order: [...document.querySelectorAll("section.job")].map((s) => s.dataset.jobId),
    nav: [...document.querySelectorAll("#jobs-nav a")].map((a) => a.textContent),
    jobName: sec.dataset.jobName,
    heading: sec.querySelector("h2 .name").textContent,
    taskName: task.dataset.taskName,
    hot: [...task.querySelectorAll("table.heatmap.busy tr.hot")].map((r) => r.dataset.subtask),
    hotCause: (task.querySelector("table.heatmap.busy tr.hot") || { dataset: {} }).dataset.cause || "",
    bpHot: [...task.querySelectorAll("table.heatmap.backpressured tr.hot")].map((r) => r.dataset.subtask),
    bpValue: task.querySelector('table.heatmap.backpressured tr[data-subtask="0"] td').dataset.value,
    incidents: [...sec.querySelectorAll("tr.incident.open")].map((r) => r.dataset.incidentId),
    receipt: (sec.querySelector('tr.incident[data-incident-id="inc-fixed"] .receipt') || { textContent: "" }).textContent,
    keyRow: [...task.querySelectorAll("tr.hot-key")].filter((r) => r.dataset.key === key).length,
    salted: [...task.querySelectorAll(".plan li")].map((l) => l.textContent.replace(/^.*?(#\d+) → (\d+)$/s, "$1→$2")),
    shares: [...task.querySelectorAll("tr.hot-key")].map((r) => [r.dataset.key === key ? "hostile" : r.dataset.key,
      r.querySelector("td.share").textContent, r.querySelector("td.subtask-share").textContent, r.dataset.rule || ""].join("|")),
    keySubtasks: [...task.querySelectorAll("tr.hot-key")].map((r) => (r.dataset.key === key ? "hostile" : r.dataset.key) + "|" + r.children[3].textContent),
    hotKeyNulls: [...task.querySelectorAll(".hot-keys td, .hot-keys th")].flatMap((c) => [c.textContent, c.getAttribute("title") || ""])
      .filter((s) => /\b(null|undefined|NaN)\b/.test(s)),
    actions: [...sec.querySelectorAll(".actions .action")].map((a) => a.dataset.kind + "|" + a.dataset.incidentId),
    flinkRun: (sec.querySelector('.actions pre[data-form="flink_run"]') || { textContent: "" }).textContent,
    patch: (sec.querySelector('.actions pre[data-form="flink_deployment_patch"]') || { textContent: "" }).textContent,
    exclude: (sec.querySelector('.actions pre[data-form="autoscaler_exclude"]') || { textContent: "" }).textContent,
    error: err.hidden ? "" : err.textContent,
  };
})()`
}

func ptr[T any](v T) *T { return &v }
