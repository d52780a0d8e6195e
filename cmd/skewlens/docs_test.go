package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	pwindow "github.com/skewlens/skewlens/pipeline/window"

	"github.com/skewlens/skewlens/skew/incident"

	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/sinks/alertdeliver"
	"github.com/skewlens/skewlens/sinks/alertmanager"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/sinks/kafkanotify"
	"github.com/skewlens/skewlens/sinks/planpub"
	"github.com/skewlens/skewlens/sinks/webhook"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/plans"
	"github.com/skewlens/skewlens/top"
)

// TestDocsStateTheCodeDefaults checks every default that docs/*.md
// restate against the DefaultConfig or Default constant that
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
	trk := alert.DefaultConfig()
	hyst := incident.DefaultConfig().Hysteresis
	fan := alertdeliver.DefaultFanoutConfig()
	am := alertmanager.DefaultConfig()
	wh := webhook.DefaultConfig()
	src := kafkasrc.DefaultConfig()
	// words spells the small counts the prose writes out.
	words := map[int]string{1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
	count := func(n int) string {
		if w, ok := words[n]; ok {
			return w
		}
		return fmt.Sprint(n)
	}
	outOfOrder := time.Duration(pwindow.DefaultConfig().OutOfOrderMs) * time.Millisecond

	tests := []struct {
		file   string
		phrase string
	}{
		{"docs/cli.md", fmt.Sprintf("minus the out-of-orderness (%s)", secs(outOfOrder))},
		{"docs/performance.md", fmt.Sprintf("Detection latency at the default settings (%s windows, %s out-of-orderness)", secs(window), secs(outOfOrder))},
		{"docs/cli.md", fmt.Sprintf("`%s` (`--plans-topic`)", planpub.DefaultConfig().Topic)},
		{"docs/api.md", fmt.Sprintf("has been absent for the alerts' resolve-after (%s by default)", secs(incident.DefaultConfig().Hysteresis.ResolveAfter))},
		{"docs/cli.md", fmt.Sprintf("with exponential backoff (up to %s between tries) and stops consuming", secs(stream.DefaultConfig().Retry.MaxBackoff))},
		{"docs/cli.md", fmt.Sprintf("read back every %s (`--override-poll`)", secs(planpub.DefaultConfig().OverridePoll))},
		{"docs/cli.md", fmt.Sprintf("has lasted `--alert-for` (%s)", knob.Duration(incident.DefaultConfig().Hysteresis.For))},
		{"docs/cli.md", fmt.Sprintf("`--alert-resolve-after` (%s) of absence", knob.Duration(incident.DefaultConfig().Hysteresis.ResolveAfter))},
		{"docs/cli.md", fmt.Sprintf("refreshed every %s from ClickHouse", secs(top.DefaultConfig().Refresh))},
		// top waits for ClickHouse at start with the store's backoff.
		{"docs/cli.md", fmt.Sprintf("tries again, with backoff up to %s, until it answers", secs(clickhouse.DefaultConfig().Retry.MaxBackoff))},
		{"docs/detection.md", fmt.Sprintf("busy ≥ %g ms/s (`--busy-threshold`)", eng.BusyMsPerSecond)},
		{"docs/detection.md", fmt.Sprintf("when inPoolUsage ≥ %g", eng.PoolUsage)},
		{"docs/detection.md", fmt.Sprintf("back-pressured ≥ %g ms/s are listed", eng.BackPressuredMsPerSecond)},
		{"docs/detection.md", fmt.Sprintf("**sustained** for %s (`--sustain`)", knob.Duration(time.Duration(eng.SustainMs)*time.Millisecond))},
		{"docs/detection.md", fmt.Sprintf("input balanced (skew score ≤ %g) and either ≥ %g%% of the", eng.BalancedSkewScore, eng.UnderProvisionedFraction*100)},
		{"docs/detection.md", fmt.Sprintf("≥ %g ms/s (`--under-provisioned-busy`", eng.UnderProvisionedBusy)},
		{"docs/detection.md", fmt.Sprintf("least %g of the checkpoint timeout (`--checkpoint-risk-fraction`", eng.CheckpointRiskFraction)},
		{"docs/detection.md", fmt.Sprintf("`--checkpoint-timeout`, %s by default as in Flink)", knob.Duration(time.Duration(eng.CheckpointTimeoutMs)*time.Millisecond))},
		{"docs/cli.md", fmt.Sprintf("(`%s`, `%s`; any of the four formats", src.Topics[0], src.Topics[1])},
		{"docs/cli.md", fmt.Sprintf("up to `--broker-wait` (%s), with a warning per retry", knob.Duration(src.BrokerWait))},
		{"docs/api.md", fmt.Sprintf("(at most the store timeout, %s)", secs(serve.DefaultConfig().StoreTimeout))},
		{"docs/cli.md", fmt.Sprintf("**Bad records** go to `%s` with the reason", src.DeadLetterTopic)},
		{"docs/flink.md", fmt.Sprintf("noted overdue after %s", mins(incident.DefaultConfig().ReliefWithin))},
		{"docs/flink.md", fmt.Sprintf("`--job-end-after` (%s) of the old run's last report", knob.Duration(time.Duration(eng.JobEndAfterMs)*time.Millisecond))},
		// docs/alerts.md: the state machine (prose and table).
		{"docs/alerts.md", fmt.Sprintf("`ResolveAfter` (default %s)", secs(hyst.ResolveAfter))},
		{"docs/alerts.md", fmt.Sprintf("`For` (default %s, %s %s windows)", secs(hyst.For), count(int(hyst.For/window)), secs(window))},
		{"docs/alerts.md", fmt.Sprintf("At most `MaxOpen` (%d) incidents are open", incident.DefaultConfig().MaxOpen)},
		{"docs/alerts.md", fmt.Sprintf("| `For` | %s |", knob.Duration(hyst.For))},
		{"docs/alerts.md", fmt.Sprintf("| `ResolveAfter` | %s |", knob.Duration(hyst.ResolveAfter))},
		{"docs/alerts.md", fmt.Sprintf("| `RenotifyInterval` | %d (off) |", trk.RenotifyInterval)},
		{"docs/alerts.md", fmt.Sprintf("| `Causes` | all %s |", count(len(trk.Causes)))},
		{"docs/alerts.md", fmt.Sprintf("| `Severities` | `%s`: %s, others: %s |", incident.CauseHotKey, alert.DefaultSeverity(incident.CauseHotKey), alert.DefaultSeverity(skew.CauseDataSkew))},
		// docs/alerts.md: the notifiers and the fan-out.
		{"docs/alerts.md", fmt.Sprintf("at most `MaxBatch` (%d) alerts per request", wh.MaxBatch)},
		{"docs/alerts.md", fmt.Sprintf("timeouts (`Timeout`, %s per attempt)", secs(wh.Timeout))},
		{"docs/alerts.md", fmt.Sprintf("(default `%s`, created by `EnsureTopic`", kafkanotify.DefaultConfig().Topic)},
		{"docs/alerts.md", fmt.Sprintf("`EndsAfter` (default %s)", mins(am.EndsAfter))},
		{"docs/alerts.md", fmt.Sprintf("every `ResendInterval`** (default %s)", mins(am.ResendInterval))},
		{"docs/alerts.md", fmt.Sprintf("at most `QueueCapacity` (%d) alerts", fan.QueueCapacity)},
		{"docs/alerts.md", fmt.Sprintf("after a backoff (%s doubling to %s,", secs(fan.Retry.MinBackoff), secs(fan.Retry.MaxBackoff))},
		{"docs/alerts.md", fmt.Sprintf("`DrainTimeout` (%s) to empty", secs(fan.DrainTimeout))},
		{"docs/detection.md", fmt.Sprintf("T = max(%g%%, %g/P): the floor `--hot-key-share` (%g%%)", eng.HotKeyShare*100, eng.HotKeyFairShare, eng.HotKeyShare*100)},
		{"docs/detection.md", fmt.Sprintf("(`--hot-key-fair-share` %g:", eng.HotKeyFairShare)},
		{"docs/detection.md", fmt.Sprintf("at %g%% confidence (`--hot-key-confidence`)", eng.HotKeyConfidence*100)},
		{"docs/detection.md", fmt.Sprintf("the last %d windows (`--hot-key-pool-windows`)", eng.HotKeyPoolWindows)},
		{"docs/detection.md", fmt.Sprintf("at least %g of that excess (`--hot-key-excess-share`)", eng.HotKeyExcessShare)},
		{"docs/salting-plans.md", fmt.Sprintf("| cooldown | %s | `--plan-cooldown` |", mins(pl.Cooldown))},
		{"docs/salting-plans.md", fmt.Sprintf("| TTL | %s | `--plan-ttl` |", mins(pl.TTL))},
		{"docs/salting-plans.md", fmt.Sprintf("| material bucket change | %g %% of the current count |", pl.BucketChange*100)},
		{"docs/salting-plans.md", fmt.Sprintf("| separator | `%s` (must equal the engine's `--salt-separator`) |", pl.Separator)},
		{"docs/api.md", fmt.Sprintf("(%d by default) gets 503", serve.DefaultConfig().MaxConcurrentQueries)},
		{"docs/api.md", fmt.Sprintf("(default limit %d, at most %d)", serve.DefaultLimit, serve.MaxLimit)},
		{"docs/api.md", fmt.Sprintf("(last %d hours, default limit %d, at most %d)", int(serve.DefaultFindingsWindow.Hours()), serve.DefaultLimit, serve.MaxLimit)},
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
	// "retried until delivered by default" in docs/alerts.md.
	if fan.Retry.MaxRetries >= 0 {
		t.Errorf("the fan-out retries %d times by default; docs/alerts.md says until delivered", fan.Retry.MaxRetries)
	}
	// The separator default is shared: a plan's keys are the engine's.
	if pl.Separator != eng.SaltSeparator {
		t.Errorf("plans separator %q, engine salt separator %q", pl.Separator, eng.SaltSeparator)
	}
}

// TestDocsAPITokenFile checks the token file docs/api.md shows: it loads
// with serve's own --token-file loader and passes the server's checks,
// the documented command extracts a token from it, and the prose states
// the minimum length and the log interval the code uses.
func TestDocsAPITokenFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	block := func(fence, containing string) string {
		t.Helper()
		for rest := doc; ; {
			i := strings.Index(rest, "```"+fence+"\n")
			if i < 0 {
				t.Fatalf("docs/api.md: no ```%s block with %q", fence, containing)
			}
			rest = rest[i+len(fence)+4:]
			body := rest[:strings.Index(rest, "```")]
			if strings.Contains(body, containing) {
				return body
			}
		}
	}
	yml := block("yaml", "tokens.yaml")
	tokens, err := serve.ParseTokens([]byte(yml))
	if err != nil {
		t.Fatalf("the documented token file: %v", err)
	}
	cfg := serve.DefaultConfig()
	cfg.Tokens = tokens
	if err := cfg.Validate(); err != nil || len(tokens) < 2 {
		t.Fatalf("the documented token file: %d tokens, %v", len(tokens), err)
	}
	// The documented way to read one token, on a copy of the file.
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(file, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	var cmd string
	for _, l := range strings.Split(block("sh", "TOKEN=$("), "\n") {
		if strings.HasPrefix(l, "TOKEN=$(") {
			cmd = strings.ReplaceAll(l, "/etc/skewlens/tokens.yaml", file)
		}
	}
	out, err := exec.Command("sh", "-c", cmd+"\nprintf %s \"$TOKEN\"").Output()
	if err != nil || string(out) != tokens["platform-oncall"] {
		t.Errorf("%s gives %q (%v), want the platform-oncall token %q", cmd, out, err, tokens["platform-oncall"])
	}
	flat := strings.Join(strings.Fields(doc), " ")
	for _, phrase := range []string{
		fmt.Sprintf("Tokens: at least %d bytes", serve.MinTokenBytes),
		fmt.Sprintf("a token shorter than %d bytes", serve.MinTokenBytes),
		fmt.Sprintf("at most one such record per %g s", serve.AuthFailureLogInterval.Seconds()),
		"read-only API: no write tokens in FILE",
		"../deploy/config/tokens.yaml",
	} {
		if !strings.Contains(flat, phrase) {
			t.Errorf("docs/api.md does not say %q", phrase)
		}
	}
}

// TestMakeRunDurationIsThePlayTime: `make run` stops after DURATION,
// which defaults to about the time the simulated incidents play (their
// simulated duration over --speed), not minutes of idle progress lines
// after them; the README states the same default.
func TestMakeRunDurationIsThePlayTime(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	mk := string(b)
	var dur time.Duration
	var speed float64
	for _, l := range strings.Split(mk, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "DURATION" && f[1] == "?=" {
			if dur, err = time.ParseDuration(f[2]); err != nil {
				t.Fatalf("Makefile: %s: %v", l, err)
			}
		}
		if strings.Contains(l, "demo --simulate all") {
			if _, err := fmt.Sscanf(l[strings.Index(l, "--speed "):], "--speed %g", &speed); err != nil {
				t.Fatalf("Makefile: %s: no --speed: %v", l, err)
			}
			if !strings.Contains(l, "--duration $(DURATION)") {
				t.Errorf("Makefile: %s: does not stop after DURATION", l)
			}
		}
	}
	if dur == 0 || speed == 0 {
		t.Fatalf("Makefile: DURATION %s, --speed %g", dur, speed)
	}
	play := time.Duration(float64(simulate.DefaultConfig().Duration) / speed)
	if dur < play || dur > play+30*time.Second {
		t.Errorf("Makefile: DURATION %s; the incidents play %s (%s at --speed %g): want at most 30 s more", dur, play, simulate.DefaultConfig().Duration, speed)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("for %g s, the incidents' play time", dur.Seconds()); !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q", want)
	}
}

// TestDocsAlertsSettingsTheBinarySets: docs/alerts.md says which settings
// `skewlens run` sets and with which flag, and marks every other field of
// the alerting configs as library only, so that no documented setting
// looks like one the binary could change when it cannot.
func TestDocsAlertsSettingsTheBinarySets(t *testing.T) {
	clearEnv(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	const head = "## What `skewlens run` sets\n"
	doc := string(b)
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("docs/alerts.md: no section %q", head)
	}
	section := doc[i+len(head):]
	section = section[:strings.Index(section, "\n## ")]
	var c cli
	p, err := newParser(&c, &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	flags := runFlags(t, p)
	byFlag := map[string]bool{} // "alertmanager.Config.URL"
	row := regexp.MustCompile("^\\| `--([a-z-]+)` \\| `([A-Za-z.]+)`")
	for _, l := range strings.Split(section, "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if _, ok := flags[strings.ReplaceAll(m[1], "-", "_")]; !ok {
			t.Errorf("docs/alerts.md: `skewlens run` has no flag --%s", m[1])
		}
		byFlag[m[2]] = true
	}
	if len(byFlag) < 5 {
		t.Fatalf("docs/alerts.md: %d flags in %q", len(byFlag), section)
	}
	flat := strings.Join(strings.Fields(section), " ")
	for _, tc := range []struct {
		name string
		cfg  any
	}{
		{"alert.Config", alert.Config{}},
		{"alertmanager.Config", alertmanager.Config{}},
		{"webhook.Config", webhook.Config{}},
		{"kafkanotify.Config", kafkanotify.Config{}},
		{"FanoutConfig", alertdeliver.FanoutConfig{}},
	} {
		libOnly := ""
		if j := strings.Index(flat, "of `"+tc.name+"`:"); j >= 0 {
			libOnly = flat[j+len(tc.name)+6:]
			libOnly = libOnly[:strings.IndexAny(libOnly, ";.")]
		}
		typ := reflect.TypeOf(tc.cfg)
		for k := range typ.NumField() {
			f := typ.Field(k).Name
			if !byFlag[tc.name+"."+f] && !strings.Contains(libOnly, "`"+f+"`") {
				t.Errorf("docs/alerts.md: %s.%s is neither set by a flag nor marked library only", tc.name, f)
			}
		}
	}
}

// TestReadmeNamesWhatMakeDepsInstalls: every install script `make deps`
// runs is named, by what it installs, in the README's `make deps`
// sentence and in the target's own help; a new script fails here until
// both say what it installs.
func TestReadmeNamesWhatMakeDepsInstalls(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mk, readme := read("Makefile"), read("README.md")
	// What each script installs, as the README and `make help` name it.
	installs := map[string]string{
		"internal/localch/install.sh":       "clickhouse-server",
		"deploy/zookeeper/install.sh":       "zookeeper",
		"deploy/alertmanager/install.sh":    "prometheus-alertmanager",
		"deploy/chromium/install.sh":        "chromium",
		"deploy/prometheus/install.sh":      "promtool",
		"deploy/systemd/install.sh":         "systemd-analyze",
		"deploy/kubernetes/install.sh":      "kubernetes-validate",
		"deploy/clickhouse/install-chdb.sh": "chDB",
		"deploy/kafka/install.sh":           "Kafka",
	}
	i := strings.Index(mk, "\ndeps:")
	if i < 0 {
		t.Fatal("Makefile: no deps target")
	}
	target := mk[i+1:]
	target = target[:strings.Index(target, "\n\n")]
	help := strings.SplitN(target, "\n", 2)[0]
	j := strings.Index(readme, "(`make deps`:")
	if j < 0 {
		t.Fatal("README.md: no (`make deps`: ...) list")
	}
	list := readme[j:]
	list = strings.Join(strings.Fields(list[:strings.Index(list, ")")]), " ")
	scripts := regexp.MustCompile(`(?:deploy|internal)/[a-z]+/install[a-z-]*\.sh`).FindAllString(target, -1)
	if len(scripts) < len(installs) {
		t.Errorf("make deps runs %d scripts %v, want the %d known", len(scripts), scripts, len(installs))
	}
	for _, s := range scripts {
		what, ok := installs[s]
		if !ok {
			t.Errorf("make deps runs %s: add what it installs to the README, the deps help and this test", s)
			continue
		}
		if !strings.Contains(list, what) {
			t.Errorf("README.md's make deps list %q does not name %s (%s)", list, what, s)
		}
		if !strings.Contains(help, what) {
			t.Errorf("Makefile deps help %q does not name %s (%s)", help, what, s)
		}
	}
}
