package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skewlens/skewlens/internal/testenv"
)

// DefaultBinary is Debian's Chromium.
const DefaultBinary = "/usr/bin/chromium"

// Width and Height are the browser window's size, which screenshots take.
const (
	Width  = 1400
	Height = 1000
)

// binary returns the Chromium to run, installing Debian's when the
// default is missing.
func binary() (string, error) {
	if b := os.Getenv("SKEWLENS_CHROMIUM"); b != "" {
		return b, nil
	}
	if _, err := os.Stat(DefaultBinary); err == nil {
		return DefaultBinary, nil
	}
	script := filepath.Join(testenv.DeployDir("chromium"), "install.sh")
	out, err := exec.Command("bash", script).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("install chromium (%s): %w\n%s", script, err, testenv.Tail(string(out), 20))
	}
	return DefaultBinary, nil
}

// New starts a headless Chromium and returns a chromedp context for its
// first tab, which ends when the test ends (or timeout passes), and the
// browser with it. It skips t under -short and fails t when the browser
// cannot start.
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	testenv.SkipShort(t, "a headless Chromium")
	bin, err := binary()
	if err != nil {
		t.Fatalf("browsertest: %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root, where the sandbox cannot start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(Width, Height),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancel()
	})
	// Start the browser now, so that a failure to start is reported as
	// such and not as the first action's.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("browsertest: start %s: %v", bin, err)
	}
	return bctx
}
