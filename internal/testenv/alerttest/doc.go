// Package alerttest builds the findings the tests of package alert and of
// sinks/alertdeliver feed their state machines, and the incident tracker that
// folds them (Incidents): one set of fixtures, so the alert packages'
// tests describe the same incidents the same way.
//
// It is imported by tests only. Its findings functions are pure and safe
// for concurrent use.
package alerttest
