package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/browsertest"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// screenshotPath is the web view's screenshot the README shows; go test
// ./cmd/skewlens -run TestWebView -update writes it again.
const screenshotPath = "../../docs/img/web-view.png"

// simView is what a person sees on the page for the simulated jobs.
type simView struct {
	Error    string   `json:"error"`
	Jobs     []string `json:"jobs"`
	Open     []int    `json:"open"`
	Hot      []string `json:"hot"`
	HotCause string   `json:"hotCause"`
	// Incidents are the causes of the hot_key job's incident rows, and
	// AllIncidents the incident rows of the page.
	Incidents    []string `json:"incidents"`
	AllIncidents int      `json:"allIncidents"`
	Salted       []string `json:"salted"`
	// KeyShare and KeySubtaskShare are the hot key u42's latest share
	// and its share of its subtask, as the hot keys table shows them.
	KeyShare        string `json:"keyShare"`
	KeySubtaskShare string `json:"keySubtaskShare"`
}

// simProbe reads simView off the page; it returns null until the hot_key
// job shows a hot subtask, an incident, a plan and the hot key u42.
const simProbe = `(() => {
  const err = document.getElementById("error");
  const secs = [...document.querySelectorAll("section.job")];
  const sec = secs.find((s) => s.dataset.jobName === "hot_key");
  if (!sec) return null;
  const task = [...sec.querySelectorAll("div.task")].find((t) => t.dataset.taskName === "wideReduce-toNarrow");
  if (!task) return null;
  const hot = [...task.querySelectorAll("table.heatmap.busy tr.hot")];
  const salted = [...task.querySelectorAll(".plan li")];
  const incidents = [...sec.querySelectorAll("tr.incident")];
  const key = [...task.querySelectorAll("tr.hot-key")].find((r) => r.dataset.key === "u42");
  if (!hot.length || !salted.length || !incidents.length || !key) return null;
  return {
    error: err.hidden ? "" : err.textContent,
    jobs: secs.map((s) => s.dataset.jobName),
    open: secs.map((s) => Number(s.dataset.open)),
    hot: hot.map((r) => r.dataset.subtask),
    hotCause: hot[0].dataset.cause,
    incidents: incidents.map((r) => r.dataset.cause),
    allIncidents: document.querySelectorAll("tr.incident").length,
    salted: salted.map((l) => l.textContent),
    keyShare: key ? key.querySelector("td.share").textContent : "",
    keySubtaskShare: key ? key.querySelector("td.subtask-share").textContent : "",
  };
})()`

