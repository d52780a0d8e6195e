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

	"github.com/skewlens/skewlens/alert"
	"github.com/skewlens/skewlens/alert/internal/httpjson"
)

// Name is the notifier's name in errors and the default Target name.
const Name = "webhook"

// Config configures a Notifier. The zero value of every field except URL
// means its default, given in the field's comment; Validate (New calls
// it) fills them in.
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
	// Retry bounds the retries of one request (alert.RetryPolicy
	// defaults: 5 retries, 100ms to 5s).
	Retry alert.RetryPolicy
}

// Defaults.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxBatch = 100
	DefaultSender   = "skewlens"
)

// Validate fills in the defaults of c and reports every invalid field.
func (c *Config) Validate() error {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Sender == "" {
		c.Sender = DefaultSender
	}
	var errs []error
	if err := httpjson.CheckURL(c.URL); err != nil {
		errs = append(errs, err)
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must be positive", c.Timeout))
	}
	if c.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("max batch %d: must be positive", c.MaxBatch))
	}
	if err := c.Retry.Validate(); err != nil {
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
	cfg     Config
	client  *http.Client
	header  http.Header
	log     *slog.Logger
	retries prometheus.Counter
}

// New returns a Notifier. It does no I/O.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{
		cfg:    cfg,
		client: &http.Client{},
		header: make(http.Header, len(cfg.Headers)),
		log:    log,
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skewlens_alert_webhook_retries_total",
			Help: "Webhook requests retried after a retryable failure.",
		}),
	}
	for k, v := range cfg.Headers {
		n.header.Set(k, v)
	}
	if reg != nil {
		if err := reg.Register(n.retries); err != nil {
			return nil, fmt.Errorf("register webhook notifier metrics: %w", err)
		}
	}
	return n, nil
}

// Notify posts the alerts, MaxBatch per request.
func (n *Notifier) Notify(ctx context.Context, alerts []alert.Alert) error {
	for len(alerts) > 0 {
		batch := alerts[:min(len(alerts), n.cfg.MaxBatch)]
		alerts = alerts[len(batch):]
		body, err := json.Marshal(Message{Version: "1", Sender: n.cfg.Sender, Alerts: batch})
		if err != nil {
			return &alert.NotifyError{Notifier: Name, Op: "encode", Permanent: true, Err: err}
		}
		err = alert.Retry(ctx, n.cfg.Retry, func(attempt int, wait time.Duration, err error) {
			n.retries.Inc()
			n.log.Warn("webhook notifier: retrying", "attempt", attempt, "in", wait, "err", err)
		}, func(ctx context.Context) error {
			return httpjson.Post(ctx, n.client, Name, n.cfg.URL, body, n.header, n.cfg.Timeout)
		})
		if err != nil {
			return fmt.Errorf("webhook: %d alerts: %w", len(batch), err)
		}
	}
	return nil
}

// Close releases idle connections. Safe to call more than once.
func (n *Notifier) Close() error {
	n.client.CloseIdleConnections()
	return nil
}
