package alertmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/alertdeliver"
	"github.com/skewlens/skewlens/sinks/internal/httpjson"
	"github.com/skewlens/skewlens/skew/alert"
)

// Name is the notifier's name in errors and the default Target name.
const Name = "alertmanager"

// Config configures a Notifier. Its tags declare each setting once
// (internal/knob), and the command line can bind URL as a flag. New also
// reads a zero field as its default (a zero EndsAfter as
// EndsAfterResends × the ResendInterval in use).
type Config struct {
	// URL is Alertmanager's base URL, e.g. "http://127.0.0.1:9093" (with
	// its route prefix, if any). Required.
	URL string `name:"alertmanager-url" group:"Alerts" placeholder:"URL" help:"Send alerts to this Prometheus Alertmanager (v2 API), e.g. http://127.0.0.1:9093."`
	// Headers are added to every request (e.g. Authorization).
	Headers map[string]string `kong:"-"`
	// Timeout bounds one request.
	Timeout time.Duration `kong:"-" default:"10s" range:"(0s,]"`
	// ResendInterval is how often firing alerts are posted again; the
	// default is Prometheus' --rules.alert.resend-delay.
	ResendInterval time.Duration `kong:"-" default:"1m" range:"(0s,]"`
	// EndsAfter is how far in the future a firing alert's endsAt is set.
	// Default EndsAfterResends × ResendInterval, as Prometheus does, so
	// that three lost re-posts do not resolve an alert.
	EndsAfter time.Duration `kong:"-"`
	// GeneratorURL, when set, is every alert's generatorURL (a link back
	// to skewlens, e.g. its findings dashboard).
	GeneratorURL string `kong:"-"`
	// MaxBatch is the most alerts one POST carries.
	MaxBatch int `kong:"-" default:"500" range:"[1,]"`
	// MaxActive bounds the firing alerts kept for re-posting. Overflow
	// policy: a new firing alert beyond it is posted but not re-posted (it
	// then resolves in Alertmanager after EndsAfter unless notified
	// again), counted by skewlens_alertmanager_untracked_total.
	MaxActive int `kong:"-" default:"10000" range:"[1,]"`
}

// EndsAfterResends is how many resend intervals a firing alert's endsAt
// lies ahead by default.
const EndsAfterResends = 4

// DefaultConfig returns the defaults the tags declare, and EndsAfter
// derived from ResendInterval (URL, required, stays empty). Callers start
// from it and override what they configure; one who changes
// ResendInterval sets EndsAfter too (to EndsAfterResends × it, as the
// default is), or leaves it zero for New to derive.
func DefaultConfig() Config {
	c := knob.Defaults[Config]()
	c.EndsAfter = EndsAfterResends * c.ResendInterval
	return c
}

// withDefaults returns c with every zero field set to its default, but a
// zero EndsAfter to EndsAfterResends × c's ResendInterval. New applies
// it, so a zero field means its default.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	if c.EndsAfter == 0 {
		c.EndsAfter = EndsAfterResends * c.ResendInterval
	}
	return c
}

