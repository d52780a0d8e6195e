// Package browsertest starts a headless Chromium (Debian's chromium,
// /usr/bin/chromium, or the binary named by $SKEWLENS_CHROMIUM) for tests
// of the web view, driven through the DevTools protocol with chromedp.
//
// Each New starts its own browser with an empty profile in a temporary
// folder and stops it when the test ends. The browser runs with the flags
// a machine without internet needs: no background networking, component
// updates, sync or first-run work, which would otherwise try to reach
// Google's hosts at every start.
//
// Under go test -short New skips the test. When the browser is missing,
// New installs it with deploy/chromium/install.sh (make deps does too) and
// fails the test if it cannot.
package browsertest
