package httpjson

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/alertdeliver"
)

// maxErrorBody is how much of an error response is kept in the error.
const maxErrorBody = 512

// Post sends body to url with Content-Type application/json and the
// given extra headers, giving up after timeout. A 2xx answer is success.
// It makes one attempt; the caller retries. Errors are *alertdeliver.NotifyError,
// marked with retry.Permanent for 4xx answers other than 408 (request
// timeout), 425 (too early) and 429 (too many requests), and for other
// non-2xx answers below 500; retryable for 5xx, network errors and
// timeouts.
func Post(ctx context.Context, c *http.Client, notifier, rawURL string, body []byte, header http.Header, timeout time.Duration) error {
	op := "POST " + redact(rawURL)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return retry.Permanent("", &alertdeliver.NotifyError{Notifier: notifier, Op: op, Err: err})
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		// *url.Error repeats the URL, query and all: keep its cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &alertdeliver.NotifyError{Notifier: notifier, Op: op, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// Drain so the connection is reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	text := strings.TrimSpace(string(msg))
	if text == "" {
		text = http.StatusText(resp.StatusCode)
	}
	err = &alertdeliver.NotifyError{Notifier: notifier, Op: op, StatusCode: resp.StatusCode, Err: fmt.Errorf("%s", text)}
	if permanent(resp.StatusCode) {
		return retry.Permanent("", err)
	}
	return err
}

// permanent reports whether a non-2xx status is one a retry cannot fix.
func permanent(code int) bool {
	switch {
	case code >= 500:
		return false
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		return false
	}
	return true
}

// redact drops the user info and query of a URL for error messages: they
// may hold credentials.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}

// CheckURL validates a notifier URL: absolute http or https with a host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url %q: %w", redact(raw), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %q: scheme must be http or https", redact(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("url %q: no host", redact(raw))
	}
	return nil
}
