package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/flinktest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/keygroup"
	"github.com/skewlens/skewlens/skew/plans"
)

// The life-of-a-job matrix (issue 32, item 6): a job's whole life on a
// real standalone Flink cluster, under `skewlens run` with a real Kafka
// broker and ClickHouse. One environment serves every row, in order: the
// broker and ClickHouse (which it takes down and brings back on the same
// port with the same data: the broker is the one the package's shared
// clusters report to, flinkEnv, and ClickHouse the matrix's own),
// `skewlens run` (restarted by some rows, in the same consumer group and
// database), `skewlens serve` (the plan server the salted job polls, as
// in production), a webhook that records the alerts, and the shared
// Flink 2.3.0 cluster. The shared Flink 1.20.5 cluster runs beside it
// until the TaskManager row, for the rows whose
// input is what the Flink line reports: the JobManager's checkpoint
// gauges of a job without a completed checkpoint (both lines report -1
// for the last checkpoint's duration and size), and a task's new attempt
// after its TaskManager died (attempt numbers, counters from zero). The
// rows after it depend on the broker, ClickHouse, the plan server and
// the job's lifecycle alone, alike on both lines.
//
// The jobs are deploy/flink/example's HotKeyJob, 70 % of its orders for
// one customer, whose subtask of "Partial sums" is saturated:
//
//   - nocp (both versions): checkpointing off, and no plan server (its
//     --salting-url answers nothing), so its data_skew incident and alert
//     stay open for as long as it runs;
//   - precp (both versions): checkpointing on with a one-hour interval
//     and minimum pause, so it stays before its first checkpoint;
//   - salted (2.3.0): polls `skewlens serve` and applies the plans.
//
// Each row is a subtest, and asserts what run logs (its JSON log), stores
// (ClickHouse), alerts (the webhook), serves (its API) and that it still
// runs at the row's end; each logs its duration. The one wall-clock wait
// is an outage's 60 s, counted from the moment the port is closed.

// Matrix settings.
const (
	matrixJobEndAfter = 30 * time.Second
	matrixWindow      = 10 * time.Second
	matrixOutage      = 60 * time.Second
	matrixHotKey      = "customer-42"
	matrixTask        = "Partial sums"
	matrixSaltVertex  = "Salt keys for Partial sums"
)

// matrixJobArgs are the HotKeyJob flags every job of the matrix runs
// with: 500 orders/s, 70 % of them the hot key, 2.8 ms each in "Partial
// sums": its subtask is offered 1.09× what it can do, the others 0.15×.
var matrixJobArgs = []string{"--hot-share", "0.7", "--rate", "500", "--cost-ms", "2.8", "--parallelism", "4", "--max-parallelism", "128"}

// TestJobMatrix runs the life-of-a-job matrix; see above.
func TestJobMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the job matrix needs Flink clusters, a Kafka broker and ClickHouse")
	}
	begin := time.Now()
	var rows []string
	row := func(name string, budget time.Duration, f func(t *testing.T)) bool {
		start := time.Now()
		ok := t.Run(name, f)
		d := time.Since(start).Round(time.Second)
		verdict := "pass"
		if !ok {
			verdict = "FAIL"
		}
		rows = append(rows, fmt.Sprintf("%-40s %-4s %6s (budget %s)", name, verdict, d, budget))
		t.Logf("row %s: %s in %s (budget %s)", name, verdict, d, budget)
		if d > budget {
			// Logged, not failed: the rows' timing on a shared machine
			// varies; the budget is for CI's.
			t.Logf("row %s took %s: OVER its budget of %s", name, d, budget)
		}
		return ok
	}
	defer func() {
		t.Logf("job matrix: %s in all\n%s", time.Since(begin).Round(time.Second), strings.Join(rows, "\n"))
	}()

	m := startMatrix(t)
	if !row("setup", 5*time.Minute, m.setup) {
		t.Fatal("the jobs are not diagnosed: no row can run")
	}
	for _, how := range []string{"sigterm", "sigkill"} {
		row("run_"+how, 3*time.Minute, func(t *testing.T) { m.restartRow(t, how) })
	}
	row("taskmanager_killed", 4*time.Minute, m.taskManagerRow)
	m.stopFlink1(t)
	row("cancel_resubmit_same_name", 3*time.Minute, m.resubmitRow)
	row("broker_down_60s", 4*time.Minute, m.brokerRow)
	row("clickhouse_down_60s", 4*time.Minute, m.clickHouseRow)
	row("plan_server_down_60s", 3*time.Minute, m.planServerRow)
	row("last_job_cancelled", 3*time.Minute, m.lastJobRow)
}

