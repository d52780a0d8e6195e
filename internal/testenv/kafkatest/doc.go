// Package kafkatest gives integration tests a real Apache Kafka broker.
//
// Start returns the broker addresses: those in the environment variable
// SKEWLENS_KAFKA_BROKERS (comma-separated) when it is set, else those of a
// single-node KRaft broker that the first Start call of the test process
// installs (deploy/kafka/install.sh, once into SKEWLENS_KAFKA_HOME,
// default $XDG_CACHE_HOME/skewlens/kafka) and starts (deploy/kafka/start.sh)
// on a free loopback port in a temporary directory. Java 17+ and Maven
// must be installed for that. Under go test -short, Start skips the test;
// otherwise it never skips: it fails the test with the tail of the
// broker's server.log.
//
// A package using Start lets Main run its tests (TestMain), which stops
// the broker afterwards. Should the test process die anyway, the broker
// stops by itself once the process is gone (KAFKA_WATCH_PID of start.sh).
//
// Restart stops and starts the same broker, on the same port and data
// directory, for fault tests; it needs the broker that Start started.
//
// StartPrivate starts a broker of the calling test's own, which the test
// may halt and resume (a broker that starts late) and which is stopped
// when it ends.
//
// Start, StartPrivate, Restart and CreateTopics block and are safe for concurrent use
// (Restart is serialised with Start). The package keeps the one broker
// of the test process in a package-level testenv.Shared; the process
// handling (ports, scripts, log tails, stop) is package testenv's.
package kafkatest
