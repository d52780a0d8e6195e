// Package systemd holds the systemd units that run skewlens as a service
// (skewlens-run.service for the pipeline, skewlens-serve.service for the
// API), the example environment file of the API (serve.env), and
// install.sh, which installs systemd-analyze from Debian's systemd package
// when it is missing (make deps runs it).
//
// The package has no Go code of its own: its tests check the units with
// the real tool. They run `systemd-analyze verify` on each unit, with the
// unit's ExecStart pointed at a freshly built skewlens (verify checks that
// the program exists), and `systemd-analyze security --offline` with an
// exposure threshold, so that the hardening cannot be dropped unnoticed.
// The tests skip under go test -short and fail, never skip, in the full
// run when the tool cannot be installed. cmd/skewlens checks that each
// unit's ExecStart line and environment file parse as skewlens command
// lines.
package systemd
