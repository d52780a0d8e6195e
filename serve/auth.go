package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Why a request is refused without tokens configured, per kind of request.
const (
	forbiddenWrite = "writes are disabled: the server has no API tokens configured"
	forbiddenAudit = "reading the audit log needs an API token, and this server has none configured (skewlens serve --token-file; docs/api.md)"
)

// AuthFailureLogInterval is the least time between two log records of
// failed authentications. Each failure is counted (skewlens_serve_rejected_total)
// but only the first in an interval is logged, with how many the
// previous records left out: anyone who can reach the port can fail to
// authenticate as often as they like, and must not flood the log.
const AuthFailureLogInterval = 10 * time.Second

// token is one configured bearer token, kept as a hash so that comparing
// takes the same time whatever the lengths.
type token struct {
	name string
	sum  [sha256.Size]byte
}

func newTokens(m map[string]string) []token {
	out := make([]token, 0, len(m))
	for name, tok := range m {
		out = append(out, token{name: name, sum: sha256.Sum256([]byte(tok))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// authorize checks the request's bearer token and returns the token's
// name. Otherwise it answers 403 with forbidden (no tokens configured) or
// 401 with WWW-Authenticate, logs the 401 (rate-limited: authLog), and
// returns false; nothing else of the request has been read then.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, forbidden string) (string, bool) {
	if len(s.tokens) == 0 {
		s.m.rejected.WithLabelValues("forbidden").Inc()
		writeError(w, http.StatusForbidden, forbidden)
		return "", false
	}
	given, ok := bearer(r.Header.Get("Authorization"))
	if ok {
		sum := sha256.Sum256([]byte(given))
		name := ""
		// Every token is compared, so the time taken does not tell which
		// one (or whether one) matched.
		for _, t := range s.tokens {
			if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
				name = t.name
			}
		}
		if name != "" {
			return name, true
		}
	}
	s.m.rejected.WithLabelValues("unauthenticated").Inc()
	reason := "no bearer token"
	if ok {
		reason = "unknown token"
	}
	s.authLog.failed(r, reason)
	challenge := `Bearer realm="skewlens"`
	if ok {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeError(w, http.StatusUnauthorized, "authentication required: send Authorization: Bearer <token>")
	return "", false
}

// bearer returns the token of an Authorization header of the Bearer
// scheme (the scheme is case-insensitive).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// authLog logs failed authentications at WARN, at most one record per
// interval; it is safe for concurrent use. A record has the time (slog's
// own), the TCP peer, the route and why, never the token sent: a wrong
// token is often a right one with a typo, or one meant for another
// server.
type authLog struct {
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	next       time.Time // no record before this time
	suppressed int       // failures not logged since the last record
}

// failed records one failed authentication of r.
func (l *authLog) failed(r *http.Request, reason string) {
	l.mu.Lock()
	now := l.now()
	if now.Before(l.next) {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	left := l.suppressed
	l.suppressed, l.next = 0, now.Add(l.interval)
	l.mu.Unlock()
	l.log.Warn("skewlens API: authentication failed", "peer", r.RemoteAddr, "route", r.Pattern,
		"reason", reason, "suppressed", left, "next_log_after", l.interval)
}
