package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/skewlens/skewlens/alert/incident"
	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/replay"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// engineFlags are the engine thresholds as flags; shared by every command
// that runs the engine.
type engineFlags struct {
	Window                   time.Duration `help:"Tumbling event-time window." default:"${window}" group:"Engine" range:"[1ms,]"`
	TopK                     int           `name:"top-k" help:"Heavy-hitter counters per task and window; keys above 1/top-k of a task's weight are always found." default:"${top_k}" group:"Engine" range:"[2,${max_top_k}]"`
	HotKeyShare              float64       `help:"Floor of the hot-key threshold: a key under this share of a task's sampled weight is never hot." default:"${hot_key_share}" group:"Engine" range:"(0,1]"`
	HotKeyFairShare          float64       `help:"Hot-key threshold as a multiple of the fair share 1/parallelism (the threshold is the larger of this and --hot-key-share)." default:"${hot_key_fair_share}" group:"Engine" range:"(0,1]"`
	HotKeyConfidence         float64       `help:"One-sided confidence with which a key's share must be above a hot-key threshold (exact lower bound over its pooled sampled records)." default:"${hot_key_confidence}" group:"Engine" range:"[0.5,1)"`
	HotKeyPoolWindows        int           `help:"Windows over which a key's sampled records add up for the hot-key rules; a key is dropped in the first window without it." default:"${hot_key_pool_windows}" group:"Engine" range:"[1,${max_hot_key_pool_windows}]"`
	HotKeyExcessShare        float64       `help:"On a saturated subtask with skewed input, name a key that alone carries at least this share of the subtask's input above its peers' median." default:"${hot_key_excess_share}" group:"Engine" range:"(0,1]"`
	MaxHotKeys               int           `help:"Most hot_key findings per task and window." default:"${max_hot_keys}" group:"Engine" range:"[1,${max_top_k}]"`
	MinSamples               int           `help:"Sampled records (the key samples' summed weight) a task needs in a key's pooled windows before the key can be hot." default:"${min_samples}" group:"Engine" range:"[1,]"`
	BusyThreshold            float64       `help:"busyTimeMsPerSecond at or above which a subtask is saturated." default:"${busy}" group:"Engine" range:"(0,1000]"`
	PoolUsage                float64       `help:"inPoolUsage that marks saturation when busy time is not reported (Flink < 1.13)." default:"${pool_usage}" group:"Engine" range:"(0,1]"`
	Sustain                  time.Duration `help:"How long a subtask stays saturated before a saturation finding: saturated windows that cover it, or an unbroken run of busy-counter readings that lasts it." default:"${sustain}" group:"Engine" range:"[1ms,]"`
	SkewRatio                float64       `help:"Input rate over the peers' median that counts as disproportionate." default:"${skew_ratio}" group:"Engine" range:"(1,]"`
	UnderProvisionedFraction float64       `help:"Fraction of subtasks saturated, with balanced input, for under_provisioned." default:"${up_fraction}" group:"Engine" range:"(0,1]"`
	UnderProvisionedBusy     float64       `help:"Median busy ms/s that, with one subtask saturated and balanced input, also means under_provisioned." default:"${up_busy}" group:"Engine" range:"(0,1000]"`
	BalancedSkewScore        float64       `help:"Highest Flink skew score (0-100) that still counts as balanced input." default:"${balanced_skew}" group:"Engine" range:"(0,100]"`
	BackpressureThreshold    float64       `help:"backPressuredTimeMsPerSecond at which a task is listed as back-pressured." default:"${backpressured}" group:"Engine" range:"(0,1000]"`
	RotationLookback         int           `help:"Windows within which a move of the hot subtask marks skew as rotating." default:"${rotation_lookback}" group:"Engine" range:"[1,${history_windows}]"`
	TargetUtilization        float64       `help:"Busy ratio the recommended parallelism aims for (Flink autoscaler style)." default:"${target_utilization}" group:"Engine" range:"(0,1]"`
	SaltSeparator            string        `help:"Joins a key and its salt in salted keys." default:"${salt_separator}" group:"Engine" range:"[1,${max_separator}]"`
	MaxSaltBuckets           int           `help:"Most salt buckets for one hot key." default:"${max_salt_buckets}" group:"Engine" range:"[2,${max_parallelism}]"`
	PlanMinImbalance         float64       `help:"Max/mean subtask load at which a salting plan is proposed." default:"${plan_min_imbalance}" group:"Engine" range:"[1,]"`
	CheckpointTimeout        time.Duration `help:"The jobs' checkpoint timeout (Flink's execution.checkpointing.timeout)." default:"${checkpoint_timeout}" group:"Engine" range:"[1ms,]"`
	CheckpointRiskFraction   float64       `help:"Share of --checkpoint-timeout at or above which a job's lastCheckpointDuration counts as slow; saturation summaries then name the subtask that holds checkpoints up." default:"${checkpoint_risk_fraction}" group:"Engine" range:"(0,1]"`
	JobEndAfter              time.Duration `help:"How long a job may send nothing before its run ends: a job_end finding closes its incidents and retires its salting plans, and its state is freed. A run that another of the same job name replaces ends at once." default:"${job_end_after}" group:"Engine" range:"[1ms,]"`
	MaxJobs                  int           `help:"Most jobs tracked at once; the events of further jobs are rejected until a run ends." default:"${max_jobs}" group:"Engine" range:"[1,]"`
}

