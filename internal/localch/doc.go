// Package localch starts and stops a private, local clickhouse-server
// process for skewlens run's embedded defaults, with this folder's shell
// scripts (install.sh, start.sh, stop.sh) embedded in the binary, so that
// the binary works outside the checkout and the scripts stay the one
// description of how the server is configured (the test harness
// internal/testenv/chtest runs the same scripts from the checkout).
//
// Start blocks until the server answers a query or its start times out;
// Stop blocks until the server has exited and is safe to call twice. A
// Server is safe for concurrent use. The server also stops by itself when
// the process that started it exits (start.sh's watchdog), so a killed
// skewlens leaks no server.
package localch
