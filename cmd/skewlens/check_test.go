package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/skewlens/skewlens/internal/cliconf"
	"github.com/skewlens/skewlens/internal/knob"
)

// parseChecked parses args as main does, then checks every value as
// main does before running a command (checkCommand), and returns the
// command tree without running anything. A test of a config file
// (run --config FILE) uses it to load the file with the real loader and
// check its keys and values.
func parseChecked(t *testing.T, args ...string) (*cli, error) {
	t.Helper()
	var c cli
	var out bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}
	p, err := newParser(&c, e)
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := p.Parse(args)
	if err != nil {
		return nil, err
	}
	if err := checkCommand(kctx, defaultVars()); err != nil {
		return nil, err
	}
	return &c, nil
}

// walkFlags calls fn for every flag of every command but help.
func walkFlags(t *testing.T, fn func(cmd *kong.Node, f *kong.Flag)) {
	t.Helper()
	var out bytes.Buffer
	p, err := newParser(&cli{}, &env{stdout: &out, stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.Name != "help" {
				fn(n, f)
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(p.Model.Node)
}

// TestRangeTags checks that every signed or floating-point flag (numbers
// and durations) states a range, that every range tag parses and applies
// to its flag's type, that the flag's default lies in it, and that its
// help shows the rule.
func TestRangeTags(t *testing.T) {
	clearEnv(t)
	vars := defaultVars()
	ranges := rangeChecker(vars)
	n := 0
	walkFlags(t, func(cmd *kong.Node, f *kong.Flag) {
		name := cmd.Path() + " --" + f.Name
		tag := ranges.RangeTag(f.Value)
		k := f.Target.Kind()
		numeric := f.Target.CanInt() || f.Target.CanFloat()
		if tag == "" {
			if numeric {
				t.Errorf("%s (%s): no range tag", name, k)
			}
			return
		}
		n++
		r, err := cliconf.ParseRange(tag, vars)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		// The default, as kong sets it before parsing.
		v := reflect.New(f.Target.Type()).Elem()
		if f.HasDefault {
			dv := *f.Value
			dv.Target = v
			if err := dv.Reset(); err != nil {
				t.Errorf("%s: default %q: %v", name, f.Default, err)
				return
			}
		}
		ok, err := r.Contains(v)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !ok && f.HasDefault {
			t.Errorf("%s: default %s is outside its range: %s", name, knob.Format(v, f.Tag.Type == "ms"), r.Rule(v.Type()))
		}
		if help := ranges.HelpFormatter()(f.Value); !strings.Contains(help, r.Rule(v.Type())) {
			t.Errorf("%s: help %q does not state %q", name, help, r.Rule(v.Type()))
		}
	})
	if n < 50 {
		t.Errorf("only %d flags with a range", n)
	}
}

// writeFile writes a file in a fresh directory and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadValuesNameTheFlag runs each class of configuration mistake
// through each place a value comes from (flag, SKEWLENS_* variable,
// --config key) and checks that the command fails before anything
// starts, with an error naming the flag, the rule and where the value was
// set. run is given a fresh --state-dir: it must not be created, as run
// creates it when it starts the local ClickHouse.
func TestBadValuesNameTheFlag(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		flag, value string
		want        string // the error, after the flag and value
	}{
		{"hot-key-share", "5", "--hot-key-share 5: must be in (0,1]"},
		{"hot-key-share", "1.5", "--hot-key-share 1.5: must be in (0,1]"},
		{"window", "0s", "--window 0s: must be at least 1ms"},
		{"sustain", "0", "--sustain 0s: must be at least 1ms"},
		{"min-samples", "0", "--min-samples 0: must be at least 1"},
		{"salt-separator", "", `--salt-separator "": must be 1 to 16 bytes long`},
		{"out-of-orderness", "-1s", "--out-of-orderness -1s: must be at least 1ms"},
		{"top-k", "1000000000", "--top-k 1000000000: must be in [2,10000]"},
		{"top-k", "16", "hot-key-share 0.01: must be at least 1/top-k (0.0625)"},
		{"plan-cooldown", "0s", "--plan-cooldown 0s: must be at least 1ms"},
		{"override-poll", "0s", "--override-poll 0s: must be above 0s"},
		{"alert-for", "0s", "--alert-for 0s: must be above 0s"},
		{"speed", "0", "--speed 0: must be above 0"},
		{"group", "", `--group "": must not be empty`},
	}
	envName := func(flag string) string {
		return "SKEWLENS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
	}
	for _, tt := range tests {
		for _, source := range []string{"flag", "env", "config"} {
			t.Run(tt.flag+"="+tt.value+" by "+source, func(t *testing.T) {
				state := filepath.Join(t.TempDir(), "state")
				cmd := "run"
				if tt.flag == "speed" { // a flag of demo's simulation
					cmd = "demo"
				}
				args := []string{cmd, "--state-dir", state, "--duration", "1s"}
				var wantSource string
				switch source {
				case "flag":
					args = append(args, "--"+tt.flag+"="+tt.value)
				case "env":
					t.Setenv(envName(tt.flag), tt.value)
					wantSource = " (set by " + envName(tt.flag) + ")"
				case "config":
					file := writeFile(t, "skewlens.yaml", knob.Key(tt.flag)+": '"+tt.value+"'\n")
					args = append(args, "--config", file)
					wantSource = " (set by key " + knob.Key(tt.flag) + " at " + file + ":1)"
				}
				code, out, errOut := runCLI(t, "", args...)
				if code != 1 {
					t.Errorf("exit %d, want 1; stderr %q", code, errOut)
				}
				if !strings.Contains(errOut, tt.want) {
					t.Errorf("stderr %q lacks %q", errOut, tt.want)
				}
				// Rules between flags (top-k against hot-key-share) name the
				// rule's flags; a single flag's range names its source.
				if !strings.Contains(tt.want, "1/top-k") && !strings.Contains(errOut, tt.want+wantSource) {
					t.Errorf("stderr %q does not say where the value was set (%q)", errOut, wantSource)
				}
				if strings.Contains(errOut, "started") || out != "" {
					t.Errorf("something started:\nstdout %q\nstderr %q", out, errOut)
				}
				if _, err := os.Stat(state); !os.IsNotExist(err) {
					t.Errorf("--state-dir %s exists (%v): run started before its values were checked", state, err)
				}
			})
		}
	}

	// analyze checks the engine flags the same way, before reading.
	code, _, errOut := runCLI(t, "", "analyze", "-i", "does-not-exist.log", "--hot-key-share", "5")
	if code != 1 || !strings.Contains(errOut, "--hot-key-share 5: must be in (0,1]") || strings.Contains(errOut, "open input") {
		t.Errorf("analyze: exit %d, stderr %q", code, errOut)
	}
	// The command line wins over a bad variable: the variable is not used,
	// so it is not an error.
	t.Setenv("SKEWLENS_HOT_KEY_SHARE", "5")
	if code, _, errOut := runCLI(t, `{"ts":1,"job_id":"j","task_name":"t","key":"a","parallelism":2}`, "analyze", "-i", "-", "--hot-key-share", "0.2"); code != 0 {
		t.Errorf("analyze with --hot-key-share over a bad SKEWLENS_HOT_KEY_SHARE: exit %d, stderr %q", code, errOut)
	}
}

// TestOtherCommandsCheckBeforeRunning checks the rules of the other
// commands: each fails with exit 1, naming the flag, before connecting
// to anything (the addresses given do not exist).
func TestOtherCommandsCheckBeforeRunning(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"top rows", []string{"top", "--clickhouse-addr", "127.0.0.1:1", "--rows", "0"}, "--rows 0: must be in [1,1000]"},
		{"top refresh", []string{"top", "--clickhouse-addr", "127.0.0.1:1", "--once", "--refresh", "1ms"}, "--refresh 1ms: must be at least 100ms"},
		{"migrate database", []string{"migrate", "--clickhouse-addr", "127.0.0.1:1", "--database", "a-b"}, `--clickhouse-addr, --database: clickhouse sink config: database "a-b"`},
		{"serve without API", []string{"serve", "--clickhouse-addr", "127.0.0.1:1", "--api-listen", ""}, "--api-listen is empty"},
		{"migrate cluster", []string{"migrate", "--clickhouse-addr", "127.0.0.1:1", "--clickhouse-cluster", "a'b"}, `--clickhouse-cluster: clickhouse sink config: cluster "a'b"`},
		{"serve cluster", []string{"serve", "--clickhouse-addr", "127.0.0.1:1", "--clickhouse-cluster", "a b"}, `--clickhouse-cluster: clickhouse sink config: cluster "a b"`},
		{"run cluster without address", []string{"run", "--clickhouse-cluster", "prod"}, "--clickhouse-cluster: needs --clickhouse-addr"},
		{"simulate hot share", []string{"simulate", "hot_key", "--hot-share", "5"}, "--hot-share 5: must be in (0,1)"},
		{"simulate slow subtask", []string{"simulate", "slow_sink", "--slow-subtask", "9"}, "--slow-subtask 9: must be a sink subtask, below --sink-parallelism (4)"},
		{"simulate duration", []string{"simulate", "hot_key", "--duration", "1s", "--interval", "2s"}, "--duration 1s: must be at least --interval (2s)"},
		{"simulate interval", []string{"simulate", "hot_key", "--interval", "1500ms", "--duration", "10s"}, ""},
		{"keygroup parallelism", []string{"keygroup", "-p", "0", "x"}, "--parallelism 0: must be in [1,32768]"},
		{"demo scenario", []string{"demo", "--simulate", "hot_kye"}, `--simulate "hot_kye": want all or some of`},
		// A broker without a port is refused at start, not dialled for
		// --broker-wait.
		{"run broker without port", []string{"run", "--brokers", "kafka-1:9092,kafka1", "--clickhouse-addr", "127.0.0.1:1"}, `--brokers, --group, --topics, --dead-letter-topic, --broker-wait: kafkasrc config: brokers: "kafka1" has no port: want HOST:PORT, e.g. kafka1:9092`},
		{"demo broker with a bad port", []string{"demo", "--brokers", "kafka1:x", "--duration", "1s"}, `brokers: "kafka1:x": port "x" is not a number in 1..65535`},
		{"run separator", []string{"run", "--salt-separator", "a\nb"}, "--plan-cooldown, --plan-ttl, --salt-separator: plans config: separator"},
		{"run alertmanager", []string{"run", "--alertmanager-url", "::bad"}, "--alertmanager-url: "},
		{"run tls", []string{"run", "--api-listen", "127.0.0.1:0", "--tls-cert", "check_test.go"}, "--api-listen, --token-file, --tls-cert, --tls-key: serve config: tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tt.args...)
			if tt.want == "" { // valid: the check must not refuse it
				if code != 0 {
					t.Errorf("exit %d, stderr %q", code, errOut)
				}
				return
			}
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 with %q", code, errOut, tt.want)
			}
			if out != "" {
				t.Errorf("stdout %q: the command ran", out)
			}
		})
	}
}

