package kafkasrc

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/skewlens/skewlens/internal/kafkaclient"
)

// WaitBrokers waits up to cfg.BrokerWait (a zero one: its default) for
// one of cfg.Brokers to answer, so that a pipeline started before its
// brokers waits for them instead of failing at its first request. Each
// retry is logged to log ("waiting for Kafka brokers", with the attempt
// and the next wait), with this package's backoff (50 ms doubling to
// 5 s). It blocks until a broker answers or the wait or ctx ends; the
// error after the wait ran out is a *kafkaclient.BrokersUnreachableError
// that says what was tried and what to check.
func WaitBrokers(ctx context.Context, cfg Config, log *slog.Logger) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.BrokerWait)
	defer cancel()
	if err := kafkaclient.WaitBrokers(ctx, kafkaclient.AdminConfig{Brokers: cfg.Brokers, Log: log}); err != nil {
		return fmt.Errorf("kafkasrc: %w", err)
	}
	return nil
}
