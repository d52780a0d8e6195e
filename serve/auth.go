package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"sort"
	"strings"
)

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
// name. Otherwise it answers 403 (no tokens configured: writes are off)
// or 401 with WWW-Authenticate, and returns false; nothing else of the
// request has been read then.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (string, bool) {
	if len(s.tokens) == 0 {
		s.m.rejected.WithLabelValues("forbidden").Inc()
		writeError(w, http.StatusForbidden, "writes are disabled: the server has no API tokens configured")
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
