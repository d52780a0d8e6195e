package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/skewlens/skewlens/internal/app"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/sinks/servestore"
)

// exampleDeliberate are the keys deploy/config/skewlens.yaml sets to
// something other than the flag's default, as a production service
// would; every other key must hold its default, so the file documents
// the defaults truthfully.
var exampleDeliberate = []string{"brokers", "clickhouse_addr", "listen", "quiet"}

// runFlags returns the flags of `skewlens run` that a config file may set,
// by config key (the flag name with underscores), from a parser's model.
func runFlags(t *testing.T, p *kong.Kong) map[string]*kong.Flag {
	t.Helper()
	for _, c := range p.Model.Node.Children {
		if c.Name != "run" {
			continue
		}
		flags := map[string]*kong.Flag{}
		for _, f := range c.Flags {
			if f.Name == "help" || f.Name == "config" {
				continue
			}
			flags[strings.ReplaceAll(f.Name, "-", "_")] = f
		}
		return flags
	}
	t.Fatal("no run command in the model")
	return nil
}

// parseModel parses args like parse, and returns the parser too, whose
// model holds each flag's parsed value (Flag.Target).
func parseModel(t *testing.T, args ...string) *kong.Kong {
	t.Helper()
	var c cli
	var out strings.Builder
	p, err := newParser(&c, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(args); err != nil {
		t.Fatalf("parse %q: %v\n%s", args, err, out.String())
	}
	return p
}

// exampleLine is a key line of the example configuration: `key: value`,
// or `#key: value` for a key whose default cannot be written as a value.
var exampleLine = regexp.MustCompile(`^(#?)([a-z][a-z0-9_]*):`)

// exampleKey is a key of the example configuration.
type exampleKey struct {
	name      string
	line      int    // 0-based
	comment   string // the line above it
	commented bool   // written as #key: value
}

// exampleKeys reads the key lines of the example configuration, with the
// comment line above each.
func exampleKeys(t *testing.T, text string) []exampleKey {
	t.Helper()
	var keys []exampleKey
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		m := exampleLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		k := exampleKey{name: m[2], line: i, commented: m[1] == "#"}
		if i > 0 {
			k.comment = lines[i-1]
		}
		keys = append(keys, k)
	}
	return keys
}