// TestConfigFileKeys checks the --config file's keys: each must name a
// flag of run, spelled with underscores; a mistake names the key and the
// nearest known one.
func TestConfigFileKeys(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		name, yaml string
		wantCode   int
		want       []string // in stderr
	}{
		{"misspelled", "broker: kafka-1:9092\n", 2, []string{`unknown key "broker" (did you mean "brokers"?)`}},
		{"the flag's spelling", "clickhouse-addr: ch-1:9000\n", 2, []string{`unknown key "clickhouse-addr" (did you mean "clickhouse_addr"?)`}},
		{"camel case", "clickhouseAddr: ch-1:9000\n", 2, []string{`unknown key "clickhouseAddr" (did you mean "clickhouse_addr"?)`}},
		{"typo", "hot_key_shar: 0.2\n", 2, []string{`unknown key "hot_key_shar" (did you mean "hot_key_share"?)`}},
		{"no near key", "colour_scheme: dark\n", 2, []string{`unknown key "colour_scheme"`}},
		{"every unknown key", "brokerz: a\ngroupp: b\n", 2, []string{`unknown key "brokerz"`, `unknown key "groupp"`}},
		{"the config itself", "config: other.yaml\n", 2, []string{`unknown key "config"`}},
		{"nested", "clickhouse:\n  addr: x\n", 2, []string{`key clickhouse at FILE:1: want a value or a list, not a map`}},
		{"not a map", "- brokers\n", 2, []string{`FILE:1: want a map of flag names to values`}},
		{"unknown key's line", "window: 10s\n\nbroker: kafka-1:9092\n", 2, []string{`FILE:3: unknown key "broker"`}},
		// A value that does not parse names the flag, the key, the file
		// and the line, as a value out of its range does.
		{"bare number as duration", "window: 10\n", 2, []string{`--window: expected duration but got "10": time: missing unit in duration "10" (set by key window at FILE:1)`}},
		{"words as duration", "group: g\nwindow: ten seconds\n", 2, []string{`--window: expected duration but got "ten seconds"`, `(set by key window at FILE:2)`}},
		{"fraction for an integer", "top_k: 2.5\n", 2, []string{`--top-k: expected a valid 64 bit int but got "2.5" (set by key top_k at FILE:1)`}},
		{"list for a value", "window: [10s, 20s]\n", 2, []string{`--window: want one value, not a list (set by key window at FILE:1)`}},
		{"not in the enum", "log_format: xml\n", 2, []string{`--log-format: must be one of text, json but got "xml" (set by key log_format at FILE:1)`}},
		{"out of range", "top_k: 16\nhot_key_share: 5\n", 1, []string{"--hot-key-share 5: must be in (0,1] (set by key hot_key_share at FILE:2)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "skewlens.yaml", tt.yaml)
			state := filepath.Join(t.TempDir(), "state")
			code, _, errOut := runCLI(t, "", "run", "--config", file, "--state-dir", state)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, errOut)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "FILE", file); !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
			if _, err := os.Stat(state); !os.IsNotExist(err) {
				t.Errorf("run started: %s exists", state)
			}
		})
	}
}

