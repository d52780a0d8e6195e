package alert

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// step is one call: Observe(obs) when obs is not nil, then Advance(adv)
// when adv is not 0.
type step struct {
	obs []skew.Finding
	adv int64
}

// windows returns one step per window start: the findings made by mk
// (nil for none) observed, then the watermark advanced to the window end.
func windows(starts []int64, mk func(ws int64) []skew.Finding) []step {
	var out []step
	for _, ws := range starts {
		out = append(out, step{obs: mk(ws), adv: ws + win})
	}
	return out
}

func seq(from, to, every int64) []int64 {
	var out []int64
	for t := from; t <= to; t += every {
		out = append(out, t)
	}
	return out
}

func TestStateMachineTransitions(t *testing.T) {
	const ds = "j1/agg/3/data_skew"
	skewAt := func(present ...int64) func(int64) []skew.Finding {
		return func(ws int64) []skew.Finding {
			if slices.Contains(present, ws) {
				return []skew.Finding{sat("j1", "agg", 3, skew.CauseDataSkew, ws)}
			}
			return nil
		}
	}
	tests := []struct {
		name  string
		cfg   Config
		inc   func(*incident.Config)
		steps []step
		want  []string
	}{
		{
			name:  "fires once the condition has lasted For (two windows)",
			steps: windows(seq(0, 20_000, win), skewAt(0, 10_000, 20_000)),
			want:  []string{"pending " + ds + " @10000", "firing " + ds + " @20000"},
		},
		{
			name:  "negative For fires on the first finding",
			inc:   atOnce,
			steps: windows([]int64{0}, skewAt(0)),
			want:  []string{"pending " + ds + " @10000", "firing " + ds + " @10000"},
		},
		{
			name:  "a one-window blip is discarded after ResolveAfter, never fires",
			steps: windows(seq(0, 40_000, win), skewAt(0)),
			want:  []string{"pending " + ds + " @10000", "discarded " + ds + " @40000 absent"},
		},
		{
			name: "resolves exactly ResolveAfter after the last finding",
			steps: append(windows(seq(0, 10_000, win), skewAt(0, 10_000)),
				step{adv: 49_999}, step{adv: 50_000}, step{adv: 90_000}),
			want: []string{"pending " + ds + " @10000", "firing " + ds + " @20000", "resolved " + ds + " @50000 absent"},
		},
		{
			name:  "flapping input (every other window) gives one firing and one resolved",
			steps: windows(seq(0, 150_000, win), skewAt(0, 20_000, 40_000, 60_000, 80_000)),
			want:  []string{"pending " + ds + " @10000", "firing " + ds + " @30000", "resolved " + ds + " @120000 absent"},
		},
		{
			name:  "flapping with two-window gaps does not flap either",
			steps: windows(seq(0, 200_000, win), skewAt(0, 30_000, 60_000, 90_000, 120_000)),
			want:  []string{"pending " + ds + " @10000", "firing " + ds + " @40000", "resolved " + ds + " @160000 absent"},
		},
		{
			name: "a gap of ResolveAfter inside one Observe call resolves, then a new episode starts",
			steps: []step{{obs: []skew.Finding{
				sat("j1", "agg", 3, skew.CauseDataSkew, 60_000),
				sat("j1", "agg", 3, skew.CauseDataSkew, 0),
				sat("j1", "agg", 3, skew.CauseDataSkew, 10_000),
			}, adv: 70_000}},
			want: []string{"pending " + ds + " @10000", "firing " + ds + " @20000", "resolved " + ds + " @50000 absent", "pending " + ds + " @70000"},
		},
		{
			name:  "renotifies a lasting alert every RenotifyInterval",
			cfg:   Config{RenotifyInterval: 30 * time.Second},
			steps: windows(seq(0, 80_000, win), skewAt(seq(0, 80_000, win)...)),
			want: []string{"pending " + ds + " @10000", "firing " + ds + " @20000",
				"renotify " + ds + " @50000", "renotify " + ds + " @80000"},
		},
		{
			name: "with RequireReports a silent job's alert waits for its run's end",
			inc:  func(c *incident.Config) { c.RequireReports = true },
			steps: append(windows(seq(0, 10_000, win), skewAt(0, 10_000)),
				step{adv: 60_000}, step{obs: []skew.Finding{jobEnd("j1", 120_000, skew.EndStopped)}, adv: 130_000}),
			want: []string{"pending " + ds + " @10000", "firing " + ds + " @20000", "resolved " + ds + " @130000 job_stopped"},
		},
		{
			name: "with RequireReports a reporting job's alert resolves as absent",
			inc:  func(c *incident.Config) { c.RequireReports = true },
			steps: windows(seq(0, 60_000, win), func(ws int64) []skew.Finding {
				fs := []skew.Finding{statsOf("j1", ws)}
				if ws <= 10_000 {
					fs = append(fs, sat("j1", "agg", 3, skew.CauseDataSkew, ws))
				}
				return fs
			}),
			want: []string{"pending " + ds + " @10000", "firing " + ds + " @20000", "resolved " + ds + " @50000 absent"},
		},
		{
			name: "an out-of-order older finding changes nothing",
			steps: append(windows(seq(0, 10_000, win), skewAt(0, 10_000)),
				step{adv: 45_000},
				step{obs: []skew.Finding{sat("j1", "agg", 3, skew.CauseDataSkew, 0)}, adv: 50_000}),
			want: []string{"pending " + ds + " @10000", "firing " + ds + " @20000", "resolved " + ds + " @50000 absent"},
		},
		{
			name: "rotating hot key is one task-wide alert while its subtask moves",
			steps: windows(seq(0, 40_000, win), func(ws int64) []skew.Finding {
				return []skew.Finding{sat("j1", "agg", int(ws/win), skew.CauseRotatingHotKey, ws)}
			}),
			want: []string{"pending j1/agg/-1/rotating_hot_key @10000", "firing j1/agg/-1/rotating_hot_key @20000"},
		},
		{
			name: "under_provisioned is task-wide; causes are separate alerts",
			inc:  atOnce,
			steps: []step{{obs: []skew.Finding{
				sat("j1", "agg", -1, skew.CauseUnderProvisioned, 0),
				sat("j1", "agg", 2, skew.CauseSlowSubtask, 0),
				hot("j1", "agg", 2, "k", 0.3, 0),
			}}},
			want: []string{
				"pending j1/agg/-1/under_provisioned @10000", "pending j1/agg/2/hot_key @10000", "pending j1/agg/2/slow_subtask @10000",
				"firing j1/agg/-1/under_provisioned @10000", "firing j1/agg/2/hot_key @10000", "firing j1/agg/2/slow_subtask @10000",
			},
		},
		{
			name: "several hot keys on one subtask make one alert",
			inc:  atOnce,
			steps: []step{{obs: []skew.Finding{
				hot("j1", "agg", 2, "a", 0.1, 0), hot("j1", "agg", 2, "b", 0.3, 0), hot("j1", "agg", -1, "c", 0.2, 0),
			}}},
			want: []string{"pending j1/agg/-1/hot_key @10000", "pending j1/agg/2/hot_key @10000",
				"firing j1/agg/-1/hot_key @10000", "firing j1/agg/2/hot_key @10000"},
		},
		{
			name: "a hot_key alert covers its keys' incidents: it resolves when the last one closes",
			inc:  atOnce,
			steps: windows(seq(0, 80_000, win), func(ws int64) []skew.Finding {
				fs := []skew.Finding{}
				if ws == 0 {
					fs = append(fs, hot("j1", "agg", 2, "a", 0.3, ws))
				}
				if ws <= 30_000 {
					fs = append(fs, hot("j1", "agg", 2, "b", 0.2, ws))
				}
				return fs
			}),
			want: []string{"pending j1/agg/2/hot_key @10000", "firing j1/agg/2/hot_key @10000", "resolved j1/agg/2/hot_key @70000 absent"},
		},
		{
			name: "a hot key of an unsaturated task alerts only when it alone skews its subtask",
			inc:  atOnce,
			steps: []step{{obs: []skew.Finding{
				labelled(hot("j1", "agg", 1, "quiet", 0.3, 0), false, false),
				labelled(hot("j1", "agg", 2, "skews", 0.3, 0), false, true),
				labelled(hot("j1", "agg", 3, "saturated", 0.3, 0), true, false),
			}}},
			want: []string{"pending j1/agg/2/hot_key @10000", "pending j1/agg/3/hot_key @10000",
				"firing j1/agg/2/hot_key @10000", "firing j1/agg/3/hot_key @10000"},
		},
		{
			name: "the incidents' MaxOpen refuses new conditions, keeps the tracked ones",
			inc:  func(c *incident.Config) { c.Hysteresis.For, c.MaxOpen = -1, 1 },
			steps: []step{{obs: []skew.Finding{
				sat("j1", "agg", 1, skew.CauseDataSkew, 0), sat("j1", "agg", 2, skew.CauseDataSkew, 0),
			}}},
			want: []string{"pending j1/agg/1/data_skew @10000", "firing j1/agg/1/data_skew @10000"},
		},
		{
			name: "Causes filters what alerts",
			cfg:  Config{Causes: []string{skew.CauseSlowSubtask}},
			inc:  atOnce,
			steps: []step{{obs: []skew.Finding{
				sat("j1", "agg", 1, skew.CauseDataSkew, 0), hot("j1", "agg", 1, "k", 0.5, 0), sat("j1", "agg", 2, skew.CauseSlowSubtask, 0),
			}}},
			want: []string{"pending j1/agg/2/slow_subtask @10000", "firing j1/agg/2/slow_subtask @10000"},
		},
		{
			name: "malformed and other findings make no alert and do not panic",
			inc:  atOnce,
			steps: []step{{obs: []skew.Finding{
				{Kind: skew.KindSaturation, JobID: "j1", TaskName: "a", WindowStart: 0, WindowEnd: win}, // no body
				{Kind: skew.KindHotKey, JobID: "j1", TaskName: "a", WindowStart: 0, WindowEnd: win},     // no body
				{Kind: skew.KindSaturation, JobID: "j1", TaskName: "a", WindowEnd: win, Saturation: &skew.Saturation{Cause: "bogus"}},
				{Kind: skew.KindSaturation, JobID: "j1", TaskName: "a", WindowEnd: win, Saturation: &skew.Saturation{Cause: skew.CauseSlowSubtask}}, // nil evidence is fine
				func() skew.Finding { f := sat("", "agg", 1, skew.CauseDataSkew, 0); return f }(),                                                   // no job
				func() skew.Finding { f := sat("j1", "", 1, skew.CauseDataSkew, 0); return f }(),                                                    // no task
				func() skew.Finding {
					f := sat("j1", "agg", 1, skew.CauseDataSkew, 0)
					f.WindowStart = 2 * win
					return f
				}(), // start after end
				func() skew.Finding { f := sat("j1", "agg", 1, skew.CauseDataSkew, 0); f.WindowEnd = -5; return f }(),
				{Kind: skew.KindSaltingPlan, JobID: "j1", TaskName: "agg", WindowEnd: win, Plan: &skew.Plan{}},
				statsOf("j1", 0),
				{Kind: "bogus", JobID: "j1", TaskName: "agg", WindowEnd: win},
			}}},
			want: []string{"pending j1/a/-1/slow_subtask @10000", "firing j1/a/-1/slow_subtask @10000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newPipe(t, tt.cfg, tt.inc)
			var got []Event
			for _, s := range tt.steps {
				if s.obs != nil {
					got = append(got, tr.Observe(s.obs)...)
				}
				if s.adv != 0 {
					got = append(got, tr.Advance(s.adv)...)
				}
			}
			if g := evs(got); !slices.Equal(g, tt.want) {
				t.Errorf("events:\n%s\nwant:\n%s", joinLines(g), joinLines(tt.want))
			}
		})
	}
}