// restartRow restarts `skewlens run` (SIGTERM: it drains and exits 0;
// SIGKILL: a crash) while the jobs without a checkpoint run: the new run
// resumes the engine state, alert state and incidents of each, loses no
// window, fires no alert again and serves the same plans.
func (m *matrix) restartRow(t *testing.T, how string) {
	m.ensureRun(t)
	var jobs []*matrixJob
	for _, j := range m.running() {
		if j.role != "salted" {
			jobs = append(jobs, j)
		}
	}
	// What each job has before: firing alerts, open incidents, its plan.
	type before struct {
		firing, open []string
		plan         plans.Plan
	}
	was := map[*matrixJob]before{}
	for _, j := range jobs {
		var b before
		b.firing = m.firing(j.ID, "data_skew")
		incs, _ := m.incidents(j.ID)
		b.open = openIncidents(incs, "data_skew")
		getJSON(m.api, planPath(j.ID), &b.plan)
		was[j] = b
	}
	k := m.mark()
	old := m.currentRun()
	sig := syscall.SIGTERM
	if how == "sigkill" {
		sig = syscall.SIGKILL
	}
	if err := old.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "run's exit after "+how, func() bool { return exited(old.done) })
	if code := old.cmd.ProcessState.ExitCode(); how == "sigterm" && code != 0 {
		t.Errorf("run exited %d after SIGTERM, want 0:\n%s", code, old.logTail())
	}
	restarted := time.Now()
	t.Logf("run %s; restarted %s later", how, restarted.Sub(k.at).Round(100*time.Millisecond))
	m.startRun(t)
	rowName := func(j *matrixJob) string {
		return j.version + "/" + map[string]string{"nocp": "checkpointing_off", "precp": "before_first_checkpoint"}[j.role]
	}
	// Two windows after the restart.
	if why := m.closedOrExit(t, 2*time.Minute, restarted.Add(2*matrixWindow), jobs...); why != "" {
		for _, j := range jobs {
			t.Run(rowName(j), func(t *testing.T) {
				m.assertCheckpoints(t, j)
				t.Errorf("skewlens run exited after the %s: %s", how, why)
			})
		}
		m.ensureRun(t)
		return
	}

	resumed := false
	for _, l := range m.runLogSince(k) {
		var f struct {
			Resumed int `json:"resumed_jobs"`
		}
		if l.Msg == "partitions assigned" && json.Unmarshal([]byte(l.raw), &f) == nil && f.Resumed >= len(jobs) {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("run did not log \"partitions assigned\" with resumed_jobs >= %d after the restart", len(jobs))
	}
	m.assertLogClean(t, k)
	for _, j := range jobs {
		t.Run(rowName(j), func(t *testing.T) {
			m.assertCheckpoints(t, j)
			// Stores: every window from before the restart on.
			m.assertNoWindowLost(t, j, k.at.Add(-3*matrixWindow), restarted.Add(2*matrixWindow), false)
			// Alerts: what fired before does not fire again.
			b := was[j]
			if len(b.firing) == 0 {
				t.Errorf("no data_skew alert of %s firing before the restart: nothing to resume", j)
			}
			for _, a := range m.alertsSince(k) {
				if a.Labels["job_id"] == j.ID && a.Status == alert.StatusFiring && slices.Contains(b.firing, a.ID) {
					t.Errorf("alert %s fired again after the restart", a.ID)
				}
			}
			// Serves: the same open incidents, the same plan.
			incs, ok := m.incidents(j.ID)
			if now := openIncidents(incs, "data_skew"); !ok || !slices.Equal(now, b.open) || len(now) == 0 {
				t.Errorf("open data_skew incidents of %s: %v before the restart, %v after", j, b.open, now)
			}
			var p plans.Plan
			if !getJSON(m.api, planPath(j.ID), &p) || p.Version != b.plan.Version || b.plan.Version == 0 {
				t.Errorf("plan of %s: v%d before the restart, v%d after", j, b.plan.Version, p.Version)
			}
		})
	}
	m.assertRunning(t)
}

