// Package promreg is the one way components register their Prometheus
// collectors: Register adds a component's collectors to the injected
// prometheus.Registerer and returns an error, never panics, when it
// cannot, so a constructor fails with an error that names the component
// (for example a second component of the same kind on one registry).
//
// Register blocks only as long as the registerer does and is safe for
// concurrent use when the registerer is (prometheus.Registry is).
package promreg
