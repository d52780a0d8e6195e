package cliconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

func TestNearestKey(t *testing.T) {
	known := []string{"alerts_topic", "brokers", "clickhouse_addr", "group", "topics", "window"}
	tests := []struct{ in, want string }{
		{"broker", "brokers"},
		{"Brokers", "brokers"},
		{"clickhouse-addr", "clickhouse_addr"},
		{"clickhouseAddr", "clickhouse_addr"},
		{"grop", "group"},
		{"topic", "topics"},
		{"windows", "window"},
		{"alert_topic", "alerts_topic"},
		{"x", ""},
		{"database_name", ""},
	}
	for _, tt := range tests {
		if got := nearestKey(tt.in, known); got != tt.want {
			t.Errorf("nearestKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestConfigFileErrorsSayWhere checks that every error about a value of
// the file names the file, the key and its line: a value kong cannot
// parse (caught in Resolve, before kong's own message, which names only
// the flag), a map where a value goes, and an unknown key.
func TestConfigFileErrorsSayWhere(t *testing.T) {
	type cli struct {
		ConfigFlag
		Window time.Duration `help:"w"`
		TopK   int           `help:"k"`
		Format string        `enum:"text,json" default:"text" help:"f"`
		Topics []string      `help:"t"`
	}
	tests := []struct{ yaml, want string }{
		{"top_k: 3\nwindow: ten seconds\n", `--window: expected duration but got "ten seconds": time: invalid duration "ten seconds" (set by key window at FILE:2)`},
		{"top_k: two\n", `--top-k: expected a valid 64 bit int but got "two" (set by key top_k at FILE:1)`},
		{"\n\nformat: xml\n", `--format: must be one of text, json but got "xml" (set by key format at FILE:3)`},
		{"window: [1s, 2s]\n", `--window: want one value, not a list (set by key window at FILE:1)`},
		{"topics:\n  a: b\n", `key topics at FILE:1: want a value or a list, not a map`},
		{"topic: a\n", `FILE:1: unknown key "topic" (did you mean "topics"?)`},
		{"42\n", `FILE:1: want a map of flag names to values`},
	}
	for _, tt := range tests {
		file := filepath.Join(t.TempDir(), "skewlens.yaml")
		if err := os.WriteFile(file, []byte(tt.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		var c cli
		parser, err := kong.New(&c, kong.Exit(func(int) { t.Fatal("exit") }))
		if err != nil {
			t.Fatal(err)
		}
		_, err = parser.Parse([]string{"--config", file})
		if want := strings.ReplaceAll(tt.want, "FILE", file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", tt.yaml, err, want)
		}
	}
	// A valid file sets the flags, and keyAt finds a key's line for the
	// range check's messages.
	file := filepath.Join(t.TempDir(), "ok.yaml")
	if err := os.WriteFile(file, []byte("# settings\nwindow: 10s\ntopics: [a, b]\nformat: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var c cli
	parser, err := kong.New(&c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	if c.Window != 10*time.Second || strings.Join(c.Topics, ",") != "a,b" || c.Format != "json" {
		t.Errorf("parsed %+v", c)
	}
	if got, want := keyAt(file, "topics"), "key topics at "+file+":3"; got != want {
		t.Errorf("keyAt = %q, want %q", got, want)
	}
	if got, want := keyAt(file, "top_k"), "key top_k in "+file; got != want {
		t.Errorf("keyAt of a key the file lacks = %q, want %q", got, want)
	}
}