// assertCheckpoints fails t unless the job is in the state its row names:
// checkpointing off, or on and before its first checkpoint.
func (m *matrix) assertCheckpoints(t *testing.T, j *matrixJob) {
	t.Helper()
	var cfg struct {
		Interval int64 `json:"interval"`
	}
	var st struct {
		Counts struct {
			Completed int `json:"completed"`
		} `json:"counts"`
	}
	c := j.Cluster()
	errCfg := c.JSON(http.MethodGet, "/jobs/"+j.ID+"/checkpoints/config", nil, &cfg)
	errSt := c.JSON(http.MethodGet, "/jobs/"+j.ID+"/checkpoints", nil, &st)
	switch j.role {
	case "nocp":
		// Flink answers 404 ("Checkpointing is not enabled") or an
		// interval of Long.MAX_VALUE without checkpointing.
		if errCfg == nil && cfg.Interval > 0 && cfg.Interval < 1<<62 {
			t.Errorf("%s checkpoints every %d ms, want checkpointing off", j, cfg.Interval)
		}
	case "precp":
		if errCfg != nil || cfg.Interval != 3600000 || errSt != nil || st.Counts.Completed != 0 {
			t.Errorf("%s: checkpoint interval %d ms (%v), %d completed (%v): want 1 h and none yet", j, cfg.Interval, errCfg, st.Counts.Completed, errSt)
		}
	}
}

// taskManagerRow kills a TaskManager of each cluster (a replacement
// started first, so that there are slots to restart in, and the shared
// cluster is left with as many as before): every job on it restarts with
// the same id, and run follows it as the same run.
func (m *matrix) taskManagerRow(t *testing.T) {
	m.ensureRun(t)
	k := m.mark()
	restarts := map[*matrixJob]int{}
	for _, j := range m.running() {
		restarts[j] = m.numRestarts(j)
	}
	for _, v := range []string{flinktest.Flink2, flinktest.Flink1} {
		killed := m.clusters[v].replaceTaskManager(t)
		t.Logf("Flink %s: %s killed %s after the row started", v, killed, time.Since(k.at).Round(100*time.Millisecond))
	}
	// The jobs that restarted: all of them, as a rule (their slots are
	// spread over the TaskManagers), within a minute; one at least.
	var hit []*matrixJob
	killed := time.Now()
	testenv.Eventually(t, time.Minute+10*time.Second, "a job restarted after the TaskManagers were killed", func() bool {
		for j, was := range restarts {
			if !slices.Contains(hit, j) && m.numRestarts(j) > was {
				hit = append(hit, j)
			}
		}
		return len(hit) == len(restarts) || len(hit) > 0 && time.Since(killed) > time.Minute
	})
	for j := range restarts {
		if !slices.Contains(hit, j) {
			t.Logf("%s did not restart: none of its tasks ran on the killed TaskManager", j)
		}
	}
	back := time.Now()
	for _, j := range hit {
		j.Cluster().WaitRunning(t, j.ID, 2*time.Minute)
	}
	t.Logf("%d jobs restarted with their ids, all running %s after the kill", len(hit), time.Since(back).Round(100*time.Millisecond))
	running := time.Now()
	m.waitClosed(t, 2*time.Minute, running.Add(3*matrixWindow), hit...)
	m.assertLogClean(t, k)
	m.assertNotEnded(t, k, hit...)
	for _, j := range hit {
		t.Run(j.version+"/"+j.role, func(t *testing.T) {
			// Stores: the new attempts' statistics, under the same job id,
			// with busy times Flink's counters can give (they restart at
			// zero with the attempt).
			rows, err := m.conn.Query(context.Background(), "SELECT subtask_index, task_attempt_id, busy_ms_per_s FROM "+m.db+
				".subtask_stats WHERE job_id = ? AND task_name = ? AND window_start >= ?", j.ID, matrixTask, running.UnixMilli())
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			subs := map[int32]bool{}
			for rows.Next() {
				var sub int32
				var attempt string
				var busy float64
				if err := rows.Scan(&sub, &attempt, &busy); err != nil {
					t.Fatal(err)
				}
				subs[sub] = true
				if busy < 0 || busy > 1100 {
					t.Errorf("subtask %d (attempt %s) busy %.0f ms/s after the restart", sub, attempt, busy)
				}
			}
			if len(subs) != 4 {
				t.Errorf("statistics of %d subtasks of %s after the restart, want 4", len(subs), j)
			}
			// Serves: its incidents are not closed as ended, its plan is
			// still its own, and a salted job applies it again.
			incs, _ := m.incidents(j.ID)
			for _, in := range incs {
				if isEndResolution(in.Resolution) {
					t.Errorf("incident %s of %s closed %q: the job restarted in place", in.ID, j, in.Resolution)
				}
			}
			var p plans.Plan
			if !getJSON(m.api, planPath(j.ID), &p) {
				t.Errorf("no plan of %s served after its restart", j)
			}
			if j.role == "salted" {
				m.waitApplied(t, j, time.Minute)
			}
		})
	}
	m.assertRunning(t)
}

