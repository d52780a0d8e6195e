package plans

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew/keygroup"
)

// overridePlan returns a valid replacement plan for j/agg at parallelism
// 8/128 that salts key into buckets buckets.
func overridePlan(t testing.TB, key string, buckets int) *Plan {
	t.Helper()
	r, _ := keygroup.NewRouter(8, 128)
	return &Plan{
		Parallelism: 8, MaxParallelism: 128, Separator: "#",
		HotKeys: []HotKey{{Key: key, Share: 0.5, Subtask: r.Subtask(key), Buckets: buckets,
			Salted: salts(t, r, key, "#", buckets, 0)}},
	}
}

func TestOverrideValidate(t *testing.T) {
	ok := func(action string) Override {
		o := Override{JobID: "j", TaskName: "agg", Action: action, By: "alice", At: at(0), Reason: "incident 42"}
		switch action {
		case ActionExclude:
			o.Key = "a"
		case ActionOverride:
			o.Plan = overridePlan(t, "a", 3)
		}
		return o
	}
	tests := []struct {
		name    string
		o       func() Override
		wantErr string // "" when valid
	}{
		{"pin", func() Override { return ok(ActionPin) }, ""},
		{"exclude", func() Override { return ok(ActionExclude) }, ""},
		{"override", func() Override { return ok(ActionOverride) }, ""},
		{"UTF-8 names", func() Override { o := ok(ActionPin); o.TaskName = "Window(Tumbling) → Sink: 用户"; return o }, ""},
		{"key of 64 KiB", func() Override { o := ok(ActionExclude); o.Key = strings.Repeat("k", MaxKeyBytes); return o }, ""},
		{"unknown action", func() Override { o := ok(ActionPin); o.Action = "unpin"; return o }, "action"},
		{"empty job", func() Override { o := ok(ActionPin); o.JobID = ""; return o }, "job id"},
		{"slash in job", func() Override { o := ok(ActionPin); o.JobID = "a/b"; return o }, "job id"},
		{"job of 257 bytes", func() Override { o := ok(ActionPin); o.JobID = strings.Repeat("j", 257); return o }, "job id"},
		{"task of 256 bytes", func() Override { o := ok(ActionPin); o.TaskName = strings.Repeat("t", 256); return o }, ""},
		{"task of 257 bytes", func() Override { o := ok(ActionPin); o.TaskName = strings.Repeat("t", 257); return o }, "task name"},
		{"invalid UTF-8 task", func() Override { o := ok(ActionPin); o.TaskName = "a\xffb"; return o }, "task name"},
		{"control char in task", func() Override { o := ok(ActionPin); o.TaskName = "a\x00b"; return o }, "task name"},
		{"control char in by", func() Override { o := ok(ActionPin); o.By = "eve\r\n"; return o }, "by"},
		{"long reason", func() Override { o := ok(ActionPin); o.Reason = strings.Repeat("r", MaxReasonBytes+1); return o }, "reason"},
		{"exclude without key", func() Override { o := ok(ActionExclude); o.Key = ""; return o }, "key required"},
		{"key over 64 KiB", func() Override { o := ok(ActionExclude); o.Key = strings.Repeat("k", MaxKeyBytes+1); return o }, "key"},
		{"invalid UTF-8 key", func() Override { o := ok(ActionExclude); o.Key = "\xc3"; return o }, "UTF-8"},
		{"key on a pin", func() Override { o := ok(ActionPin); o.Key = "a"; return o }, "key is for exclude"},
		{"plan on an exclude", func() Override { o := ok(ActionExclude); o.Plan = overridePlan(t, "a", 2); return o }, "plan is for override"},
		{"override without plan", func() Override { o := ok(ActionOverride); o.Plan = nil; return o }, "plan required"},
		{"plan without keys", func() Override { o := ok(ActionOverride); o.Plan.HotKeys = nil; return o }, "no hot keys"},
		{"plan of another task", func() Override { o := ok(ActionOverride); o.Plan.TaskName = "other"; return o }, "task name"},
		{"plan with bad parallelism", func() Override { o := ok(ActionOverride); o.Plan.MaxParallelism = 4; return o }, "max"},
		{"plan without separator", func() Override { o := ok(ActionOverride); o.Plan.Separator = ""; return o }, "separator"},
		{"salted subtask out of range", func() Override {
			o := ok(ActionOverride)
			o.Plan.HotKeys[0].Salted[0].Subtask = 8
			return o
		}, "out of range"},
		{"salted key routed elsewhere", func() Override {
			o := ok(ActionOverride)
			s := &o.Plan.HotKeys[0].Salted[0]
			s.Subtask = (s.Subtask + 1) % 8
			return o
		}, "routes it"},
		{"unsalted subtask wrong", func() Override {
			o := ok(ActionOverride)
			k := &o.Plan.HotKeys[0]
			k.Subtask = (k.Subtask + 1) % 8
			return o
		}, "routes it"},
		{"one bucket", func() Override {
			o := ok(ActionOverride)
			k := &o.Plan.HotKeys[0]
			k.Buckets, k.Salted = 1, k.Salted[:1]
			return o
		}, "at least 2"},
		{"buckets not the salted keys", func() Override { o := ok(ActionOverride); o.Plan.HotKeys[0].Buckets = 4; return o }, "one per bucket"},
		{"duplicate salted key", func() Override {
			o := ok(ActionOverride)
			s := o.Plan.HotKeys[0].Salted
			s[1] = s[0]
			return o
		}, "repeats"},
		{"duplicate hot key", func() Override {
			o := ok(ActionOverride)
			o.Plan.HotKeys = append(o.Plan.HotKeys, o.Plan.HotKeys[0])
			return o
		}, "twice"},
		{"share above 1", func() Override { o := ok(ActionOverride); o.Plan.HotKeys[0].Share = 1.5; return o }, "share"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o().Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("valid override rejected: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("invalid override accepted")
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestApply(t *testing.T) {
	m := newManager(t, Config{})
	cs := m.Observe(finding(t, 10, 8, hk{key: "a", buckets: 4}, hk{key: "b", buckets: 2}))
	engine := cs[0].Plan
	ov := func(action, key string, sec int, p *Plan) Override {
		return Override{JobID: "j", TaskName: "agg", Action: action, Key: key, Plan: p, At: at(sec)}
	}
	tests := []struct {
		name string
		p    *Plan
		ovs  []Override
		want string
	}{
		{"nothing", nil, nil, "none"},
		{"no overrides", engine, nil, "v1 p8 a:4,b:2"},
		{"exclude one", engine, []Override{ov(ActionExclude, "b", 0, nil)}, "v1 p8 a:4"},
		{"exclude all", engine, []Override{ov(ActionExclude, "a", 0, nil), ov(ActionExclude, "b", 0, nil)}, "none"},
		{"exclude an absent key", engine, []Override{ov(ActionExclude, "zz", 0, nil)}, "v1 p8 a:4,b:2"},
		{"pin", engine, []Override{ov(ActionPin, "", 0, nil)}, "v1 p8 a:4,b:2 pinned"},
		{"override", engine, []Override{ov(ActionOverride, "", 0, overridePlan(t, "z", 3))}, "v0 p8 z:3 override"},
		{"override without engine plan", nil, []Override{ov(ActionOverride, "", 0, overridePlan(t, "z", 3))}, "v0 p8 z:3 override"},
		{"latest override wins", engine, []Override{
			ov(ActionOverride, "", 20, overridePlan(t, "y", 2)),
			ov(ActionOverride, "", 10, overridePlan(t, "z", 3)),
		}, "v0 p8 y:2 override"},
		{"override, pin and exclude together", engine, []Override{
			ov(ActionExclude, "x", 0, nil),
			ov(ActionPin, "", 0, nil),
			ov(ActionOverride, "", 0, func() *Plan {
				p := overridePlan(t, "x", 2)
				p.HotKeys = append(p.HotKeys, overridePlan(t, "w", 2).HotKeys...)
				return p
			}()),
		}, "v0 p8 w:2 override pinned"},
		{"another task's overrides are ignored", engine, []Override{
			{JobID: "j", TaskName: "other", Action: ActionExclude, Key: "a"},
			{JobID: "k", TaskName: "agg", Action: ActionPin},
		}, "v1 p8 a:4,b:2"},
		{"invalid overrides are ignored", engine, []Override{
			ov(ActionExclude, "", 0, nil),
			ov(ActionOverride, "", 0, nil),
			ov("drop", "a", 0, nil),
		}, "v1 p8 a:4,b:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := json.Marshal(struct {
				P   *Plan
				Ovs []Override
			}{tt.p, tt.ovs})
			got := Apply(tt.p, tt.ovs)
			if d := describePlan(got); d != tt.want {
				t.Fatalf("Apply = %q, want %q", d, tt.want)
			}
			after, _ := json.Marshal(struct {
				P   *Plan
				Ovs []Override
			}{tt.p, tt.ovs})
			if string(before) != string(after) {
				t.Fatal("Apply modified its arguments")
			}
			if got != nil && (got.Pinned || got.Source == SourceOverride) && !got.ExpiresAt.IsZero() {
				t.Fatalf("pinned or overridden plan expires at %v", got.ExpiresAt)
			}
			if got != nil && (got.JobID != "j" || got.TaskName != "agg") {
				t.Fatalf("plan for %s/%s", got.JobID, got.TaskName)
			}
		})
	}
}

// TestManagerOverrides: overrides change what is served, with versions
// that continue the engine's.
func TestManagerOverrides(t *testing.T) {
	pin := Override{JobID: "j", TaskName: "agg", Action: ActionPin, By: "alice", At: at(15)}
	excl := func(key string) Override {
		return Override{JobID: "j", TaskName: "agg", Action: ActionExclude, Key: key, At: at(15)}
	}
	repl := Override{JobID: "j", TaskName: "agg", Action: ActionOverride, Plan: overridePlan(t, "z", 3), At: at(15)}
	type op struct {
		sec     int
		keys    []hk       // Observe
		ovs     []Override // SetOverrides when set (or clear is)
		clear   bool
		advance bool
		want    []string
		wantErr bool
	}
	tests := []struct {
		name    string
		ops     []op
		current string
	}{
		{"pin survives engine changes and time", []op{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{ovs: []Override{pin}, want: []string{"v2 p8 a:4 pinned"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 8}, {key: "b", buckets: 2}}},
			{sec: 30, keys: []hk{{key: "c", buckets: 2}}},
			{sec: 7200, advance: true},
		}, "v2 p8 a:4 pinned"},
		{"unpin serves the engine's plan again", []op{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{ovs: []Override{pin}, want: []string{"v2 p8 a:4 pinned"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 8}, {key: "b", buckets: 2}}},
			{clear: true, want: []string{"v3 p8 a:8,b:2"}},
		}, "v3 p8 a:8,b:2"},
		{"unpin after the engine's keys cooled down retires", []op{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{ovs: []Override{pin}, want: []string{"v2 p8 a:4 pinned"}},
			{sec: 7200, advance: true},
			{clear: true, want: []string{"retired"}},
		}, "none"},
		{"pin without a plan serves none", []op{
			{ovs: []Override{pin}},
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}},
		}, "none"},
		{"exclude removes a key and keeps it out", []op{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v1 p8 a:4,b:2"}},
			{ovs: []Override{excl("b")}, want: []string{"v2 p8 a:4"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 4}}},
			{sec: 30, keys: []hk{{key: "b", buckets: 2}}},
		}, "v2 p8 a:4"},
		{"removing an exclude brings the key back", []op{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v1 p8 a:4,b:2"}},
			{ovs: []Override{excl("b")}, want: []string{"v2 p8 a:4"}},
			{clear: true, want: []string{"v3 p8 a:4,b:2"}},
		}, "v3 p8 a:4,b:2"},
		{"excluding every key retires", []op{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{ovs: []Override{excl("a")}, want: []string{"retired"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 4}}},
		}, "none"},
		{"an override replaces the engine's plan and does not expire", []op{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}}, want: []string{"v1 p8 a:4"}},
			{ovs: []Override{repl}, want: []string{"v2 p8 z:3 override"}},
			{sec: 20, keys: []hk{{key: "a", buckets: 8}}},
			{sec: 7200, advance: true},
		}, "v2 p8 z:3 override"},
		{"an override creates a plan", []op{
			{ovs: []Override{repl}, want: []string{"v1 p8 z:3 override"}},
			{clear: true, want: []string{"retired"}},
		}, "none"},
		{"setting the same overrides again changes nothing", []op{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v1 p8 a:4,b:2"}},
			{ovs: []Override{excl("b"), pin}, want: []string{"v2 p8 a:4 pinned"}},
			{ovs: []Override{pin, excl("b")}},
		}, "v2 p8 a:4 pinned"},
		{"an invalid override is rejected, the valid ones apply", []op{
			{sec: 10, keys: []hk{{key: "a", buckets: 4}, {key: "b", buckets: 2}}, want: []string{"v1 p8 a:4,b:2"}},
			{ovs: []Override{func() Override {
				o := repl
				o.Plan = overridePlan(t, "z", 3)
				o.Plan.HotKeys[0].Salted[0].Subtask = 9
				return o
			}(), excl("a")}, want: []string{"v2 p8 b:2"}, wantErr: true},
		}, "v2 p8 b:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, Config{})
			for i, o := range tt.ops {
				var got []Change
				var err error
				switch {
				case o.ovs != nil || o.clear:
					got, err = m.SetOverrides(o.ovs)
				case o.advance:
					got = m.Advance(at(o.sec))
				default:
					got = m.Observe(finding(t, o.sec, 8, o.keys...))
				}
				if (err != nil) != o.wantErr {
					t.Fatalf("op %d: error %v, want error %v", i, err, o.wantErr)
				}
				if d := describe(got); !eq(d, o.want) {
					t.Fatalf("op %d: changes %q, want %q", i, d, o.want)
				}
			}
			p := m.Plan("j", "agg")
			if d := describePlan(p); d != tt.current {
				t.Fatalf("serving %q, want %q", d, tt.current)
			}
			if p != nil && (p.Pinned || p.Source == SourceOverride) && !p.ExpiresAt.IsZero() {
				t.Fatalf("pinned or overridden plan expires at %v", p.ExpiresAt)
			}
		})
	}
}

