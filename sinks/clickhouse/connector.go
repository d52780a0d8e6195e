package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/plans"
)

// Connector is a Store that connects in the background, for a process
// that must start, and answer, while ClickHouse is down: skewlens serve.
// Run connects and migrates, retrying until the server answers; until
// then every read and write of the Connector fails at once with a
// *NotConnectedError, which is retryable (not retry.IsPermanent) and
// whose NotReadyReason is what serve's GET /readyz answers. Afterwards
// they are the Store's, which reconnects by itself after an outage.
//
// Its methods are those of the interfaces package serve declares (Ping,
// the PlanReader, OverrideWriter, AuditReader, FindingReader,
// StatsReader and IncidentReader methods), so one Connector fills every
// field of a servestore.Store. It is safe for concurrent use; Close is safe
// to call more than once.
type Connector struct {
	cfg Config
	log *slog.Logger
	reg prometheus.Registerer

	mu       sync.Mutex
	store    *Store // nil until connected
	closed   bool
	since    time.Time // when Run started
	attempts int
	last     error // the last failed attempt's error
}

// NewConnector validates cfg, whose zero fields mean their defaults
// (DefaultConfig), and returns a Connector that has not connected yet:
// call Run. The Store it connects registers its metrics with reg (nil:
// none) and logs to log (nil: discarded). A configuration error is
// permanent and returned here, before any attempt.
func NewConnector(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Connector, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, permanentErr("new", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Connector{cfg: cfg, log: log, reg: reg}, nil
}

// Run connects to the server and migrates the schema (New, then
// Migrate), retrying both with the backoff of Config.Retry but without
// its bound on the retries: it waits as long as ctx allows, logging a
// warning per failed attempt ("ClickHouse not available yet", with the
// attempt and the next wait). It returns nil once connected, the error
// of a failure no retry can fix (a refused login, a server too old), or
// ctx's error; it blocks until then. Call it once.
func (c *Connector) Run(ctx context.Context) error {
	c.mu.Lock()
	c.since = time.Now()
	c.mu.Unlock()
	p := c.cfg.Retry
	p.MaxRetries = retry.Unlimited
	notify := func(attempt int, wait time.Duration, err error) {
		c.log.Warn("ClickHouse not available yet; retrying", "addr", c.cfg.Addr, "attempt", attempt,
			"next_in", wait.Round(time.Millisecond), "err", err)
	}
	err := retry.Do(ctx, p, notify, func(ctx context.Context) error {
		s, err := c.connect(ctx)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.attempts++
		switch {
		case err != nil:
			c.last = err
			return err
		case c.closed:
			s.discard()
			return permanentErr("connect", ErrClosed)
		}
		c.store = s
		return nil
	})
	if err != nil {
		return fmt.Errorf("clickhouse: connect to %s: %w", c.cfg.Addr, err)
	}
	c.mu.Lock()
	attempts, since := c.attempts, c.since
	c.mu.Unlock()
	c.log.Info("ClickHouse connected", "addr", c.cfg.Addr, "attempts", attempts, "after", time.Since(since).Round(time.Millisecond))
	return nil
}

// connect makes one attempt: a Store, migrated.
func (c *Connector) connect(ctx context.Context) (*Store, error) {
	s, err := New(ctx, c.cfg, c.log, c.reg)
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

// discard closes a Store nobody uses and unregisters its metrics, so
// that another New may register them on the same registry.
func (s *Store) discard() {
	_ = s.Close()
	s.unreg()
}

// Store returns the connected Store, or nil before Run has connected.
func (c *Connector) Store() *Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store
}

// Close closes the Store once connected; a Run still trying then fails.
// It is safe to call more than once.
func (c *Connector) Close() error {
	c.mu.Lock()
	c.closed = true
	s := c.store
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}

// NotConnectedError is the error of a Connector's calls before it has
// connected.
type NotConnectedError struct {
	// Addr is the server's address.
	Addr string
	// Since is when the Connector started trying, Attempts how often it
	// tried; Err is the last attempt's error (nil before the first one
	// ended).
	Since    time.Time
	Attempts int
	Err      error
}

func (e *NotConnectedError) Error() string {
	msg := fmt.Sprintf("clickhouse: not connected to %s yet (%d attempts since %s)", e.Addr, e.Attempts, e.Since.UTC().Format(time.RFC3339))
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// NotReadyReason says why the store is not ready in words fit for any
// client (servestore.NotReadyError): no address, no server message.
func (e *NotConnectedError) NotReadyReason() string {
	return fmt.Sprintf("not connected to ClickHouse yet (%d attempts since %s)", e.Attempts, e.Since.UTC().Format(time.RFC3339))
}

var _ servestore.NotReadyError = (*NotConnectedError)(nil)

// current returns the connected Store, or the error to answer with.
func (c *Connector) current() (*Store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, permanentErr("connector", ErrClosed)
	case c.store == nil:
		return nil, &NotConnectedError{Addr: c.cfg.Addr, Since: c.since, Attempts: c.attempts, Err: c.last}
	}
	return c.store, nil
}

// Ping checks that the server answers (servestore.Pinger); before Run has
// connected it fails with a *NotConnectedError.
func (c *Connector) Ping(ctx context.Context) error {
	s, err := c.current()
	if err != nil {
		return err
	}
	return s.Ping(ctx)
}

// CurrentPlans is PlanReader.CurrentPlans once connected.
func (c *Connector) CurrentPlans(ctx context.Context, now time.Time) ([]plans.Plan, error) {
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	return s.Plans().CurrentPlans(ctx, now)
}

// Plan is PlanReader.Plan once connected.
func (c *Connector) Plan(ctx context.Context, jobID, taskName string, now time.Time) (*plans.Plan, error) {
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	return s.Plans().Plan(ctx, jobID, taskName, now)
}

// Overrides is PlanReader.Overrides once connected.
func (c *Connector) Overrides(ctx context.Context) ([]plans.Override, error) {
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	return s.Plans().Overrides(ctx)
}

// PutOverride is Writer.PutOverride once connected.
func (c *Connector) PutOverride(ctx context.Context, o plans.Override, audit servestore.AuditEntry) error {
	s, err := c.current()
	if err != nil {
		return err
	}
	return s.Writer().PutOverride(ctx, o, audit)
}

// DeleteOverride is Writer.DeleteOverride once connected.
func (c *Connector) DeleteOverride(ctx context.Context, jobID, taskName, action, key string, audit servestore.AuditEntry) error {
	s, err := c.current()
	if err != nil {
		return err
	}
	return s.Writer().DeleteOverride(ctx, jobID, taskName, action, key, audit)
}

// Audit is AuditReader.Audit once connected.
func (c *Connector) Audit(ctx context.Context, jobID string, limit int) ([]servestore.AuditEntry, error) {
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	return s.Audit().Audit(ctx, jobID, limit)
}

// Findings is FindingReader.Findings once connected.
func (c *Connector) Findings(ctx context.Context, q servestore.FindingsQuery) ([]json.RawMessage, error) {
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	return s.Findings().Findings(ctx, q)
}

// Stats is StatsReader.Stats once connected.
func (c *Connector) Stats(ctx context.Context, q servestore.StatsQuery) ([]json.RawMessage, error) {
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	return s.Stats().Stats(ctx, q)
}

// Incidents is IncidentReader.Incidents once connected.
func (c *Connector) Incidents(ctx context.Context, q servestore.IncidentsQuery) ([]json.RawMessage, error) {
	s, err := c.current()
	if err != nil {
		return nil, err
	}
	return s.Incidents().Incidents(ctx, q)
}