// TestExampleConfig loads deploy/config/skewlens.yaml with run's own
// --config loader and checks that it names every flag of run (so it stays
// complete when a flag is added), names nothing else, comments each key,
// and holds each flag's default but for the deliberate production keys.
func TestExampleConfig(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(testenv.RepoRoot(), "deploy", "config", "skewlens.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	keys := exampleKeys(t, string(b))

	defaults := runFlags(t, parseModel(t, "run"))
	loaded := runFlags(t, parseModel(t, "run", "--config", file))
	if len(defaults) < 50 {
		t.Fatalf("only %d flags of run seen", len(defaults))
	}
	seen := map[string]bool{}
	for _, k := range keys {
		f := defaults[k.name]
		switch {
		case f == nil:
			t.Errorf("%s:%d: key %s is no flag of skewlens run", file, k.line+1, k.name)
			continue
		case seen[k.name]:
			t.Errorf("%s:%d: key %s again", file, k.line+1, k.name)
		case !strings.HasPrefix(k.comment, "# ") || len(k.comment) < 12:
			t.Errorf("%s:%d: key %s has no comment line above it (%q)", file, k.line+1, k.name, k.comment)
		case k.commented && (f.Tag.Type != "existingfile" || f.Default != ""):
			t.Errorf("%s:%d: key %s is commented out, but its default can be written: write it", file, k.line+1, k.name)
		}
		seen[k.name] = true
	}
	for key, f := range defaults {
		if !seen[key] {
			t.Errorf("%s: no key %s (flag --%s): add it with its default and a comment", file, key, f.Name)
		}
	}
	for key, d := range defaults {
		l := loaded[key]
		if l == nil {
			continue
		}
		got, def := l.Target.Interface(), d.Target.Interface()
		same := reflect.DeepEqual(got, def) || isEmptyList(got) && isEmptyList(def)
		comment := ""
		for _, k := range keys {
			if k.name == key {
				comment = k.comment
			}
		}
		switch {
		case slices.Contains(exampleDeliberate, key):
			if same {
				t.Errorf("%s: %s is listed as deliberately changed but holds the default %v", file, key, def)
			}
			if !strings.Contains(comment, "default") {
				t.Errorf("%s: %s differs from the default but its comment does not state it: %q", file, key, comment)
			}
		case !same:
			t.Errorf("%s: %s is %#v, but the default is %#v", file, key, got, def)
		}
	}

	// The file's values really reach the command: the deliberate ones show.
	r := parse(t, "run", "--config", file).Run
	if len(r.Kafka.Brokers) != 3 || r.ClickhouseAddr == "" || !r.Quiet {
		t.Errorf("run --config %s: brokers %v, clickhouse_addr %q, quiet %v: the file was not applied", file, r.Kafka.Brokers, r.ClickhouseAddr, r.Quiet)
	}

	// Each commented-out key, written with a file that exists, is taken.
	lines := strings.Split(string(b), "\n")
	for _, k := range keys {
		if !k.commented || defaults[k.name] == nil {
			continue
		}
		dir := t.TempDir()
		target := filepath.Join(dir, k.name)
		if err := os.WriteFile(target, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		edited := slices.Clone(lines)
		edited[k.line] = k.name + ": " + target
		cfg := filepath.Join(dir, "skewlens.yaml")
		if err := os.WriteFile(cfg, []byte(strings.Join(edited, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := runFlags(t, parseModel(t, "run", "--config", cfg))[k.name].Target.Interface(); got != target {
			t.Errorf("%s uncommented: --%s is %v, want %s", k.name, defaults[k.name].Name, got, target)
		}
	}
}

func isEmptyList(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Slice && rv.Len() == 0
}

// exampleStore is enough of a servestore.Store for the API to start and
// answer GET /v1/audit: the nil interfaces it embeds are never called.
type exampleStore struct {
	servestore.PlanReader
	servestore.OverrideWriter
	servestore.FindingReader
	servestore.StatsReader
}

func (exampleStore) Ping(context.Context) error { return nil }
func (exampleStore) Audit(context.Context, string, int) ([]servestore.AuditEntry, error) {
	return nil, nil
}

// TestExampleTokens loads deploy/config/tokens.yaml with serve's own
// --token-file loader and checks that each of its tokens, and no other,
// is let through to GET /v1/audit, and that the loader refuses the file
// with a token made too short (so the example's format is the validated
// one).
func TestExampleTokens(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(testenv.RepoRoot(), "deploy", "config", "tokens.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tokens map[string]string
	if err := yaml.Unmarshal(b, &tokens); err != nil {
		t.Fatal(err)
	}
	if len(tokens) < 2 {
		t.Fatalf("%s: %d tokens, want at least 2 to show the format", file, len(tokens))
	}
	st := exampleStore{}
	store := servestore.Store{Ready: st, Plans: st, Overrides: st, Audit: st, Findings: st, Stats: st}
	start := func(file string) (*serve.Server, error) {
		c := parse(t, "serve", "--clickhouse-addr", "127.0.0.1:9000", "--api-listen", "127.0.0.1:0", "--token-file", file).Serve
		return app.NewServer(c.API, store, nil, prometheus.NewRegistry())
	}
	srv, err := start(file)
	if err != nil {
		t.Fatalf("serve --token-file %s: %v", file, err)
	}
	defer srv.Stop()
	get := func(token string) int {
		req := httptest.NewRequest(http.MethodGet, "/v1/audit", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	for name, tok := range tokens {
		if code := get(tok); code != http.StatusOK {
			t.Errorf("token %s: GET /v1/audit answered %d, want 200", name, code)
		}
		if code := get(tok + "x"); code != http.StatusUnauthorized {
			t.Errorf("token %s with a byte added: GET /v1/audit answered %d, want 401", name, code)
		}
	}

	// The same file with one token cut to 8 bytes is refused.
	bad := filepath.Join(t.TempDir(), "tokens.yaml")
	var short strings.Builder
	for name, tok := range tokens {
		fmt.Fprintf(&short, "%s: %s\n", name, tok[:8])
		break
	}
	if err := os.WriteFile(bad, []byte(short.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if srv, err := start(bad); err == nil {
		srv.Stop()
		t.Errorf("a token file with an 8-byte token was accepted")
	}
}

// unitFile maps a path a systemd unit names under /etc/skewlens, or in
// its credentials folder (%d), to the example in the checkout.
func unitFile(t *testing.T, path string) string {
	t.Helper()
	name := filepath.Base(path)
	for _, dir := range []string{"config", "systemd"} {
		p := filepath.Join(testenv.RepoRoot(), "deploy", dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("%s: no example deploy/config/%s or deploy/systemd/%s", path, name, name)
	return ""
}

// TestSystemdCommandLines parses each unit's ExecStart line, with the
// variables of its environment file, as skewlens does, with the example
// files in place of /etc/skewlens: a flag a unit passes that skewlens does
// not know, or a variable it does not read, fails here.
func TestSystemdCommandLines(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "deploy", "systemd")
	files, err := filepath.Glob(filepath.Join(dir, "*.service"))
	if err != nil || len(files) < 2 {
		t.Fatalf("units in %s: %v %v", dir, files, err)
	}
	var out strings.Builder
	p, err := newParser(&cli{}, &env{stdout: &out, stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	for _, unit := range files {
		t.Run(filepath.Base(unit), func(t *testing.T) {
			clearEnv(t)
			b, err := os.ReadFile(unit)
			if err != nil {
				t.Fatal(err)
			}
			var args []string
			for line := range strings.Lines(string(b)) {
				line = strings.TrimSpace(line)
				k, v, _ := strings.Cut(line, "=")
				switch k {
				case "ExecStart":
					args = strings.Fields(v)[1:]
				case "EnvironmentFile":
					if strings.HasPrefix(v, "-") {
						continue // optional, and not shipped
					}
					setEnvFile(t, p, unitFile(t, v))
				}
			}
			if len(args) == 0 {
				t.Fatal("no ExecStart")
			}
			for i, a := range args {
				if strings.HasPrefix(a, "/etc/skewlens/") || strings.HasPrefix(a, "%d/") {
					args[i] = unitFile(t, a)
				}
			}
			c := parse(t, args...)
			switch args[0] {
			case "run":
				if len(c.Run.Kafka.Brokers) == 0 || c.Run.LogFormat != "json" {
					t.Errorf("run %q: brokers %v, log format %s: the example config was not read", args, c.Run.Kafka.Brokers, c.Run.LogFormat)
				}
			case "serve":
				if c.Serve.ClickhouseAddr == "" || c.Serve.TokenFile == "" {
					t.Errorf("serve %q: clickhouse %q, token file %q: the environment file was not read", args, c.Serve.ClickhouseAddr, c.Serve.TokenFile)
				}
			default:
				t.Errorf("ExecStart runs skewlens %s: want run or serve", args[0])
			}
		})
	}
}

// setEnvFile sets the variables of a systemd environment file for the
// test, after checking that each is one skewlens reads.
func setEnvFile(t *testing.T, p *kong.Kong, file string) {
	t.Helper()
	known := map[string]bool{}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			for _, e := range f.Envs {
				known[e] = true
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(p.Model.Node)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !known[k] {
			t.Errorf("%s: %q sets no variable skewlens reads", file, line)
			continue
		}
		t.Setenv(k, v)
		n++
	}
	if n == 0 {
		t.Errorf("%s sets nothing", file)
	}
}
