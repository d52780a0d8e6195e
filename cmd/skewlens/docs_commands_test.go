package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/skew/plans"
)

// docBlock is one fenced code block of a Markdown file: its language
// (the word after the fence) and its text.
type docBlock struct {
	file, lang string
	line       int // of the opening fence
	text       string
}

// docBlocks returns the fenced code blocks of the Markdown file at path.
func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out []docBlock
		cur *docBlock
		n   int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			if cur == nil {
				cur = &docBlock{file: path, lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: n}
			} else {
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			cur.text += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// docCommand is one skewlens command line shown in the docs.
type docCommand struct {
	where string // file:line
	text  string
	args  []string // after "skewlens", optional parts ([...]) included
}

// skewlensCommands returns every skewlens command line in the sh blocks
// of the files: lines that start with `skewlens ` (or `$ skewlens `),
// joined over trailing backslashes, without a trailing comment.
func skewlensCommands(t *testing.T, files ...string) []docCommand {
	t.Helper()
	comment := regexp.MustCompile(`\s+#.*$`)
	var out []docCommand
	for _, file := range files {
		for _, b := range docBlocks(t, file) {
			if b.lang != "sh" {
				continue
			}
			lines := strings.Split(b.text, "\n")
			for i := 0; i < len(lines); i++ {
				l := strings.TrimPrefix(strings.TrimSpace(lines[i]), "$ ")
				at := i
				for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
					i++
					l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(lines[i])
				}
				if !strings.HasPrefix(l, "skewlens ") {
					continue
				}
				l = comment.ReplaceAllString(l, "")
				fields := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(l))
				out = append(out, docCommand{where: fmt.Sprintf("%s:%d", file, b.line+1+at), text: l, args: fields[1:]})
			}
		}
	}
	return out
}

// docFiles are the files whose commands are checked: the README and
// every page under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, files...)
}