// TestStateMachineNoFlapping feeds random on/off conditions and checks the
// alert invariants: firing and resolved alternate, starting with firing;
// no two firings of one alert are closer than the hysteresis allows; and
// every resolved alert really had no finding for ResolveAfter.
func TestStateMachineNoFlapping(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tr := newPipe(t, Config{})
		onProb := []float64{0.1, 0.5, 0.9}[seed%3]
		lastSeen := map[string]int64{}
		state := map[string]string{}
		for ws := int64(0); ws < 3_600_000; ws += win {
			var fs []skew.Finding
			for sub := range 3 {
				if rng.Float64() < onProb {
					fs = append(fs, sat("j", "t", sub, skew.CauseDataSkew, ws))
				}
			}
			events := append(tr.Observe(fs), tr.Advance(ws+win)...)
			for _, f := range fs {
				lastSeen[identityMust(t, &f).String()] = f.WindowEnd
			}
			for _, e := range events {
				id := e.Alert.ID
				switch e.Kind {
				case EventFiring:
					if state[id] == "firing" {
						t.Fatalf("seed %d: %s fired twice without resolving", seed, id)
					}
					state[id] = "firing"
				case EventResolved:
					if state[id] != "firing" {
						t.Fatalf("seed %d: %s resolved while not firing", seed, id)
					}
					state[id] = "resolved"
					if gap := e.Alert.UpdatedAt.UnixMilli() - lastSeen[id]; gap < 30_000 {
						t.Fatalf("seed %d: %s resolved %d ms after its last finding", seed, id, gap)
					}
				}
			}
		}
	}
}

