package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/skew"
)

// TestAnalyzeJobRestart replays two runs of one job (same name, new job
// id, 45 s apart, longer than the resolve-after time): a job_end finding
// ends the first run as restarted, naming the second, and the first
// run's incidents close "job restarted as <id>" in -o text, not as
// absent.
func TestAnalyzeJobRestart(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	ids := map[string]bool{}
	for i, seed := range []uint64{43, 143} {
		cfg := exampleIncident(simulate.HotKey)
		cfg.Seed = seed
		cfg.Duration = 3 * time.Minute
		cfg.Start += int64(i) * (cfg.Duration + 45*time.Second).Milliseconds()
		g, err := simulate.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := g.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "run"+string(rune('1'+i))+".log")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	code, js, errOut := runCLI(t, "", "analyze", "-i", strings.Join(paths, ","))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ends []skew.Finding
	for _, f := range decodeFindings(t, js) {
		ids[f.JobID] = true
		if f.Kind == skew.KindJobEnd {
			ends = append(ends, f)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("job ids %v, want two runs", ids)
	}
	if len(ends) != 1 || ends[0].JobEnd.Reason != skew.EndRestarted || !ids[ends[0].JobEnd.Successor] || ends[0].JobEnd.Successor == ends[0].JobID {
		t.Fatalf("job_end findings %+v, want one: the first run restarted as the second", ends)
	}
	code, text, errOut := runCLI(t, "", "analyze", "-i", strings.Join(paths, ","), "-o", "text")
	if code != 0 {
		t.Fatalf("text: exit %d: %s", code, errOut)
	}
	first, second := ends[0].JobID, ends[0].JobEnd.Successor
	restarted := 0
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		switch {
		case strings.Contains(line, skew.ShortID(first)+")"):
			if !strings.Contains(line, "job restarted as "+skew.ShortID(second)) || !strings.Contains(line, " closed ") {
				t.Errorf("first run's incident not closed as restarted: %s", line)
			}
			restarted++
		case !strings.Contains(line, skew.ShortID(second)+")"):
			t.Errorf("line of neither run: %s", line)
		}
	}
	if restarted == 0 {
		t.Fatalf("no incident of the first run in\n%s", text)
	}
}