// TestRestorePinned: a pinned plan read back after a restart stays frozen
// while the pin exists, with no new version.
func TestRestorePinned(t *testing.T) {
	pin := Override{JobID: "j", TaskName: "agg", Action: ActionPin, At: at(15)}
	m := newManager(t, Config{})
	m.Observe(finding(t, 10, 8, hk{key: "a", buckets: 4}))
	if _, err := m.SetOverrides([]Override{pin}); err != nil {
		t.Fatal(err)
	}
	saved := m.Current()

	r := newManager(t, Config{})
	if err := r.Restore(Stored{Plans: saved}); len(err) > 0 {
		t.Fatal(err)
	}
	// Findings before SetOverrides leave the pinned plan alone too.
	if got := r.Observe(finding(t, 20, 8, hk{key: "b", buckets: 2})); len(got) != 0 {
		t.Fatalf("observe after restore: %q", describe(got))
	}
	if got, err := r.SetOverrides([]Override{pin}); err != nil || len(got) != 0 {
		t.Fatalf("same pin after restore: %q, %v", describe(got), err)
	}
	if d := describePlan(r.Plan("j", "agg")); d != "v2 p8 a:4 pinned" {
		t.Fatalf("serving %q", d)
	}
	got, err := r.SetOverrides(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := describe(got); !eq(d, []string{"v3 p8 b:2"}) {
		t.Fatalf("unpin after restore: %q", d)
	}
}

func TestOverridesAtEventTime(t *testing.T) {
	m := newManager(t, Config{})
	m.Observe(finding(t, 10, 8, hk{key: "a", buckets: 4}))
	m.Advance(at(30))
	cs, err := m.SetOverrides([]Override{{JobID: "j", TaskName: "agg", Action: ActionPin, At: time.Now()}})
	if err != nil || len(cs) != 1 {
		t.Fatalf("%q, %v", describe(cs), err)
	}
	if !cs[0].Plan.GeneratedAt.Equal(at(30)) {
		t.Fatalf("generated at %v, want the Manager's event time %v", cs[0].Plan.GeneratedAt, at(30))
	}
}
