package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
)

// incidentDir holds the example incidents, one gzip file per scenario,
// made by `make incidents` (this test with -update).
const incidentDir = "../../testdata/incidents"

// exampleIncident is the configuration behind each example file: six
// minutes in mixed formats, starting two minutes before a 5-minute bucket
// boundary so the rotating hot key moves inside the file.
func exampleIncident(sc simulate.Scenario) simulate.Config {
	return simulate.Config{
		Scenario: sc, Seed: 42, Start: 1593004380000, Duration: 6 * time.Minute,
		SamplesPerInterval: 400, MetricFormat: "mixed", Naming: "mixed",
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
