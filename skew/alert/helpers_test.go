package alert

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv/alerttest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// Test findings: 10 s windows starting at ws (ms).
const win = alerttest.Window

var (
	intp = alerttest.IntPtr
	sat  = alerttest.Sat
	hot  = alerttest.Hot
)

func statsOf(job string, ws int64) skew.Finding {
	return skew.Finding{Kind: skew.KindSubtaskStats, JobID: job, TaskName: "src", SubtaskIndex: intp(0),
		WindowStart: ws, WindowEnd: ws + win, Stats: &skew.SubtaskStats{}}
}

// evs renders events compactly: "kind id @ms [reason]".
func evs(events []Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		s := fmt.Sprintf("%s %s @%d", e.Kind, e.Alert.ID, e.Alert.UpdatedAt.UnixMilli())
		if e.Alert.Reason != "" {
			s += " " + e.Alert.Reason
		}
		out[i] = s
	}
	return out
}

func joinLines(ss []string) string { return strings.Join(ss, "\n") }

// pipe is the pipeline's order in one value: findings fold into
// incidents (incident.Tracker), whose changes make the alerts (StateMachine).
type pipe struct {
	inc *incident.Tracker
	*StateMachine
	// stored is the latest state of every incident, as the incidents
	// table keeps it.
	stored map[string]incident.Incident
}

// newPipe returns a pipe with the alert configuration cfg and the
// incident defaults, changed by the functions given.
func newPipe(tb testing.TB, cfg Config, inc ...func(*incident.Config)) *pipe {
	tb.Helper()
	icfg := incident.DefaultConfig()
	for _, f := range inc {
		if f != nil {
			f(&icfg)
		}
	}
	it, err := incident.New(icfg)
	if err != nil {
		tb.Fatal(err)
	}
	tr, err := NewStateMachine(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return &pipe{inc: it, StateMachine: tr, stored: map[string]incident.Incident{}}
}

// Observe folds findings into incidents and returns the alert events.
func (p *pipe) Observe(fs []skew.Finding) []Event { return p.apply(p.inc.Observe(fs)) }

// Advance advances the incidents to watermark and returns the alert
// events.
func (p *pipe) Advance(watermark int64) []Event { return p.apply(p.inc.Advance(watermark)) }

func (p *pipe) apply(cs []incident.Change) []Event {
	for _, c := range cs {
		p.stored[c.Incident.ID] = c.Incident
	}
	return p.Apply(cs)
}

// saved is what the pipeline stores of a pipe: the alert state, the open
// incidents and each job's latest window an incident saw.
type saved struct {
	snaps []JobSnapshot
	open  []incident.Incident
	seen  map[string]int64
}

func (p *pipe) save(tb testing.TB) saved {
	tb.Helper()
	snaps, err := p.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	s := saved{snaps: snaps, seen: map[string]int64{}}
	for _, in := range p.stored {
		if in.State == incident.StateOpen {
			s.open = append(s.open, in)
		}
		s.seen[in.JobID] = max(s.seen[in.JobID], in.LastSeen)
		if in.RunJobID != "" { // as LoadIncidents reads it
			s.seen[in.RunJobID] = max(s.seen[in.RunJobID], in.LastSeen)
		}
	}
	return s
}

// restore restores what save returned, as the pipeline's Resume does:
// the incidents first, then the alerts beside them.
func (p *pipe) restore(s saved) ([]Event, error) {
	p.inc.Restore(s.open, s.seen)
	for _, in := range s.open {
		p.stored[in.ID] = in
	}
	events, refused, err := p.Restore(s.snaps, s.open)
	if len(refused) > 0 {
		return events, fmt.Errorf("refused %v", refused)
	}
	return events, err
}

// join is the saved states of several pipes, as one group's table.
func join(ss ...saved) saved {
	out := saved{seen: map[string]int64{}}
	for _, s := range ss {
		out.snaps = append(out.snaps, s.snaps...)
		out.open = append(out.open, s.open...)
		for j, v := range s.seen {
			out.seen[j] = max(out.seen[j], v)
		}
	}
	return out
}

// atOnce fires alerts on the first finding (For -1).
func atOnce(c *incident.Config) { c.Hysteresis.For = -1 }

// jobEnd is a job_end finding of job's run in the window starting at ws;
// a restarted run's successor is "j9".
func jobEnd(job string, ws int64, reason string) skew.Finding {
	e := &skew.JobEnd{Reason: reason}
	if reason == skew.EndRestarted {
		e.Successor = "j9"
	}
	return skew.Finding{Kind: skew.KindJobEnd, JobID: job, WindowStart: ws, WindowEnd: ws + win, JobEnd: e}
}
