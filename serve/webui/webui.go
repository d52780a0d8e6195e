package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// files holds the page. It is a package variable because go:embed
// requires one; it is read-only.
//
//go:embed assets
var files embed.FS

// Paths the Handler serves: the page at "/" and its assets under
// AssetPrefix.
const (
	PagePath    = "/"
	AssetPrefix = "/ui/"
)

// contentSecurityPolicy allows the page's own script, style and API
// calls, and nothing else: no inline script, no other origin, no frames.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file with its strong ETag.
type asset struct {
	name string
	body []byte
	etag string
}

// Handler serves GET PagePath (index.html) and GET AssetPrefix+name (the
// script and style sheet); anything else is 404. Every answer carries the
// Content-Security-Policy, an ETag over its bytes (a matching
// If-None-Match gets 304) and Cache-Control: no-cache, so a new binary's
// page is picked up at once.
//
// It fails only if the embedded files cannot be read, which is a build
// defect.
func Handler() (http.Handler, error) {
	assets := map[string]asset{}
	err := fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		assets[path.Base(p)] = asset{name: path.Base(p), body: b, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webui: embedded assets: %w", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "index.html"
		if r.URL.Path != PagePath {
			rest, ok := strings.CutPrefix(r.URL.Path, AssetPrefix)
			if !ok || rest == "index.html" {
				http.NotFound(w, r)
				return
			}
			name = rest
		}
		a, ok := assets[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
	}), nil
}
