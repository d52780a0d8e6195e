// Package chtest starts a real ClickHouse server for integration tests.
//
// Start returns the host:port of a server's native protocol port. When
// the environment variable SKEWLENS_CLICKHOUSE_ADDR is set, Start returns
// it and starts nothing. Otherwise the first call in a test process
// installs ClickHouse if it is missing (internal/localch/install.sh, which
// needs root and apt), picks a free loopback port and starts a private
// server with internal/localch/start.sh in a temporary folder; later calls
// return the same server. Under go test -short, Start skips the test;
// otherwise it never skips: when no server can be started, it fails the
// test with the tail of the server log.
//
// A package whose tests call Start stops the server after all its tests
// by calling Main from TestMain:
//
//	func TestMain(m *testing.M) { chtest.Main(m) }
//
// Without that, a watchdog started with the server stops it within a
// second of the test process exiting, so a crashed or killed test binary
// does not leak a server either.
//
// StartPrivate starts a server of the calling test's own, which the test
// may halt and resume (an outage) and which is stopped when it ends.
//
// StartCluster starts a cluster of the calling test's own: a ZooKeeper
// server (package zktest) and ClickHouse servers in shards of replicas,
// each with the remote_servers, macros, ZooKeeper and distributed_ddl
// configuration that Replicated tables, Distributed tables and ON CLUSTER
// DDL need, written to config.d next to start.sh's config.xml. It stops
// them when the test ends; the test may halt and resume any replica.
//
// Start, StartPrivate, StartCluster and Stop are safe for concurrent use. Start blocks
// for up to about 30 s the first time (plus the apt install, if one is
// needed). The process handling is package testenv's.
//
// Unlike the product packages, this test-support package keeps its state
// (the one server of the test process) in a package-level testenv.Shared:
// the server is per process by nature, and TestMain must reach it without
// a value being passed around.
package chtest
