package plans

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// Limits of the strings and plans that overrides and findings may carry.
// They bound what one operator request or one finding can make the
// Manager hold and publish.
const (
	// MaxNameBytes bounds a job id, task name, job name and By.
	MaxNameBytes = 256
	// MaxSeparatorBytes bounds a plan's salt separator, as it bounds the
	// engine's.
	MaxSeparatorBytes = skew.MaxSaltSeparatorBytes
	// MaxKeyBytes bounds a key and a salted key.
	MaxKeyBytes = 64 << 10
	// MaxReasonBytes bounds an override's Reason.
	MaxReasonBytes = 4 << 10
	// MaxPlanKeys bounds the hot keys of an override's plan.
	MaxPlanKeys = 1024
)

// Sources of a plan (Plan.Source).
const (
	SourceEngine   = "engine"
	SourceOverride = "override"
)

// checkName checks a short identifier-like string: non-empty, valid
// UTF-8, no control characters, at most max bytes.
func checkName(what, s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("%s: empty", what)
	case len(s) > max:
		return fmt.Errorf("%s: %d bytes, more than %d", what, len(s), max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %q: not valid UTF-8", what, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s %q: contains control character %U", what, s, r)
		}
	}
	return nil
}

// checkJobID checks a job id: a name without "/", so that Key(job, task)
// is unambiguous (Flink job ids are 32 hex digits).
func checkJobID(s string) error {
	if err := checkName("job id", s, MaxNameBytes); err != nil {
		return err
	}
	if strings.Contains(s, "/") {
		return fmt.Errorf("job id %q: contains \"/\"", s)
	}
	return nil
}

// checkKey checks a record key: valid UTF-8 (Flink keys are Java strings,
// and JSON would replace invalid bytes, so the job would see another key)
// and at most MaxKeyBytes. The empty key is a valid Flink key.
func checkKey(what, s string) error {
	switch {
	case len(s) > MaxKeyBytes:
		return fmt.Errorf("%s: %d bytes, more than %d", what, len(s), MaxKeyBytes)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %q: not valid UTF-8", what, s)
	}
	return nil
}

// Validate checks an override as the HTTP service receives it: job id and
// task name non-empty, valid UTF-8 without control characters and at most
// MaxNameBytes, and no "/" in the job id (see Key); By likewise but may be empty; Reason valid UTF-8 of at
// most MaxReasonBytes; Action one of pin, override, exclude; Key set for
// exclude only (non-empty, valid UTF-8, at most MaxKeyBytes); Plan set
// for override only and valid for the override's task (see Apply).
func (o Override) Validate() error {
	var errs []error
	if err := checkJobID(o.JobID); err != nil {
		errs = append(errs, err)
	}
	if err := checkName("task name", o.TaskName, MaxNameBytes); err != nil {
		errs = append(errs, err)
	}
	if o.By != "" {
		if err := checkName("by", o.By, MaxNameBytes); err != nil {
			errs = append(errs, err)
		}
	}
	if len(o.Reason) > MaxReasonBytes || !utf8.ValidString(o.Reason) {
		errs = append(errs, fmt.Errorf("reason: must be valid UTF-8 of at most %d bytes", MaxReasonBytes))
	}
	switch o.Action {
	case ActionPin:
	case ActionExclude:
		if o.Key == "" {
			errs = append(errs, errors.New("exclude: key required"))
		} else if err := checkKey("key", o.Key); err != nil {
			errs = append(errs, err)
		}
	case ActionOverride:
		if o.Plan == nil {
			errs = append(errs, errors.New("override: plan required"))
		} else if err := validatePlan(o.Plan, o.JobID, o.TaskName); err != nil {
			errs = append(errs, fmt.Errorf("override plan: %w", err))
		}
	default:
		errs = append(errs, fmt.Errorf("action %q: must be %q, %q or %q", o.Action, ActionPin, ActionOverride, ActionExclude))
	}
	if o.Key != "" && o.Action != ActionExclude {
		errs = append(errs, fmt.Errorf("%s: key is for %s only", o.Action, ActionExclude))
	}
	if o.Plan != nil && o.Action != ActionOverride {
		errs = append(errs, fmt.Errorf("%s: plan is for %s only", o.Action, ActionOverride))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("override %s/%s: %w", o.JobID, o.TaskName, err)
	}
	return nil
}

