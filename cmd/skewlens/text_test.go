package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/internal/findingtext"
	"github.com/skewlens/skewlens/internal/termtext"
	"github.com/skewlens/skewlens/skew"
)

// textFindings are findings as writeText gets them, some with hostile job
// and task names, keys and summaries.
func textFindings() map[string]*skew.Finding {
	sub := func(i int) *int { return &i }
	notSaturated := false
	const ws = 1593004380000 // 2020-06-24 13:13:00 UTC
	return map[string]*skew.Finding{
		"hot key": {Kind: skew.KindHotKey, JobName: "billing", TaskName: "agg", SubtaskIndex: sub(2), WindowStart: ws,
			HotKey: &skew.HotKey{Key: "u42|1593004200000", Share: 0.322, EstimatedRecords: 189845}},
		"hot key, not saturated": {Kind: skew.KindHotKey, TaskName: "agg", SubtaskIndex: sub(0), WindowStart: ws,
			HotKey: &skew.HotKey{Key: "k", Share: 0.05, EstimatedRecords: 10, Saturated: &notSaturated}},
		"hot key with margins": {Kind: skew.KindHotKey, JobName: "billing", TaskName: "agg", SubtaskIndex: sub(2), WindowStart: ws,
			HotKey: &skew.HotKey{Key: "customer-42", Share: 0.18, ShareMargin: 0.031, Rule: "subtask",
				SubtaskShare: 0.46, SubtaskShareMargin: 0.081, EstimatedRecords: 54000}},
		"tiny hot key with a margin": {Kind: skew.KindHotKey, JobName: "billing", TaskName: "agg", SubtaskIndex: sub(2), WindowStart: ws,
			HotKey: &skew.HotKey{Key: "k", Share: 0.004, ShareMargin: 0.002, Rule: "task", EstimatedRecords: 40}},
		"CJK and emoji key": {Kind: skew.KindHotKey, JobName: "会计", TaskName: "聚合 🔥", SubtaskIndex: sub(3), WindowStart: ws,
			HotKey: &skew.HotKey{Key: strings.Repeat("中文🔥", 30), Share: 0.5, EstimatedRecords: 1e6}},
		"hostile names": {Kind: skew.KindHotKey, JobName: "job\x1b[31m\nred", TaskName: "Source: Kafka\r\n-> \x1b]0;title\x07Map \"q\"",
			SubtaskIndex: sub(1), WindowStart: ws,
			HotKey: &skew.HotKey{Key: "\x1b[2J\x1b[H\nnew\"line\\", Share: 0.4, EstimatedRecords: 99}},
		"hostile summary": {Kind: skew.KindSaturation, JobName: "j", TaskName: "sink\x1b[0m", SubtaskIndex: sub(5), WindowStart: ws,
			Saturation: &skew.Saturation{Cause: skew.CauseSlowSubtask, Host: "host\x1b[2J"},
			Summary:    "Subtask 5 is slow; jstack the TaskManager on host host\x1b[2J\nrm -rf, check its sink client."},
		"salting plan": {Kind: skew.KindSaltingPlan, JobName: "billing", TaskName: "agg", WindowStart: ws,
			Summary: `Salt hot key "u42" of "agg" into 7 buckets.`},
		"stats": {Kind: skew.KindSubtaskStats, JobName: "billing", TaskName: "agg", SubtaskIndex: sub(2), WindowStart: ws,
			Stats: &skew.SubtaskStats{BusyMsPerSecond: 990, RecordsInPerSecond: 1400.5, InputShare: 0.31, InPoolUsage: 1}},
	}
}

