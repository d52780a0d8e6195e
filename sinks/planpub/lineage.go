package planpub

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/skew/plans"
)

// LineagePrefix starts the key of every lineage message. A plan's key is
// job_id/task_name with a non-empty job id without "/" (plans.Key), so no
// plan's key starts with "/" and the two kinds never collide.
const LineagePrefix = "/lineage/"

// HeaderLineage names, on a lineage message that carries a plan, the job
// id of the run whose plan it is (as X-Skewlens-Plan-Lineage does on
// skewlens serve's answer).
const HeaderLineage = "skewlens-plan-lineage"

// LineageKey returns the key of the lineage message of a job name and
// task: LineagePrefix, the job name with "%" written "%25" and "/"
// written "%2F" (so that the first "/" after it ends the name: job and
// task names may both hold "/"), "/", and the task name as it is. E.g.
// "/lineage/team%2Forders/Window -> Sink". The Flink client builds the
// same key (KafkaPlanConsumer.lineageKey).
func LineageKey(jobName, taskName string) string {
	return LineagePrefix + strings.NewReplacer("%", "%25", "/", "%2F").Replace(jobName) + "/" + taskName
}

// IsLineageKey reports whether a key of the plans topic is a lineage
// message's: derived from the plans, never state to restore.
func IsLineageKey(key []byte) bool { return strings.HasPrefix(string(key), LineagePrefix) }

// Lineage is one lineage message: under Key (LineageKey of a job name
// and task), the plan of the task of that name's newest run
// (plans.NewestRuns), which a new run of the name applies until it has a
// plan of its own, or nil: a tombstone, the name has no such plan any
// more.
type Lineage struct {
	Key  string
	Plan *plans.Plan
}

// LineageMessage returns the Kafka message of l: the plan's JSON as its
// own message carries it, with the version and source headers and
// HeaderLineage (its job id), or a tombstone (nil value, no headers).
func LineageMessage(l Lineage) (kafka.Message, error) {
	if !IsLineageKey([]byte(l.Key)) {
		return kafka.Message{}, fmt.Errorf("lineage message keyed %q: not a lineage key", l.Key)
	}
	if l.Plan == nil {
		return kafka.Message{Key: []byte(l.Key)}, nil
	}
	if l.Key != LineageKey(l.Plan.JobName, l.Plan.TaskName) {
		return kafka.Message{}, fmt.Errorf("lineage message keyed %q: plan of %s (job name %q)", l.Key, plans.Key(l.Plan.JobID, l.Plan.TaskName), l.Plan.JobName)
	}
	v, err := json.Marshal(l.Plan)
	if err != nil {
		return kafka.Message{}, fmt.Errorf("lineage message %q: encode plan: %w", l.Key, err)
	}
	return kafka.Message{Key: []byte(l.Key), Value: v, Headers: []kafka.Header{
		{Key: HeaderVersion, Value: strconv.AppendUint(nil, l.Plan.Version, 10)},
		{Key: HeaderSource, Value: []byte(l.Plan.Source)},
		{Key: HeaderLineage, Value: []byte(l.Plan.JobID)},
	}}, nil
}

// lineageOut is where a PlanObserver publishes lineage messages: the plans
// topic. A *Publisher is one; a Tee holding one hands its (lineageOutOf).
type lineageOut interface {
	// publishLineage writes ls in order, like Publish (one attempt).
	publishLineage(ctx context.Context, ls []Lineage) error
	// loadedLineage returns the lineage messages with a plan that the
	// last Load read, by key: the run and version each carries.
	loadedLineage() map[string]lineageRun
}

// lineageRun is the run and version a published lineage message carries.
type lineageRun struct {
	job     string
	version uint64
}

// lineageOutOf returns the plans topic among the publishers of pub (pub
// itself, or a member of a Tee), or nil: then there is no topic (the
// plans table alone, analyze's fold) and no lineage messages.
func lineageOutOf(pub ChangePublisher) lineageOut {
	switch p := pub.(type) {
	case lineageOut:
		return p
	case tee:
		for _, m := range p {
			if out := lineageOutOf(m); out != nil {
				return out
			}
		}
	}
	return nil
}

