package alertdeliver

import "github.com/skewlens/skewlens/internal/testenv/alerttest"

// Test findings, the same as package alert's tests use: 10 s windows
// starting at ws (ms). The state machine's own tests are in package
// alert; these only feed the Alerter.
const win = alerttest.Window

var (
	sat = alerttest.Sat
	hot = alerttest.Hot
)
