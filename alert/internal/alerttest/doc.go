// Package alerttest builds the findings the tests of package alert and of
// alert/deliver feed their state machines: one set of fixtures, so the two
// packages' tests describe the same incidents the same way.
//
// It is imported by tests only. Its functions are pure and safe for
// concurrent use.
package alerttest
