package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew"
)

var update = flag.Bool("update", false, "rewrite golden files and example incidents")

// runCLI runs the command line in-process and returns its exit code and
// output.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb})
	return code, out.String(), errb.String()
}

// decodeFindings decodes analyze's JSON output, one finding per line.
func decodeFindings(t *testing.T, out string) []skew.Finding {
	t.Helper()
	var fs []skew.Finding
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var f skew.Finding
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		fs = append(fs, f)
	}
	return fs
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/skewlens -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func TestHelpGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"help", []string{"help"}},
		{"no-args", nil},
		{"analyze-help", []string{"analyze", "-h"}},
		{"help-analyze", []string{"help", "analyze"}},
		{"keygroup-help", []string{"keygroup", "--help"}},
		{"simulate-help", []string{"simulate", "-h"}},
		{"run-help", []string{"run", "-h"}},
		{"top-help", []string{"top", "-h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden(t, tt.name, out)
		})
	}
	// help analyze and analyze -h say the same thing.
	_, a, _ := runCLI(t, "", "help", "analyze")
	_, b, _ := runCLI(t, "", "analyze", "-h")
	if a != b {
		t.Error("`help analyze` and `analyze -h` differ")
	}
}

func TestUsageErrors(t *testing.T) {
	clearEnv(t) // SKEWLENS_CLICKHOUSE_ADDR would satisfy --clickhouse-addr
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"unknown command", []string{"frobnicate"}, 2, "unexpected argument frobnicate"},
		{"keygroup without parallelism", []string{"keygroup", "x"}, 2, "missing flags: --parallelism"},
		{"keygroup bad parallelism", []string{"keygroup", "-p", "300", "-m", "128", "x"}, 1, "parallelism 300 exceeds max parallelism 128"},
		{"analyze without input", []string{"analyze"}, 2, "missing flags: --input"},
		{"analyze missing file", []string{"analyze", "-i", "does-not-exist.log"}, 1, "open input: open does-not-exist.log"},
		{"analyze bad threshold", []string{"analyze", "-i", "-", "--busy-threshold", "2000"}, 1, "busy-threshold 2000"},
		{"analyze bad format", []string{"analyze", "-i", "-", "--format", "xml"}, 2, "--format"},
		{"top without ClickHouse", []string{"top"}, 2, "missing flags: --clickhouse-addr"},
		{"serve without ClickHouse", []string{"serve"}, 2, "missing flags: --clickhouse-addr"},
		{"migrate without ClickHouse", []string{"migrate"}, 2, "missing flags: --clickhouse-addr"},
		{"run without servers", []string{"run"}, 2, "missing flags: --brokers=HOST:PORT, --clickhouse-addr=HOST:PORT (to try skewlens on an embedded broker and a local ClickHouse: skewlens demo)"},
		{"run without ClickHouse", []string{"run", "--brokers", "kafka-1:9092"}, 2, "missing flags: --clickhouse-addr=HOST:PORT"},
		{"migrate print unknown dialect", []string{"migrate", "--print", "mysql"}, 2, `--print must be one of`},
		{"migrate print bad database", []string{"migrate", "--print", "legacy", "--database", "a;b"}, 1, "database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, "", tt.args...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want exit %d containing %q", code, errOut, tt.wantCode, tt.wantErr)
			}
		})
	}
}

// TestMigratePrint: migrate --print writes the DDL of a dialect with no
// ClickHouse address, the database name in it.
func TestMigratePrint(t *testing.T) {
	clearEnv(t)
	for _, d := range []string{"legacy", "modern"} {
		code, out, errOut := runCLI(t, "", "migrate", "--print", d, "--database", "analytics")
		if code != 0 || !strings.HasPrefix(out, "-- skewlens schema, "+d+" dialect, database analytics\nCREATE DATABASE IF NOT EXISTS `analytics`;\n") ||
			!strings.Contains(out, "CREATE TABLE IF NOT EXISTS `analytics`.job_state") || strings.Contains(out, "LowCardinality") != (d == "modern") {
			t.Fatalf("migrate --print %s: exit %d, stderr %q, stdout:\n%s", d, code, errOut, out)
		}
	}
}

type vector struct {
	Key            string `json:"key"`
	JavaHash       int32  `json:"java_hash"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"max_parallelism"`
	KeyGroup       int    `json:"key_group"`
	Subtask        int    `json:"subtask"`
}

