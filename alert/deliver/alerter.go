package deliver

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/alert"
	"github.com/skewlens/skewlens/skew"
)

// Config configures an Alerter: its state machine and its fan-out.
// DefaultConfig returns it with the defaults of both; New also reads a
// zero field of either as its default.
type Config struct {
	Tracker alert.TrackerConfig
	Fanout  FanoutConfig
}

// DefaultConfig returns a Config with every default filled in: those of
// alert.DefaultTrackerConfig and DefaultFanoutConfig. Callers start from
// it and override what they configure.
func DefaultConfig() Config {
	return Config{Tracker: alert.DefaultTrackerConfig(), Fanout: DefaultFanoutConfig()}
}

// Validate reports every invalid field of both parts. It changes
// nothing: zero fields are invalid here, New fills them in first.
func (c Config) Validate() error {
	return errors.Join(c.Tracker.Validate(), c.Fanout.Validate())
}

// Alerter is what the pipeline wires in: an alert.Tracker fed with
// findings and watermarks, whose notifications go to a Fanout, with
// metrics. It is safe for concurrent use, and Observe and Advance never
// wait for a notifier.
type Alerter struct {
	mu      sync.Mutex
	t       *alert.Tracker
	out     *Fanout
	m       *alerterMetrics
	log     *slog.Logger
	refused uint64 // alert.Tracker.Refused already counted in the metric
	// receipts are why incidents closed (IncidentClosed), by incident id,
	// for the resolved notification of their alert; order holds their
	// ids, oldest first, at most max (MaxTracked): the oldest go first.
	receipts map[string]string
	order    []string
	max      int
}

// New returns an Alerter delivering to targets (it owns them: Stop closes
// them). With no targets it still tracks alerts and keeps the metrics.
func New(cfg Config, targets []Target, log *slog.Logger, reg prometheus.Registerer) (*Alerter, error) {
	// NewTracker fills in the Tracker's zero fields and validates them;
	// the Fanout's are checked here too, before any metric is registered.
	t, err := alert.NewTracker(cfg.Tracker)
	if err != nil {
		return nil, err
	}
	cfg.Fanout = cfg.Fanout.withDefaults()
	if err := cfg.Fanout.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newAlerterMetrics(reg)
	if err != nil {
		return nil, err
	}
	out, err := NewFanout(cfg.Fanout, targets, log, reg)
	if err != nil {
		return nil, fmt.Errorf("alerter: %w", err)
	}
	return &Alerter{t: t, out: out, m: m, log: log, receipts: map[string]string{}, max: t.Config().MaxTracked}, nil
}

// IncidentClosed tells the Alerter why an incident closed (for example
// "resolved by plan v2: busy 990 → 510 ms/s, …"): the resolved
// notification of its alert (the alert whose incident_id is id) carries
// it as the annotation "resolution". Incidents close before their alert
// resolves (an alert waits ResolveAfter); the Alerter keeps the latest
// receipts of as many incidents as it tracks alerts, the oldest dropped
// first. An empty why is ignored. Receipts are not part of the saved
// state: after a restart a resolved notification may lack one.
func (a *Alerter) IncidentClosed(id, why string) {
	if why == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.receipts[id]; !ok {
		a.order = append(a.order, id)
	}
	a.receipts[id] = why
	for len(a.order) > a.max {
		delete(a.receipts, a.order[0])
		a.order = a.order[1:]
	}
}

// Observe feeds the findings of closed windows (call it once they are
// written) and queues the resulting notifications.
func (a *Alerter) Observe(fs []skew.Finding) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handle(a.t.Observe(fs))
}

// Advance moves event time to the watermark (epoch ms) that closed the
// windows observed so far, resolving alerts whose condition is gone.
func (a *Alerter) Advance(watermark int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handle(a.t.Advance(watermark))
}

// JobsReported is alert.Tracker.JobsReported (for
// alert.TrackerConfig.RequireReports).
func (a *Alerter) JobsReported(windowEnd int64, jobIDs ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.t.JobsReported(windowEnd, jobIDs...)
}

// Active returns the firing alerts.
func (a *Alerter) Active() []alert.Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.t.Active()
}

// Snapshot is alert.Tracker.Snapshot, taken under the Alerter's lock.
func (a *Alerter) Snapshot() ([]alert.JobSnapshot, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.t.Snapshot()
}

// Reset drops the tracker's alerts (alert.Tracker.Reset) and restores
// snaps, sending nothing: the restored alerts were notified before. On
// an error the tracker is left empty.
func (a *Alerter) Reset(snaps []alert.JobSnapshot) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.t.Reset()
	err := a.t.Restore(snaps)
	a.handle(nil)
	return err
}

// Stop drains and stops the delivery (Fanout.Stop). Safe to call twice.
func (a *Alerter) Stop() { a.out.Stop() }

// handle counts the events and sends the notifications. Called with mu
// held, so notifications reach the queues in event order.
func (a *Alerter) handle(events []alert.Event) {
	var out []alert.Alert
	for i := range events {
		e := &events[i]
		a.m.transitions.WithLabelValues(string(e.Kind)).Inc()
		if why, ok := a.receipts[e.Alert.IncidentID]; ok && e.Kind == alert.EventResolved {
			e.Alert.Annotations["resolution"] = why
			delete(a.receipts, e.Alert.IncidentID) // its id leaves order with the oldest
		}
		if e.Notify() {
			out = append(out, e.Alert)
		}
		switch e.Kind {
		case alert.EventFiring, alert.EventResolved:
			a.log.Info("alert "+string(e.Kind), "alert", e.Alert.Labels["alertname"], "id", e.Alert.ID, "summary", e.Alert.Annotations["summary"])
		}
	}
	a.m.firing.Set(float64(a.t.Firing()))
	a.m.pending.Set(float64(a.t.Pending()))
	if r := a.t.Refused(); r > a.refused {
		a.m.refused.Add(float64(r - a.refused))
		a.refused = r
	}
	a.out.Send(out)
}
