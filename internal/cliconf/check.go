package cliconf

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

// ParseRange parses a range tag, expanding ${var} from vars.
func ParseRange(tag string, vars kong.Vars) (knob.Range, error) {
	s, err := knob.Expand(tag, vars)
	if err != nil {
		return knob.Range{}, err
	}
	return knob.ParseRange(s)
}

// Checker checks the flags of a command against their ranges.
type Checker struct {
	// Vars are the variables range tags name (${max_top_k}).
	Vars kong.Vars
	// Narrow gives flags, by name, a range of the command line's own in
	// place of their tag's: a component may accept a value the command
	// line has no use for.
	Narrow map[string]string
}

// RangeTag is the range of a flag: the command line's own, else its tag.
func (c Checker) RangeTag(v *kong.Value) string {
	if r, ok := c.Narrow[v.Name]; ok {
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
			for _, cf := range kctx.Flags() {
				if path, _ := kctx.FlagValue(cf).(string); cf.Name == "config" && path != "" {
					return keyAt(path, knob.Key(f.Name))
				}
			}
			return fmt.Sprintf("key %s in the config file", knob.Key(f.Name))
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

// Check checks the value of every flag of the selected command against
// its range, whatever set it: the command line, the environment or the
// config file. It reports every bad value at once, each naming its flag
// and where the value was set.
func (c Checker) Check(kctx *kong.Context) error {
	var errs []error
	for _, f := range kctx.Flags() {
		tag := c.RangeTag(f.Value)
		if tag == "" {
			continue
		}
		r, err := ParseRange(tag, c.Vars)
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

// HelpFormatter is the help formatter: kong's, with the flag's range
// rule added before the environment variable.
func (c Checker) HelpFormatter() kong.HelpValueFormatter {
	return func(v *kong.Value) string {
		if tag := c.RangeTag(v); tag != "" {
			rule := "range " + tag // unparsable: the command's range test fails
			if r, err := ParseRange(tag, c.Vars); err == nil {
				rule = r.Rule(v.Target.Type())
			}
			cp := *v
			cp.Help = strings.TrimSuffix(v.Help, ".") + "; " + rule + "."
			v = &cp
		}
		return kong.DefaultHelpValueFormatter(v)
	}
}