// TestWebView runs `skewlens run --simulate all` with the API, opens its
// page at / in a real headless Chromium and checks what a person sees:
// the jobs with open incidents first, the hot_key job's heat map marking
// the subtask Flink routes the hot key to (with the data_skew cause), its
// incidents listed, and the salting plan's salted keys. It saves a
// screenshot of the hot_key job (with -update, to docs/img for the
// README) and checks that it is not blank.
func TestWebView(t *testing.T) {
	bctx := browsertest.New(t, 4*time.Minute)
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api := fmt.Sprintf("127.0.0.1:%d", port)
	run := startCLI(t, "demo", "--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr,
		"--database", "e2e_web", "--group", "e2e-web", "--topics", "web-metrics,web-samples",
		"--dead-letter-topic", "web-dead", "--plans-topic", "web-plans", "--listen", "127.0.0.1:0",
		"--api-listen", api, "--simulate", "all", "--speed", "20", "--duration", "75s", "--quiet", "--log-format", "json")
	defer func() {
		if code, _, errOut := run.wait(); code != 0 {
			t.Errorf("run exit %d:\n%s", code, tail([]byte(errOut)))
		}
	}()

	// The API listens once run has its broker and ClickHouse.
	getUntil(t, "http://"+api+"/healthz", 2*time.Minute, "run's API answering", anyAnswer, run.end())
	var view simView
	err = chromedp.Do(bctx,
		chromedp.Navigate("http://"+api+"/"),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
			// The page refreshes every 10 s; wait until the hot_key job
			// shows its diagnosis.
			view, err = chromedp.Poll[simView](simProbe, chromedp.WithPollingTimeout(2*time.Minute), chromedp.WithPollingInterval(time.Second))(ctx, tg)
			return err
		}),
	)
	if err != nil {
		t.Fatalf("the page never showed the hot_key job's hot subtask, incidents, plan and hot key u42: %v\nrun stderr:\n%s", err, tail([]byte(run.stderr.String())))
	}
	t.Logf("page: %+v", view)
	if view.Error != "" {
		t.Errorf("the page shows an error: %s", view.Error)
	}

	// The right subtask is where Flink routes the hot key u42, at the
	// parallelism of the plan the API serves.
	resp, err := http.Get("http://" + api + "/v1/salting/" + jobIDOf(t, api, "hot_key") + "/wideReduce-toNarrow")
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Parallelism    int `json:"parallelism"`
		MaxParallelism int `json:"max_parallelism"`
	}
	err = json.NewDecoder(resp.Body).Decode(&plan)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	r, err := keygroup.NewRouter(plan.Parallelism, plan.MaxParallelism)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(r.Subtask("u42")); len(view.Hot) != 1 || view.Hot[0] != want || view.HotCause != "data_skew" {
		t.Errorf("hot_key heat map marks subtasks %q (%s), want %s (data_skew): Flink routes u42 there at parallelism %d/%d",
			view.Hot, view.HotCause, want, plan.Parallelism, plan.MaxParallelism)
	}
	if !slices.Contains(view.Incidents, "data_skew") || view.AllIncidents < len(view.Jobs) {
		t.Errorf("incidents listed: hot_key %q, %d in all for %d jobs", view.Incidents, view.AllIncidents, len(view.Jobs))
	}
	for i := 1; i < len(view.Open); i++ {
		if view.Open[i] > view.Open[i-1] {
			t.Errorf("jobs not ordered by open incidents: %q %v", view.Jobs, view.Open)
		}
	}
	if len(view.Jobs) != 6 {
		t.Errorf("%d jobs on the page (%q), want the 6 simulated", len(view.Jobs), view.Jobs)
	}
	for _, s := range view.Salted {
		if !strings.HasPrefix(s, "u42#") {
			t.Errorf("plan shows salted key %q, want u42#<salt> → <subtask>", s)
		}
	}
	if len(view.Salted) < 2 {
		t.Errorf("plan shows %d salted keys", len(view.Salted))
	}
	// The hot key's share is shown with its 95 % margin ("35% ± 2"), and
	// so is its share of its saturated subtask when the engine gives one.
	shareRE := regexp.MustCompile(`^\d+(\.\d)?% ± (\d+(\.\d)?|<0\.1)$`)
	if !shareRE.MatchString(view.KeyShare) {
		t.Errorf("hot key u42 shows share %q, want a share with its margin like 35%% ± 2", view.KeyShare)
	}
	if view.KeySubtaskShare != "" && !shareRE.MatchString(view.KeySubtaskShare) {
		t.Errorf("hot key u42 shows subtask share %q, want a share with its margin", view.KeySubtaskShare)
	}

	// The screenshot: the hot_key job at the top of the window.
	shot, err := chromedp.Run(bctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		if _, err := chromedp.Evaluate[bool](`(() => { const s = [...document.querySelectorAll("section.job")].find((s) => s.dataset.jobName === "hot_key"); window.scrollTo(0, s.offsetTop - 60); return true; })()`)(ctx, tg); err != nil {
			return nil, err
		}
		return chromedp.CaptureScreenshot()(ctx, tg)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := notBlank(shot); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(t.TempDir(), "web-view.png")
	if *update {
		path = screenshotPath
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
}

// jobIDOf returns the id of the job named name from GET /v1/incidents.
func jobIDOf(t *testing.T, api, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + api + "/v1/incidents")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Incidents []struct {
			JobID   string `json:"job_id"`
			JobName string `json:"job_name"`
		} `json:"incidents"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, in := range body.Incidents {
		if in.JobName == name {
			return in.JobID
		}
	}
	t.Fatalf("no incident of job %s", name)
	return ""
}

// notBlank checks that a PNG shows something: many colours, and a fair
// part of it not the page's background.
func notBlank(b []byte) error {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return err
	}
	bounds := img.Bounds()
	colours := map[[3]uint32]int{}
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}]++
		}
	}
	var top, total int
	for _, n := range colours {
		top = max(top, n)
		total += n
	}
	if len(colours) < 32 || float64(top) > 0.9*float64(total) {
		return fmt.Errorf("blank: %d colours, the commonest covers %.0f%% (%v)", len(colours), 100*float64(top)/float64(total), bounds.Size())
	}
	return nil
}

// TestREADMEShowsTheWebView checks that the README shows the screenshot
// TestWebView saves, and that the committed one is not blank.
func TestREADMEShowsTheWebView(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "](docs/img/web-view.png)") {
		t.Error("README does not show docs/img/web-view.png")
	}
	b, err := os.ReadFile(screenshotPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := notBlank(b); err != nil {
		t.Errorf("%s: %v", screenshotPath, err)
	}
}
