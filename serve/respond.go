package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// encodeJSON encodes v as the API answers: no HTML escaping (keys are
// data, not markup), one trailing newline.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// etagOf returns the strong entity tag of body: a quoted hash of the
// exact bytes, so equal answers have equal tags on every server.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// noneMatch reports whether an If-None-Match header value matches etag:
// "*" or a comma-separated list of entity tags, compared weakly as RFC
// 9110 prescribes for If-None-Match (a W/ prefix is ignored). Malformed
// members match nothing.
func noneMatch(header, etag string) bool {
	for member := range strings.SplitSeq(header, ",") {
		m := strings.TrimSpace(member)
		if m == "*" {
			return true
		}
		m = strings.TrimPrefix(m, "W/")
		if len(m) >= 2 && m[0] == '"' && m[len(m)-1] == '"' && m == etag {
			return true
		}
	}
	return false
}

// writeBody answers 200 with body (JSON), its ETag and cacheControl, or
// 304 when the request's If-None-Match matches the ETag.
func writeBody(w http.ResponseWriter, r *http.Request, body []byte, cacheControl string) {
	etag := etagOf(body)
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", cacheControl)
	if inm := r.Header.Values("If-None-Match"); len(inm) > 0 && noneMatch(strings.Join(inm, ","), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// writeJSON answers status with v as JSON and no caching.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"internal error: encoding the answer failed"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// apiError is the body of every error answer.
type apiError struct {
	Error string `json:"error"`
}

// writeError answers status with {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Error: msg})
}
