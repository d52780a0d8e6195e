package plans

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// step is one input of a lifecycle test: a finding (Observe) or a time
// (Advance), the changes it must give, and optionally the plan served
// afterwards.
type step struct {
	sec     int  // window end (Observe) or time (Advance), in s after t0
	advance bool // Advance instead of Observe
	par     int  // parallelism of the finding (default 8)
	keys    []hk
	hot     string   // Observe a hot_key finding of this key instead
	want    []string // describe(changes)
	current string   // describePlan of the served plan; "" skips the check
}

func TestLifecycle(t *testing.T) {
	long := Config{Cooldown: 2 * time.Hour, TTL: 30 * time.Minute}
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"new plan is version 1", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}, current: "v1 p8 a:4"},
		}},
		{"no flapping: a key missing for one window stays", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v1 p8 a:4,b:2"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 4}}},
			{sec: 20, advance: true},
			{sec: 30, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, current: "v1 p8 a:4,b:2"},
			{sec: 40, advance: true, current: "v1 p8 a:4,b:2"},
		}},
		{"a key leaves when its cooldown has passed", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v1 p8 a:4,b:2"}},
			{sec: 600, keys: []hk{{key: "a", buckets: 4}}, current: "v1 p8 a:4,b:2"},
			{sec: 609, advance: true},
			{sec: 610, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v2 p8 a:4"}},
		}},
		{"the cooldown is counted from the last hot window", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v1 p8 a:4,b:2"}},
			{sec: 500, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}},
			{sec: 1099, advance: true, current: "v1 p8 a:4,b:2"},
			{sec: 1100, advance: true, want: []string{"retired"}, current: "none"},
		}},
		{"the plan is retired when its last key cools down", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 609, advance: true},
			{sec: 610, advance: true, want: []string{"retired"}, current: "none"},
			{sec: 620, advance: true},
		}},
		{"a small bucket change keeps the salted keys", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 5, from: 100}}, current: "v1 p8 a:4"},
			{sec: 30, keys: []hk{{key: "a", buckets: 3, from: 100}}, current: "v1 p8 a:4"},
		}},
		{"a material bucket change makes a version", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 6}}, want: []string{"v2 p8 a:6"}},
			{sec: 30, keys: []hk{{key: "a", buckets: 3}}, want: []string{"v3 p8 a:3"}},
			{sec: 40, keys: []hk{{key: "a", buckets: 2}}},
			{sec: 50, keys: []hk{{key: "a", buckets: 5}}, want: []string{"v4 p8 a:5"}},
		}},
		{"2 to 3 buckets is material", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 2}}, want: []string{"v1 p8 a:2"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 3}}, want: []string{"v2 p8 a:3"}},
		}},
		{"a stricter bucket change", Config{BucketChange: 1}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 2}}, want: []string{"v1 p8 a:2"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 3}}},
			{sec: 30, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v2 p8 a:4"}},
		}},
		{"a new key makes a version", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v2 p8 a:4,b:2"}},
		}},
		{"a key with one bucket is not salted", Config{}, []step{
			{sec: 10, keys: []hk{{key: "b", buckets: 1}}, current: "none"},
			{sec: 20, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 1}}, want: []string{"v1 p8 a:4"}},
		}},
		{"a parallelism change drops the old salted keys", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v1 p8 a:4,b:2"}},
			{sec: 20, par: 16, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v2 p16 a:4"}},
			{sec: 30, par: 16, keys: []hk{{key: "a", buckets: 4}}},
		}},
		{"a parallelism change with no salted key retires", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 20, par: 16, keys: []hk{{key: "a", buckets: 1}}, want: []string{"retired"}},
		}},
		{"the TTL retires a plan that is not confirmed", long, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 1809, advance: true},
			{sec: 1810, advance: true, want: []string{"retired"}},
		}},
		{"a finding without salted keys confirms the plan", long, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 1000, keys: []hk{{key: "b", buckets: 1}}},
			{sec: 1810, advance: true, current: "v1 p8 a:4"},
			{sec: 2799, advance: true},
			{sec: 2800, advance: true, want: []string{"retired"}},
		}},
		{"a stale finding is ignored", Config{}, []step{
			{sec: 20, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, current: "v1 p8 a:4"},
		}},
		{"replaying a window changes nothing", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}},
		}},
		{"versions continue after a retirement", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 610, advance: true, want: []string{"retired"}},
			{sec: 700, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v2 p8 a:4"}},
		}},
		{"a retired task is forgotten after RetainRetired", Config{RetainRetired: time.Hour}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 610, advance: true, want: []string{"retired"}},
			{sec: 4210, advance: true},
			{sec: 4220, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
		}},
		{"hot_key findings keep a working plan", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v1 p8 a:4,b:2"}},
			// Salting balanced the load: no more salting_plan findings,
			// but a is still hot.
			{sec: 600, hot: "a"},
			{sec: 610, hot: "a", want: []string{"v2 p8 a:4"}},
			{sec: 1200, hot: "a"},
			{sec: 1799, advance: true, current: "v2 p8 a:4"},
			{sec: 1800, advance: true, want: []string{"retired"}},
		}},
		{"hot_key findings confirm against the TTL", long, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 1000, hot: "a"},
			{sec: 1810, advance: true, current: "v1 p8 a:4"},
			{sec: 2800, advance: true, want: []string{"retired"}},
		}},
		{"a hot_key finding adds no key", Config{}, []step{
			{sec: 5, hot: "a", current: "none"},
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 20, hot: "b", current: "v1 p8 a:4"},
			{sec: 610, advance: true, want: []string{"retired"}},
		}},
		{"time does not go back", Config{}, []step{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{sec: 610, advance: true, want: []string{"retired"}},
			{sec: 20, advance: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, tt.cfg)
			for i, s := range tt.steps {
				var got []Change
				switch {
				case s.advance:
					got = m.Advance(at(s.sec))
				case s.hot != "":
					got = m.Observe(hotKeyFinding(s.sec, s.hot))
				default:
					p := s.par
					if p == 0 {
						p = 8
					}
					got = m.Observe(finding(t, s.sec, p, s.keys...))
				}
				if d := describe(got); !eq(d, s.want) {
					t.Fatalf("step %d (t=%ds): changes %q, want %q", i, s.sec, d, s.want)
				}
				if s.current != "" {
					if d := describePlan(m.Plan("j", "agg")); d != s.current {
						t.Fatalf("step %d (t=%ds): serving %q, want %q", i, s.sec, d, s.current)
					}
				}
			}
		})
	}
}

