package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
)

// incidentDir holds the example incidents, one gzip file per scenario,
// made by `make incidents` (this test with -update).
const incidentDir = "../../testdata/incidents"

// exampleIncident is the configuration behind each example file: six
// minutes in mixed formats, starting two minutes before a 5-minute bucket
// boundary so the rotating hot key moves inside the file. Each file is a
// job of its own, named after its scenario: the simulator makes the job
// id from the seed, so the seeds differ (rotating_hot_key keeps 42, which
// TestAnalyzeTextGolden's hot spot history was written against). Files of
// one job id would merge into one job in `analyze -i a -i b`.
func exampleIncident(sc simulate.Scenario) simulate.Config {
	seeds := map[simulate.Scenario]uint64{
		simulate.Healthy: 41, simulate.HotKey: 43, simulate.RotatingHotKey: 42,
		simulate.SlowSink: 44, simulate.UnderProvisioned: 45, simulate.CheckpointTimeout: 46,
	}
	return simulate.Config{
		Scenario: sc, Seed: seeds[sc], JobName: string(sc), Start: 1593004380000, Duration: 6 * time.Minute,
		SamplesPerInterval: 400, MetricFormat: "mixed", Naming: "mixed",
	}
}

// TestIncidentFilesAreJobsOfTheirOwn: each example file is a job id and
// job name of its own, so that analyzing several together reports each
// incident as it reports it alone (docs/cli.md, "skewlens analyze").
func TestIncidentFilesAreJobsOfTheirOwn(t *testing.T) {
	byID := map[string]simulate.Scenario{}
	for _, sc := range simulate.Scenarios() {
		if exampleIncident(sc).Seed == 0 {
			t.Fatalf("%s: no seed of its own", sc)
		}
		g, err := simulate.New(exampleIncident(sc))
		if err != nil {
			t.Fatal(err)
		}
		id := g.Truth().JobID
		if other, ok := byID[id]; ok {
			t.Errorf("%s and %s share job id %s", other, sc, id)
		}
		byID[id] = sc
		if got := g.Truth().JobName; got != string(sc) {
			t.Errorf("%s: job name %q", sc, got)
		}
	}
}

// TestIncidentFiles checks that the committed example incidents are what
// the simulator makes today, and that analyze names each cause from the
// file alone.
func TestIncidentFiles(t *testing.T) {
	for _, sc := range simulate.Scenarios() {
		t.Run(string(sc), func(t *testing.T) {
			g, err := simulate.New(exampleIncident(sc))
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if _, err := g.WriteTo(&want); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(incidentDir, string(sc)+".log.gz")
			if *update {
				writeGzip(t, path, want.Bytes())
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatalf("%v (run make incidents)", err)
			}
			defer f.Close()
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%s is stale: run make incidents", path)
			}
			code, out, errOut := runCLI(t, "", "analyze", "-i", path)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			checkDiagnosis(t, g.Truth(), 10*time.Second, g.Config().Interval, parseFindings(t, out))
			// Deterministic: a second run prints the same bytes.
			if _, out2, _ := runCLI(t, "", "analyze", "-i", path); out2 != out {
				t.Fatal("two runs on the same file differ")
			}
		})
	}
}

// TestCheckpointTimeoutIncidentLinksCheckpoints checks that the
// checkpoint_timeout example says, in its saturation summaries, that the
// job's checkpoints fail or are slow and which subtask of the sink holds
// them up: with Flink's default timeout only the windows with failures do,
// with the simulated job's own short timeout also those with a slow
// checkpoint.
func TestCheckpointTimeoutIncidentLinksCheckpoints(t *testing.T) {
	path := filepath.Join(incidentDir, string(simulate.CheckpointTimeout)+".log.gz")
	linked := func(args ...string) (failing, slow, risks int) {
		t.Helper()
		code, out, errOut := runCLI(t, "", append([]string{"analyze", "-i", path}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		for _, f := range parseFindings(t, out) {
			if f.Cause == "checkpoint_risk" {
				risks++
				if f.TaskName != "Sink: es" || f.SubtaskIndex == nil ||
					!strings.Contains(f.Summary, fmt.Sprintf(`subtask %d of "Sink: es" holds up the barrier (start delay `, *f.SubtaskIndex)) {
					t.Errorf("checkpoint_risk does not name its sink subtask: %+v", f)
				}
				continue
			}
			if f.Kind != "saturation" || !strings.Contains(f.Summary, "holds up the barrier") {
				continue
			}
			if !strings.Contains(f.Summary, ` of "Sink: es" holds up the barrier (start delay `) {
				t.Errorf("summary does not name a sink subtask with its checkpoint times: %s", f.Summary)
			}
			if f.Evidence.FailedCheckpoints > 0 {
				failing++
				continue
			}
			slow++
			if want := fmt.Sprintf("Checkpoints take %.1f s because subtask ", f.Evidence.LastCheckpointMs/1000); !strings.Contains(f.Summary, want) {
				t.Errorf("summary %q lacks %q", f.Summary, want)
			}
		}
		return failing, slow, risks
	}
	failing, slow, risks := linked()
	if failing == 0 || slow != 0 || risks != 0 {
		t.Errorf("default timeout: %d failing and %d slow windows linked, %d checkpoint_risk; want some failing, no slow, no risk", failing, slow, risks)
	}
	// The simulated job times out at 60 s; half of 40 s is below its 22.9 s
	// checkpoints.
	if _, slow, risks := linked("--checkpoint-timeout", "40s"); slow == 0 || risks == 0 {
		t.Errorf("40s timeout: %d slow checkpoints linked, %d checkpoint_risk findings; want some of each", slow, risks)
	}
}

func writeGzip(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIncidentFilesMerge: analyzing two example files together reports
// each file's saturation findings as analyzing it alone does (they are
// two jobs), where before, one shared job id made slow_sink and hot_key
// one job with no saturation finding at all.
func TestIncidentFilesMerge(t *testing.T) {
	a := filepath.Join(incidentDir, string(simulate.SlowSink)+".log.gz")
	b := filepath.Join(incidentDir, string(simulate.HotKey)+".log.gz")
	causes := func(args ...string) map[string]int {
		t.Helper()
		code, out, errOut := runCLI(t, "", append([]string{"analyze", "--kind", "saturation"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		n := map[string]int{}
		for _, f := range parseFindings(t, out) {
			n[f.JobName+" "+f.Cause]++
		}
		return n
	}
	want := causes("-i", a)
	for k, v := range causes("-i", b) {
		want[k] += v
	}
	if want["slow_sink slow_subtask"] == 0 || want["hot_key data_skew"] == 0 {
		t.Fatalf("alone: %v; want slow_subtask for slow_sink and data_skew for hot_key", want)
	}
	got := causes("-i", a, "-i", b)
	if !maps.Equal(got, want) {
		t.Errorf("together: %v, want as alone: %v", got, want)
	}
}
