// Package prometheus holds the Prometheus alert rules for skewlens' own
// health (skewlens-rules.yml: consumer lag growing or stalled, ClickHouse
// writes failing, dead letters, a Flink job gone silent, the API failing
// to read), their promtool unit tests (skewlens-rules_test.yml), and
// install.sh, which installs promtool from Debian's prometheus package
// when it is missing (make deps runs it).
//
// The package has no Go code of its own. Its tests run `promtool check
// rules` and `promtool test rules` on the files (skipped under go test
// -short; in the full run a missing promtool that cannot be installed
// fails them), and check, without promtool, that every metric the rules
// name is one skewlens registers, so that a renamed metric cannot leave a
// rule that never fires.
package prometheus