// TestSaltsKeptWhileNotMaterial: the engine may pick other salted keys
// for the same bucket count (the load of other subtasks moved); the plan
// keeps the ones the job already uses, while shares are refreshed.
func TestSaltsKeptWhileNotMaterial(t *testing.T) {
	m := newManager(t, Config{})
	first := m.Observe(finding(t, 10, 8, hk{key: "a", buckets: 4, share: 0.3}))
	if len(first) != 1 {
		t.Fatalf("changes %q", describe(first))
	}
	if got := m.Observe(finding(t, 20, 8, hk{key: "a", buckets: 4, share: 0.5, from: 77})); len(got) != 0 {
		t.Fatalf("other salts for the same buckets gave %q", describe(got))
	}
	p := m.Plan("j", "agg")
	if !slices.Equal(p.HotKeys[0].Salted, first[0].Plan.HotKeys[0].Salted) {
		t.Fatalf("salted keys changed: %v -> %v", first[0].Plan.HotKeys[0].Salted, p.HotKeys[0].Salted)
	}
	if p.HotKeys[0].Share != 0.5 || !p.UpdatedAt.Equal(at(20)) || !p.HotKeys[0].LastHotAt.Equal(at(20)) {
		t.Fatalf("share %v updated %v last hot %v: not refreshed", p.HotKeys[0].Share, p.UpdatedAt, p.HotKeys[0].LastHotAt)
	}
	if !p.GeneratedAt.Equal(at(10)) || p.Version != 1 {
		t.Fatalf("generated %v version %d, want those of version 1", p.GeneratedAt, p.Version)
	}
	if want := at(20).Add(DefaultConfig().Cooldown); !p.ExpiresAt.Equal(want) {
		t.Fatalf("expires %v, want %v (the cooldown of its last key)", p.ExpiresAt, want)
	}
}

