package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// writeFlink23Capture writes what a Flink 2.3 job gave with its own
// PrometheusReporter: raw scrapes (no timestamps; each after its
// skewlens-scrape-time comment; names filtered to [A-Za-z0-9:_]) with
// the accumulateBusyTimeMs counter and a busy gauge that lags behind it,
// and key samples under the name the Flink API gives. The hot subtask's
// counter rises by 990 ms/s while its gauge still reads 300.
func writeFlink23Capture(t *testing.T, dir string) (scrapes, keys string, hot int) {
	t.Helper()
	const (
		p      = 8
		t0     = int64(1593004200000)
		taskID = "cbc357ccb763df2852fee8c4fc7d55f2"
	)
	r, err := keygroup.NewRouter(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	hot = r.Subtask("u42")
	var s, k strings.Builder
	counter := make([]float64, p)
	for w := range 5 {
		ws := t0 + int64(w)*10000
		fmt.Fprintf(&s, "# skewlens-scrape-time %d\n# TYPE flink_taskmanager_job_task_accumulateBusyTimeMs gauge\n", ws+5000)
		for i := range p {
			busy, gauge, rate := 250.0, 250.0, 300.0
			if i == hot {
				busy, gauge, rate = 990, 300, 1400
			}
			counter[i] += busy * 10
			labels := fmt.Sprintf(`{job_id="j",job_name="enrich_job",subtask_index="%d",task_attempt_id="e_%s_%d_0",task_attempt_num="0",task_id="%s",task_name="KeyedProcess____enrich",tm_id="localhost:35013_6b1e1c",}`,
				i, taskID, i, taskID)
			fmt.Fprintf(&s, "flink_taskmanager_job_task_accumulateBusyTimeMs%s %.1f\n", labels, counter[i])
			fmt.Fprintf(&s, "flink_taskmanager_job_task_busyTimeMsPerSecond%s %.1f\n", labels, gauge)
			fmt.Fprintf(&s, "flink_taskmanager_job_task_numRecordsInPerSecond%s %.1f\n", labels, rate)
			fmt.Fprintf(&s, "flink_taskmanager_job_task_mailboxLatencyMs%s NaN\n", strings.Replace(labels, "}", `quantile="0.5",}`, 1))
		}
		for i := range 500 {
			key := fmt.Sprintf("user%d", i)
			if i < 200 {
				key = "u42"
			}
			fmt.Fprintf(&k, `{"ts":%d,"job_id":"j","job_name":"enrich job","task_name":"KeyedProcess -> enrich","key":%q,"sample_rate":0.01,"parallelism":%d}`+"\n",
				ws+1000, key, p)
		}
	}
	scrapes, keys = filepath.Join(dir, "scrapes.prom"), filepath.Join(dir, "keys.jsonl")
	for path, body := range map[string]string{scrapes: s.String(), keys: k.String()} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return scrapes, keys, hot
}

// TestAnalyzeFlink23Capture: the two spellings of the task make one task
// whose data_skew findings carry the hot key and the human name; the busy
// time comes from the counters, and --busy-from gauges, reading the
// lagging gauge, finds no saturation in the same capture.
func TestAnalyzeFlink23Capture(t *testing.T) {
	scrapes, keys, hot := writeFlink23Capture(t, t.TempDir())
	for _, tc := range []struct {
		busyFrom  string
		wantSat   int
		wantSrc   string
		wantBusy0 float64 // the hot subtask's busy time in the second window
	}{
		{"auto", 3, "counter", 990}, // window 0 has no counter difference yet: windows 2 to 4
		{"gauges", 0, "gauge", 300},
	} {
		t.Run(tc.busyFrom, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", "analyze", "-i", scrapes, "-i", keys, "--stats", "--busy-from", tc.busyFrom)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(errOut, " 0 bad\n") {
				t.Errorf("bad lines: %s", errOut)
			}
			sat, stats := 0, 0
			sc := bufio.NewScanner(strings.NewReader(out))
			for sc.Scan() {
				var f skew.Finding
				if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
					t.Fatal(err)
				}
				if f.TaskName != "KeyedProcess -> enrich" || f.JobName != "enrich job" {
					t.Fatalf("%s finding on %q/%q", f.Kind, f.JobName, f.TaskName)
				}
				switch f.Kind {
				case skew.KindSaturation:
					sat++
					if f.Cause != skew.CauseDataSkew || *f.SubtaskIndex != hot || len(f.Evidence.HotKeys) != 1 || f.Evidence.HotKeys[0].Key != "u42" {
						t.Errorf("finding %s", sc.Text())
					}
				case skew.KindSubtaskStats:
					stats++
					if f.Stats.BusySource != tc.wantSrc {
						t.Errorf("busy_source %q, want %q", f.Stats.BusySource, tc.wantSrc)
					}
					if *f.SubtaskIndex == hot && f.WindowStart == 1593004210000 && f.Stats.BusyMsPerSecond != tc.wantBusy0 {
						t.Errorf("hot subtask busy %v, want %v", f.Stats.BusyMsPerSecond, tc.wantBusy0)
					}
				}
			}
			if sat != tc.wantSat || stats == 0 {
				t.Errorf("%d saturation findings and %d stats rows, want %d and some", sat, stats, tc.wantSat)
			}
		})
	}
	if code, _, errOut := runCLI(t, "", "analyze", "-i", scrapes, "--busy-from", "counters"); code != 2 || !strings.Contains(errOut, "--busy-from") {
		t.Errorf("bad --busy-from: exit %d, %s", code, errOut)
	}
}