// TestDocsCommandsParse: every skewlens command line the README and the
// docs show (with its optional parts) names a command and flags that
// exist, with values the flags accept, so a reader who copies one gets no
// usage error. The commands that need servers are parsed only; those that
// do not are run by TestDocsOfflineCommandsRun.
func TestDocsCommandsParse(t *testing.T) {
	cmds := skewlensCommands(t, docFiles(t)...)
	if len(cmds) < 5 {
		t.Fatalf("found %d skewlens commands in the docs; the extraction is broken", len(cmds))
	}
	// The files the commands name exist where a reader runs them: here,
	// empty files of those names in a directory of the test's own.
	t.Chdir(t.TempDir())
	for _, c := range cmds {
		for _, a := range c.args {
			if regexp.MustCompile(`^[\w.-]+\.(yaml|pem|log|gz|jsonl)$`).MatchString(a) {
				if err := os.WriteFile(a, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, c := range cmds {
		var out, errOut strings.Builder
		parser, err := newParser(&cli{}, &env{stdout: &out, stderr: &errOut})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse(c.args); err != nil {
			t.Errorf("%s: %s: %v", c.where, c.text, err)
		}
	}
	t.Logf("%d commands parsed", len(cmds))
}

// TestDocsOfflineCommandsRun runs the commands of docs/cli.md that need
// no server as shown (in a temporary directory, with the files they name
// made by the page's own simulate command): keygroup prints the line the
// page shows, simulate writes the incident, and analyze reads it with
// every optional flag the page lists and finds the incident.
func TestDocsOfflineCommandsRun(t *testing.T) {
	cmds := map[string]docCommand{}
	const page = "../../docs/cli.md"
	for _, c := range skewlensCommands(t, page) {
		if _, ok := cmds[c.args[0]]; !ok {
			cmds[c.args[0]] = c
		}
	}
	for _, name := range []string{"keygroup", "simulate", "analyze"} {
		if _, ok := cmds[name]; !ok {
			t.Fatalf("docs/cli.md shows no skewlens %s command", name)
		}
	}
	dir := t.TempDir()
	inDir := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = a
			if strings.Contains(a, ".log") || strings.Contains(a, ".jsonl") {
				out[i] = filepath.Join(dir, a)
			}
		}
		return out
	}

	// keygroup: the output shown under the command.
	kg := cmds["keygroup"]
	code, out, errOut := runCLI(t, "", kg.args...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", kg.where, code, errOut)
	}
	doc, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if shown := "$ " + kg.text + "\n" + out; !strings.Contains(string(doc), shown) {
		t.Errorf("%s: docs/cli.md shows another output than\n%s", kg.where, shown)
	}

	// simulate: the incident file the page's analyze then reads.
	sim := cmds["simulate"]
	if code, _, errOut := runCLI(t, "", inDir(sim.args)...); code != 0 {
		t.Fatalf("%s: exit %d: %s", sim.where, code, errOut)
	}

	// analyze: its inputs are the simulated file, as metrics and as key
	// samples (a gzip of it for the .gz one).
	an := cmds["analyze"]
	simOut := ""
	for i, a := range sim.args {
		if a == "-o" && i+1 < len(sim.args) {
			simOut = filepath.Join(dir, sim.args[i+1])
		}
	}
	if simOut == "" {
		t.Fatalf("%s: the simulate command writes no file", sim.where)
	}
	args := inDir(an.args)
	for i, a := range args {
		if i > 0 && args[i-1] == "--input" {
			if strings.HasSuffix(a, ".gz") {
				gz := exec.Command("sh", "-c", `gzip -c "$1" > "$2"`, "sh", simOut, a)
				if b, err := gz.CombinedOutput(); err != nil {
					t.Fatalf("gzip: %v: %s", err, b)
				}
			} else if err := os.Link(simOut, a); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
	}
	code, out, errOut = runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("%s: %v: exit %d: %s", an.where, args, code, errOut)
	}
	if !strings.Contains(out, "slow_subtask") {
		t.Errorf("%s: analyze of the simulated slow_sink incident names no slow_subtask:\n%s", an.where, out)
	}
}

// TestDocsAPICommandsRun runs every sh block of docs/api.md, as shown,
// against `skewlens serve` on a database the pipeline filled from the
// simulated hot_key incident. The only changes are the ones a reader
// makes: the API's address, the job id and task name of a plan that
// exists, and the token file (the docs' own example, written to a
// temporary file). Each block runs under `bash -e -o pipefail` with curl
// failing on an HTTP error, so every request must succeed; the polling
// loop runs for 12 s and must have printed the plan.
func TestDocsAPICommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ClickHouse and runs the pipeline for 40 s")
	}
	chAddr := chtest.Start(t)
	if code, _, errOut := runCLI(t, "", "demo", "--simulate", "hot_key", "--speed", "20", "--duration", "40s",
		"--clickhouse-addr", chAddr, "--database", "e2e_docs_api", "--group", "e2e-docs-api",
		"--state-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--quiet", "--log-format", "json"); code != 0 {
		t.Fatalf("run: exit %d:\n%s", code, tail([]byte(errOut)))
	}

	dir := t.TempDir()
	var tokens, yamlBlocks []docBlock
	var shBlocks []docBlock
	for _, b := range docBlocks(t, "../../docs/api.md") {
		switch b.lang {
		case "yaml":
			yamlBlocks = append(yamlBlocks, b)
		case "sh":
			shBlocks = append(shBlocks, b)
		}
	}
	for _, b := range yamlBlocks {
		if strings.Contains(b.text, "tokens.yaml") {
			tokens = append(tokens, b)
		}
	}
	if len(tokens) != 1 || len(shBlocks) < 4 {
		t.Fatalf("docs/api.md: %d token files and %d sh blocks; the test expects one and several", len(tokens), len(shBlocks))
	}
	tokenFile := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokenFile, []byte(tokens[0].text), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api := fmt.Sprintf("127.0.0.1:%d", port)
	srv := startChild(t, "serve", "serve", "--clickhouse-addr", chAddr, "--database", "e2e_docs_api",
		"--api-listen", api, "--token-file", tokenFile)

	// The plan the pipeline made, as a reader finds it with the first
	// command of the page.
	var plan *plans.Plan
	serveUntil(t, srv, api, "/v1/salting", 30*time.Second, "a plan served", func(a httpAnswer) bool {
		var body struct{ Plans []plans.Plan }
		if json.Unmarshal([]byte(a.body), &body) == nil && len(body.Plans) > 0 {
			plan = &body.Plans[0]
		}
		return plan != nil
	})
	subst := strings.NewReplacer(
		"127.0.0.1:8080", api,
		"84dce1ec8aa5a4df2d1758d6e9278693", plan.JobID,
		"SessionWindow", plan.TaskName,
		"/etc/skewlens/tokens.yaml", tokenFile,
	)
	if strings.ContainsAny(plan.TaskName, "/ %?#&") {
		t.Fatalf("task name %q needs percent-encoding: pick another for this test", plan.TaskName)
	}
	for _, b := range shBlocks {
		script := subst.Replace(b.text)
		where := fmt.Sprintf("docs/api.md:%d", b.line)
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
		loop := strings.Contains(script, "while sleep")
		prelude := "set -e -o pipefail\ncurl() { command curl --fail-with-body \"$@\"; }\n"
		if loop {
			prelude = "" // it reads the status codes itself
		}
		cmd := exec.CommandContext(ctx, "bash", "-c", prelude+script)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		switch {
		case loop:
			if !timedOut || !strings.Contains(string(out), "new plan: ") {
				t.Errorf("%s: the polling loop printed no new plan in 12 s (err %v):\n%s", where, err, out)
			}
		case err != nil:
			t.Errorf("%s: %v:\n%s\n--- output:\n%s", where, err, script, out)
		default:
			t.Logf("%s: ok (%d bytes of output)", where, len(out))
		}
	}
	// The writes of the page reached the audit log under the token's name.
	req, _ := http.NewRequest(http.MethodGet, "http://"+api+"/v1/audit?job_id="+plan.JobID, nil)
	tok := ""
	for _, l := range strings.Split(tokens[0].text, "\n") {
		if v, ok := strings.CutPrefix(l, "platform-oncall:"); ok {
			tok = strings.TrimSpace(v)
		}
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var audit struct {
		Entries []struct {
			By     string `json:"by"`
			Action string `json:"action"`
		} `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&audit); err != nil || resp.StatusCode != 200 {
		t.Fatalf("audit: %d %v", resp.StatusCode, err)
	}
	actions := map[string]bool{}
	for _, e := range audit.Entries {
		if e.By == "platform-oncall" {
			actions[e.Action] = true
		}
	}
	for _, a := range []string{"pin", "exclude", "override"} {
		if !actions[a] {
			t.Errorf("the audit log has no %s by platform-oncall: %+v", a, audit.Entries)
		}
	}
}

// TestDocsAlertsCommandsRun runs the sh block of docs/alerts.md (install,
// start and stop a local Alertmanager) line by line, as shown, from a
// directory with the checkout's deploy/ in it, with a free port for 9093
// (which may be taken on a developer's machine): in between, the started
// Alertmanager answers /-/ready, and after stop.sh it is gone.
func TestDocsAlertsCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an Alertmanager")
	}
	var block *docBlock
	for _, b := range docBlocks(t, "../../docs/alerts.md") {
		if b.lang == "sh" && strings.Contains(b.text, "deploy/alertmanager/start.sh") {
			block = &b
		}
	}
	if block == nil {
		t.Fatal("docs/alerts.md shows no sh block starting Alertmanager")
	}
	deploy, err := filepath.Abs("../../deploy")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(deploy, filepath.Join(dir, "deploy")); err != nil {
		t.Fatal(err)
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ready := fmt.Sprintf("http://127.0.0.1:%d/-/ready", port)
	t.Cleanup(func() {
		_ = exec.Command("bash", filepath.Join(deploy, "alertmanager/stop.sh"), filepath.Join(dir, ".state/alertmanager")).Run()
	})
	for i, l := range strings.Split(strings.TrimSpace(block.text), "\n") {
		l = strings.ReplaceAll(l, " 9093 ", fmt.Sprintf(" %d ", port))
		cmd := exec.Command("bash", "-e", "-c", l)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docs/alerts.md:%d: %s: %v\n%s", block.line+1+i, l, err, out)
		}
		resp, err := http.Get(ready)
		up := err == nil && resp.StatusCode == http.StatusOK
		if err == nil {
			resp.Body.Close()
		}
		switch {
		case strings.Contains(l, "start.sh") && !up:
			t.Errorf("after %q, %s does not answer 200: %v", l, ready, err)
		case strings.Contains(l, "stop.sh") && up:
			t.Errorf("after %q, Alertmanager still answers", l)
		}
	}
}

// TestDocsProductionCommandsRun runs docs/production.md's commands in
// its order, as a reader with the trial broker on one machine would, with
// the hosts, ports and directories of the page replaced by the test's
// own: the trial broker and ClickHouse from the project's scripts,
// migrate --print and migrate, run with the example configuration, and
// serve. The trial broker has no kafka-topics.sh (it ships with Kafka's
// distribution, which neither the trial install nor the tests have), so
// its lines are not run: they must have the form run prints
// (TestRunNeedsItsTopics checks run's). A run before the topics exist
// must stop, naming each topic those lines create, as the page says; the
// run with --create-topics, the page's trial path, must create them
// with the lines' partitions and start.
func TestDocsProductionCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka broker and ClickHouse from the docs' commands")
	}
	var lines []string
	for _, b := range docBlocks(t, "../../docs/production.md") {
		if b.lang == "sh" {
			lines = append(lines, strings.Split(strings.TrimSpace(b.text), "\n")...)
		}
	}
	root := filepath.Join("..", "..")
	free := func() string {
		p, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(p)
	}
	kafkaDir, chDir := t.TempDir(), t.TempDir()
	kafkaPort, chPort, apiPort := free(), free(), free()
	broker, chAddr := "127.0.0.1:"+kafkaPort, "127.0.0.1:"+chPort
	db := "e2e_production_docs"
	script := func(args ...string) {
		t.Helper()
		cmd := exec.Command("bash", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "KAFKA_WATCH_PID="+strconv.Itoa(os.Getpid()), "SKEWLENS_CH_WATCH_PID="+strconv.Itoa(os.Getpid()))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, tail(out))
		}
	}
	topicLine := regexp.MustCompile(`^kafka-topics\.sh --bootstrap-server \S+ --create --topic (\S+) --partitions (\d+) --replication-factor \d+$`)
	var topics []kafka.TopicConfig
	topicsMade := false // by a run with --create-topics
	ran := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) == 0:
		case f[0] == "kafka-topics.sh":
			m := topicLine.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%q: not the form run prints", l)
			}
			n, _ := strconv.Atoi(m[2])
			topics = append(topics, kafka.TopicConfig{Topic: m[1], NumPartitions: n, ReplicationFactor: 1})
		case f[0] == "deploy/kafka/install.sh":
			script(f[0], kafkaDir)
		case f[0] == "deploy/kafka/start.sh":
			script(f[0], kafkaDir, kafkaPort)
			t.Cleanup(func() { _ = exec.Command("bash", filepath.Join(root, "deploy/kafka/stop.sh"), kafkaDir).Run() })
		case f[0] == "internal/localch/install.sh":
			script(f[0]) // idempotent: installed already where tests run
		case f[0] == "internal/localch/start.sh":
			script(f[0], chDir, chPort)
			t.Cleanup(func() { _ = exec.Command("bash", filepath.Join(root, "internal/localch/stop.sh"), chDir).Run() })
		case f[0] == "skewlens":
			args := f[1:]
			for i, a := range args {
				switch {
				case i > 0 && args[i-1] == "--brokers":
					args[i] = broker
				case i > 0 && args[i-1] == "--clickhouse-addr":
					args[i] = chAddr
				case i > 0 && args[i-1] == "--database":
					args[i] = db
				case i > 0 && args[i-1] == "--api-listen":
					args[i] = "127.0.0.1:" + apiPort
				case a == "skewlens.yaml":
					args[i] = filepath.Join(root, "deploy", "config", "skewlens.yaml")
				case a == "tokens.yaml":
					args[i] = writeFile(t, "tokens.yaml", "ops: "+strings.Repeat("t", 48)+"\n")
				}
			}
			switch args[0] {
			case "migrate":
				code, out, errOut := runCLI(t, "", args...)
				if code != 0 || (slices.Contains(args, "--print") && !strings.Contains(out, "CREATE TABLE IF NOT EXISTS `"+db+"`.job_state")) {
					t.Fatalf("%s: exit %d\n%s\n%s", l, code, tail([]byte(out)), tail([]byte(errOut)))
				}
			case "run":
				args = append(args, "--database", db, "--listen", "127.0.0.1:"+free(), "--duration", "15s", "--quiet")
				creates := slices.Contains(args, "--create-topics")
				if !creates && !topicsMade {
					// The page's topics are not there yet: run stops,
					// naming them.
					code, _, errOut := runCLI(t, "", args...)
					if code != 1 || !strings.Contains(errOut, "or pass --create-topics") {
						t.Fatalf("%s before the topics exist: exit %d, want 1 naming the topics\n%s", l, code, tail([]byte(errOut)))
					}
					for _, tc := range topics {
						if !strings.Contains(errOut, "--create --topic "+tc.Topic+" ") {
							t.Errorf("%s: run does not name the missing topic %s:\n%s", l, tc.Topic, tail([]byte(errOut)))
						}
					}
					break
				}
				if creates {
					have := topicPartitions(t, broker)
					for _, tc := range topics {
						if _, ok := have[tc.Topic]; ok {
							t.Fatalf("%s: topic %s exists before it", l, tc.Topic)
						}
					}
				}
				code, _, errOut := runCLI(t, "", args...)
				if code != 0 || !strings.Contains(errOut, "ClickHouse ready") {
					t.Fatalf("%s: exit %d\n%s", l, code, tail([]byte(errOut)))
				}
				if creates {
					have := topicPartitions(t, broker)
					for _, tc := range topics {
						if have[tc.Topic] != tc.NumPartitions {
							t.Errorf("%s: topic %s has %d partitions, want the %d of the page's kafka-topics.sh line", l, tc.Topic, have[tc.Topic], tc.NumPartitions)
						}
					}
					topicsMade = true
				}
			case "serve":
				srv := startChild(t, "production-serve", append(args, "--database", db)...)
				serveUntil(t, srv, "127.0.0.1:"+apiPort, "/healthz", 30*time.Second, l, func(a httpAnswer) bool { return a.code == http.StatusOK })
			default:
				t.Fatalf("%s: a command this test does not know", l)
			}
		default:
			t.Fatalf("%q: a command this test does not know", l)
		}
		ran[f[0]+" "+strings.Join(f[1:min(2, len(f))], "")] = true
	}
	for _, want := range []string{"deploy/kafka/start.sh ~/.cache/skewlens/kafka", "internal/localch/start.sh /var/tmp/skewlens-clickhouse", "skewlens run", "skewlens serve", "skewlens migrate"} {
		if !ran[want] {
			t.Errorf("the page no longer has %q, or the test no longer runs it (ran %v)", want, ran)
		}
	}
	if len(topics) == 0 || !topicsMade {
		t.Errorf("the page no longer shows the topics (%d kafka-topics.sh lines) or how to create them on the trial broker (skewlens run --create-topics)", len(topics))
	}
}

// topicPartitions returns the topics of the broker at addr with their
// partitions.
func topicPartitions(t *testing.T, addr string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := kafkaclient.TopicPartitions(ctx, kafkaclient.AdminConfig{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
