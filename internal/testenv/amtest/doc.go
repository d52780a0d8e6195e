// Package amtest starts a real Prometheus Alertmanager for integration
// tests, with a webhook receiver in the test process that records the
// notifications Alertmanager sends.
//
// The first Start call of a test process starts a webhook receiver on a
// free loopback port, installs Alertmanager if it is missing
// (deploy/alertmanager/install.sh: the Debian package
// prometheus-alertmanager, which needs root and apt; its system service is
// never used) and starts a private instance with
// deploy/alertmanager/start.sh in a temporary folder, on a free loopback
// port, gossip off, routing every alert to the receiver with short
// timings (group_wait 200ms, group_interval 500ms, send_resolved on). Later
// calls return the same server. Under go test -short, Start skips the
// test; otherwise it never skips: when Alertmanager cannot start, it
// fails the test with the tail of its log. There is no
// environment variable for an external Alertmanager, because the tests
// need it to call back into the test process.
//
// A package whose tests call Start stops the server after all its tests
// by calling Main from TestMain:
//
//	func TestMain(m *testing.M) { amtest.Main(m) }
//
// Without that, a watchdog started with the server stops it within a
// second of the test process exiting.
//
// Notifications from all tests of the process are recorded together
// (the newest 10000; older ones are dropped), so tests tell theirs apart
// by labels, e.g. a job_id of their own. WaitNotification blocks until a
// matching notification arrives or its timeout passes.
//
// Start, Stop and the Server methods are safe for concurrent use. The
// package keeps the one server of the test process in a package-level
// testenv.Shared: it is per process by nature, and TestMain must reach it
// without a value being passed around. The process handling (ports,
// scripts, log tails, stop) is package testenv's.
package amtest