// TestKeygroupContract checks the command's output, field by field and
// byte for byte, against the JVM vectors, with keys as arguments and on stdin.
func TestKeygroupContract(t *testing.T) {
	f, err := os.Open("../../skew/keygroup/testdata/keygroups.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		n++
		p, m := itoa(v.Parallelism), itoa(v.MaxParallelism)
		code, out, errOut := runCLI(t, "", "keygroup", "--parallelism", p, "--max-parallelism", m, "--", v.Key)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var got vector
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		if got.Key != v.Key || got.JavaHash != v.JavaHash || got.KeyGroup != v.KeyGroup || got.Subtask != v.Subtask {
			t.Errorf("key %q p=%s m=%s: got %s", v.Key, p, m, out)
		}
		// Same through stdin.
		if strings.Contains(v.Key, "\n") {
			continue
		}
		_, out2, _ := runCLI(t, v.Key+"\n", "keygroup", "-p", p, "-m", m)
		if out2 != out {
			t.Errorf("stdin output %q differs from argument output %q", out2, out)
		}
	}
	if n != 108 {
		t.Fatalf("%d vectors, want 108", n)
	}
}

func TestKeygroupStdinLines(t *testing.T) {
	// Empty lines are the empty key, spaces are kept, the last line needs
	// no newline, and the order is kept.
	code, out, _ := runCLI(t, "Hello\n\n a b \n<&>\nlast", "keygroup", "-p", "10")
	if code != 0 {
		t.Fatal(code)
	}
	golden(t, "keygroup-stdin", out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{"Hello", "", " a b ", "<&>", "last"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d: %q", len(lines), len(want), out)
	}
	for i, l := range lines {
		var v vector
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.Key != want[i] {
			t.Errorf("line %d = %q, want key %q", i, l, want[i])
		}
	}
	if !strings.Contains(out, `"<&>"`) {
		t.Error("HTML characters escaped in keys")
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestAnalyzeBadInputKeepsGoing(t *testing.T) {
	in := strings.Join([]string{
		`{"ts":1593004201000,"job_id":"j","task_name":"t","key":"a","parallelism":4}`,
		`not a record at all`,
		`{"ts":1593004202000,"job_id":"j","task_name":"t"}`,
		`{"ts":1593004203000,"job_id":"j","task_name":"t","key":"a","parallelism":4}`,
		`flink_taskmanager_job_task_busyTimeMsPerSecond{job_id="j",task_name="t",subtask_index="0"} 900 1593004203000`,
		`flink_taskmanager_job_task_idleTimeMsPerSecond{job_id="j",task_name="t",subtask_index="0"} NaN 1593004203000`, // no NaN sentinel
		`flink_taskmanager_job_task_busyTimeMsPerSecond{job_id="j",task_name="t",subtask_index="1"} NaN 1593004203000`, // Flink's "not measured"
	}, "\n")
	// Two samples are far too few for the hot-key rule at its default
	// confidence; at 0.5 (no margin) the key of both is hot, which shows
	// that they reached the engine.
	code, out, errOut := runCLI(t, in, "analyze", "-i", "-", "--min-samples", "1", "--hot-key-confidence", "0.5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"7 lines", "2 key samples", "2 metrics", "3 bad", "stdin:2:", "stdin:3: missing_field", "stdin:6: bad_value"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, `"kind":"hot_key"`) || !strings.Contains(out, `"key":"a"`) {
		t.Errorf("accepted records lost: %s", out)
	}
}

// tail returns the end of a process's output, for failure messages.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// TestHelpPlaceholdersSayWhat: a flag's placeholder in help names what
// the value means (SUBTASKS, RECORDS_PER_S), never the Go type kong
// falls back to (INT, FLOAT-64), in every command's help.
func TestHelpPlaceholdersSayWhat(t *testing.T) {
	var c cli
	p, err := newParser(&c, &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	typeName := regexp.MustCompile(`^(U?INT(-\d+)?|FLOAT(-\d+)?|STRING|BOOL|COUNTER)$`)
	flagValue := regexp.MustCompile(`--[a-z0-9-]+=([A-Z][A-Z0-9_-]*)`)
	leaves := p.Model.Leaves(true)
	if len(leaves) < 5 {
		t.Fatalf("%d commands", len(leaves))
	}
	for _, leaf := range leaves {
		args := append(strings.Fields(leaf.Path()), "-h")
		t.Run(leaf.Path(), func(t *testing.T) {
			code, out, errOut := runCLI(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, m := range flagValue.FindAllStringSubmatch(out, -1) {
				if typeName.MatchString(m[1]) {
					t.Errorf("%s -h: %s names a type, not what the value means", leaf.Path(), m[0])
				}
			}
		})
	}
}
