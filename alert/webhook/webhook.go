package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/alert"
	"github.com/skewlens/skewlens/alert/deliver"
	"github.com/skewlens/skewlens/alert/internal/httpjson"
	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/internal/retry"
)

// Name is the notifier's name in errors and the default Target name.
const Name = "webhook"

// Config configures a Notifier. DefaultConfig returns it with the
// defaults given in the field comments; New also reads a zero field as
// its default.
type Config struct {
	// URL receives the POSTs: absolute, http or https. Required.
	URL string
	// Headers are added to every request (e.g. Authorization).
	Headers map[string]string
	// Timeout bounds one attempt. Default 5s.
	Timeout time.Duration
	// MaxBatch is the most alerts one request carries; larger Notify
	// calls are split. Default 100.
	MaxBatch int
	// Sender is the body's sender field. Default "skewlens".
	Sender string
}

// Defaults, used by DefaultConfig.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxBatch = 100
	DefaultSender   = "skewlens"
)

// DefaultConfig returns a Config with every default filled in (URL,
// required, stays empty). Callers start from it and override what they
// configure.
func DefaultConfig() Config {
	return Config{Timeout: DefaultTimeout, MaxBatch: DefaultMaxBatch, Sender: DefaultSender}
}

// withDefaults returns c with every zero field set to its value in
// DefaultConfig. New applies it, so a zero field means its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Timeout = cmp.Or(c.Timeout, d.Timeout)
	c.MaxBatch = cmp.Or(c.MaxBatch, d.MaxBatch)
	c.Sender = cmp.Or(c.Sender, d.Sender)
	return c
}

// Validate reports every invalid field. It changes nothing: zero fields
// are invalid here, New fills them in first.
func (c Config) Validate() error {
	var errs []error
	if err := httpjson.CheckURL(c.URL); err != nil {
		errs = append(errs, err)
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must be positive", c.Timeout))
	}
	if c.MaxBatch < 1 {
		errs = append(errs, fmt.Errorf("max batch %d: must be positive", c.MaxBatch))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("webhook notifier config: %w", err)
	}
	return nil
}

// Message is the JSON body of a webhook request.
type Message struct {
	// Version of the body format: "1".
	Version string        `json:"version"`
	Sender  string        `json:"sender"`
	Alerts  []alert.Alert `json:"alerts"`
}

// Notifier posts alerts to a webhook.
type Notifier struct {
	cfg    Config
	client *http.Client
	header http.Header
	log    *slog.Logger
	m      *metrics
}

// New returns a Notifier and registers its metrics with reg (nil: none).
// log (nil: discarded) gets a debug record per request. It does no I/O.
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
	n := &Notifier{cfg: cfg, client: &http.Client{}, header: make(http.Header, len(cfg.Headers)), log: log, m: m}
	for k, v := range cfg.Headers {
		n.header.Set(k, v)
	}
	return n, nil
}

// Notify posts the alerts, MaxBatch per request, once each: it does not
// retry (the Fanout does). A failed request ends the call; the batches
// before it were accepted, and a retry of the call posts them again.
func (n *Notifier) Notify(ctx context.Context, alerts []alert.Alert) error {
	for len(alerts) > 0 {
		batch := alerts[:min(len(alerts), n.cfg.MaxBatch)]
		alerts = alerts[len(batch):]
		body, err := json.Marshal(Message{Version: "1", Sender: n.cfg.Sender, Alerts: batch})
		if err != nil {
			return retry.Permanent("", &deliver.NotifyError{Notifier: Name, Op: "encode", Err: err})
		}
		if err := httpjson.Post(ctx, n.client, Name, n.cfg.URL, body, n.header, n.cfg.Timeout); err != nil {
			n.m.requests.WithLabelValues("error").Inc()
			n.log.Debug("webhook: POST failed", "alerts", len(batch), "err", err)
			return fmt.Errorf("webhook: %d alerts: %w", len(batch), err)
		}
		n.m.requests.WithLabelValues("ok").Inc()
		n.log.Debug("webhook: alerts posted", "alerts", len(batch))
	}
	return nil
}

// Close releases idle connections. Safe to call more than once.
func (n *Notifier) Close() error {
	n.client.CloseIdleConnections()
	return nil
}

// metrics are a Notifier's metrics.
type metrics struct {
	requests *prometheus.CounterVec // result: ok, error
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_webhook_requests_total",
			Help: "POSTs to the alert webhook, one per batch of at most MaxBatch alerts, by result (ok, error).",
		}, []string{"result"}),
	}
	m.requests.WithLabelValues("ok")
	m.requests.WithLabelValues("error")
	if _, err := promreg.Register(reg, "webhook notifier", m.requests); err != nil {
		return nil, err
	}
	return m, nil
}
