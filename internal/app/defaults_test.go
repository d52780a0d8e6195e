package app

import (
	"testing"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/ops"
	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/sinks/alertdeliver"
	"github.com/skewlens/skewlens/sinks/alertmanager"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/sinks/kafkanotify"
	"github.com/skewlens/skewlens/sinks/planpub"
	"github.com/skewlens/skewlens/sinks/webhook"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/plans"
	"github.com/skewlens/skewlens/top"
)

// TestComponentDefaults: every component's Config declares its settings
// in well-formed tags (internal/knob), and its defaults are valid, once
// what has no default (an address, brokers, a fleet's size) is given.
func TestComponentDefaults(t *testing.T) {
	const url = "http://127.0.0.1:9093"
	brokers := []string{"127.0.0.1:9092"}
	tests := []struct {
		name     string
		config   any
		validate func() error
	}{
		{"skew", skew.Config{}, func() error { return skew.DefaultConfig().Validate() }},
		{"window", window.Config{}, func() error { return window.DefaultConfig().Validate() }},
		{"window watermarks", window.WatermarkConfig{}, func() error { return window.DefaultWatermarkConfig().Validate() }},
		{"stream", stream.Config{}, func() error { return stream.DefaultConfig().Validate() }},
		{"kafkasrc", kafkasrc.Config{}, func() error { return kafkasrc.DefaultConfig().Validate() }},
		{"kafkaclient writer", kafkaclient.WriterConfig{}, func() error { return knob.Check(knob.Defaults[kafkaclient.WriterConfig]()) }},
		{"plans", plans.Config{}, func() error { return plans.DefaultConfig().Validate() }},
		{"planpub", planpub.Config{}, func() error { return planpub.DefaultConfig().Validate() }},
		{"clickhouse", clickhouse.Config{}, func() error { return clickhouse.DefaultConfig().Validate() }},
		{"ops", ops.Config{}, func() error { return ops.DefaultConfig().Validate() }},
		{"serve", serve.Config{}, func() error { return serve.DefaultConfig().Validate() }},
		{"top", top.Config{}, func() error { return top.DefaultConfig().Validate() }},
		{"incident", incident.Config{}, func() error { return incident.DefaultConfig().Validate() }},
		{"alert state machine", alert.Config{}, func() error { return alert.DefaultConfig().Validate() }},
		{"deliver", alertdeliver.Config{}, func() error { return alertdeliver.DefaultConfig().Validate() }},
		{"alertmanager", alertmanager.Config{}, func() error {
			c := alertmanager.DefaultConfig()
			c.URL = url
			return c.Validate()
		}},
		{"webhook", webhook.Config{}, func() error {
			c := webhook.DefaultConfig()
			c.URL = url + "/alerts"
			return c.Validate()
		}},
		{"kafkanotify", kafkanotify.Config{}, func() error {
			c := kafkanotify.DefaultConfig()
			c.Brokers = brokers
			return c.Validate()
		}},
		{"simulate", simulate.Config{}, func() error { return simulate.DefaultConfig().Validate() }},
		{"simulate fleet", simulate.FleetConfig{}, func() error {
			c := simulate.DefaultFleetConfig()
			c.Jobs = 1 // one of Jobs and Subtasks has no default
			return c.Validate()
		}},
		{"simfeed", simfeed.Config{}, func() error { return simfeed.DefaultConfig().Validate() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ss, err := knob.Settings(tt.config); err != nil || len(ss) == 0 {
				t.Errorf("settings %d, %v", len(ss), err)
			}
			if err := tt.validate(); err != nil {
				t.Errorf("defaults: %v", err)
			}
		})
	}
}
