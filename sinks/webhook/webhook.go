package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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
const Name = "webhook"

// Config configures a Notifier. Its tags declare each setting once
// (internal/knob), and the command line can bind URL as a flag. New also
// reads a zero field as its default.
type Config struct {
	// URL receives the POSTs: absolute, http or https. Required.
	URL string `name:"alert-webhook-url" group:"Alerts" placeholder:"URL" help:"POST alerts as JSON to this URL (docs/alerts.md)."`
	// Headers are added to every request (e.g. Authorization).
	Headers map[string]string `kong:"-"`
	// Timeout bounds one attempt.
	Timeout time.Duration `kong:"-" default:"5s" range:"(0s,]"`
	// MaxBatch is the most alerts one request carries; larger Notify
	// calls are split.
	MaxBatch int `kong:"-" default:"100" range:"[1,]"`
	// Sender is the body's sender field.
	Sender string `kong:"-" default:"skewlens" zero:"default"`
}

// DefaultConfig returns the defaults the tags declare (URL, required,
// stays empty). Callers start from it and override what they configure.
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field set to its default. New
// applies it, so a zero field means its default.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	return c
}

// Validate reports every invalid field. It changes nothing: zero fields
// are invalid here, New fills them in first.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	if err := httpjson.CheckURL(c.URL); err != nil {
		errs = append(errs, err)
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
			return retry.Permanent("", &alertdeliver.NotifyError{Notifier: Name, Op: "encode", Err: err})
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