// numRestarts is the job's numRestarts metric (Flink's REST API), -1
// when it is not there.
func (m *matrix) numRestarts(j *matrixJob) int {
	var ms []struct {
		ID    string `json:"id"`
		Value string `json:"value"`
	}
	if err := j.Cluster().JSON(http.MethodGet, "/jobs/"+j.ID+"/metrics?get=numRestarts", nil, &ms); err != nil || len(ms) == 0 {
		return -1
	}
	n, err := strconv.Atoi(ms[0].Value)
	if err != nil {
		return -1
	}
	return n
}

// stopFlink1 cancels the 1.20.5 jobs and stops that cluster, to free
// the cores: the rows after the TaskManager row behave alike on both
// lines. (A later test that asks for the shared cluster starts another.)
func (m *matrix) stopFlink1(t *testing.T) {
	for _, j := range m.running() {
		if j.version == flinktest.Flink1 {
			j.Stop()
		}
	}
	if err := m.env.stopCluster(flinktest.Flink1); err != nil {
		t.Errorf("stop the Flink %s cluster: %v", flinktest.Flink1, err)
	}
	delete(m.clusters, flinktest.Flink1)
	t.Logf("Flink %s jobs cancelled and its cluster stopped", flinktest.Flink1)
}

// resubmitRow cancels the salted job and submits it again under the same
// name (a new job id): the plan is in force from its first record (no
// sample of the hot key from the subtask Flink routes it to unsalted):
// the second run's plan client, asking with its job name and parallelism
// pair, is answered at its first poll, in open(), with the first run's
// plan (the lineage answer), before the job runs. Run ends the first run
// as restarted by the second, and carries the plan over to the second
// run's own id, which then replaces the lineage plan. The row logs both
// times from the submission: the lineage plan's (the unsalted time now)
// and the own plan's (the unsalted time there would be without the
// lineage answer); docs/salting-plans.md cites them.
func (m *matrix) resubmitRow(t *testing.T) {
	m.ensureRun(t)
	first := m.job("salted", flinktest.Flink2)
	version := m.waitApplied(t, first, time.Minute)
	var p plans.Plan
	if !getJSON(m.plan, planPath(first.ID), &p) || len(p.HotKeys) == 0 {
		t.Fatalf("the plan server serves no plan of %s", first)
	}
	router, err := keygroup.NewRouter(4, 128)
	if err != nil {
		t.Fatal(err)
	}
	unsalted := router.Subtask(matrixHotKey)
	// Whether a sample's subtask tells salted from unsalted: not when a
	// salted key lands where the key goes unsalted.
	telling := !slices.ContainsFunc(p.HotKeys[0].Salted, func(s skew.SaltTarget) bool { return s.Subtask == unsalted })
	k := m.mark()
	c := first.Cluster()
	c.Cancel(t, first.ID)
	submitted := time.Now()
	second := &matrixJob{role: first.role, version: first.version, name: first.name,
		Job: c.Start(m.top, first.JarID, first.Request)}
	m.jobs = append(m.jobs, second)
	t.Logf("%s cancelled; %s running %s later", first, second, time.Since(k.at).Round(100*time.Millisecond))

	// The plan from the first record: the salting operator applied the
	// lineage plan (its log line) before the job ran and before its first
	// key sample was taken, and, when the subtasks tell, none of the hot
	// key's first 100 samples comes from the subtask Flink routes it to
	// unsalted.
	testenv.Eventually(t, time.Minute, "100 samples of the hot key from "+second.String(), func() bool {
		return m.samples.total(second.ID, matrixHotKey) >= 100
	}, m.runWatch(), jobWatch(second))
	firstSample := m.samples.first(second.ID)
	// The plan is its own run's, or its job's newest run's ("applying plan
	// v1 of job <old id>, the newest run of "<name>" for task …").
	applied := regexp.MustCompile(`(?m)^(\d\d:\d\d:\d\d,\d\d\d) .*skewlens salting: applying plan v\d+[^\n]* for task "` + matrixTask + `" of job ` + second.ID)
	lineage := "of job " + first.ID + ", the newest run of "
	appliedAt, line := m.earliestTMLine(k, applied)
	switch {
	case appliedAt.IsZero():
		t.Errorf("the TaskManagers logged no plan applied for %s (its first sample at %s)", second, firstSample.Format("15:04:05.000"))
	case !strings.Contains(line, lineage):
		t.Errorf("%s applied first a plan that is not the lineage answer (%q): %s", second, lineage, line)
	case appliedAt.After(firstSample):
		t.Errorf("%s applied its plan at %s, after its first key sample at %s: records went unsalted first", second,
			appliedAt.Format("15:04:05.000"), firstSample.Format("15:04:05.000"))
	case appliedAt.After(second.Started):
		t.Errorf("%s applied the lineage plan at %s, after all its tasks ran at %s", second,
			appliedAt.Format("15:04:05.000"), second.Started.Format("15:04:05.000"))
	default:
		t.Logf("%s applied the first run's plan (lineage answer) %s after its submission, before it ran (%s after) and before its first key sample (%s after): its first record was salted",
			second, appliedAt.Sub(submitted).Round(100*time.Millisecond), second.Started.Sub(submitted).Round(100*time.Millisecond),
			firstSample.Sub(submitted).Round(100*time.Millisecond))
	}
	if n := m.samples.on(second.ID, matrixHotKey, unsalted); telling && n > 0 {
		t.Errorf("%d samples of %s from subtask %d (unsalted) in %s's first %d: the plan was not in force from the first record",
			n, matrixHotKey, unsalted, second, m.samples.total(second.ID, matrixHotKey))
	}
	// Flink's REST API shows the operator's metrics once its metric
	// fetcher has read them (every 10 s): -2 until then.
	var v int64
	testenv.Eventually(t, time.Minute, "the salting operator's plan version of "+second.String(), func() bool {
		v = m.appliedVersion(second)
		return v != -2
	}, m.runWatch(), jobWatch(second))
	if v < 1 {
		t.Errorf("%s's salting operator applies plan %d, want the lineage's (v%d)", second, v, version)
	}
	// Run ends the first run as restarted by the second.
	var end skew.Finding
	testenv.Eventually(t, time.Minute, "the job_end of "+first.String(), func() bool {
		var ends struct{ Findings []skew.Finding }
		if !getJSON(m.api, "/v1/findings?kind=job_end&job_id="+url.QueryEscape(first.ID), &ends) || len(ends.Findings) == 0 {
			return false
		}
		end = ends.Findings[0]
		return true
	}, m.runWatch())
	if end.JobEnd == nil || end.JobEnd.Reason != skew.EndRestarted || end.JobEnd.Successor != second.ID {
		t.Errorf("job_end of %s: %+v, want restarted as %s", first, end.JobEnd, second.ID)
	}
	var stored uint64
	if err := m.conn.QueryRow(context.Background(), "SELECT count() FROM "+m.db+".findings WHERE kind = 'job_end' AND job_id = ?", first.ID).Scan(&stored); err != nil || stored == 0 {
		t.Errorf("no job_end finding of %s in ClickHouse (%v)", first, err)
	}
	incs, _ := m.incidents(first.ID)
	if open := openIncidents(incs, ""); len(open) > 0 {
		t.Errorf("incidents of %s still open: %v", first, open)
	}
	for _, id := range m.firing(first.ID, "") {
		t.Errorf("alert %s of %s still firing", id, first)
	}
	var p2 plans.Plan
	if !getJSON(m.api, planPath(second.ID), &p2) || len(p2.HotKeys) == 0 || p2.HotKeys[0].Key != matrixHotKey {
		t.Errorf("run serves no plan of %s for %s", matrixHotKey, second)
	} else if !slices.Equal(p2.HotKeys[0].Salted, p.HotKeys[0].Salted) {
		// Carried over, not made anew: nothing is re-keyed.
		t.Errorf("the plan carried over to %s salts %s as %+v, the first run's as %+v", second, matrixHotKey, p2.HotKeys[0].Salted, p.HotKeys[0].Salted)
	}
	// The plan carried over to the second run's own id replaces the
	// lineage plan (the same salted keys): the time it took is the
	// unsalted time without the lineage answer.
	own := regexp.MustCompile(`(?m)^(\d\d:\d\d:\d\d,\d\d\d) .*skewlens salting: applying plan v\d+ for task "` + matrixTask + `" of job ` + second.ID +
		`.*\(replaces v\d+ of job ` + first.ID + `\)`)
	var ownAt time.Time
	testenv.Eventually(t, 2*time.Minute, second.String()+" applying its own plan in place of the lineage plan", func() bool {
		ownAt, _ = m.earliestTMLine(k, own)
		return !ownAt.IsZero()
	}, m.runWatch(), jobWatch(second))
	t.Logf("%s applied its own plan (carried over at the job_end) %s after its submission: the unsalted time without the lineage answer",
		second, ownAt.Sub(submitted).Round(100*time.Millisecond))
	m.assertLogClean(t, k)
	m.assertRunning(t)
}

