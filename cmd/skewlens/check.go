package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/skewlens/skewlens/internal/knob"
)

// A flag's valid values are stated once, in its range tag (package
// internal/knob reads it): the check before a command runs (checkFlags)
// and its help text (helpWithRange) both read it. Most flags are the
// fields of a component's Config, whose own Validate reads the same tag.
// Components keep their zero-means-default Config semantics for library
// users; the command line rejects a value that would silently become the
// default, or that is out of range, before anything starts.

// parseRange parses a range tag, expanding ${var} from vars.
func parseRange(tag string, vars kong.Vars) (knob.Range, error) {
	var missing []string
	s := os.Expand(tag, func(k string) string {
		v, ok := vars[k]
		if !ok {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		return knob.Range{}, fmt.Errorf("range %q: unknown variables %v", tag, missing)
	}
	return knob.ParseRange(s)
}

// commandRanges narrow, for the command line, the range a component
// declares for a setting: the alert tracker fires an alert at an
// incident's first finding when For is not positive (its tests do), but
// run's alerts wait for an incident to last.
var commandRanges = map[string]string{"alert-for": "(0s,]"}

// rangeTag is the range of a flag: the command line's own, else its tag.
func rangeTag(v *kong.Value) string {
	if r, ok := commandRanges[v.Name]; ok {
		return r
	}
	return v.Tag.Get("range")
}

// valueText writes a flag's value as it would be written on the command
// line, strings and lists quoted.
func valueText(f *kong.Flag, v reflect.Value) string {
	text := knob.Format(v, f.Tag.Type == "ms")
	if v.Kind() == reflect.String || v.Kind() == reflect.Slice {
		return strconv.Quote(text)
	}
	return text
}

// flagSource says where a flag's value came from, for error messages:
// "" for the command line or the default, else the environment variable
// or the config file key.
func flagSource(kctx *kong.Context, f *kong.Flag) string {
	for _, p := range kctx.Path {
		if p.Flag == f {
			if !p.Resolved {
				return ""
			}
			file := "the config file"
			for _, cf := range kctx.Flags() {
				if path, _ := kctx.FlagValue(cf).(string); cf.Name == "config" && path != "" {
					file = path
				}
			}
			return fmt.Sprintf("key %s in %s", configKey(f.Name), file)
		}
	}
	for _, env := range f.Envs {
		if _, ok := os.LookupEnv(env); ok {
			return env
		}
	}
	return ""
}

// flagError is a flag's value that is out of its range.
func flagError(kctx *kong.Context, f *kong.Flag, v reflect.Value, rule string) error {
	msg := fmt.Sprintf("--%s %s: %s", f.Name, valueText(f, v), rule)
	if src := flagSource(kctx, f); src != "" {
		msg += " (set by " + src + ")"
	}
	return errors.New(msg)
}

// checkFlags checks the value of every flag of the selected command
// against its range tag, whatever set it: the command line, the
// environment or the config file. It reports every bad value at once.
func checkFlags(kctx *kong.Context, vars kong.Vars) error {
	var errs []error
	for _, f := range kctx.Flags() {
		tag := rangeTag(f.Value)
		if tag == "" {
			continue
		}
		r, err := parseRange(tag, vars)
		if err != nil {
			return fmt.Errorf("--%s: %w", f.Name, err) // a bad tag: a bug
		}
		v := f.Target
		ok, err := r.Contains(v)
		if err != nil {
			return fmt.Errorf("--%s: %w", f.Name, err)
		}
		if !ok {
			errs = append(errs, flagError(kctx, f, v, r.Rule(v.Type())))
		}
	}
	return errors.Join(errs...)
}

// helpWithRange is the help formatter: kong's, with the flag's range
// rule added before the environment variable.
func helpWithRange(vars kong.Vars) kong.HelpValueFormatter {
	return func(v *kong.Value) string {
		if tag := rangeTag(v); tag != "" {
			rule := "range " + tag // unparsable: TestRangeTags fails
			if r, err := parseRange(tag, vars); err == nil {
				rule = r.Rule(v.Target.Type())
			}
			cp := *v
			cp.Help = strings.TrimSuffix(v.Help, ".") + "; " + rule + "."
			v = &cp
		}
		return kong.DefaultHelpValueFormatter(v)
	}
}

// checker is a command with rules that span flags or belong to the
// components the flags configure. run calls check after checkFlags and
// before the command's Run, so that nothing starts with a bad
// configuration.
type checker interface {
	check() error
}

// checkCommand checks the selected command: every flag against its
// range, then the command's own rules.
func checkCommand(kctx *kong.Context, vars kong.Vars) error {
	if err := checkFlags(kctx, vars); err != nil {
		return err
	}
	node := kctx.Selected()
	if node == nil || !node.Target.CanAddr() {
		return nil
	}
	if c, ok := node.Target.Addr().Interface().(checker); ok {
		return c.check()
	}
	return nil
}
