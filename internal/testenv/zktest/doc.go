// Package zktest starts a real, standalone ZooKeeper server for
// integration tests: the coordination service a replicated ClickHouse
// cluster needs (see chtest.StartCluster).
//
// StartPrivate installs ZooKeeper if it is missing
// (deploy/zookeeper/install.sh: Debian's zookeeper package, which needs
// root and apt), picks a free loopback port and starts a server with
// deploy/zookeeper/start.sh in a temporary folder, which it stops and
// removes when the calling test ends. Under go test -short it skips the
// test; otherwise it never skips: when no server can be started, it
// fails the test with the tail of the server's log. A watchdog started
// with the server stops it within a second of the test process exiting,
// so a crashed test binary does not leak it.
//
// StartPrivate blocks for a few seconds (plus the apt install, if one is
// needed) and is safe for concurrent use. The process handling is
// package testenv's.
package zktest
