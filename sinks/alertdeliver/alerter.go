package alertdeliver

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
)

// Config configures an Alerter: its state machine and its fan-out.
// DefaultConfig returns it with the defaults of both; New also reads a
// zero field of either as its default.
type Config struct {
	StateMachine alert.Config `embed:""`
	Fanout       FanoutConfig `embed:""`
}

// DefaultConfig returns a Config with every default filled in: those of
// alert.DefaultConfig and DefaultFanoutConfig. Callers start from
// it and override what they configure.
func DefaultConfig() Config {
	return Config{StateMachine: alert.DefaultConfig(), Fanout: DefaultFanoutConfig()}
}

// Validate reports every invalid field of both parts. It changes
// nothing: zero fields are invalid here, New fills them in first.
func (c Config) Validate() error {
	return errors.Join(c.StateMachine.Validate(), c.Fanout.Validate())
}

// Alerter is what the pipeline wires in: an alert.StateMachine fed with the
// incident changes the incident observer stored, whose notifications go to
// a Fanout, with metrics. It is safe for concurrent use, and Apply never
// waits for a notifier.
type Alerter struct {
	mu  sync.Mutex
	t   *alert.StateMachine
	out *Fanout
	m   *alerterMetrics
	log *slog.Logger
}

// New returns an Alerter delivering to targets (it owns them: Stop closes
// them). With no targets it still tracks alerts and keeps the metrics.
func New(cfg Config, targets []Target, log *slog.Logger, reg prometheus.Registerer) (*Alerter, error) {
	// NewStateMachine fills in the StateMachine's zero fields and validates
	// them; the Fanout's are checked here too, before any metric is
	// registered.
	t, err := alert.NewStateMachine(cfg.StateMachine)
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
	return &Alerter{t: t, out: out, m: m, log: log}, nil
}

// Apply takes stored incident changes, in order, and queues the
// resulting notifications (alert.StateMachine.Apply). It is what
// incidentsink.IncidentObserver.OnChanges calls.
func (a *Alerter) Apply(changes []incident.Change) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handle(a.t.Apply(changes))
}

// Active returns the firing alerts.
func (a *Alerter) Active() []alert.Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.t.Active()
}

// Snapshot is alert.StateMachine.Snapshot, taken under the Alerter's lock.
func (a *Alerter) Snapshot() ([]alert.JobSnapshot, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.t.Snapshot()
}

// Reset drops the state machine's alerts (alert.StateMachine.Reset) and
// restores snaps beside the open incidents. The restored alerts were
// notified before; only those whose incidents all closed meanwhile are
// sent, as resolved. The jobs whose state the state machine refused are
// returned and counted (skewlens_alerts_state_refused_jobs_total); the
// others are restored. On an error the state machine is left empty.
func (a *Alerter) Reset(snaps []alert.JobSnapshot, open []incident.Incident) ([]incident.RefusedJob, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.t.Reset()
	events, refused, err := a.t.Restore(snaps, open)
	if err != nil {
		a.t.Reset()
	}
	a.m.refusedJobs.Add(float64(len(refused)))
	a.handle(events)
	return refused, err
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
	a.out.Send(out)
}
