package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/alert"
	"github.com/skewlens/skewlens/plans"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/sinks/planpub"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/top"
)

// TestDocsStateTheCodeDefaults checks every default that README.md and
// docs/*.md restate against the DefaultConfig or Default constant that
// owns it, so a changed default fails here until the prose follows.
// Phrases are compared with runs of white space collapsed, so rewrapping
// the prose does not matter.
func TestDocsStateTheCodeDefaults(t *testing.T) {
	clearEnv(t)
	eng := skew.DefaultConfig()
	pl := plans.DefaultConfig()
	secs := func(d time.Duration) string { return fmt.Sprintf("%g s", d.Seconds()) }
	mins := func(d time.Duration) string { return fmt.Sprintf("%g min", d.Minutes()) }
	window := time.Duration(eng.WindowMs) * time.Millisecond
	// run's watermark default is the flag's: pipeline/window has no
	// Default function to read it from.
	outOfOrder := parse(t, "run").Run.OutOfOrderness

	tests := []struct {
		file   string
		phrase string
	}{
		{"README.md", fmt.Sprintf("minus the out-of-orderness (%s)", secs(outOfOrder))},
		{"README.md", fmt.Sprintf("Detection latency at the default settings (%s windows, %s out-of-orderness)", secs(window), secs(outOfOrder))},
		{"README.md", fmt.Sprintf("`%s` (`--plans-topic`)", planpub.DefaultConfig().Topic)},
		{"README.md", fmt.Sprintf("read back every %s (`--override-poll`)", secs(planpub.DefaultOverridePoll))},
		{"README.md", fmt.Sprintf("`--alert-for` (%s) before firing", fmtDuration(alert.DefaultFor))},
		{"README.md", fmt.Sprintf("`--alert-resolve-after` (%s) of absence", fmtDuration(alert.DefaultResolveAfter))},
		{"README.md", fmt.Sprintf("refreshed every %s from ClickHouse", secs(top.DefaultConfig().Refresh))},
		{"README.md", fmt.Sprintf("busy ≥ %g ms/s (`--busy-threshold`)", eng.BusyMsPerSecond)},
		{"README.md", fmt.Sprintf("when inPoolUsage ≥ %g", eng.PoolUsage)},
		{"README.md", fmt.Sprintf("back-pressured ≥ %g ms/s are listed", eng.BackPressuredMsPerSecond)},
		{"README.md", fmt.Sprintf("**sustained** for %d observed windows (`--sustain`)", eng.SustainWindows)},
		{"README.md", fmt.Sprintf("input balanced (skew score ≤ %g) and either ≥ %g%% of the", eng.BalancedSkewScore, eng.UnderProvisionedFraction*100)},
		{"README.md", fmt.Sprintf("≥ %g ms/s (`--under-provisioned-busy`", eng.UnderProvisionedBusy)},
		{"README.md", fmt.Sprintf("T = max(%g%%, %g/P, R(n)): the floor `--hot-key-share` (%g%%)", eng.HotKeyShare*100, eng.HotKeyFairShare, eng.HotKeyShare*100)},
		{"README.md", fmt.Sprintf("(`--hot-key-fair-share` %g:", eng.HotKeyFairShare)},
		{"README.md", fmt.Sprintf("at %g%% confidence (`--hot-key-confidence`)", eng.HotKeyConfidence*100)},
		{"README.md", fmt.Sprintf("`--hot-key-miss-rate` %s)", fmtFloat(eng.HotKeyMissRate))},
		{"docs/salting-plans.md", fmt.Sprintf("| cooldown | %s | `--plan-cooldown` |", mins(pl.Cooldown))},
		{"docs/salting-plans.md", fmt.Sprintf("| TTL | %s | `--plan-ttl` |", mins(pl.TTL))},
		{"docs/salting-plans.md", fmt.Sprintf("| material bucket change | %g %% of the current count |", pl.BucketChange*100)},
		{"docs/salting-plans.md", fmt.Sprintf("| separator | `%s` (must equal the engine's `--salt-separator`) |", pl.Separator)},
		{"docs/api.md", fmt.Sprintf("(%d by default) gets 503", serve.DefaultConfig().MaxConcurrentQueries)},
		{"docs/api.md", fmt.Sprintf("(default limit %d, at most %d)", serve.DefaultLimit, serve.MaxLimit)},
	}
	docs := map[string]string{}
	for _, tt := range tests {
		doc, ok := docs[tt.file]
		if !ok {
			b, err := os.ReadFile(filepath.Join("..", "..", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			doc = strings.Join(strings.Fields(string(b)), " ")
			docs[tt.file] = doc
		}
		if !strings.Contains(doc, strings.Join(strings.Fields(tt.phrase), " ")) {
			t.Errorf("%s does not say %q: update it to the code's default", tt.file, tt.phrase)
		}
	}
	// The separator default is shared: a plan's keys are the engine's.
	if pl.Separator != eng.SaltSeparator {
		t.Errorf("plans separator %q, engine salt separator %q", pl.Separator, eng.SaltSeparator)
	}
}