// earliestTMLine returns the earliest line (and its time) that re
// matches in what the TaskManagers logged after k; re's first group is
// the line's log4j time (HH:mm:ss,SSS). The zero time when there is none.
func (m *matrix) earliestTMLine(k mark, re *regexp.Regexp) (time.Time, string) {
	var first time.Time
	var line string
	for _, match := range re.FindAllStringSubmatch(m.tmLogSince(k), -1) {
		if at, ok := logTime(strings.Replace(match[1], ",", ".", 1), ""); ok && (first.IsZero() || at.Before(first)) {
			first, line = at, match[0]
		}
	}
	return first, line
}

// outage takes a server down (stop), waits until its port is closed,
// keeps it down for matrixOutage from then, and brings it back (start).
// It returns when the port closed and when the server was back.
func outage(t *testing.T, addr string, stop, start func() error) (down, up time.Time) {
	t.Helper()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, addr+" closed", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	down = time.Now()
	time.Sleep(matrixOutage) // the outage itself: the one wall-clock wait
	if err := start(); err != nil {
		t.Fatal(err)
	}
	up = time.Now()
	t.Logf("%s down for %s (back %s after the port closed)", addr, matrixOutage, up.Sub(down).Round(100*time.Millisecond))
	return down, up
}

// brokerRow takes the broker down for 60 s: the reporters and samplers
// hold their lines and send them when it is back, so no window is lost;
// run waits for it and does not take the silence for the jobs' end.
func (m *matrix) brokerRow(t *testing.T) {
	m.ensureRun(t)
	jobs := m.running()
	k := m.mark()
	down, up := outage(t, m.broker.Addr, m.broker.Halt, m.broker.Resume)
	m.waitClosed(t, 3*time.Minute, up.Add(3*matrixWindow), jobs...)
	for _, j := range jobs {
		m.assertNoWindowLost(t, j, down.Add(-3*matrixWindow), up.Add(3*matrixWindow), true)
	}
	tm := m.tmLogSince(k)
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`skewlens: dropped \d+ lines[^\n]*`), regexp.MustCompile(`[^\n]*\((\d+) lines lost so far[^\n]*`)} {
		for _, match := range re.FindAllStringSubmatch(tm, 5) {
			if len(match) < 2 || match[1] != "0" {
				t.Errorf("the reporter's queue did not hold: %s", match[0])
			}
		}
	}
	if late := m.lateSince(k); late > 0 {
		t.Errorf("run dropped %.0f records as late", late)
	}
	m.assertNotEnded(t, k, jobs...)
	m.assertLogClean(t, k)
	for _, j := range jobs {
		if !getJSON(m.api, planPath(j.ID), &plans.Plan{}) {
			t.Errorf("run serves no plan of %s after the outage", j)
		}
	}
	m.assertRunning(t)
}

