package promreg

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers each collector with reg, in order, and returns the
// function that unregisters them again (for a component whose Close lets
// another of its kind register on the same reg). When one cannot be
// registered, it unregisters those this call registered before it, so a
// failed constructor leaves reg as it found it, and returns an error that
// names what (the component, e.g. "clickhouse store") and wraps
// Prometheus's error: errors.As finds a prometheus.AlreadyRegisteredError
// when a component of the same kind already registered on reg. A nil reg
// registers nothing, for components built without metrics.
func Register(reg prometheus.Registerer, what string, cs ...prometheus.Collector) (unregister func(), err error) {
	if reg == nil {
		return func() {}, nil
	}
	for i, c := range cs {
		err := reg.Register(c)
		if err == nil {
			continue
		}
		for _, done := range cs[:i] {
			reg.Unregister(done)
		}
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			return nil, fmt.Errorf("register %s metrics: %w (one %s per registry at a time)", what, err, what)
		}
		return nil, fmt.Errorf("register %s metrics: %w", what, err)
	}
	return func() {
		for _, c := range cs {
			reg.Unregister(c)
		}
	}, nil
}