// lineageState is what a PlanObserver knows of the lineage messages on the
// topic for the jobs it owns. Guarded by the PlanObserver's mutex.
type lineageState struct {
	out lineageOut
	// sent are the lineage messages with a plan on the topic, by key.
	sent map[string]lineageRun
	// pending are the messages to publish, by key (nil: a tombstone).
	pending map[string]*plans.Plan
	// touched are the tasks (plans.Key) with a change since the last
	// update: their lineage message, if any, is published again with them.
	touched map[string]bool
	// all asks the next update to compare every name (after a Resume).
	all bool
}

func newLineageState(out lineageOut) *lineageState {
	if out == nil {
		return nil
	}
	l := &lineageState{out: out, pending: map[string]*plans.Plan{}, touched: map[string]bool{}}
	l.reset(func(string) bool { return true })
	return l
}

// reset forgets what was pending and takes the lineage messages the
// topic held at the last Load, of the runs owns reports, as sent: a name
// of those runs that has no newest plan now gets its tombstone at the
// next update, whoever wrote the message (even a skewlens that stopped
// between a retirement and the name's tombstone).
func (l *lineageState) reset(owns func(jobID string) bool) {
	l.sent = map[string]lineageRun{}
	for k, r := range l.out.loadedLineage() {
		if owns(r.job) {
			l.sent[k] = r
		}
	}
	clear(l.pending)
	clear(l.touched)
	l.all = true
}

// touch notes the tasks of changes made.
func (l *lineageState) touch(cs []plans.Change) {
	for _, c := range cs {
		l.touched[plans.Key(c.JobID, c.TaskName)] = true
	}
}

// update sets pending from the Manager's current plans, when anything
// changed since the last update: each name's newest plans
// (plans.NewestRuns) whose message is not on the topic, carries another
// run or version, or whose task changed (so that a republication reaches
// the lineage message too), and a tombstone for each message on the topic
// that no newest plan keeps.
func (l *lineageState) update(mgr *plans.Manager) {
	if len(l.touched) == 0 && !l.all {
		return
	}
	cur := mgr.Current()
	ptrs := make([]*plans.Plan, len(cur))
	for i := range cur {
		ptrs[i] = &cur[i]
	}
	want := map[string]*plans.Plan{}
	for _, p := range plans.NewestRuns(ptrs) {
		want[LineageKey(p.JobName, p.TaskName)] = p
	}
	next := map[string]*plans.Plan{}
	for k, p := range want {
		sent, ok := l.sent[k]
		_, pend := l.pending[k]
		if pend || !ok || sent != (lineageRun{p.JobID, p.Version}) || l.touched[plans.Key(p.JobID, p.TaskName)] {
			next[k] = p
		}
	}
	for k := range l.sent {
		if want[k] == nil {
			next[k] = nil
		}
	}
	l.pending = next
	clear(l.touched)
	l.all = false
}

// flush publishes the pending messages, sorted by key.
func (l *lineageState) flush(ctx context.Context) error {
	if len(l.pending) == 0 {
		return nil
	}
	ls := make([]Lineage, 0, len(l.pending))
	for k, p := range l.pending {
		ls = append(ls, Lineage{Key: k, Plan: p})
	}
	slices.SortFunc(ls, func(a, b Lineage) int { return strings.Compare(a.Key, b.Key) })
	if err := l.out.publishLineage(ctx, ls); err != nil {
		return fmt.Errorf("lineage messages: %w", err)
	}
	for _, m := range ls {
		if m.Plan == nil {
			delete(l.sent, m.Key)
		} else {
			l.sent[m.Key] = lineageRun{m.Plan.JobID, m.Plan.Version}
		}
	}
	clear(l.pending)
	return nil
}