// TestTextLine: without a width, each line is exactly the layout people
// read: the window start in UTC with its zone, the kind or cause, the
// place and the key or summary, every string from the data escaped.
func TestTextLine(t *testing.T) {
	tests := map[string]string{
		"hot key":                    "2020-06-24 13:13:00 UTC  hot_key            billing/agg #2                       key \"u42|1593004200000\" carries 32.2% (~189845 records)\n",
		"hot key, not saturated":     "2020-06-24 13:13:00 UTC  hot_key            agg #0                               key \"k\" carries 5.0% (~10 records); task not saturated, no alert\n",
		"hot key with margins":       "2020-06-24 13:13:00 UTC  hot_key            billing/agg #2                       key \"customer-42\" carries 18% ± 3 and 46% ± 8 of its subtask (~54000 records)\n",
		"tiny hot key with a margin": "2020-06-24 13:13:00 UTC  hot_key            billing/agg #2                       key \"k\" carries 0.4% ± 0.2 (~40 records)\n",
		"hostile names": "2020-06-24 13:13:00 UTC  hot_key            job\\x1b[31m\\nred/Source: Kafka\\r\\n-> \\x1b]0;title\\x07Map \"q\" #1 " +
			`key "\x1b[2J\x1b[H\nnew\"line\\" carries 40.0% (~99 records)` + "\n",
		"hostile summary": "2020-06-24 13:13:00 UTC  slow_subtask       j/sink\\x1b[0m #5                     " +
			`Subtask 5 is slow; jstack the TaskManager on host host\x1b[2J\nrm -rf, check its sink client.` + "\n",
		"salting plan": "2020-06-24 13:13:00 UTC  salting_plan       billing/agg                          Salt hot key \"u42\" of \"agg\" into 7 buckets.\n",
		"stats":        "2020-06-24 13:13:00 UTC  subtask_stats      billing/agg #2                       busy  990  bp    0  idle    0 ms/s  in    1400.5/s  share  31.0%  inPool 1.00  outPool 0.00\n",
	}
	findings := textFindings()
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := findingtext.WriteFinding(&b, findings[name], 0); err != nil {
				t.Fatal(err)
			}
			if b.String() != want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), want)
			}
		})
	}
}

// TestTextFitsWidth draws every finding at many widths: each is one line,
// no wider than asked, valid UTF-8 with no raw control character (an
// escape sequence never reaches the terminal), never cut inside a rune;
// wide enough, the key and the share are whole.
func TestTextFitsWidth(t *testing.T) {
	for name, f := range textFindings() {
		for width := 27; width <= 260; width += 7 {
			var b bytes.Buffer
			if err := findingtext.WriteFinding(&b, f, width); err != nil {
				t.Fatal(err)
			}
			line, ok := strings.CutSuffix(b.String(), "\n")
			if !ok || strings.Contains(line, "\n") {
				t.Fatalf("%s at %d: not one line: %q", name, width, b.String())
			}
			if w := termtext.Width(line); w > width {
				t.Errorf("%s at %d: %d columns: %q", name, width, w, line)
			}
			for _, r := range line {
				if !strconv.IsPrint(r) {
					t.Fatalf("%s at %d: unprintable %U in %q", name, width, r, line)
				}
			}
			if !strings.HasPrefix(line, "2020-06-24 13:13:00 UTC  ") {
				t.Errorf("%s at %d: no time with zone: %q", name, width, line)
			}
			if name == "hot key" && width >= 120 && !strings.Contains(line, `key "u42|1593004200000" carries 32.2%`) {
				t.Errorf("%s at %d: key or share cut: %q", name, width, line)
			}
		}
	}
}

// TestAnalyzeTextGolden: analyze -o text of the rotating hot key incident,
// a line per finding (--per-window) as wide as the findings need and
// fitted to 100 columns, and a line per incident (the default). The
// summaries of the rotating hot key say where the hot spot was before.
func TestAnalyzeTextGolden(t *testing.T) {
	path := incidentDir + "/rotating_hot_key.log.gz"
	for _, tc := range []struct {
		name      string
		width     string
		perWindow bool
	}{{"analyze-text-rotating", "0", true}, {"analyze-text-rotating-width-100", "100", true}, {"analyze-text-rotating-incidents", "0", false}} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"analyze", "-i", path, "-o", "text", "--width", tc.width}
			if tc.perWindow {
				args = append(args, "--per-window")
			}
			code, out, errOut := runCLI(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden(t, tc.name, out)
			if tc.perWindow && tc.width == "0" && !strings.Contains(out, "the hot spot was on subtask 2 before and moved here in the window starting 2020-06-24 13:15:00 UTC") {
				t.Error("no rotating_hot_key summary says where the hot spot was before")
			}
		})
	}
}
