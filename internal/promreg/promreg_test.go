package promreg

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func counter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: "A test counter."})
}

func TestRegister(t *testing.T) {
	tests := []struct {
		name     string
		existing []string // registered before the call
		names    []string // the call's collectors
		wantErr  string   // "" for success
		already  bool     // the error wraps AlreadyRegisteredError
	}{
		{name: "fresh registry", names: []string{"a_total", "b_total"}},
		{name: "no collectors", names: nil},
		{name: "second component of a kind", existing: []string{"b_total"}, names: []string{"a_total", "b_total"},
			wantErr: "register test component metrics", already: true},
		{name: "clash with a different collector", existing: []string{"a_total"}, names: []string{"c_total", "a_total:gauge"},
			wantErr: "register test component metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			for _, n := range tt.existing {
				reg.MustRegister(counter(n))
			}
			var cs []prometheus.Collector
			for _, n := range tt.names {
				if g, ok := strings.CutSuffix(n, ":gauge"); ok {
					// Same name, other type and help: not the same
					// collector, so not AlreadyRegistered.
					cs = append(cs, prometheus.NewGauge(prometheus.GaugeOpts{Name: g, Help: "A gauge."}))
					continue
				}
				cs = append(cs, counter(n))
			}
			unregister, err := Register(reg, "test component", cs...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				for _, c := range cs {
					if reg.Register(c) == nil {
						t.Errorf("a collector was not registered")
					}
				}
				// unregister frees every name for the next component.
				unregister()
				for _, c := range cs {
					if err := reg.Register(c); err != nil {
						t.Errorf("after unregister: %v", err)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Register error = %v, want %q", err, tt.wantErr)
			}
			var are prometheus.AlreadyRegisteredError
			if got := errors.As(err, &are); got != tt.already {
				t.Errorf("errors.As(AlreadyRegisteredError) = %v, want %v", got, tt.already)
			}
			// The collectors registered before the failing one were
			// unregistered again: a fresh copy of the first registers.
			if err := reg.Register(cs[0]); err != nil {
				t.Errorf("the call left %v registered: %v", tt.names[0], err)
			}
		})
	}
}

func TestRegisterNil(t *testing.T) {
	unregister, err := Register(nil, "x", counter("a_total"), counter("a_total"))
	if err != nil {
		t.Fatalf("Register(nil) = %v, want nil", err)
	}
	unregister() // must not panic
}