// validatePlan checks a plan for task job/task (either may be empty in
// the plan, which then takes the task's): the parallelism pair is one
// Flink accepts, there is at least one and at most MaxPlanKeys distinct
// hot keys, each with at least two distinct salted keys (Buckets equal to
// their number), and every subtask and key group is within the
// parallelism and is where Flink really routes the key.
func validatePlan(p *Plan, job, task string) error {
	var errs []error
	if p.JobID != "" && p.JobID != job {
		errs = append(errs, fmt.Errorf("job id %q: not the override's %q", p.JobID, job))
	}
	if p.TaskName != "" && p.TaskName != task {
		errs = append(errs, fmt.Errorf("task name %q: not the override's %q", p.TaskName, task))
	}
	if p.JobName != "" {
		if err := checkName("job name", p.JobName, MaxNameBytes); err != nil {
			errs = append(errs, err)
		}
	}
	if err := checkName("separator", p.Separator, MaxSeparatorBytes); err != nil {
		errs = append(errs, err)
	}
	if err := keygroup.Validate(p.Parallelism, p.MaxParallelism); err != nil {
		return errors.Join(append(errs, err)...)
	}
	r := keygroup.Router{Parallelism: p.Parallelism, MaxParallelism: p.MaxParallelism}
	switch {
	case len(p.HotKeys) == 0:
		errs = append(errs, errors.New("no hot keys"))
	case len(p.HotKeys) > MaxPlanKeys:
		errs = append(errs, fmt.Errorf("%d hot keys, more than %d", len(p.HotKeys), MaxPlanKeys))
	}
	keys := make(map[string]bool, len(p.HotKeys))
	for i := range p.HotKeys {
		if i >= MaxPlanKeys {
			break
		}
		if err := validateHotKey(r, &p.HotKeys[i], keys); err != nil {
			errs = append(errs, fmt.Errorf("hot key %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

func validateHotKey(r keygroup.Router, k *HotKey, seen map[string]bool) error {
	if err := checkKey("key", k.Key); err != nil {
		return err
	}
	if seen[k.Key] {
		return fmt.Errorf("key %q: listed twice", k.Key)
	}
	seen[k.Key] = true
	if math.IsNaN(k.Share) || k.Share < 0 || k.Share > 1 {
		return fmt.Errorf("key %q: share %v not in [0, 1]", k.Key, k.Share)
	}
	if want := r.Subtask(k.Key); k.Subtask != want {
		return fmt.Errorf("key %q: subtask %d, but Flink routes it to %d", k.Key, k.Subtask, want)
	}
	if len(k.Salted) < 2 || k.Buckets != len(k.Salted) {
		return fmt.Errorf("key %q: %d buckets with %d salted keys; need at least 2, one per bucket", k.Key, k.Buckets, len(k.Salted))
	}
	if len(k.Salted) > r.Parallelism {
		return fmt.Errorf("key %q: %d salted keys, more than the parallelism %d", k.Key, len(k.Salted), r.Parallelism)
	}
	salts := make(map[string]bool, len(k.Salted))
	for _, s := range k.Salted {
		if err := checkKey("salted key", s.Key); err != nil {
			return fmt.Errorf("key %q: %w", k.Key, err)
		}
		if s.Key == k.Key || salts[s.Key] {
			return fmt.Errorf("key %q: salted key %q repeats a key", k.Key, s.Key)
		}
		salts[s.Key] = true
		if s.Subtask < 0 || s.Subtask >= r.Parallelism || s.KeyGroup < 0 || s.KeyGroup >= r.MaxParallelism {
			return fmt.Errorf("key %q: salted key %q: subtask %d or key group %d out of range for parallelism %d/%d",
				k.Key, s.Key, s.Subtask, s.KeyGroup, r.Parallelism, r.MaxParallelism)
		}
		if kg, st := r.Route(keygroup.StringHash(s.Key)); kg != s.KeyGroup || st != s.Subtask {
			return fmt.Errorf("key %q: salted key %q claims key group %d on subtask %d, but Flink routes it to %d on %d",
				k.Key, s.Key, s.KeyGroup, s.Subtask, kg, st)
		}
	}
	return nil
}

// Apply returns the plan to serve for a task, or nil when no key remains:
// the engine's plan p (nil if none) with the operator's overrides ovs
// applied; it modifies neither and shares no memory with them. Hot keys
// are sorted by key and their predicted loads computed from share,
// parallelism and buckets, so equal plans marshal to identical JSON.
// Overrides of other tasks than p's (with p nil, the first override's)
// and those failing Validate are ignored; the others apply in this order:
//   - override: the latest one's plan (by At; on a tie the later in ovs)
//     replaces p, with Source "override", UpdatedAt its At and no expiry
//     (ExpiresAt zero): it is served for as long as the override exists;
//   - pin: the plan is Pinned and does not expire; Apply serves p as
//     given, and the Manager freezes it (ignores the engine's later plans)
//     by passing the plan as it was when pinned;
//   - exclude: the key is removed from the plan.
func Apply(p *Plan, ovs []Override) *Plan { return apply(p, ovs, true) }

// apply is Apply; check false skips validating ovs, for the Manager,
// which keeps only overrides that passed Validate.
func apply(p *Plan, ovs []Override, check bool) *Plan {
	job, task := "", ""
	switch {
	case p != nil:
		job, task = p.JobID, p.TaskName
	case len(ovs) > 0:
		job, task = ovs[0].JobID, ovs[0].TaskName
	default:
		return nil
	}
	var repl *Override
	pinned := false
	var excluded map[string]bool
	for i := range ovs {
		o := &ovs[i]
		if o.JobID != job || o.TaskName != task || check && o.Validate() != nil {
			continue
		}
		switch o.Action {
		case ActionOverride:
			if repl == nil || !o.At.Before(repl.At) {
				repl = o
			}
		case ActionPin:
			pinned = true
		case ActionExclude:
			if excluded == nil {
				excluded = map[string]bool{}
			}
			excluded[o.Key] = true
		}
	}
	var out *Plan
	switch {
	case repl != nil:
		out = clonePlan(repl.Plan)
		out.JobID, out.TaskName = job, task
		out.Source = SourceOverride
		out.UpdatedAt = repl.At.UTC()
		out.ExpiresAt = time.Time{}
	case p != nil:
		out = clonePlan(p)
	default:
		return nil
	}
	if pinned {
		out.Pinned = true
		out.ExpiresAt = time.Time{}
	}
	out.HotKeys = slices.DeleteFunc(out.HotKeys, func(k HotKey) bool { return excluded[k.Key] })
	if len(out.HotKeys) == 0 {
		return nil
	}
	normalize(out)
	return out
}

// normalize sorts p's hot keys by key, computes their predicted loads and
// makes its times UTC, so that equal plans marshal to equal bytes.
func normalize(p *Plan) {
	slices.SortFunc(p.HotKeys, func(a, b HotKey) int { return cmp.Compare(a.Key, b.Key) })
	for i := range p.HotKeys {
		k := &p.HotKeys[i]
		k.PredictedLoadBefore = round4(k.Share * float64(p.Parallelism))
		k.PredictedLoadAfter = k.PredictedLoadBefore
		if k.Buckets > 1 {
			k.PredictedLoadAfter = round4(k.Share * float64(p.Parallelism) / float64(k.Buckets))
		}
		k.LastHotAt = k.LastHotAt.UTC()
	}
	p.GeneratedAt = p.GeneratedAt.UTC()
	p.UpdatedAt = p.UpdatedAt.UTC()
	p.ExpiresAt = p.ExpiresAt.UTC()
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// clonePlan returns a deep copy of p (nil for nil).
func clonePlan(p *Plan) *Plan {
	if p == nil {
		return nil
	}
	c := *p
	c.HotKeys = make([]HotKey, len(p.HotKeys))
	for i, k := range p.HotKeys {
		k.Salted = slices.Clone(k.Salted)
		c.HotKeys[i] = k
	}
	return &c
}

// SameMaterial reports whether two served plans are the same for a Flink
// job applying them: same parallelism pair, separator, source, pin, and
// the same hot keys with the same salted keys. Shares, predicted loads
// and times may differ. A new version is due exactly when it is false.
func SameMaterial(a, b *Plan) bool {
	if a.Parallelism != b.Parallelism || a.MaxParallelism != b.MaxParallelism ||
		a.Separator != b.Separator || a.Source != b.Source || a.Pinned != b.Pinned ||
		len(a.HotKeys) != len(b.HotKeys) {
		return false
	}
	for i := range a.HotKeys {
		x, y := &a.HotKeys[i], &b.HotKeys[i]
		if x.Key != y.Key || x.Buckets != y.Buckets || !slices.Equal(x.Salted, y.Salted) {
			return false
		}
	}
	return true
}

// saltTargetsOK reports whether a finding's salted keys for key are ones
// the Manager can publish: at least two, Buckets of them, distinct, each
// starting with key + sep, and each routed by Flink where the finding
// says it is.
func saltTargetsOK(r keygroup.Router, sep string, k *skew.SaltedKey) bool {
	if len(k.Salted) < 2 || len(k.Salted) != k.Buckets || len(k.Salted) > r.Parallelism ||
		k.Subtask < 0 || k.Subtask >= r.Parallelism || checkKey("key", k.Key) != nil ||
		math.IsNaN(k.Share) || k.Share < 0 || k.Share > 1 {
		return false
	}
	prefix := k.Key + sep
	for i, s := range k.Salted {
		if len(s.Key) <= len(prefix) || s.Key[:len(prefix)] != prefix || checkKey("salted key", s.Key) != nil {
			return false
		}
		if kg, st := r.Route(keygroup.StringHash(s.Key)); kg != s.KeyGroup || st != s.Subtask {
			return false
		}
		for _, t := range k.Salted[:i] {
			if t.Key == s.Key {
				return false
			}
		}
	}
	return true
}