// windowFlags are the watermark settings of every command that windows
// events.
type windowFlags struct {
	OutOfOrderness  time.Duration `default:"${out_of_orderness}" help:"How late an event may arrive behind the newest one and still count." range:"[0s,]"`
	AllowedLateness time.Duration `default:"${allowed_lateness}" help:"Extra time a window stays open for late events." range:"[0s,]"`
}

func (f *windowFlags) windowConfig() window.Config {
	return window.Config{OutOfOrderMs: max(f.OutOfOrderness.Milliseconds(), 1), AllowedLatenessMs: f.AllowedLateness.Milliseconds()}
}

// checkEngine checks what the flags' ranges cannot: the rules between
// thresholds, then the engine's own Validate, which names the flags.
func (f *engineFlags) checkEngine() error {
	if floor := 1 / float64(f.TopK); f.HotKeyShare < floor {
		return fmt.Errorf("--hot-key-share %s: must be at least 1/--top-k (%s): hot keys that small are not guaranteed to be found",
			fmtFloat(f.HotKeyShare), fmtFloat(floor))
	}
	if err := f.config().Validate(); err != nil {
		return fmt.Errorf("engine configuration: %w", err)
	}
	return nil
}

// config returns skew.DefaultConfig with the thresholds of the flags.
func (f *engineFlags) config() skew.Config {
	c := skew.DefaultConfig()
	c.WindowMs = f.Window.Milliseconds()
	c.TopK = f.TopK
	c.HotKeyShare = f.HotKeyShare
	c.HotKeyFairShare = f.HotKeyFairShare
	c.HotKeyConfidence = f.HotKeyConfidence
	c.HotKeyPoolWindows = f.HotKeyPoolWindows
	c.HotKeyExcessShare = f.HotKeyExcessShare
	c.MaxHotKeys = f.MaxHotKeys
	c.MinSamples = f.MinSamples
	c.BusyMsPerSecond = f.BusyThreshold
	c.PoolUsage = f.PoolUsage
	c.SustainMs = f.Sustain.Milliseconds()
	c.SkewRatio = f.SkewRatio
	c.UnderProvisionedFraction = f.UnderProvisionedFraction
	c.UnderProvisionedBusy = f.UnderProvisionedBusy
	c.BalancedSkewScore = f.BalancedSkewScore
	c.BackPressuredMsPerSecond = f.BackpressureThreshold
	c.RotationLookbackWindows = f.RotationLookback
	c.TargetUtilization = f.TargetUtilization
	c.SaltSeparator = f.SaltSeparator
	c.MaxSaltBuckets = f.MaxSaltBuckets
	c.PlanMinImbalance = f.PlanMinImbalance
	c.CheckpointTimeoutMs = f.CheckpointTimeout.Milliseconds()
	c.CheckpointRiskFraction = f.CheckpointRiskFraction
	c.JobEndAfterMs = f.JobEndAfter.Milliseconds()
	c.MaxJobs = f.MaxJobs
	return c
}