func identityMust(t *testing.T, f *skew.Finding) incident.Identity {
	t.Helper()
	id, ok := incident.IdentityOf(f)
	if !ok {
		t.Fatalf("no identity for %+v", f)
	}
	return id
}

// TestStateMachineDeterministic checks that the order of findings within one
// Observe call does not change the events, alerts included.
func TestStateMachineDeterministic(t *testing.T) {
	var fs []skew.Finding
	for ws := int64(0); ws < 60_000; ws += win {
		fs = append(fs,
			sat("j2", "sink", 1, skew.CauseSlowSubtask, ws),
			sat("j1", "agg", 3, skew.CauseDataSkew, ws),
			hot("j1", "agg", 3, "k1", 0.4, ws), hot("j1", "agg", 3, "k2", 0.2, ws),
			sat("j1", "win", -1, skew.CauseUnderProvisioned, ws),
			statsOf("j3", ws))
	}
	run := func(in []skew.Finding) []Event {
		tr := newPipe(t, Config{RenotifyInterval: 20 * time.Second})
		return append(tr.Observe(in), tr.Advance(200_000)...)
	}
	want := run(fs)
	if len(want) < 12 {
		t.Fatalf("only %d events: %v", len(want), evs(want))
	}
	for seed := range uint64(10) {
		in := slices.Clone(fs)
		rand.New(rand.NewPCG(seed, 1)).Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		if got := run(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffle %d: events differ:\n%s\nwant:\n%s", seed, joinLines(evs(got)), joinLines(evs(want)))
		}
	}
}