// TestConfigFileValues checks the values a --config file sets, in their
// YAML forms, and where it comes from.
func TestConfigFileValues(t *testing.T) {
	clearEnv(t)
	file := writeFile(t, "skewlens.yaml", `# every form a value takes
brokers: [kafka-1:9092, kafka-2:9092]
topics: a,b
clickhouse_addr: ch-1:9000
top_k: 2048
hot_key_share: 0.02
window: 30s
stats: false
alerts_topic: ~        # null: not set
`)
	check := func(t *testing.T, r runCmd) {
		t.Helper()
		if !reflect.DeepEqual(r.Kafka.Brokers, []string{"kafka-1:9092", "kafka-2:9092"}) || !reflect.DeepEqual(r.Kafka.Topics, []string{"a", "b"}) ||
			r.ClickhouseAddr != "ch-1:9000" || r.Engine.TopK != 2048 || r.Engine.HotKeyShare != 0.02 || r.Engine.WindowMs != 30000 ||
			r.Stats || r.AlertsKafka.Topic != "" {
			t.Errorf("from the file: %+v", r)
		}
	}
	check(t, parse(t, "run", "--config", file).Run)
	c, err := parseChecked(t, "run", "--config", file)
	if err != nil {
		t.Fatalf("the file's values are valid: %v", err)
	}
	check(t, c.Run)
	// SKEWLENS_CONFIG names the file as --config does.
	t.Setenv("SKEWLENS_CONFIG", file)
	check(t, parse(t, "run").Run)
	// A variable wins over the file, also for a value that would be
	// invalid: the file's value is not used.
	t.Setenv("SKEWLENS_TOP_K", "512")
	if r := parse(t, "run").Run; r.Engine.TopK != 512 {
		t.Errorf("--top-k %d, want 512 from SKEWLENS_TOP_K over the file's 2048", r.Engine.TopK)
	}
}

