package webui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h, err := Handler()
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, etag string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if etag != "" {
			r.Header.Set("If-None-Match", etag)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		path, ctype, contains string
	}{
		{"/", "text/html", `<script src="ui/app.js" defer></script>`},
		{"/ui/app.js", "text/javascript", "textContent"},
		{"/ui/app.css", "text/css", "table.heatmap"},
	} {
		w := get(tc.path, "")
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), tc.ctype) || !strings.Contains(w.Body.String(), tc.contains) {
			t.Errorf("GET %s: %d %q, body has %q: %v", tc.path, w.Code, w.Header().Get("Content-Type"), tc.contains, strings.Contains(w.Body.String(), tc.contains))
		}
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", tc.path)
		}
		etag := w.Header().Get("ETag")
		if etag == "" {
			t.Errorf("GET %s: no ETag", tc.path)
		} else if w2 := get(tc.path, etag); w2.Code != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", tc.path, w2.Code)
		}
	}
	for _, path := range []string{"/ui/", "/ui/index.html", "/ui/nope.js", "/ui/../webui.go", "/index.html"} {
		if w := get(path, ""); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, w.Code)
		}
	}
}

// TestNoExternalResources checks that the page loads nothing from another
// origin and has no inline script or style, which the
// Content-Security-Policy would block anyway.
func TestNoExternalResources(t *testing.T) {
	for _, name := range []string{"assets/index.html", "assets/app.js", "assets/app.css"} {
		b, err := files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, bad := range []string{"http://", "https://", "//cdn", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "<style", " style=", " onclick", " onload"} {
			if name == "assets/app.js" && bad == "http://" && strings.Count(s, "http://") == 1 && strings.Contains(s, `"http://www.w3.org/2000/svg"`) {
				continue // the SVG namespace, not a resource
			}
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
	b, _ := files.ReadFile("assets/index.html")
	if strings.Count(string(b), "<script") != 1 {
		t.Errorf("index.html has inline scripts")
	}
}
