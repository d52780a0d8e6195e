package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/app"
	"github.com/skewlens/skewlens/sinks/servestore"
)

// TestTokenFileFormats: --token-file takes a YAML map of name: token; a
// file of another shape is refused with an error that says what the file
// should hold (and never shows its content, which may be a token), and
// an empty file gives a read-only API with a warning.
func TestTokenFileFormats(t *testing.T) {
	clearEnv(t)
	const tok = "0123456789abcdef0123"
	st := exampleStore{}
	store := servestore.Store{Ready: st, Plans: st, Overrides: st, Audit: st, Findings: st, Stats: st}
	for _, tc := range []struct {
		name, file string
		tokens     int      // tokens loaded when no error is wanted
		wantErr    []string // each in the error; nil: no error
		warn       bool     // the read-only warning is logged
	}{
		{"map", "alice: " + tok + "\nbob: " + tok + "x\n", 2, nil, false},
		{"empty", "", 0, nil, true},
		{"comments only", "# no tokens yet\n", 0, nil, true},
		{"bare token", tok + "\n", 0, []string{"single value", "YAML map of name: token", "16 bytes", "deploy/config/tokens.yaml"}, false},
		{"list", "- " + tok + "\n", 0, []string{"a list", "YAML map of name: token"}, false},
		{"nested value", "alice:\n  token: " + tok + "\n", 0, []string{"line 1", "one token", "YAML map of name: token"}, false},
		{"name without token", "alice:\n", 0, []string{"line 1", "one token"}, false},
		{"not YAML", "alice: [" + tok + "\n", 0, []string{"not YAML", "YAML map of name: token"}, false},
		{"short token", "alice: short\n", 0, []string{"shorter than 16 bytes"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "tokens.yaml")
			if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			c := parse(t, "serve", "--clickhouse-addr", "127.0.0.1:9000", "--api-listen", "127.0.0.1:0", "--token-file", file).Serve
			srv, err := app.NewServer(c.API, store, slog.New(slog.NewTextHandler(&logs, nil)), prometheus.NewRegistry())
			if tc.wantErr != nil {
				if err == nil {
					srv.Stop()
					t.Fatal("accepted")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q: want %q in it", err, w)
					}
				}
				if strings.Contains(err.Error(), tok) {
					t.Errorf("error %q shows the token", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			cfg, err := c.ServeConfig()
			if err != nil || len(cfg.Tokens) != tc.tokens {
				t.Errorf("%d tokens (%v), want %d", len(cfg.Tokens), err, tc.tokens)
			}
			warned := strings.Contains(logs.String(), "level=WARN") &&
				strings.Contains(logs.String(), "read-only API: no write tokens in "+file)
			if warned != tc.warn {
				t.Errorf("read-only warning logged: %v, want %v; log:\n%s", warned, tc.warn, logs.String())
			}
		})
	}
}
