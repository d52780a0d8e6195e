package app

import (
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/skewlens/skewlens/internal/cliconf"
	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestRunConfigAsBound: a RunConfig as the command line binds it (each
// Config at its declared defaults, nothing from DefaultConfig) passes
// Check with every notifier configured, and the component configurations
// made from it equal the components' own defaults where no flag is set.
func TestRunConfigAsBound(t *testing.T) {
	var c struct{ RunConfig }
	cliconf.Reset(&c, knob.Vars(skew.Config{}, kafkasrc.Config{}, plans.Config{}))
	c.Kafka.Brokers = []string{"127.0.0.1:9092"}
	c.ClickhouseAddr = "127.0.0.1:9000"
	c.Alertmanager.URL = "http://127.0.0.1:9093"
	c.Webhook.URL = "http://127.0.0.1:8080/alerts"
	c.AlertsKafka.Topic = "skewlens-alerts"
	if err := c.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got, want := c.incidentConfig().Hysteresis, incident.DefaultConfig().Hysteresis; got != want {
		t.Errorf("hysteresis %+v, want %+v", got, want)
	}
	if got := c.alertConfig().StateMachine; len(got.Causes) != len(alert.DefaultConfig().Causes) {
		t.Errorf("alert causes %v, want every cause", got.Causes)
	}
	if got, want := c.StoreConfig().Database, clickhouse.DefaultConfig().Database; got != want {
		t.Errorf("database %q, want %q", got, want)
	}
	if got, want := c.plansConfig(), plans.DefaultConfig(); got.Cooldown != want.Cooldown || got.TTL != want.TTL || got.Separator != c.Engine.SaltSeparator {
		t.Errorf("plans %+v, want %+v with the engine's separator", got, want)
	}
}

// TestClosersDeferred: closers added after `defer cl.close` run, last
// added first, and an error does not stop the others.
func TestClosersDeferred(t *testing.T) {
	var order []int
	func() {
		var cl closers
		defer cl.close(slog.New(slog.DiscardHandler))
		for i := range 3 {
			cl.add(func() error {
				order = append(order, i)
				if i == 1 {
					return errors.New("close failed")
				}
				return nil
			})
		}
	}()
	if !slices.Equal(order, []int{2, 1, 0}) {
		t.Errorf("closed %v, want [2 1 0]", order)
	}
}
