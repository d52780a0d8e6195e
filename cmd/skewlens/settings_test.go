package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/skewlens/skewlens/internal/cliconf"
	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/testenv"
)

// boundConfigs returns the component Configs the command tree binds: the
// types of its embed:"" fields, found by walking the tree's types.
func boundConfigs(t reflect.Type, seen map[reflect.Type]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("embed"); ok {
			seen[f.Type] = true
		}
		if f.Type.Kind() == reflect.Struct {
			boundConfigs(f.Type, seen)
		}
	}
}

// TestSettings walks every flag of every command and checks that each
// setting is declared once:
//   - a flag that binds a component's setting is that setting's
//     declaration: its default, help and range are the component's tags
//     (internal/knob), and kong's default is the component's default;
//   - no two components declare a setting of one name;
//   - its environment variable and YAML key derive from its name;
//   - run's keys are all in deploy/config/skewlens.yaml;
//   - docs/configuration.md is the table of them all (go test -update
//     writes it).
func TestSettings(t *testing.T) {
	clearEnv(t)
	vars := defaultVars()
	// declared returns the settings the Configs a command binds declare,
	// by name, and which Config declares each.
	declared := func(cmd reflect.Type) (map[string]knob.Setting, map[string]reflect.Type) {
		types := map[reflect.Type]bool{}
		boundConfigs(cmd, types)
		settings, owner := map[string]knob.Setting{}, map[string]reflect.Type{}
		for typ := range types {
			ss, err := knob.Settings(reflect.New(typ).Interface(), vars)
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			for _, s := range ss {
				if s.Name == "" {
					continue
				}
				if other, dup := owner[s.Name]; dup && other != typ {
					t.Errorf("%s: --%s is declared by %s and by %s", cmd, s.Name, other, typ)
				}
				settings[s.Name], owner[s.Name] = s, typ
			}
		}
		return settings, owner
	}

	example, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "config", "skewlens.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ranges := rangeChecker(vars)
	bound := 0
	walkFlags(t, func(cmd *kong.Node, f *kong.Flag) {
		name := cmd.Path() + " --" + f.Name
		settings, owner := declared(cmd.Target.Type())
		if want := knob.Env("SKEWLENS", f.Name); !slices.Equal(f.Envs, []string{want}) && f.Name != "version" {
			t.Errorf("%s: environment %v, want %s", name, f.Envs, want)
		}
		if cmd.Name == "run" && f.Name != "config" && !strings.Contains(string(example), "\n"+knob.Key(f.Name)+":") &&
			!strings.Contains(string(example), "\n#"+knob.Key(f.Name)+":") {
			t.Errorf("%s: no key %s in deploy/config/skewlens.yaml", name, knob.Key(f.Name))
		}
		s, ok := settings[f.Name]
		if !ok {
			return
		}
		bound++
		help := s.Help
		if i := strings.Index(help, "${"); i >= 0 {
			help = help[:i] // then a note the command sets
		}
		if f.Default != s.Default || !strings.HasPrefix(f.Help, help) {
			t.Errorf("%s: default %q, help %q; its declaration (%s.%s) says %q, %q", name, f.Default, f.Help, owner[f.Name], s.Field, s.Default, s.Help)
		}
		if r, err := cliconf.ParseRange(ranges.RangeTag(f.Value), vars); s.Range != "" && f.Name != "alert-for" {
			want, _ := knob.ParseRange(s.Range)
			if err != nil || r != want {
				t.Errorf("%s: range %q (%v); its declaration says %q", name, ranges.RangeTag(f.Value), err, s.Range)
			}
		}
		if s.Default != "" {
			v, err := knob.Parse(s.Default, s.Type, s.Millis)
			if err != nil {
				t.Errorf("%s: default %q: %v", name, s.Default, err)
			} else if got := parsedDefault(t, f); !reflect.DeepEqual(got, v.Interface()) {
				t.Errorf("%s: kong's default %v, the declaration's %v", name, got, v.Interface())
			}
		}
	})
	if bound < 100 {
		t.Errorf("only %d flags bind a component's setting", bound)
	}

	doc := settingsDoc(t, vars)
	file := filepath.Join(testenv.RepoRoot(), "docs", "configuration.md")
	if *update {
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != doc {
		t.Errorf("docs/configuration.md is not the table of the declared settings (%v): go test -run TestSettings -update ./cmd/skewlens", err)
	}
}

// parsedDefault is the value kong gives f when nothing sets it.
func parsedDefault(t *testing.T, f *kong.Flag) any {
	t.Helper()
	v := reflect.New(f.Target.Type()).Elem()
	dv := *f.Value
	dv.Target = v
	if err := dv.Reset(); err != nil {
		t.Errorf("--%s: default %q: %v", f.Name, f.Default, err)
	}
	return v.Interface()
}

// settingsDoc writes docs/configuration.md: for each command, a table of
// its flags with the environment variable, the YAML key (of the commands
// with --config), the default and the valid values, from the flags'
// declarations.
func settingsDoc(t *testing.T, vars kong.Vars) string {
	var out strings.Builder
	out.WriteString(`# Configuration

Every setting of every command, as its declaration states it: a struct tag
on the component's Config (package ` + "`internal/knob`" + `), or on the
command's own options. ` + "`skewlens <command> -h`" + ` says the same.
A flag also reads the environment variable beside it, and ` + "`run`" + ` and
` + "`demo`" + ` read the YAML file of ` + "`--config`" + ` (keys as below; an example with
every key is [deploy/config/skewlens.yaml](../deploy/config/skewlens.yaml)).
The command line wins over the environment, which wins over the file.

This file is generated: ` + "`go test -run TestSettings -update ./cmd/skewlens`" + `.
`)
	ranges := rangeChecker(vars)
	runFlags := map[string]bool{}
	walk := map[string][]*kong.Flag{}
	var order []string
	walkFlags(t, func(cmd *kong.Node, f *kong.Flag) {
		if f.Name == "version" {
			return
		}
		if _, ok := walk[cmd.Name]; !ok {
			order = append(order, cmd.Name)
		}
		walk[cmd.Name] = append(walk[cmd.Name], f)
		if cmd.Name == "run" {
			runFlags[f.Name] = true
		}
	})
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, cmd := range order {
		flags := walk[cmd]
		if cmd == "demo" {
			flags = slices.DeleteFunc(slices.Clone(flags), func(f *kong.Flag) bool { return runFlags[f.Name] })
		}
		if len(flags) == 0 {
			continue
		}
		fmt.Fprintf(&out, "\n## skewlens %s\n\n", cmd)
		if cmd == "demo" {
			out.WriteString("Every setting of `run`, and:\n\n")
		}
		withKey := cmd == "run" || cmd == "demo"
		if withKey {
			out.WriteString("| flag | environment | YAML key | default | valid | meaning |\n|---|---|---|---|---|---|\n")
		} else {
			out.WriteString("| flag | environment | default | valid | meaning |\n|---|---|---|---|---|\n")
		}
		for _, f := range flags {
			valid := ""
			if tag := ranges.RangeTag(f.Value); tag != "" {
				if r, err := cliconf.ParseRange(tag, vars); err == nil {
					valid = r.Rule(f.Target.Type())
				}
			} else if f.Enum != "" {
				valid = "one of " + f.Enum
			}
			def := f.Default
			if def != "" {
				def = "`" + def + "`"
			}
			key := ""
			if withKey && f.Name != "config" {
				key = "`" + knob.Key(f.Name) + "`"
			}
			row := []string{"`--" + f.Name + "`", "`" + strings.Join(f.Envs, " ") + "`"}
			if withKey {
				row = append(row, key)
			}
			row = append(row, def, cell(valid), cell(f.Help))
			out.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
	}
	return out.String()
}