// clickHouseRow takes ClickHouse down for 60 s: run pauses, retries,
// loses nothing, and says it recovered.
func (m *matrix) clickHouseRow(t *testing.T) {
	m.ensureRun(t)
	jobs := m.running()
	k := m.mark()
	down, up := outage(t, m.chp.Addr, m.chp.Halt, m.chp.Resume)
	m.waitClosed(t, 3*time.Minute, up.Add(3*matrixWindow), jobs...)
	for _, j := range jobs {
		m.assertNoWindowLost(t, j, down.Add(-3*matrixWindow), up.Add(3*matrixWindow), false)
	}
	if t.Failed() {
		// What run said meanwhile (rebalances, retries, pauses), to
		// explain a window lost.
		var said []string
		for _, l := range m.runLogSince(k) {
			if l.Msg != "progress" && !strings.HasPrefix(l.Msg, "alert ") {
				said = append(said, l.raw)
			}
		}
		t.Logf("run's log since the outage began:\n%s", testenv.Tail(strings.Join(said, "\n"), 40))
	}
	if late := m.lateSince(k); late > 0 {
		t.Errorf("run dropped %.0f records as late", late)
	}
	recovered := regexp.MustCompile(`(?i)recovered`)
	var trace []string
	found := false
	for _, l := range m.runLogSince(k) {
		if l.Level != "INFO" || recovered.MatchString(l.Msg) {
			trace = append(trace, l.raw)
		}
		if recovered.MatchString(l.Msg) && !l.Time.Before(up.Add(-time.Second)) {
			found = true
		}
	}
	if !found {
		t.Errorf("run logged no \"recovered\" line after ClickHouse came back; its warnings and errors:\n%s", testenv.Tail(strings.Join(trace, "\n"), 20))
	}
	m.assertNotEnded(t, k, jobs...)
	m.assertLogClean(t, k)
	if !httpOK("http://" + m.plan + "/readyz") {
		t.Errorf("skewlens serve not ready again after ClickHouse came back")
	}
	for _, j := range jobs {
		if !getJSON(m.api, planPath(j.ID), &plans.Plan{}) {
			t.Errorf("run serves no plan of %s after the outage", j)
		}
	}
	m.assertRunning(t)
}

