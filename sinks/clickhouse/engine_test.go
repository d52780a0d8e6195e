package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/pipeline/replay"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
)

// engineFindings replays a recorded incident through the engine (with
// subtask_stats rows) and returns its findings, decoded from their JSON
// contract as a consumer of the findings topic would.
func engineFindings(t *testing.T, incident string) []skew.Finding {
	t.Helper()
	cfg := skew.DefaultConfig()
	cfg.EmitStats = true
	eng, err := skew.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stage, err := window.New(window.Config{OutOfOrderMs: 1}, eng)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(chtest.RepoRoot(), "testdata", "incidents", incident+".log.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := replay.MaybeGunzip(f)
	if err != nil {
		t.Fatal(err)
	}
	var fs []skew.Finding
	_, err = replay.Run(context.Background(), []replay.Input{{Name: incident, R: r}}, stage, replay.Options{},
		func(f *skew.Finding) error {
			b, err := json.Marshal(f)
			if err != nil {
				return err
			}
			var c skew.Finding
			if err := json.Unmarshal(b, &c); err != nil {
				return err
			}
			// Each incident file is a job of its own; the suffix keeps
			// them apart even if two files shared a job id.
			c.JobID += "-" + incident
			fs = append(fs, c)
			return nil
		})
	if err != nil {
		t.Fatalf("replay %s: %v", incident, err)
	}
	return fs
}

// TestEngineFindingsRoundTrip writes what the engine finds in recorded
// incidents, window by window with growing versions, then replays
// everything (a crash before the offsets were committed): every finding
// is stored once, and every finding's JSON comes back unchanged (from
// findings, or for statistics from the StatsReader).
func TestEngineFindingsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var fs []skew.Finding
	t0 := time.Now()
	for _, incident := range []string{"hot_key", "slow_sink", "under_provisioned"} {
		fs = append(fs, engineFindings(t, incident)...)
	}
	t.Logf("replayed the incidents in %s", time.Since(t0))
	kinds := map[string]int{}
	for _, f := range fs {
		kinds[f.Kind]++
	}
	t.Logf("%d findings from the engine: %v", len(fs), kinds)
	for _, k := range []string{skew.KindHotKey, skew.KindSaturation, skew.KindSaltingPlan, skew.KindSubtaskStats} {
		if kinds[k] == 0 {
			t.Fatalf("the incidents gave no %s findings", k)
		}
	}

	s, _ := newTestSink(t, Config{Database: testDatabase("engine")})
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	write := func() {
		// One Write per 500 findings, as a consumer committing offsets
		// in batches would; version = the batch's end.
		for start := 0; start < len(fs); start += 500 {
			end := min(start+500, len(fs))
			if err := s.Writer().Write(ctx, uint64(end), fs[start:end]); err != nil {
				t.Fatal(err)
			}
		}
	}
	t0 = time.Now()
	write()
	write()
	t.Logf("wrote %d findings twice in %s", len(fs), time.Since(t0))

	checkFinalCounts(ctx, t, s, fs, "")
	bodies, err := queryStrings(ctx, s, "SELECT body FROM "+s.table("findings")+" FINAL")
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, b := range bodies {
		stored[b[0]]++
	}
	// Statistics are not in findings: the StatsReader rebuilds their JSON
	// from subtask_stats.
	stats, err := s.Stats().Stats(ctx, servestore.StatsQuery{Limit: MaxStatsLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != kinds[skew.KindSubtaskStats] {
		t.Errorf("StatsReader: %d rows, want %d", len(stats), kinds[skew.KindSubtaskStats])
	}
	for _, b := range stats {
		stored[string(b)]++
	}
	for i := range fs {
		b, err := marshalJSON(&fs[i])
		if err != nil {
			t.Fatal(err)
		}
		if stored[b] != 1 {
			t.Fatalf("finding %d stored %d times: %s", i, stored[b], b)
		}
	}
}

// checkFinalCounts checks that each table of s holds, with FINAL, each
// of fs once (fixtureCounts), however often it was written; where says
// which way the rows were read.
func checkFinalCounts(ctx context.Context, t *testing.T, s *Store, fs []skew.Finding, where string) {
	t.Helper()
	want := fixtureCounts(fs)
	for _, table := range tableOrder() {
		got, err := queryStrings(ctx, s, "SELECT count() FROM "+s.table(table)+" FINAL")
		if err != nil {
			t.Fatal(err)
		}
		if got[0][0] != fmt.Sprint(want[table]) {
			t.Errorf("%s%s: %s rows with FINAL, want %d", table, where, got[0][0], want[table])
		}
	}
}
