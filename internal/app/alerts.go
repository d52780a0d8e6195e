package app

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/sinks/alertdeliver"
	"github.com/skewlens/skewlens/sinks/alertmanager"
	"github.com/skewlens/skewlens/sinks/kafkanotify"
	"github.com/skewlens/skewlens/sinks/webhook"
	"github.com/skewlens/skewlens/skew/plans"
)

// alerter builds the alert state machine and its notifiers. With no
// notifier configured, alerts are still tracked (metrics
// skewlens_alert_*) and logged when they fire or resolve.
func (c *RunConfig) alerter(ctx context.Context, brokers []string, mgr *plans.Manager, log *slog.Logger, reg prometheus.Registerer) (*alertdeliver.Alerter, error) {
	var targets []alertdeliver.Target
	if c.Alertmanager.URL != "" {
		n, err := alertmanager.New(c.Alertmanager, log, reg)
		if err != nil {
			return nil, err
		}
		targets = append(targets, alertdeliver.Target{Name: "alertmanager", Notifier: n})
	}
	if c.Webhook.URL != "" {
		n, err := webhook.New(c.Webhook, log, reg)
		if err != nil {
			return nil, err
		}
		targets = append(targets, alertdeliver.Target{Name: "webhook", Notifier: n})
	}
	if c.AlertsKafka.Topic != "" {
		cfg := c.AlertsKafka
		cfg.Brokers = brokers
		n, err := kafkanotify.New(cfg, log, reg)
		if err != nil {
			return nil, err
		}
		if err := n.EnsureTopic(ctx); err != nil {
			return nil, err
		}
		targets = append(targets, alertdeliver.Target{Name: "kafka", Notifier: n})
	}
	cfg := c.alertConfig()
	c.noteSaltingURL(cfg.StateMachine.SaltingURL, len(targets) > 0, log)
	plan := PlanOf(mgr)
	cfg.StateMachine.PlanVersion = func(job, task string) (uint64, bool) {
		v, _, ok := plan(job, task)
		return v, ok
	}
	return alertdeliver.New(cfg, targets, log, reg)
}

// noteSaltingURL says once, at start-up, when the runbook link of skew
// alerts (salting, derived from --api-listen unless --salting-url is set)
// works on this host only: a loopback or unspecified address. It warns
// when alerts leave the process (external: Alertmanager, a webhook, a
// topic), where such a link is useless to whoever reads them, and says so
// at Info otherwise (alerts only in this log, as in make run, which reads
// them on this host).
func (c *RunConfig) noteSaltingURL(salting string, external bool, log *slog.Logger) {
	if c.Alerts.SaltingURL != "" || salting == "" || !HostLocal(salting) {
		return
	}
	const msg = "alerts link to the salting API on an address that works on this host only; set --salting-url to one their readers can reach"
	if external {
		log.Warn(msg, "salting_url", salting)
		return
	}
	log.Info(msg, "salting_url", salting)
}

// HostLocal reports whether rawURL's host is reachable from this host
// only, or from none: a loopback address, localhost, or an unspecified
// address (":8080", "0.0.0.0", "::"), which is a listen address, not one
// to connect to. An unparsable URL counts as local: it is no use either.
func HostLocal(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return true
	}
	h := u.Hostname()
	if h == "" || strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}