type analyzeCmd struct {
	Input  []string `short:"i" required:"" placeholder:"FILE" help:"Input file, plain or gzip; repeat or comma-separate for several, merged by event time. '-' is standard input."`
	Format string   `enum:"auto,json,influx,prometheus" default:"auto" help:"Force one input format (auto detects it per line: ${enum})."`
	Output string   `short:"o" enum:"json,text" default:"json" help:"Findings as JSON lines (the contract) or as text for people: ${enum}. Text prints one line per incident (consecutive windows of one condition) with its duration."`
	// PerWindow keeps the text output of one line per finding.
	PerWindow bool `help:"With -o text, print one line per finding and window instead of one per incident."`
	textFlags
	Kind     []string `placeholder:"KIND" help:"Print only these finding kinds (hot_key, saturation, salting_plan, subtask_stats, job_end)."`
	Stats    bool     `help:"Also print a subtask_stats row per subtask and window (rates, busy/back-pressured/idle time, pools, queues, checkpoint times, shares)."`
	ShowBad  int      `default:"5" help:"Bad lines to describe on stderr (all are counted)." range:"[0,]"`
	Progress string   `enum:"auto,always,never" default:"auto" help:"Progress on stderr while reading: ${enum}; auto shows it when stderr is a terminal."`
	windowFlags
	engineFlags
	// BusyFrom is analyze's only: run shares engineFlags and has no use
	// for the comparison.
	BusyFrom string `enum:"auto,gauges" default:"auto" group:"Engine" help:"Where busy, back-pressured and idle time come from: auto (Flink's accumulate*TimeMs counters for subtasks that report them, else the 60 s busyTimeMsPerSecond gauges) or gauges (ignore the counters, to measure detection latency both ways on one capture)."`
}

// Help is the detail analyze -h shows under the summary.
func (c *analyzeCmd) Help() string {
	return fmt.Sprintf("Exit status: 0 when findings (or none) were printed; 1 on an error, a flag's value out of its range included; "+
		"2 on a usage error (unknown flag, missing --input); %d when no valid record was read (no key sample or metric: a wrong file, format or empty --input).", exitNoRecords)
}

// check is called before Run (checkCommand).
func (c *analyzeCmd) check() error {
	for _, k := range c.Kind {
		switch k {
		case skew.KindHotKey, skew.KindSaturation, skew.KindSaltingPlan, skew.KindSubtaskStats, skew.KindJobEnd:
		default:
			return fmt.Errorf("--kind %q: want hot_key, saturation, salting_plan, subtask_stats or job_end", k)
		}
	}
	return c.checkEngine()
}

// foldsIncidents reports whether the text output is one line per
// incident.
func (c *analyzeCmd) foldsIncidents() bool { return c.Output == "text" && !c.PerWindow }

