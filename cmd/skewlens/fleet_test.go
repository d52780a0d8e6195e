package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
)

// readFleetTruth reads simulate --truth's JSON lines.
func readFleetTruth(t *testing.T, path string) []simulate.Truth {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []simulate.Truth
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var tr simulate.Truth
		if err := json.Unmarshal(sc.Bytes(), &tr); err != nil {
			t.Fatalf("truth line %q: %v", sc.Text(), err)
		}
		out = append(out, tr)
	}
	return out
}

// TestSimulateFleetGolden: what `simulate --jobs 3` says and writes, as a
// golden file: its summary, its ground truth and the digest and size of
// its data (the data itself, 2 MB, is checked by the digest).
func TestSimulateFleetGolden(t *testing.T) {
	dir := t.TempDir()
	data, truth := filepath.Join(dir, "fleet.log"), filepath.Join(dir, "truth.jsonl")
	code, out, errOut := runCLI(t, "", "simulate", "--jobs", "3", "--duration", "1m", "--fleet-max-parallelism", "8", "-o", data, "--truth", truth)
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errOut)
	}
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := os.ReadFile(truth)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("stderr:\n%s\ntruth:\n%s\ndata: %d lines, %d bytes, sha256 %x\n",
		errOut, tr, strings.Count(string(raw), "\n"), len(raw), sha256.Sum256(raw))
	golden(t, "simulate-fleet-3", got)
}

// TestSimulateFleetUsage: the rules between a scenario and the fleet
// flags, in simulate and in run (checked before run starts anything).
func TestSimulateFleetUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"neither", []string{"simulate"}, 1, "give a scenario, or --jobs or --subtasks"},
		{"both", []string{"simulate", "hot_key", "--jobs", "3"}, 1, "a fleet places its incidents itself"},
		{"jobs and subtasks", []string{"simulate", "--jobs", "3", "--subtasks", "100"}, 1, "give one of them"},
		{"truth without fleet", []string{"simulate", "hot_key", "--truth", "x"}, 1, "--truth: only with --jobs"},
		{"bad scenario", []string{"simulate", "frob"}, 2, `<scenario> must be one of "healthy"`},
		{"sampled share", []string{"simulate", "--jobs", "3", "--sampled-tasks", "0"}, 1, "--sampled-tasks 0: must be in (0,1]"},
		{"max parallelism", []string{"simulate", "--jobs", "3", "--fleet-max-parallelism", "2"}, 1, "--fleet-max-parallelism 2"},
		{"demo fleet without size", []string{"demo", "--simulate", "fleet"}, 1, "--simulate fleet: give --jobs or --subtasks"},
		{"demo jobs without fleet", []string{"demo", "--simulate", "hot_key", "--jobs", "3"}, 1, "--jobs, --subtasks: only with --simulate fleet"},
		{"demo fleet with scenarios", []string{"demo", "--simulate", "fleet", "--simulate", "hot_key", "--jobs", "3"}, 1, `--simulate "fleet": want all or some of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, "", tt.args...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want exit %d containing %q", code, errOut, tt.wantCode, tt.wantErr)
			}
		})
	}
}

// TestAnalyzeFleet is the honest check of the fleet: analyze on a fleet
// file finds each placed incident as its ground truth says (the right
// cause on the right task and subtask, nothing else on that job) and
// nothing on the healthy jobs, among jobs of every shape.
func TestAnalyzeFleet(t *testing.T) {
	dir := t.TempDir()
	data, truth := filepath.Join(dir, "fleet.log"), filepath.Join(dir, "truth.jsonl")
	code, _, errOut := runCLI(t, "", "simulate", "--jobs", "16", "--incidents", "10", "--seed", "12",
		"--fleet-max-parallelism", "40", "--samples-per-interval", "1000", "-o", data, "--truth", truth)
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errOut)
	}
	truths := readFleetTruth(t, truth)
	if len(truths) != 16 {
		t.Fatalf("%d jobs in the truth, want 16", len(truths))
	}
	code, out, errOut := runCLI(t, "", "analyze", "-i", data)
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, " 0 late, 0 rejected, 0 bad") {
		t.Errorf("input not clean: %s", errOut)
	}
	byJob := map[string][]finding{}
	for _, f := range parseFindings(t, out) {
		byJob[f.JobID] = append(byJob[f.JobID], f)
	}
	causes := map[simulate.Scenario]int{}
	for _, tr := range truths {
		causes[tr.Scenario]++
		t.Run(tr.JobName+"/"+string(tr.Scenario), func(t *testing.T) {
			checkDiagnosis(t, tr, 10*time.Second, 10*time.Second, byJob[tr.JobID])
		})
		delete(byJob, tr.JobID)
	}
	for id, fs := range byJob {
		t.Errorf("%d findings for job id %s, which the truth does not list", len(fs), id)
	}
	if len(causes) != len(simulate.Scenarios()) {
		t.Errorf("scenarios placed %v, want every one", causes)
	}
}