func TestPredictedLoads(t *testing.T) {
	m := newManager(t, Config{})
	cs := m.Observe(finding(t, 10, 8, hk{key: "a", buckets: 4, share: 0.4}, hk{key: "b", buckets: 2, share: 0.1}))
	if len(cs) != 1 {
		t.Fatalf("changes %q", describe(cs))
	}
	tests := []struct {
		key           string
		before, after float64
	}{
		{"a", 3.2, 0.8}, // 0.4 × 8, then / 4
		{"b", 0.8, 0.4},
	}
	for i, tt := range tests {
		k := cs[0].Plan.HotKeys[i]
		if k.Key != tt.key || k.PredictedLoadBefore != tt.before || k.PredictedLoadAfter != tt.after {
			t.Errorf("key %q: loads %v → %v, want %q %v → %v", k.Key, k.PredictedLoadBefore, k.PredictedLoadAfter, tt.key, tt.before, tt.after)
		}
	}
}

// TestBadFindings: findings the Manager cannot use are counted and never
// make a plan; the Manager does not panic on them.
func TestBadFindings(t *testing.T) {
	good := func() *skew.Finding { return finding(t, 10, 8, hk{key: "a", buckets: 4}) }
	tests := []struct {
		name    string
		f       func() *skew.Finding
		invalid uint64
		badKeys uint64
		sep     string // the Manager's separator (default "#")
	}{
		{"nil", func() *skew.Finding { return nil }, 0, 0, ""},
		{"hot_key kind", func() *skew.Finding { f := good(); f.Kind = skew.KindHotKey; return f }, 0, 0, ""},
		{"no plan", func() *skew.Finding { f := good(); f.Plan = nil; return f }, 0, 0, ""},
		{"empty job", func() *skew.Finding { f := good(); f.JobID = ""; return f }, 1, 0, ""},
		{"slash in job", func() *skew.Finding { f := good(); f.JobID = "a/b"; return f }, 1, 0, ""},
		{"control char in task", func() *skew.Finding { f := good(); f.TaskName = "a\nb"; return f }, 1, 0, ""},
		{"long task", func() *skew.Finding { f := good(); f.TaskName = strings.Repeat("x", 257); return f }, 1, 0, ""},
		{"zero parallelism", func() *skew.Finding { f := good(); f.Plan.Parallelism = 0; return f }, 1, 0, ""},
		{"max parallelism 0", func() *skew.Finding { f := good(); f.Plan.MaxParallelism = 0; return f }, 1, 0, ""},
		{"max below parallelism", func() *skew.Finding { f := good(); f.Plan.MaxParallelism = 4; return f }, 1, 0, ""},
		{"subtask out of range", func() *skew.Finding { f := good(); f.Plan.Keys[0].Salted[1].Subtask = 8; return f }, 0, 1, ""},
		{"subtask not where Flink routes", func() *skew.Finding {
			f := good()
			s := &f.Plan.Keys[0].Salted[1]
			s.Subtask = (s.Subtask + 1) % 8
			return f
		}, 0, 1, ""},
		{"buckets and salted disagree", func() *skew.Finding { f := good(); f.Plan.Keys[0].Buckets = 5; return f }, 0, 1, ""},
		{"duplicate salted key", func() *skew.Finding { f := good(); s := f.Plan.Keys[0].Salted; s[1] = s[0]; return f }, 0, 1, ""},
		{"invalid UTF-8 key", func() *skew.Finding { return finding(t, 10, 8, hk{key: "\xff", buckets: 2}) }, 0, 1, ""},
		{"NaN share", func() *skew.Finding { return finding(t, 10, 8, hk{key: "a", buckets: 2, share: nanShare()}) }, 0, 1, ""},
		{"engine with another separator", good, 0, 1, "|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, Config{Separator: tt.sep})
			if got := m.Observe(tt.f()); len(got) != 0 {
				t.Fatalf("changes %q from a bad finding", describe(got))
			}
			st := m.Stats()
			if st.Invalid != tt.invalid || st.BadKeys != tt.badKeys || st.Plans != 0 || st.Tasks != 0 {
				t.Fatalf("stats %+v, want invalid %d bad keys %d and no plan", st, tt.invalid, tt.badKeys)
			}
		})
	}
}

