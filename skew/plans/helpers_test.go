package plans

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// t0 is the event time the tests start at (window end 0 in findings).
var t0 = time.UnixMilli(1_700_000_000_000).UTC()

// at returns the event time sec seconds after t0.
func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// salts returns n salted keys of key that land on distinct subtasks
// under Flink's routing, starting the salt search at from (so that two
// calls with different from give different salted keys).
func salts(t testing.TB, r keygroup.Router, key, sep string, n, from int) []skew.SaltTarget {
	t.Helper()
	var out []skew.SaltTarget
	used := map[int]bool{}
	for s := from; len(out) < n; s++ {
		if s > from+10000 {
			t.Fatalf("no %d distinct subtasks for %q", n, key)
		}
		k := key + sep + strconv.Itoa(s)
		kg, st := r.Route(keygroup.StringHash(k))
		if used[st] {
			continue
		}
		used[st] = true
		out = append(out, skew.SaltTarget{Key: k, KeyGroup: kg, Subtask: st})
	}
	return out
}

// hk describes one key of a test finding.
type hk struct {
	key     string
	buckets int
	share   float64
	from    int // first salt tried (see salts)
}

// finding builds a salting_plan finding of job j, task "agg", for the
// window ending sec seconds after t0, at parallelism p (max parallelism
// 128).
func finding(t testing.TB, sec, p int, keys ...hk) *skew.Finding {
	t.Helper()
	return findingFor(t, "j", "agg", sec, p, 128, keys...)
}

func findingFor(t testing.TB, job, task string, sec, p, maxP int, keys ...hk) *skew.Finding {
	t.Helper()
	r, err := keygroup.NewRouter(p, maxP)
	if err != nil {
		t.Fatal(err)
	}
	plan := &skew.Plan{Parallelism: p, MaxParallelism: r.MaxParallelism, MaxOverMeanBefore: 3, MaxOverMeanAfter: 1.2}
	for _, k := range keys {
		share := k.share
		if share == 0 {
			share = 0.3
		}
		sk := skew.SaltedKey{Key: k.key, Share: share, Subtask: r.Subtask(k.key), Buckets: k.buckets}
		if k.buckets > 1 {
			sk.Salted = salts(t, r, k.key, "#", k.buckets, k.from)
		}
		plan.Keys = append(plan.Keys, sk)
	}
	end := at(sec).UnixMilli()
	return &skew.Finding{Kind: skew.KindSaltingPlan, JobID: job, TaskName: task,
		WindowStart: end - 10000, WindowEnd: end, Plan: plan}
}

// describe renders changes compactly: "v2 a:4,b:2" or "retired", with the
// task prefixed when it is not j/agg.
func describe(cs []Change) []string {
	var out []string
	for _, c := range cs {
		prefix := ""
		if c.JobID != "j" || c.TaskName != "agg" {
			prefix = Key(c.JobID, c.TaskName) + " "
		}
		if c.Retired {
			if c.Plan != nil {
				out = append(out, prefix+"retired WITH A PLAN")
				continue
			}
			out = append(out, prefix+"retired")
			continue
		}
		out = append(out, prefix+describePlan(c.Plan))
	}
	return out
}

func describePlan(p *Plan) string {
	if p == nil {
		return "none"
	}
	ks := make([]string, len(p.HotKeys))
	for i, k := range p.HotKeys {
		ks[i] = fmt.Sprintf("%s:%d", k.Key, k.Buckets)
	}
	s := fmt.Sprintf("v%d p%d %s", p.Version, p.Parallelism, strings.Join(ks, ","))
	if p.Source != SourceEngine {
		s += " " + p.Source
	}
	if p.Pinned {
		s += " pinned"
	}
	return s
}

func newManager(t testing.TB, cfg Config) *Manager {
	t.Helper()
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func eq(a, b []string) bool { return slices.Equal(a, b) }

// hotKeyFinding builds a hot_key finding of key for j/agg for the window
// ending sec seconds after t0.
func hotKeyFinding(sec int, key string) *skew.Finding {
	end := at(sec).UnixMilli()
	sub := 3
	return &skew.Finding{Kind: skew.KindHotKey, JobID: "j", TaskName: "agg", SubtaskIndex: &sub,
		WindowStart: end - 10000, WindowEnd: end, HotKey: &skew.HotKey{Key: key, Share: 0.3, EstimatedRecords: 1000}}
}
