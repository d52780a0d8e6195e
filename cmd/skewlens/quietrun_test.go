package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
)

// TestRunHealthyLogsNoWarnings runs what make run runs (`run --simulate
// all --speed 10` on the embedded broker, with the salting API on
// loopback and alerts only in the log) and checks that a healthy run logs
// no WARN or ERROR line: a warning on a normal run teaches people to
// ignore warnings. Before, it logged kafka-go's i/o timeouts on empty
// partitions and "reading plan overrides failed … context canceled" at
// the stop. Two differences from make run keep it affordable in CI: the
// ClickHouse server is the tests' shared one (chtest) instead of a local
// one under .state, and the run's stdout is read by the test rather than a
// terminal. It runs 2 minutes, as `make run DURATION=2m` does: past the
// end of the simulated incidents (75 s, make run's default), so the idle
// minute after them, with its progress lines, override polls and empty
// partitions, is covered too, and then the stop.
func TestRunHealthyLogsNoWarnings(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ClickHouse server and runs for 2 minutes")
	}
	chAddr := chtest.Start(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "demo", "--simulate", "all", "--speed", "10", "--duration", "2m",
		"--api-listen", fmt.Sprintf("127.0.0.1:%d", port), "--clickhouse-addr", chAddr,
		"--database", "e2e_quiet", "--group", "e2e-quiet", "--state-dir", t.TempDir(),
		"--listen", "127.0.0.1:0", "--log-format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, tail([]byte(errOut)))
	}
	// The run did its work: incidents were printed, and logged lines were read.
	if !strings.Contains(out, "  opened  ") {
		t.Fatalf("no incident opened:\n%s", out)
	}
	lines, levels := 0, map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var rec struct {
			Level string `json:"level"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Level == "" {
			// Not a log record (nothing else should write to stderr): a
			// stray warning must not hide here.
			if strings.Contains(l, "WARN") || strings.Contains(l, "ERROR") || strings.Contains(strings.ToLower(l), "warning") {
				t.Errorf("warning outside the log: %s", l)
			}
			continue
		}
		lines++
		levels[rec.Level]++
		if rec.Level == "WARN" || rec.Level == "ERROR" {
			t.Errorf("%s", l)
		}
	}
	if lines == 0 {
		t.Fatalf("no log records on stderr:\n%s", errOut)
	}
	t.Logf("log records by level: %v", levels)
}
