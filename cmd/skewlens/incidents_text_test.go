package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/skew"
)

// TestAnalyzeIncidentText replays simulated incidents: `-o text` prints
// one line per incident, whose window count and duration are those of the
// condition's findings in the JSON output, and --per-window prints the
// line per finding as before.
func TestAnalyzeIncidentText(t *testing.T) {
	for _, sc := range []simulate.Scenario{simulate.Scenario("hot_key"), simulate.Scenario("slow_sink")} {
		t.Run(string(sc), func(t *testing.T) {
			g, err := simulate.New(exampleIncident(sc))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := g.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "in.log")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			code, js, errOut := runCLI(t, "", "analyze", "-i", path)
			if code != 0 {
				t.Fatalf("json: exit %d: %s", code, errOut)
			}
			// Windows per saturation cause in the JSON output.
			windows := map[string]int{}
			first, last := map[string]int64{}, map[string]int64{}
			fs := decodeFindings(t, js)
			perWindowLines := len(fs)
			for _, f := range fs {
				if f.Kind != skew.KindSaturation {
					continue
				}
				windows[f.Cause]++
				if _, ok := first[f.Cause]; !ok {
					first[f.Cause] = f.WindowStart
				}
				last[f.Cause] = f.WindowEnd
			}
			if len(windows) == 0 {
				t.Fatal("no saturation findings in the JSON output")
			}
			code, text, errOut := runCLI(t, "", "analyze", "-i", path, "-o", "text")
			if code != 0 {
				t.Fatalf("text: exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
			if len(lines) >= perWindowLines/4 {
				t.Errorf("%d incident lines for %d findings: not folded\n%s", len(lines), perWindowLines, text)
			}
			for cause, n := range windows {
				dur := time.Duration(last[cause]-first[cause]) * time.Millisecond
				re := regexp.MustCompile(`(?m)^\S+ \S+ UTC  (open|closed) +` + cause + ` .* ` + regexp.QuoteMeta(dur.String()) + fmt.Sprintf(` \(%d windows\)`, n))
				if !re.MatchString(text) {
					t.Errorf("no incident line for %s lasting %s in %d windows:\n%s", cause, dur, n, text)
				}
			}
			code, pw, errOut := runCLI(t, "", "analyze", "-i", path, "-o", "text", "--per-window")
			if code != 0 {
				t.Fatalf("per window: exit %d: %s", code, errOut)
			}
			if got := strings.Count(pw, "\n"); got != perWindowLines {
				t.Errorf("--per-window printed %d lines, want one per finding (%d)", got, perWindowLines)
			}
		})
	}
}
