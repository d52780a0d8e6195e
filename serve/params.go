package serve

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
)

// Limits of request parameters.
const (
	// MaxIDBytes bounds a job id and a task name.
	MaxIDBytes = plans.MaxNameBytes
	// DefaultLimit and MaxLimit bound the entries of GET /v1/findings,
	// GET /v1/stats and GET /v1/audit.
	DefaultLimit = 100
	MaxLimit     = 1000
	// DefaultFindingsWindow is how far back GET /v1/findings and GET
	// /v1/stats look without since.
	DefaultFindingsWindow = 24 * time.Hour
)

// badRequest is a client error whose message is safe to return.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return &badRequest{msg: fmt.Sprintf(format, args...)}
}

// checkJobID checks a job id: Flink's are 32 hex digits; any of
// [A-Za-z0-9._:-], 1 to 256 bytes, is accepted.
func checkJobID(s string) error {
	if s == "" || len(s) > MaxIDBytes {
		return badRequestf("job_id: must be 1 to %d bytes", MaxIDBytes)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '_', c == ':', c == '-':
		default:
			return badRequestf("job_id %q: only letters, digits and . _ : - are allowed", s)
		}
	}
	return nil
}

// checkTaskName checks a task name: free text of 1 to 256 bytes of valid
// UTF-8 without control characters.
func checkTaskName(s string) error {
	switch {
	case s == "" || len(s) > MaxIDBytes:
		return badRequestf("task_name: must be 1 to %d bytes", MaxIDBytes)
	case !utf8.ValidString(s):
		return badRequestf("task_name %q: not valid UTF-8", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return badRequestf("task_name %q: contains control character %U", s, r)
		}
	}
	return nil
}

// checkKey checks a record key given by an operator: valid UTF-8 (JSON
// cannot carry anything else) of 1 to 64 KiB; any character is allowed.
func checkKey(s string) error {
	switch {
	case s == "":
		return badRequestf("key: required")
	case len(s) > plans.MaxKeyBytes:
		return badRequestf("key: %d bytes, more than %d", len(s), plans.MaxKeyBytes)
	case !utf8.ValidString(s):
		return badRequestf("key: not valid UTF-8")
	}
	return nil
}

// queryParams parses a raw query strictly: every parameter at most once
// and one of allowed.
func queryParams(raw string, allowed ...string) (map[string]string, error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return nil, badRequestf("query: %v", err)
	}
	out := make(map[string]string, len(vals))
	for k, v := range vals {
		if !slices.Contains(allowed, k) {
			if len(k) > 64 {
				k = k[:64] + "…"
			}
			return nil, badRequestf("query parameter %q: unknown (allowed: %s)", k, strings.Join(allowed, ", "))
		}
		if len(v) != 1 {
			return nil, badRequestf("query parameter %q: given %d times", k, len(v))
		}
		out[k] = v[0]
	}
	return out, nil
}

// parseLimit parses limit: 1 to MaxLimit, default DefaultLimit.
func parseLimit(s string) (int, error) {
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, badRequestf("limit %q: must be an integer from 1 to %d", s, MaxLimit)
	}
	return n, nil
}

// parseSince parses since: RFC 3339 or epoch milliseconds.
func parseSince(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 || ms > 1<<53 {
			return time.Time{}, badRequestf("since %q: epoch milliseconds out of range", s)
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, badRequestf("since %q: want RFC 3339 (2026-03-01T12:00:00Z) or epoch milliseconds", s)
	}
	return t.UTC(), nil
}

// findingKinds are the kinds GET /v1/findings filters on. subtask_stats
// is not one: statistics are served by GET /v1/stats.
func findingKinds() []string {
	return []string{skew.KindHotKey, skew.KindSaturation, skew.KindSaltingPlan, skew.KindJobEnd}
}

func checkKind(s string) error {
	if s == skew.KindSubtaskStats {
		return badRequestf("kind %q: statistics are not findings; GET /v1/stats serves them", s)
	}
	if !slices.Contains(findingKinds(), s) {
		return badRequestf("kind %q: must be one of %s", s, strings.Join(findingKinds(), ", "))
	}
	return nil
}