// TestAnalyzeNoValidRecord checks analyze's exit code 3 when nothing it
// read was a key sample or a metric, and 0 otherwise.
func TestAnalyzeNoValidRecord(t *testing.T) {
	clearEnv(t)
	binary := writeFile(t, "ls", "\x7fELF\x02\x01\x01\x00\x00\x00\nnot a metric\n\x00\x01\x02 garbage\n")
	good := `{"ts":1593004201000,"job_id":"j","task_name":"t","key":"a","parallelism":4}` + "\n"
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		want     string
	}{
		{"binary file", "", []string{"-i", binary}, exitNoRecords, "no valid record read"},
		{"empty input name", "", []string{"-i", ""}, exitNoRecords, "--input names no file"},
		{"empty stdin", "", []string{"-i", "-"}, exitNoRecords, "no valid record read"},
		{"one valid record among bad ones", "junk\n" + good, []string{"-i", "-"}, 0, "1 key samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tt.stdin, append([]string{"analyze"}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d with %q", code, errOut, tt.wantCode, tt.want)
			}
		})
	}
	// analyze -h documents the code.
	_, out, _ := runCLI(t, "", "analyze", "-h")
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "3 when no valid record was read") {
		t.Errorf("analyze -h does not document exit code 3:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"none", nil, false, "skewlens (no build information)"},
		{"tagged, clean", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/skewlens/skewlens", Version: "v1.2.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "false"}}},
			true, "skewlens github.com/skewlens/skewlens v1.2.0 revision abc123 (2026-01-02T03:04:05Z) go1.26.0"},
		{"work tree, modified", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/skewlens/skewlens", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "def456"}, {Key: "vcs.modified", Value: "true"}}},
			true, "skewlens github.com/skewlens/skewlens (devel) revision def456 (modified) go1.26.0"},
		{"no VCS stamp", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/skewlens/skewlens", Version: "(devel)"}},
			true, "skewlens github.com/skewlens/skewlens (devel) revision unknown (not stamped: built outside a git clone or with -buildvcs=false; make build stamps it) go1.26.0"},
		{"go install of a tag", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/skewlens/skewlens", Version: "v1.2.0"}},
			true, "skewlens github.com/skewlens/skewlens v1.2.0 go1.26.0"},
	}
	for _, tt := range tests {
		if got := versionText(tt.bi, tt.ok); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	// The command and the flag print the same line: this binary's.
	want := versionText(debug.ReadBuildInfo()) + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runCLI(t, "", args...)
		if code != 0 || out != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", args, code, out, errOut, want)
		}
	}
}
