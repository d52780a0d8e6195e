package simfeed

import (
	"math"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/pipeline/simulate"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Brokers = []string{"127.0.0.1:9092"}
		c.Jobs = []simulate.Config{{Scenario: simulate.HotKey}}
		return c
	}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // "" means valid
	}{
		{"defaults with brokers and jobs", func(*Config) {}, ""},
		{"no brokers", func(c *Config) { c.Brokers = nil }, "no brokers"},
		{"no jobs", func(c *Config) { c.Jobs = nil }, "no jobs"},
		{"no metrics topic", func(c *Config) { c.MetricsTopic = "" }, "topics"},
		{"zero speed", func(c *Config) { c.Speed = 0 }, "speed"},
		{"negative speed", func(c *Config) { c.Speed = -2 }, "speed"},
		{"NaN speed", func(c *Config) { c.Speed = math.NaN() }, "speed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.edit(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one about %q", err, tt.wantErr)
			}
			if _, err := New(c, nil); err == nil {
				t.Fatal("New accepted the config")
			}
		})
	}
	if d := DefaultConfig(); d.MetricsTopic != "flink-metrics" || d.SamplesTopic != "flink-key-samples" || d.Speed != 1 {
		t.Errorf("defaults: %+v", d)
	}
}
