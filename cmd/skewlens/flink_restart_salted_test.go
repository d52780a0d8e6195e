package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv/flinktest"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestFlinkJobRestartSalted resubmits a salted Flink job under `skewlens
// run` (issue 32): the hot-key job applies its plans from the salting API;
// once its first run applies one, it is stopped and submitted again under
// the same name, which gives it a new job id. The second run's plan client
// asks with its job name and parallelism pair, and is answered at its first
// poll, in open(), with the first run's plan (the lineage answer): the
// plan is in force before the job runs, so its first record is salted.
// Later the plan carried over to the second run's own id (job_end)
// replaces it. It logs both times from the second run's submission: the
// lineage plan's (the unsalted time now) and the own plan's (the unsalted
// time before lineage answers).
func TestFlinkJobRestartSalted(t *testing.T) {
	const hotKey = "customer-42"
	jobArgs := []string{"--hot-key", hotKey, "--hot-share", "0.7", "--rate", "1400"}
	l := startLoopWith(t, loopOptions{scenario: "hot_key", name: "restart-salted", jobArgs: jobArgs, salting: true})
	first := l.job
	var p plans.Plan
	l.waitFor(3*time.Minute, "the first run's plan", func() bool { return l.getJSON(l.planPath(keyedTask), &p) })
	l.waitFor(time.Minute, "the first run applying its plan", func() bool {
		return strings.Contains(first.Output(), "of job "+first.ID+` ("`) && strings.Contains(first.Output(), "applying plan v")
	})
	t.Logf("first run %s applies plan v%d", first.ID, p.Version)

	first.Stop()
	second := flinktest.StartScenario(t, append(l.jobArgs("hot_key", jobArgs),
		"--salting-url", "http://"+l.api, "--salting-poll-interval", "2s")...)
	l.job = second
	if second.ID == first.ID {
		t.Fatalf("the second run has the first run's job id %s", first.ID)
	}
	out := second.Output()
	submitted := scenarioSubmitted(t, out)
	lineage := "of job " + first.ID + ", the newest run of "
	at, i := firstLogLine(t, out, submitted, func(s string) bool { return strings.Contains(s, "applying plan v") && strings.Contains(s, lineage) })
	ready := strings.Index(out, "SCENARIO_READY")
	if i < 0 || ready < 0 || i > ready {
		t.Fatalf("the second run did not apply the first run's plan before it ran (lineage line at %d, ready at %d):\n%s", i, ready, second.Tail(60))
	}
	t.Logf("second run %s: the first run's plan (lineage answer) applied %s after submission, before the job ran: the first record is salted",
		second.ID, at.Sub(submitted).Round(100*time.Millisecond))

	// skewlens links the runs and carries the plan over to the second
	// run's own id: the client switches to it (same salted keys).
	own := "(replaces v"
	l.waitFor(3*time.Minute, "the second run applying its own plan", func() bool {
		return strings.Contains(second.Output(), own)
	})
	ownAt, _ := firstLogLine(t, second.Output(), submitted, func(s string) bool {
		return strings.Contains(s, "applying plan v") && strings.Contains(s, "of job "+second.ID) && strings.Contains(s, own)
	})
	t.Logf("second run: its own plan (carried over at the job_end) applied %s after submission: the unsalted time without the lineage answer",
		ownAt.Sub(submitted).Round(100*time.Millisecond))
}

// scenarioSubmitted returns when the ScenarioJob in out submitted its job
// (its "<RFC 3339> ScenarioJob: submitted job" line).
func scenarioSubmitted(t *testing.T, out string) time.Time {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if ts, rest, ok := strings.Cut(line, " ScenarioJob: submitted job"); ok && rest != "" {
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatalf("submission line %q: %v", line, err)
			}
			return at
		}
	}
	t.Fatalf("no submission line in the job's output:\n%s", out)
	return time.Time{}
}

var log4jTime = regexp.MustCompile(`^(\d\d):(\d\d):(\d\d)\.(\d\d\d) `)

// firstLogLine finds the first log line of out that match accepts and returns
// its time (log4j's HH:mm:ss.SSS, in UTC, on day's date, or the next day
// when earlier) and its byte offset in out; -1 when there is none.
func firstLogLine(t *testing.T, out string, day time.Time, match func(string) bool) (time.Time, int) {
	t.Helper()
	off := 0
	for _, line := range strings.SplitAfter(out, "\n") {
		if match(line) {
			m := log4jTime.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("log line without a time: %q", line)
			}
			at, err := time.Parse("2006-01-02 15:04:05.000", day.UTC().Format("2006-01-02")+" "+m[1]+":"+m[2]+":"+m[3]+"."+m[4])
			if err != nil {
				t.Fatal(err)
			}
			if at.Before(day.Add(-time.Hour)) {
				at = at.Add(24 * time.Hour)
			}
			return at, off
		}
		off += len(line)
	}
	return time.Time{}, -1
}