// TestStateMachineKeepsNoReferences checks that alerts do not change when the
// caller reuses its findings (the pipeline clears its slice).
func TestStateMachineKeepsNoReferences(t *testing.T) {
	tr := newPipe(t, Config{}, atOnce)
	fs := []skew.Finding{sat("j1", "agg", 3, skew.CauseDataSkew, 0)}
	fs[0].Evidence.HotKeys = []skew.KeyShare{{Key: "k", Share: 0.5}}
	tr.Observe(fs)
	fs[0].Evidence.BusyMsPerSecond = -1
	fs[0].Evidence.HotKeys[0].Key = "changed"
	*fs[0].SubtaskIndex = 99
	a := tr.Active()
	if len(a) != 1 {
		t.Fatalf("active = %d alerts, want 1", len(a))
	}
	if ev := a[0].Finding.Evidence; ev.BusyMsPerSecond != 990 || ev.HotKeys[0].Key != "k" || *a[0].Finding.SubtaskIndex != 3 {
		t.Errorf("alert changed with the caller's finding: %+v", a[0].Finding)
	}
	if !strings.Contains(a[0].Annotations["evidence"], `"busy_ms_per_s":990`) {
		t.Errorf("evidence = %s", a[0].Annotations["evidence"])
	}
}

func TestStateMachineCounts(t *testing.T) {
	tr := newPipe(t, Config{}, func(c *incident.Config) { c.MaxOpen = 2 })
	tr.Observe([]skew.Finding{sat("j", "a", 1, skew.CauseDataSkew, 0), sat("j", "a", 2, skew.CauseDataSkew, 0), sat("j", "a", 3, skew.CauseDataSkew, 0)})
	tr.Observe([]skew.Finding{sat("j", "a", 1, skew.CauseDataSkew, win)})
	if p, f, r := tr.Pending(), tr.Firing(), tr.inc.Refused(); p != 1 || f != 1 || r != 1 {
		t.Errorf("pending, firing, refused = %d, %d, %d; want 1, 1, 1", p, f, r)
	}
	if n := tr.Now(); n != 2*win {
		t.Errorf("now = %d, want %d", n, 2*win)
	}
	tr.Advance(10 * win)
	if p, f := tr.Pending(), tr.Firing(); p != 0 || f != 0 {
		t.Errorf("after advance: pending, firing = %d, %d; want 0, 0", p, f)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults", cfg: Config{}},
		{name: "negative renotify", cfg: Config{RenotifyInterval: -time.Second}, wantErr: "renotify"},
		{name: "unknown cause", cfg: Config{Causes: []string{"nope"}}, wantErr: `cause "nope"`},
		{name: "severity of unknown cause", cfg: Config{Severities: map[string]string{"nope": "page"}}, wantErr: "unknown cause"},
		{name: "empty severity", cfg: Config{Severities: map[string]string{incident.CauseHotKey: ""}}, wantErr: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg.withDefaults() // as NewStateMachine sees it
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(cfg.Causes) != len(incident.Causes()) || len(incident.Causes()) != 6 {
					t.Errorf("defaults not filled: %+v", cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestConfigDefaults checks that Validate only checks, and that
// the zero fields are filled with DefaultConfig's values.
func TestConfigDefaults(t *testing.T) {
	if err := (Config{}).Validate(); err == nil {
		t.Error("Validate accepted the zero Config")
	}
	d := DefaultConfig()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := (Config{}).withDefaults(); !reflect.DeepEqual(got, d) {
		t.Errorf("zero fields filled with %+v, want DefaultConfig %+v", got, d)
	}
	want := Config{Causes: incident.Causes()}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", d, want)
	}
	tr, err := NewStateMachine(Config{RenotifyInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if c := tr.Config(); c.RenotifyInterval != time.Minute || len(c.Causes) != 6 {
		t.Errorf("NewStateMachine config %+v: want RenotifyInterval 1m kept and Causes defaulted", c)
	}
}

// TestStateMachineBatchingIndependent checks that observing window by window
// and observing everything in one call give the same notifications.
func TestStateMachineBatchingIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var perWindow [][]skew.Finding
	for ws := int64(0); ws < 600_000; ws += win {
		var fs []skew.Finding
		for sub := range 4 {
			if rng.Float64() < 0.4 {
				fs = append(fs, sat("j", "t", sub, skew.CauseSlowSubtask, ws))
			}
		}
		perWindow = append(perWindow, fs)
	}
	notified := func(events []Event) []string {
		var out []string
		for _, e := range events {
			if e.Notify() {
				out = append(out, evs([]Event{e})[0])
			}
		}
		return out
	}
	one := newPipe(t, Config{})
	var a []Event
	for i, fs := range perWindow {
		a = append(a, one.Observe(fs)...)
		a = append(a, one.Advance(int64(i+1)*win)...)
	}
	all := newPipe(t, Config{})
	b := all.Observe(slices.Concat(perWindow...))
	b = append(b, all.Advance(int64(len(perWindow))*win)...)
	if ga, gb := notified(a), notified(b); len(ga) < 4 || !slices.Equal(ga, gb) {
		t.Errorf("window by window:\n%s\nall at once:\n%s", joinLines(ga), joinLines(gb))
	}
}

// labelled sets the engine's labels of a hot_key finding.
func labelled(f skew.Finding, saturated, skewsSubtask bool) skew.Finding {
	f.HotKey.Saturated, f.HotKey.SkewsSubtask = &saturated, skewsSubtask
	return f
}

// TestStateMachineJobEnd: a run's end resolves its firing alerts and discards
// its pending ones at the end's window, with the reason, and forgets the
// job; other jobs' alerts go on.
func TestStateMachineJobEnd(t *testing.T) {
	tests := []struct {
		name   string
		end    skew.Finding
		reason string
	}{
		{"restarted", jobEnd("j1", 20_000, skew.EndRestarted), incident.ReasonJobRestarted},
		{"stopped", jobEnd("j1", 20_000, skew.EndStopped), incident.ReasonJobStopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newPipe(t, Config{})
			tr.Observe([]skew.Finding{sat("j1", "agg", 3, skew.CauseDataSkew, 0), sat("j2", "agg", 1, skew.CauseDataSkew, 0)})
			tr.Observe([]skew.Finding{sat("j1", "agg", 3, skew.CauseDataSkew, 10_000), sat("j2", "agg", 1, skew.CauseDataSkew, 10_000),
				hot("j1", "agg", 0, "k", 0.5, 10_000)})
			got := evs(tr.Observe([]skew.Finding{tt.end}))
			want := []string{
				"discarded j1/agg/0/hot_key @30000 " + tt.reason,
				"resolved j1/agg/3/data_skew @30000 " + tt.reason,
			}
			if !slices.Equal(got, want) {
				t.Fatalf("events\n%s\nwant\n%s", joinLines(got), joinLines(want))
			}
			if tr.Firing() != 1 || tr.Pending() != 0 || tr.Active()[0].Identity().JobID != "j2" {
				t.Fatalf("firing %d, pending %d, active %+v: want j2's alert only", tr.Firing(), tr.Pending(), tr.Active())
			}
		})
	}
}

// TestAlertsCarryTheIncidentID: every alert event names an incident the
// incident tracker made, of the alert's cause, whose latest window is
// the alert's latest finding's (for hot keys, the hottest key's).
func TestAlertsCarryTheIncidentID(t *testing.T) {
	p := newPipe(t, Config{}, atOnce)
	skewed := func(ws int64) skew.Finding { return sat("j", "agg", 1, skew.CauseDataSkew, ws) }
	windows := [][]skew.Finding{
		{skewed(0), hot("j", "agg", 0, "a", 0.3, 0)},
		{skewed(win), hot("j", "agg", 0, "a", 0.2, win), hot("j", "agg", 0, "b", 0.4, win)},
		{hot("j", "agg", 0, "a", 0.2, 2*win)},
		{}, {}, {}, {},
		{skewed(7 * win), hot("j", "agg", 0, "b", 0.5, 7*win)},
	}
	checked := 0
	for w, fs := range windows {
		events := append(p.Observe(fs), p.Advance(int64(w+1)*win)...)
		for _, e := range events {
			in, ok := p.stored[e.Alert.IncidentID]
			if !ok {
				t.Fatalf("window %d: alert %s names incident %q, which the tracker does not know", w, e.Alert.ID, e.Alert.IncidentID)
			}
			f := e.Alert.Finding
			if f.HotKey != nil && in.Key != f.HotKey.Key || in.Cause != e.Alert.Identity().Cause || in.LastSeen != f.WindowEnd {
				t.Errorf("window %d: alert %s (%s) names incident %+v", w, e.Alert.ID, e.Kind, in)
			}
			checked++
		}
	}
	if checked < 6 {
		t.Fatalf("only %d alert events checked", checked)
	}
}
