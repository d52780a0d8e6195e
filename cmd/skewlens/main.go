package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/skewlens/skewlens/internal/cliconf"
	"github.com/skewlens/skewlens/internal/termtext"
)

// cli is the command tree. The flags' defaults come from the components'
// DefaultConfig functions through kong variables (defaultVars), so each is
// stated once; every flag also reads SKEWLENS_<FLAG> (kong.DefaultEnvars).
type cli struct {
	// VersionFlag is an action, like --help: it reads no variable.
	VersionFlag kong.VersionFlag `name:"version" env:"-" help:"Print the version and exit."`

	Analyze  analyzeCmd  `cmd:"" help:"Replay recorded Flink metrics and key samples and print findings as JSON lines."`
	Keygroup keygroupCmd `cmd:"" help:"Print Flink's key group and subtask for keys, bit-exact with the JVM."`
	Simulate simulateCmd `cmd:"" help:"Write a simulated Flink job's metrics and key samples for a named incident, or a whole fleet's (--jobs, --subtasks)."`
	Run      runCmd      `cmd:"" help:"Run the pipeline: consume Kafka, diagnose in event-time windows, write to ClickHouse."`
	Demo     demoCmd     `cmd:"" help:"Run the pipeline on an embedded broker and a local ClickHouse, with simulated incidents if asked (make run)."`
	Serve    serveCmd    `cmd:"" help:"Serve salting plans and findings over HTTP from ClickHouse (stateless; docs/api.md)."`
	Top      topCmd      `cmd:"" help:"Show each job's hot keys and saturated subtasks from ClickHouse, refreshed live."`
	Migrate  migrateCmd  `cmd:"" help:"Apply the ClickHouse schema (idempotent; run does it at startup too)."`
	Version  versionCmd  `cmd:"" help:"Print the version."`
	Help     helpCmd     `cmd:"" help:"Show help for skewlens or one of its commands."`
}

// env is what commands read and write; tests substitute buffers.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// stderrIsTerminal turns progress lines on by default.
	stderrIsTerminal bool
	// stdoutColumns returns the width of the terminal stdout is, 0 when
	// it is none; nil (tests) means none.
	stdoutColumns func() int
}

const description = `skewlens finds the Flink subtask that is drowning and says why: a hot key,
a hot key that rotates with a time bucket, a slow subtask (a blocked sink or a
bad host), or an under-provisioned operator. For hot keys it proposes salted
keys that really land on distinct subtasks under Flink's own routing.`

// exitError carries an exit code through kong's Run.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// newParser returns the command-line parser filling c, writing to e.
func newParser(c *cli, e *env) (*kong.Kong, error) {
	vars := defaultVars()
	cliconf.Reset(c, vars)
	return kong.New(c,
		kong.Name("skewlens"),
		kong.Description(description),
		kong.Writers(e.stdout, e.stderr),
		kong.Exit(func(c int) { panic(exitError{c}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, WrapUpperBound: 100}),
		kong.UsageOnError(),
		vars,
		kong.Vars{"version": versionText(debug.ReadBuildInfo())},
		kong.ValueFormatter(rangeChecker(vars).HelpFormatter()),
		kong.NamedMapper("ms", cliconf.MillisMapper{}),
		kong.DefaultEnvars("SKEWLENS"),
		kong.Bind(e),
	)
}

func run(args []string, e *env) (code int) {
	parser, err := newParser(&cli{}, e)
	if err != nil {
		fmt.Fprintln(e.stderr, "skewlens:", err)
		return 2
	}
	// kong calls Exit after printing help; turn that into a return so that
	// only main exits.
	defer func() {
		if r := recover(); r != nil {
			ee, ok := r.(exitError)
			if !ok {
				panic(r)
			}
			code = ee.code
		}
	}()
	if len(args) == 0 {
		args = []string{"--help"}
	}
	ctx, err := parser.Parse(args)
	if err != nil {
		parser.Errorf("%s", err)
		return 2
	}
	// Every value is checked, whatever set it, before anything starts.
	if err := checkCommand(ctx, defaultVars()); err != nil {
		fmt.Fprintf(e.stderr, "skewlens %s: %v\n", ctx.Command(), err)
		if errors.As(err, new(usageError)) {
			return 2
		}
		return 1
	}
	if err := ctx.Run(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintf(e.stderr, "skewlens %s: %v\n", ctx.Command(), err)
		return 1
	}
	return 0
}

func main() {
	tty := termtext.IsTerminal(os.Stderr)
	columns := func() int { return termtext.Columns(os.Stdout) }
	os.Exit(run(os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stderrIsTerminal: tty, stdoutColumns: columns}))
}

type versionCmd struct{}

func (versionCmd) Run(e *env) error {
	_, err := fmt.Fprintln(e.stdout, versionText(debug.ReadBuildInfo()))
	return err
}

// versionText describes the build from its build information (ok is
// false without any): the module's path and version ("(devel)" when
// built from a work tree without VCS stamping, a pseudo-version of the
// commit with it, the tag for go install ...@tag), the VCS revision and
// commit time that go build stamps, with "modified" when the tree had
// uncommitted changes, or why a work tree's build has none, and the Go
// version.
func versionText(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "skewlens (no build information)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	v := cmp.Or(bi.Main.Version, "(unknown version)")
	text := fmt.Sprintf("skewlens %s %s", cmp.Or(bi.Main.Path, "(unknown module)"), v)
	if rev := settings["vcs.revision"]; rev != "" {
		text += " revision " + rev
		var when []string
		if t := settings["vcs.time"]; t != "" {
			when = append(when, t)
		}
		if settings["vcs.modified"] == "true" {
			when = append(when, "modified")
		}
		if len(when) > 0 {
			text += " (" + strings.Join(when, ", ") + ")"
		}
	} else if bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		// A module version (go install ...@v1.2.0) names the build by
		// itself; a work tree's build needs the revision, which go
		// build stamps only in a git clone with -buildvcs on (it is off
		// where GOFLAGS says -buildvcs=false: make build turns it on).
		text += " revision unknown (not stamped: built outside a git clone or with -buildvcs=false; make build stamps it)"
	}
	return text + " " + bi.GoVersion
}

type helpCmd struct {
	Command []string `arg:"" optional:"" help:"Command to show help for."`
}

func (h helpCmd) Run(k *kong.Kong) error {
	_, err := k.Parse(append(h.Command, "--help"))
	return err
}