func nanShare() float64 { z := 0.0; return z / z }

// TestBounds: MaxPlans and MaxKeys bound the Manager's memory.
func TestBounds(t *testing.T) {
	t.Run("max plans", func(t *testing.T) {
		m := newManager(t, Config{MaxPlans: 2})
		for i, task := range []string{"t1", "t2", "t3"} {
			cs := m.Observe(findingFor(t, "j", task, 10, 8, 128, hk{key: "a", buckets: 2}))
			if want := i < 2; (len(cs) == 1) != want {
				t.Fatalf("task %s: changes %q", task, describe(cs))
			}
		}
		if st := m.Stats(); st.Overflow != 1 || st.Tasks != 2 {
			t.Fatalf("stats %+v, want 1 overflow and 2 tasks", st)
		}
		// Once t1 is retired, t3 takes its place.
		m.Observe(findingFor(t, "j", "t2", 500, 8, 128, hk{key: "a", buckets: 2}))
		if got := describe(m.Advance(at(610))); !eq(got, []string{"j/t1 retired"}) {
			t.Fatalf("advance: %q", got)
		}
		if cs := m.Observe(findingFor(t, "j", "t3", 620, 8, 128, hk{key: "a", buckets: 2})); len(cs) != 1 {
			t.Fatalf("t3 after t1 retired: %q", describe(cs))
		}
	})
	t.Run("max keys", func(t *testing.T) {
		m := newManager(t, Config{MaxKeys: 2})
		m.Observe(finding(t, 10, 8, hk{key: "a", buckets: 2}, hk{key: "b", buckets: 2}))
		cs := m.Observe(finding(t, 20, 8, hk{key: "c", buckets: 2, share: 0.1}, hk{key: "d", buckets: 2, share: 0.2}))
		if got := describe(cs); !eq(got, []string{"v2 p8 c:2,d:2"}) {
			t.Fatalf("changes %q: the keys hot now must win", got)
		}
		cs = m.Observe(finding(t, 30, 8, hk{key: "e", buckets: 2, share: 0.1}, hk{key: "f", buckets: 2, share: 0.2}, hk{key: "g", buckets: 2, share: 0.3}))
		if got := describe(cs); !eq(got, []string{"v3 p8 f:2,g:2"}) {
			t.Fatalf("changes %q: the largest shares must win", got)
		}
		if st := m.Stats(); st.KeysCapped != 5 {
			t.Fatalf("capped %d keys, want 5", st.KeysCapped)
		}
	})
}

// TestDeterminism: the same findings give the same changes, byte for byte,
// whatever the order the Manager's maps iterate in.
func TestDeterminism(t *testing.T) {
	var fs []*skew.Finding
	for w := 1; w <= 200; w++ {
		var keys []hk
		for i, k := range []string{"k0", "k1", "k2", "k3", "k4", "k5"} {
			// Keys come and go at different rhythms, with changing
			// bucket counts and salts.
			if (w/(i+1))%3 != 0 {
				keys = append(keys, hk{key: k, buckets: 2 + (w/(7+i))%5, share: float64(i+1) / 30, from: w % 4})
			}
		}
		for _, task := range []string{"agg", "join", "sink"} {
			fs = append(fs, findingFor(t, "job", task, w*10, 8+w/100*4, 128, keys...))
		}
	}
	run := func() ([]byte, []byte) {
		m := newManager(t, Config{Cooldown: 100 * time.Second, TTL: 200 * time.Second})
		var all []Change
		for i, f := range fs {
			all = append(all, m.Observe(f)...)
			if i%3 == 2 {
				all = append(all, m.Advance(time.UnixMilli(f.WindowEnd))...)
			}
		}
		all = append(all, m.Advance(at(3000))...)
		a, err := json.Marshal(all)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := json.Marshal(m.Current())
		return a, c
	}
	a1, c1 := run()
	for range 5 {
		a2, c2 := run()
		if !bytes.Equal(a1, a2) || !bytes.Equal(c1, c2) {
			t.Fatalf("two runs differ:\n%s\n%s", a1, a2)
		}
	}
	var changes []Change
	if err := json.Unmarshal(a1, &changes); err != nil {
		t.Fatal(err)
	}
	retired := 0
	for _, c := range changes {
		if c.Retired {
			retired++
		}
	}
	// The input must exercise the lifecycle for the comparison to mean
	// anything: several versions per task and the final retirements.
	if len(changes) < 15 || retired != 3 {
		t.Fatalf("%d changes, %d retirements: the input does not exercise the lifecycle", len(changes), retired)
	}
	t.Logf("%d changes, %d bytes of JSON", len(changes), len(a1))
}