func (c *analyzeCmd) Run(e *env) error {
	cfg := c.config()
	// The incident fold takes statistics as the jobs' reports (see
	// incident.Config.RequireReports); they are printed only with --stats.
	cfg.EmitStats = c.Stats || c.foldsIncidents()
	cfg.BusyFromGauges = c.BusyFrom == "gauges"
	eng, err := skew.New(cfg)
	if err != nil {
		return fmt.Errorf("engine configuration: %w", err)
	}
	stage, err := window.New(c.windowConfig(), eng)
	if err != nil {
		return err
	}
	format, err := decode.ParseFormat(c.Format)
	if err != nil {
		return err
	}
	var inputs []replay.Input
	for _, name := range c.Input {
		var r io.Reader = e.stdin
		if name == "-" {
			name = "stdin"
		} else {
			f, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("open input: %w", err)
			}
			defer f.Close()
			r = f
		}
		r, err := replay.MaybeGunzip(r)
		if err != nil {
			return fmt.Errorf("input %s: %w", name, err)
		}
		inputs = append(inputs, replay.Input{Name: name, R: r})
	}
	width, err := c.lineWidth(e)
	if err != nil {
		return err
	}
	kinds := map[string]bool{} // checked by check
	for _, k := range c.Kind {
		kinds[k] = true
	}
	out := bufio.NewWriterSize(e.stdout, 64<<10)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	perKind := map[string]int{}
	shown := 0
	start := time.Now()
	opts := replay.Options{
		Format: format,
		OnBad: func(b replay.BadLine) {
			if shown < c.ShowBad {
				shown++
				fmt.Fprintf(e.stderr, "skewlens analyze: %s:%d: %s: %v\n", b.Input, b.Line, b.Err.Reason, b.Err)
			}
		},
	}
	if c.Progress == "always" || (c.Progress == "auto" && e.stderrIsTerminal) {
		opts.OnProgress = func(st replay.Stats) {
			el := time.Since(start).Seconds()
			fmt.Fprintf(e.stderr, "skewlens analyze: %d lines, %.0f MB, %.0f MB/s, %d findings\n",
				st.Lines, float64(st.Bytes)/1e6, float64(st.Bytes)/1e6/el, total(perKind))
		}
	}
	var incidents *incidentLog // text output by incident
	if c.foldsIncidents() {
		icfg := incident.DefaultConfig()
		icfg.RequireReports = true
		if incidents, err = newIncidentLog(icfg); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	st, err := replay.Run(ctx, inputs, stage, opts, func(f *skew.Finding) error {
		if f.Kind == skew.KindSubtaskStats && incidents != nil {
			if c.Stats && (len(kinds) == 0 || kinds[f.Kind]) {
				perKind[f.Kind]++
			}
			return incidents.add(f) // a report of its job, whatever --kind says
		}
		if len(kinds) > 0 && !kinds[f.Kind] {
			return nil
		}
		perKind[f.Kind]++
		switch {
		case incidents != nil:
			return incidents.add(f)
		case c.Output == "text":
			return writeText(out, f, width)
		}
		return enc.Encode(f)
	})
	if incidents != nil && err == nil {
		var ins []incident.Incident
		ins, err = incidents.incidents()
		for _, in := range ins {
			if err = writeIncidentText(out, in.State, &in, width); err != nil {
				break
			}
		}
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	summary(e.stderr, st, perKind, time.Since(start))
	if err == nil && st.Window.Samples+st.Window.Metrics == 0 {
		// Nothing reached the engine: a wrong file or format is not a
		// healthy job, so scripts must not take the silence for one.
		what := "no valid record read"
		if len(c.Input) == 0 {
			what += " (--input names no file; - is standard input)"
		}
		fmt.Fprintf(e.stderr, "skewlens analyze: %s\n", what)
		return exitError{exitNoRecords}
	}
	return err
}

// exitNoRecords is analyze's exit code when no key sample or metric was
// read (README, analyze -h); 1 is any other failure and 2 a usage error.
const exitNoRecords = 3

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// summary writes the closing counts to stderr: what was read, what was
// dropped and why, and what was found.
func summary(w io.Writer, st replay.Stats, perKind map[string]int, el time.Duration) {
	wc := st.Window
	fmt.Fprintf(w, "skewlens analyze: %d lines (%.1f MB) in %s: %d key samples, %d metrics, %d skipped, %d late, %d rejected, %d bad\n",
		st.Lines, float64(st.Bytes)/1e6, el.Round(time.Millisecond), wc.Samples, wc.Metrics, st.Skipped, wc.Late, wc.Rejected, st.Bad.Total())
	if st.Bad.Total() > 0 {
		fmt.Fprintf(w, "skewlens analyze: bad lines by reason: %s\n", st.Bad.String())
	}
	var parts []string
	kinds := []string{skew.KindHotKey, skew.KindSaturation, skew.KindSaltingPlan}
	if perKind[skew.KindSubtaskStats] > 0 {
		kinds = append(kinds, skew.KindSubtaskStats)
	}
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s=%d", k, perKind[k]))
	}
	fmt.Fprintf(w, "skewlens analyze: findings: %s\n", strings.Join(parts, " "))
	for _, name := range st.Truncated {
		// The counts and findings are of the part read; saying so keeps
		// a cut-off download from passing for a whole incident.
		fmt.Fprintf(w, "skewlens analyze: input %s ended early (truncated): the counts and findings above cover only what was read before the cut\n", name)
	}
}
