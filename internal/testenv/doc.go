// Package testenv is the process harness that the integration-test
// helpers chtest, kafkatest and amtest share: it starts a server with the
// install.sh, start.sh and stop.sh scripts of its deploy folder, in a
// temporary folder of its own on a free loopback port, and stops it again.
//
// A Launcher describes one kind of server (its scripts and their
// arguments); Launcher.Start installs it when needed, picks a port, runs
// start.sh under a deadline, retries with another port when start.sh
// reports the port as taken, and returns a Process. The start scripts
// return only once their server answers, so a returned Process is ready;
// on failure the error carries the tail of the script's output and of the
// server's logs. Process.Stop stops the server and removes its folder;
// Halt and Resume stop and start it in place, for fault tests.
//
// Shared holds the one server of a test process: its Get skips the test
// under go test -short, starts the server on the first call and fails the
// test when it cannot. Main runs a package's tests and then the given
// stop functions, from TestMain.
//
// Eventually is the one way a test waits on an event (a log line, a
// metric, a row): it polls a condition and fails at once when a process
// the wait depends on has ended. Buffer holds the output a goroutine
// writes while such a condition reads it.
//
// Every function blocks until its scripts have finished. Launcher values
// are read-only once used; Process and Shared methods are safe for
// concurrent use. This package keeps no package-level state: the helpers
// that use it hold their Shared values.
package testenv