// TestRestoreContinues: a Manager restored from the served plans gives no
// change for replayed findings and continues the versions.
func TestRestoreContinues(t *testing.T) {
	fs := []*skew.Finding{
		finding(t, 10, 8, hk{key: "a", buckets: 4}),
		finding(t, 20, 8, hk{key: "a", buckets: 4}, hk{key: "b", buckets: 2}),
		finding(t, 30, 8, hk{key: "a", buckets: 4}),
	}
	m := newManager(t, Config{})
	for _, f := range fs {
		m.Observe(f)
	}
	saved := m.Current()
	if len(saved) != 1 || saved[0].Version != 2 {
		t.Fatalf("before restart: %+v", saved)
	}
	// The plans table may also hold an older version; it is ignored.
	old := saved[0]
	old.Version = 1
	old.HotKeys = old.HotKeys[:1]

	r := newManager(t, Config{})
	if err := r.Restore(Stored{Plans: []Plan{saved[0], old}}); len(err) > 0 {
		t.Fatal(err)
	}
	for i, f := range fs {
		if got := r.Observe(f); len(got) != 0 {
			t.Fatalf("replayed finding %d: %q", i, describe(got))
		}
	}
	if got := describe(r.Observe(finding(t, 40, 8, hk{key: "c", buckets: 2}))); !eq(got, []string{"v3 p8 a:4,b:2,c:2"}) {
		t.Fatalf("after restore: %q", got)
	}
	// Cooldowns go on from the restored LastHotAt: b was last hot at 20 s.
	if got := describe(r.Advance(at(620))); !eq(got, []string{"v4 p8 a:4,c:2"}) {
		t.Fatalf("cooldown after restore: %q", got)
	}
	bad := saved[0]
	bad.Version = 0
	if refused := r.Restore(Stored{Plans: []Plan{bad}}); len(refused) != 1 || refused[0].JobID != bad.JobID || r.Stats().RefusedJobs != 1 {
		t.Fatalf("restored a plan of version 0: refused %v, stats %+v", refused, r.Stats())
	}
}