// planServerRow takes `skewlens serve` down for 60 s: the salted job
// keeps its plan in force all along (the salting operator's metric), and
// run does not notice.
func (m *matrix) planServerRow(t *testing.T) {
	m.ensureRun(t)
	j := m.job("salted", flinktest.Flink2)
	version := m.waitApplied(t, j, 2*time.Minute)
	k := m.mark()
	// The salting operator's plan, read every second through the outage
	// and 10 s after it.
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var off []string
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ctx.Err() == nil {
			if v := m.appliedVersion(j); v != int64(version) && v != -2 {
				mu.Lock()
				off = append(off, fmt.Sprintf("%s v%d", time.Now().Format(time.TimeOnly), v))
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	s := m.serve
	_, up := outage(t, m.plan, func() error {
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return err
		}
		<-s.done
		return nil
	}, func() error { m.startServe(t); return nil })
	// The job's polls answered by the plan server again (it polls every
	// 2 s): what the salting operator holds from then on is the new
	// server's word.
	route := `route="/v1/salting/{job_id}/{task_name}"`
	testenv.Eventually(t, 30*time.Second, "the job's plan polled from the plan server again", func() bool {
		return metricSum(m.plan, "skewlens_serve_requests_total", route) >= 3
	}, jobWatch(j))
	t.Logf("the job polled the plan server again %s after it came back", time.Since(up).Round(100*time.Millisecond))
	cancel()
	<-watched
	if len(off) > 0 {
		t.Errorf("%s's plan left v%d while the plan server was down: %s", j, version, strings.Join(off, ", "))
	}
	if dropped := regexp.MustCompile(`skewlens salting: cannot reach [^\n]* is dropped[^\n]*`).FindString(m.tmLogSince(k)); dropped != "" {
		t.Errorf("the job dropped its plan: %s", dropped)
	}
	for _, a := range m.alertsSince(k) {
		if a.Labels["job_id"] == j.ID && a.Status == alert.StatusFiring && a.Labels["cause"] == "data_skew" {
			t.Errorf("a data_skew alert of %s fired while its plan should be in force: %s", j, a.ID)
		}
	}
	m.waitClosed(t, time.Minute, time.Now().Add(matrixWindow), m.running()...)
	m.assertNotEnded(t, k, m.running()...)
	if !getJSON(m.api, planPath(j.ID), &plans.Plan{}) {
		t.Errorf("run serves no plan of %s", j)
	}
	m.assertLogClean(t, k)
	m.assertRunning(t)
}

// lastJobRow cancels every job for good, so that nothing reports any
// more: within --job-end-after plus a window of wall time, each run ends
// (a job_end finding), its incidents close, its alerts resolve and its
// plan is retired from run's API and the plan server's.
func (m *matrix) lastJobRow(t *testing.T) {
	m.ensureRun(t)
	jobs := m.running()
	k := m.mark()
	for _, j := range jobs {
		j.Cluster().Cancel(t, j.ID)
	}
	cancelled := time.Now()
	bound := matrixJobEndAfter + matrixWindow
	t.Logf("%d jobs cancelled %s after the row started; the bound is %s", len(jobs), cancelled.Sub(k.at).Round(100*time.Millisecond), bound)
	// Each job's end, seen by one loop for all of them; what is still
	// missing of each end when the time is up.
	endedAt, missing := map[*matrixJob]time.Time{}, map[*matrixJob][]string{}
	ended := func(j *matrixJob) bool {
		var miss []string
		var ends struct{ Findings []skew.Finding }
		if !getJSON(m.api, "/v1/findings?kind=job_end&job_id="+url.QueryEscape(j.ID), &ends) || len(ends.Findings) == 0 {
			miss = append(miss, "no job_end finding")
		}
		if incs, ok := m.incidents(j.ID); !ok || len(openIncidents(incs, "")) > 0 {
			miss = append(miss, fmt.Sprintf("incidents open: %v", openIncidents(incs, "")))
		}
		if getJSON(m.api, planPath(j.ID), &plans.Plan{}) {
			miss = append(miss, "plan served by run")
		}
		if getJSON(m.plan, planPath(j.ID), &plans.Plan{}) {
			miss = append(miss, "plan served by the plan server")
		}
		if f := m.firing(j.ID, ""); len(f) > 0 {
			miss = append(miss, fmt.Sprintf("alerts firing: %v", f))
		}
		missing[j] = miss
		return len(miss) == 0
	}
	// Until every job ended or the time is up: each job's subtest below
	// says what is missing of its end.
	deadline := cancelled.Add(bound + 90*time.Second)
	testenv.Eventually(t, time.Until(deadline)+10*time.Second, "the jobs' ends after the cancel", func() bool {
		for _, j := range jobs {
			if _, ok := endedAt[j]; !ok && ended(j) {
				endedAt[j] = time.Now()
			}
		}
		return len(endedAt) == len(jobs) || time.Now().After(deadline)
	})
	for _, j := range jobs {
		t.Run(j.role, func(t *testing.T) {
			at, ok := endedAt[j]
			if !ok {
				t.Fatalf("%s not ended %s after the cancel (the bound is %s): %s", j, time.Since(cancelled).Round(time.Second), bound, strings.Join(missing[j], "; "))
			}
			took := at.Sub(cancelled)
			t.Logf("%s ended %s after the cancel: job_end stored, incidents closed, alerts resolved, plan retired", j, took.Round(100*time.Millisecond))
			if took > bound+time.Second {
				t.Errorf("%s ended %s after the cancel, beyond --job-end-after plus a window (%s)", j, took.Round(100*time.Millisecond), bound)
			}
			var ends struct{ Findings []skew.Finding }
			if getJSON(m.api, "/v1/findings?kind=job_end&job_id="+url.QueryEscape(j.ID), &ends) && len(ends.Findings) > 0 {
				if e := ends.Findings[0].JobEnd; e == nil || e.Reason != skew.EndStopped {
					t.Errorf("job_end of %s: %+v, want stopped", j, e)
				}
			}
			var n uint64
			if err := m.conn.QueryRow(context.Background(), "SELECT count() FROM "+m.db+".findings WHERE kind = 'job_end' AND job_id = ?", j.ID).Scan(&n); err != nil || n == 0 {
				t.Errorf("no job_end finding of %s in ClickHouse (%v)", j, err)
			}
		})
	}
	m.assertLogClean(t, k)
	m.assertRunning(t)
}
