// Package puretest checks that a package said to be pure stays pure: no
// non-test file of it imports anything that does I/O, logs, keeps
// metrics, synchronises goroutines or draws random numbers, reads the
// clock, or starts or waits on goroutines. The engine (skew) and the
// alert state machine (skew/alert, skew/incident) run it from their tests.
//
// Check parses the files once per call and reports each impurity as a
// test error; Impurities checks one parsed file. Both only read files
// and are safe for concurrent use.
package puretest