// Validate reports every invalid field. It changes nothing: a zero
// setting whose range excludes zero is invalid here (New fills those in
// first), but a zero EndsAfter stands for the one New derives.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	if err := httpjson.CheckURL(c.URL); err != nil {
		errs = append(errs, err)
	}
	// A zero EndsAfter is derived from ResendInterval (withDefaults).
	if c.EndsAfter != 0 && c.EndsAfter < c.ResendInterval {
		errs = append(errs, fmt.Errorf("ends after %s: must be at least the resend interval %s", c.EndsAfter, c.ResendInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("alertmanager notifier config: %w", err)
	}
	return nil
}

// PostableAlert is one alert in Alertmanager's v2 API.
type PostableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// Postable maps an alert to Alertmanager's form at wall time now: startsAt
// is the alert's start, but not after now; a firing alert ends endsAfter
// after now; a resolved one at its end, but not after now nor before its
// start.
func Postable(a *alert.Alert, now time.Time, endsAfter time.Duration, generatorURL string) PostableAlert {
	p := PostableAlert{Labels: a.Labels, Annotations: a.Annotations, GeneratorURL: generatorURL}
	p.StartsAt = a.StartsAt
	if p.StartsAt.IsZero() || p.StartsAt.After(now) {
		p.StartsAt = now
	}
	if a.Status == alert.StatusResolved {
		end := a.EndsAt
		if end.IsZero() || end.After(now) {
			end = now
		}
		if end.Before(p.StartsAt) {
			end = p.StartsAt
		}
		p.EndsAt = end
	} else {
		p.EndsAt = now.Add(endsAfter)
	}
	return p
}

// Notifier posts alerts to Alertmanager and re-posts the firing ones.
type Notifier struct {
	cfg    Config
	url    string
	client *http.Client
	header http.Header
	log    *slog.Logger
	m      *metrics

	sem    chan struct{} // capacity 1: serialises posts
	mu     sync.Mutex    // guards active
	active map[string]alert.Alert

	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// New returns a Notifier and starts its re-posting goroutine. It does no
// I/O until the first Notify.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Notifier, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	n := &Notifier{
		cfg:    cfg,
		url:    strings.TrimRight(cfg.URL, "/") + "/api/v2/alerts",
		client: &http.Client{},
		header: make(http.Header, len(cfg.Headers)),
		log:    log,
		m:      m,
		sem:    make(chan struct{}, 1),
		active: make(map[string]alert.Alert),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	for k, v := range cfg.Headers {
		n.header.Set(k, v)
	}
	go n.resendLoop()
	return n, nil
}

// Notify posts the alerts and remembers the firing ones for re-posting.
func (n *Notifier) Notify(ctx context.Context, alerts []alert.Alert) error {
	if err := n.lock(ctx); err != nil {
		return fmt.Errorf("alertmanager: %w", err)
	}
	defer n.unlock()
	n.mu.Lock()
	for _, a := range alerts {
		if a.Status == alert.StatusResolved {
			delete(n.active, a.ID)
			continue
		}
		if _, ok := n.active[a.ID]; !ok && len(n.active) >= n.cfg.MaxActive {
			n.m.untracked.Inc()
			continue
		}
		n.active[a.ID] = a
	}
	n.m.active.Set(float64(len(n.active)))
	n.mu.Unlock()
	return n.post(ctx, alerts)
}

// post sends alerts in batches, one attempt each: Notify's caller (the
// Fanout) retries, and a failed re-post is followed by the next one.
func (n *Notifier) post(ctx context.Context, alerts []alert.Alert) error {
	for len(alerts) > 0 {
		batch := alerts[:min(len(alerts), n.cfg.MaxBatch)]
		alerts = alerts[len(batch):]
		now := time.Now()
		ps := make([]PostableAlert, len(batch))
		for i := range batch {
			ps[i] = Postable(&batch[i], now, n.cfg.EndsAfter, n.cfg.GeneratorURL)
		}
		body, err := json.Marshal(ps)
		if err != nil {
			return retry.Permanent("", &alertdeliver.NotifyError{Notifier: Name, Op: "encode", Err: err})
		}
		if err := httpjson.Post(ctx, n.client, Name, n.url, body, n.header, n.cfg.Timeout); err != nil {
			return fmt.Errorf("alertmanager: %d alerts: %w", len(batch), err)
		}
	}
	return nil
}

// resendLoop re-posts the firing alerts every ResendInterval until Close.
func (n *Notifier) resendLoop() {
	defer close(n.done)
	t := time.NewTicker(n.cfg.ResendInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		n.resend()
	}
}

// resend posts the firing alerts once, without retries.
func (n *Notifier) resend() {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ResendInterval)
	defer cancel()
	go func() { // Close interrupts a resend in flight
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := n.lock(ctx); err != nil {
		return
	}
	defer n.unlock()
	n.mu.Lock()
	alerts := make([]alert.Alert, 0, len(n.active))
	for _, a := range n.active {
		alerts = append(alerts, a)
	}
	n.mu.Unlock()
	if len(alerts) == 0 {
		return
	}
	slices.SortFunc(alerts, func(a, b alert.Alert) int { return strings.Compare(a.ID, b.ID) })
	if err := n.post(ctx, alerts); err != nil {
		n.m.resends.WithLabelValues("error").Inc()
		n.log.Warn("alertmanager notifier: re-posting firing alerts failed; next try in the resend interval", "alerts", len(alerts), "err", err)
		return
	}
	n.m.resends.WithLabelValues("ok").Inc()
}

func (n *Notifier) lock(ctx context.Context) error {
	select {
	case n.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *Notifier) unlock() { <-n.sem }

// Active returns the ids of the firing alerts being re-posted, sorted.
func (n *Notifier) Active() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	ids := make([]string, 0, len(n.active))
	for id := range n.active {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Close stops re-posting and waits for the goroutine. The alerts stay
// firing in Alertmanager until their endsAt. Safe to call twice.
func (n *Notifier) Close() error {
	n.closeOnce.Do(func() {
		close(n.stop)
		<-n.done
		n.client.CloseIdleConnections()
	})
	return nil
}

// metrics are a Notifier's metrics.
type metrics struct {
	resends   *prometheus.CounterVec // result: ok, error
	active    prometheus.Gauge
	untracked prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		resends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_alertmanager_resends_total",
			Help: "Periodic re-posts of the firing alerts, by result (ok, error).",
		}, []string{"result"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skewlens_alertmanager_active_alerts",
			Help: "Firing alerts re-posted to Alertmanager every resend interval.",
		}),
		untracked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skewlens_alertmanager_untracked_total",
			Help: "Firing alerts posted but not kept for re-posting because MaxActive alerts were kept.",
		}),
	}
	m.resends.WithLabelValues("ok")
	m.resends.WithLabelValues("error")
	if _, err := promreg.Register(reg, "alertmanager notifier", m.resends, m.active, m.untracked); err != nil {
		return nil, err
	}
	return m, nil
}