func TestConfigValidate(t *testing.T) {
	var z Config
	if err := z.Validate(); err == nil || z != (Config{}) {
		t.Fatalf("Validate of the zero Config: err %v, config %+v (it only checks)", err, z)
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if m := newManager(t, Config{}); m.Config() != c {
		t.Fatalf("NewManager(Config{}) uses %+v, want the defaults %+v", m.Config(), c)
	}
	if c.Cooldown != 10*time.Minute || c.TTL != 30*time.Minute || c.BucketChange != 0.5 ||
		c.Separator != "#" || c.MaxPlans != 10000 || c.MaxKeys != 64 || c.RetainRetired != 24*time.Hour {
		t.Fatalf("defaults not filled in: %+v", c)
	}
	bad := []Config{
		{Cooldown: -time.Second},
		{TTL: -1},
		{BucketChange: 1.5},
		{BucketChange: -0.1},
		{BucketChange: nanShare()},
		{Separator: "\n"},
		{Separator: strings.Repeat("#", 17)},
		{MaxPlans: -1},
		{MaxKeys: -1},
		{RetainRetired: -time.Hour},
	}
	for _, c := range bad {
		if _, err := NewManager(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// TestRestoreGoesOn: restored plans (the pipeline restores those of the
// jobs it owns) are served at once and go on as if there had been no
// restart: each key cools at its own last hot time, findings confirm and
// change them, overrides take effect. The Manager's time is not that of
// the newest restored plan, which would cool the keys of the others.
func TestRestoreGoesOn(t *testing.T) {
	// The plans: j/agg last confirmed at 20 s (its key a last hot then),
	// k/agg at 1000 s.
	a := newManager(t, Config{})
	a.Observe(finding(t, 10, 8, hk{key: "a", buckets: 4}))
	a.Observe(finding(t, 20, 8, hk{key: "a", buckets: 4}))
	b := newManager(t, Config{})
	b.Observe(findingFor(t, "k", "agg", 1000, 8, 128, hk{key: "x", buckets: 2}))
	group := append(a.Current(), b.Current()...)
	if len(group) != 2 {
		t.Fatalf("group plans %+v, want j/agg and k/agg", group)
	}
	both := []string{"j/agg v1 p8 a:4", "k/agg v1 p8 x:2"}
	pinK := []Override{{JobID: "k", TaskName: "agg", Action: ActionPin, At: at(900)}}
	type op struct {
		observe *skew.Finding
		advance int // seconds, when set
		ovs     []Override
		want    []string // changes
		current []string // Current, as "job/task plan"
	}
	tests := []struct {
		name string
		ops  []op
	}{
		{"restored plans are served at once", []op{
			{advance: 30, want: nil, current: both},
		}},
		{"each key cools at its own time", []op{
			// a cools down 600 s after it was last hot; x at 1600 s.
			{advance: 630, want: []string{"retired"}, current: []string{"k/agg v1 p8 x:2"}},
			{advance: 1610, want: []string{"k/agg retired"}, current: nil},
		}},
		{"a plan finding goes on from the restored plan", []op{
			{observe: finding(t, 30, 8, hk{key: "a", buckets: 4}), want: nil, current: both},
			{observe: finding(t, 40, 8, hk{key: "a", buckets: 4}, hk{key: "b", buckets: 2}), want: []string{"v2 p8 a:4,b:2"},
				current: []string{"j/agg v2 p8 a:4,b:2", "k/agg v1 p8 x:2"}},
		}},
		{"overrides take effect at once", []op{
			{ovs: pinK, want: []string{"k/agg v2 p8 x:2 pinned"}, current: []string{"j/agg v1 p8 a:4", "k/agg v2 p8 x:2 pinned"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, Config{})
			if err := m.Restore(Stored{Plans: group}); len(err) > 0 {
				t.Fatal(err)
			}
			for i, o := range tt.ops {
				var got []Change
				switch {
				case o.observe != nil:
					got = m.Observe(o.observe)
				case o.ovs != nil:
					var err error
					if got, err = m.SetOverrides(o.ovs); err != nil {
						t.Fatal(err)
					}
				default:
					got = m.Advance(at(o.advance))
				}
				if d := describe(got); !eq(d, o.want) {
					t.Fatalf("op %d: changes %q, want %q", i, d, o.want)
				}
				var cur []string
				for _, p := range m.Current() {
					cur = append(cur, Key(p.JobID, p.TaskName)+" "+describePlan(&p))
				}
				if !eq(cur, o.current) {
					t.Fatalf("op %d: current %q, want %q", i, cur, o.current)
				}
			}
		})
	}
}

// TestReset: a reset Manager is as new but for its counters, and takes a
// restore again.
func TestReset(t *testing.T) {
	m := newManager(t, Config{})
	m.Observe(finding(t, 10, 8, hk{key: "a", buckets: 4}))
	m.Observe(findingFor(t, "j/x", "agg", 10, 8, 128, hk{key: "a", buckets: 4})) // invalid job id
	saved := m.Current()
	m.Reset()
	if st := m.Stats(); st.Tasks != 0 || st.Plans != 0 || st.Invalid != 1 {
		t.Fatalf("stats after Reset: %+v, want no tasks and the counters kept", st)
	}
	if cs := m.Advance(at(5000)); len(cs) != 0 {
		t.Fatalf("changes after Reset: %q", describe(cs))
	}
	if err := m.Restore(Stored{Plans: saved}); len(err) > 0 {
		t.Fatal(err)
	}
	if got := describe(m.Observe(finding(t, 20, 8, hk{key: "a", buckets: 4}, hk{key: "b", buckets: 2}))); !eq(got, []string{"v2 p8 a:4,b:2"}) {
		t.Fatalf("after Reset and Restore: %q", got)
	}
}
