package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/skewlens/skewlens/internal/findingtext"
	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/replay"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// AnalyzeConfig is every setting of `skewlens analyze`. The command line
// binds it (kong tags); the watermark's and the engine's settings are
// their own Configs, embedded.
type AnalyzeConfig struct {
	Input  []string `short:"i" required:"" placeholder:"FILE" help:"Input file, plain or gzip; repeat or comma-separate for several, merged by event time. '-' is standard input."`
	Format string   `enum:"auto,json,influx,prometheus" default:"auto" help:"Force one input format (auto detects it per line: ${enum})."`
	Output string   `short:"o" enum:"json,text" default:"json" help:"Findings as JSON lines (the contract) or as text for people: ${enum}. Text prints one line per incident (consecutive windows of one condition) with its duration."`
	// PerWindow keeps the text output of one line per finding.
	PerWindow bool `help:"With -o text, print one line per finding and window instead of one per incident."`
	Text
	Kind     []string      `placeholder:"KIND" help:"Print only these finding kinds (hot_key, saturation, salting_plan, subtask_stats, job_end)."`
	Stats    bool          `help:"Also print a subtask_stats row per subtask and window (rates, busy/back-pressured/idle time, pools, queues, checkpoint times, shares)."`
	ShowBad  int           `default:"5" help:"Bad lines to describe on stderr (all are counted)." range:"[0,]"`
	Progress string        `enum:"auto,always,never" default:"auto" help:"Progress on stderr while reading: ${enum}; auto shows it when stderr is a terminal."`
	Window   window.Config `embed:""`
	Engine   skew.Config   `embed:""`
	// BusyFrom is analyze's only: run has no use for the comparison.
	BusyFrom string `enum:"auto,gauges" default:"auto" group:"Engine" help:"Where busy, back-pressured and idle time come from: auto (Flink's accumulate*TimeMs counters for subtasks that report them, else the 60 s busyTimeMsPerSecond gauges) or gauges (ignore the counters, to measure detection latency both ways on one capture)."`
}

// Check checks what Analyze would reject later: the finding kinds asked
// for and the engine's settings.
func (c *AnalyzeConfig) Check() error {
	for _, k := range c.Kind {
		switch k {
		case skew.KindHotKey, skew.KindSaturation, skew.KindSaltingPlan, skew.KindSubtaskStats, skew.KindJobEnd:
		default:
			return fmt.Errorf("--kind %q: want hot_key, saturation, salting_plan, subtask_stats or job_end", k)
		}
	}
	return c.Engine.Validate()
}

// foldsIncidents reports whether the text output is one line per
// incident.
func (c *AnalyzeConfig) foldsIncidents() bool { return c.Output == "text" && !c.PerWindow }

// ErrNoRecords is Analyze's error when no key sample or metric was read:
// a wrong file or format is not a healthy job, so scripts must not take
// the silence for one. Analyze has said so on standard error.
var ErrNoRecords = errors.New("no valid record read")

// Analyze replays the inputs through the engine and prints the findings
// on s.Out: as JSON lines, as text a line per finding, or as text a line
// per incident (the findings folded into incidents as run folds them).
// It describes the first bad lines, the progress when asked and a
// closing summary on s.Err. It stops when the inputs end or ctx is
// cancelled; with nothing read it returns ErrNoRecords.
func Analyze(ctx context.Context, c AnalyzeConfig, s Streams) error {
	cfg := c.Engine
	// The incident fold takes statistics as the jobs' reports (see
	// incident.Config.RequireReports); they are printed only with --stats.
	cfg.EmitStats = c.Stats || c.foldsIncidents()
	cfg.BusyFromGauges = c.BusyFrom == "gauges"
	eng, err := skew.New(cfg)
	if err != nil {
		return fmt.Errorf("engine configuration: %w", err)
	}
	feeder, err := window.New(c.Window, eng)
	if err != nil {
		return err
	}
	format, err := decode.ParseFormat(c.Format)
	if err != nil {
		return err
	}
	var inputs []replay.Input
	for _, name := range c.Input {
		var r io.Reader = s.In
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
	width, err := c.LineWidth(s.Columns)
	if err != nil {
		return err
	}
	kinds := map[string]bool{} // checked by Check
	for _, k := range c.Kind {
		kinds[k] = true
	}
	out := bufio.NewWriterSize(s.Out, 64<<10)
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
				fmt.Fprintf(s.Err, "skewlens analyze: %s:%d: %s: %v\n", b.Input, b.Line, b.Err.Reason, b.Err)
			}
		},
	}
	if c.Progress == "always" || (c.Progress == "auto" && s.ErrIsTerminal) {
		opts.OnProgress = func(st replay.Stats) {
			el := time.Since(start).Seconds()
			fmt.Fprintf(s.Err, "skewlens analyze: %d lines, %.0f MB, %.0f MB/s, %d findings\n",
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
	st, err := replay.Run(ctx, inputs, feeder, opts, func(f *skew.Finding) error {
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
			return findingtext.WriteFinding(out, f, width)
		}
		return enc.Encode(f)
	})
	if incidents != nil && err == nil {
		var ins []incident.Incident
		ins, err = incidents.incidents()
		for _, in := range ins {
			if err = findingtext.WriteIncident(out, in.State, &in, width); err != nil {
				break
			}
		}
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	summary(s.Err, st, perKind, time.Since(start))
	if err == nil && st.Window.Samples+st.Window.Metrics == 0 {
		what := ErrNoRecords.Error()
		if len(c.Input) == 0 {
			what += " (--input names no file; - is standard input)"
		}
		fmt.Fprintf(s.Err, "skewlens analyze: %s\n", what)
		return ErrNoRecords
	}
	return err
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// summary writes the closing counts to w: what was read, what was
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
