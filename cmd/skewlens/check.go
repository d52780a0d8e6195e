package main

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"
)

// A flag's valid values are stated once, in its range tag, which both the
// check before a command runs (checkFlags) and its help text
// (helpWithRange) read:
//
//	range:"(0,1]"    a number in the interval, bounds excluded by ( and )
//	range:"[1ms,]"   a duration of at least 1ms, no upper bound
//	range:"[1,${max_top_k}]"  bounds may name a kong variable (defaultVars)
//	range:"[1,16]"   on a string: its length in bytes; on a list: its items
//
// Components keep their own zero-means-default Config semantics for
// library users; the command line rejects a value that would silently
// become the default, or that is out of range, before anything starts.

// valueRange is a parsed range tag.
type valueRange struct {
	lo, hi         string // bounds as written; "" is unbounded
	loOpen, hiOpen bool   // the bound itself is excluded
}

// parseRange parses a range tag, expanding ${var} from vars.
func parseRange(tag string, vars kong.Vars) (valueRange, error) {
	var missing []string
	s := os.Expand(tag, func(k string) string {
		v, ok := vars[k]
		if !ok {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		return valueRange{}, fmt.Errorf("range %q: unknown variables %v", tag, missing)
	}
	if len(s) < 3 || !strings.ContainsRune("[(", rune(s[0])) || !strings.ContainsRune("])", rune(s[len(s)-1])) {
		return valueRange{}, fmt.Errorf("range %q: want [lo,hi] with ( or ) for an excluded bound", tag)
	}
	lo, hi, ok := strings.Cut(s[1:len(s)-1], ",")
	if !ok || (lo == "" && hi == "") {
		return valueRange{}, fmt.Errorf("range %q: want [lo,hi] with at least one bound", tag)
	}
	return valueRange{lo: strings.TrimSpace(lo), hi: strings.TrimSpace(hi), loOpen: s[0] == '(', hiOpen: s[len(s)-1] == ')'}, nil
}

var durationType = reflect.TypeFor[time.Duration]()

// measure returns the number a range applies to for v: the value of a
// number or duration (in nanoseconds), the length of a string or list;
// parse reads a bound in the same unit. ok is false for other kinds.
func measure(v reflect.Value) (x float64, parse func(string) (float64, error), ok bool) {
	parseInt := func(s string) (float64, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		return float64(n), err
	}
	switch {
	case v.Type() == durationType:
		return float64(v.Int()), func(s string) (float64, error) {
			d, err := time.ParseDuration(s)
			return float64(d), err
		}, true
	case v.CanInt():
		return float64(v.Int()), parseInt, true
	case v.CanUint():
		return float64(v.Uint()), parseInt, true
	case v.CanFloat():
		return v.Float(), func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }, true
	case v.Kind() == reflect.String, v.Kind() == reflect.Slice:
		return float64(v.Len()), parseInt, true
	}
	return 0, nil, false
}

// contains reports whether v is in r; err reports a bound that does not
// parse as v's type.
func (r valueRange) contains(v reflect.Value) (bool, error) {
	x, parse, ok := measure(v)
	if !ok {
		return false, fmt.Errorf("a range does not apply to %s", v.Type())
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false, nil
	}
	if r.lo != "" {
		lo, err := parse(r.lo)
		if err != nil {
			return false, fmt.Errorf("range bound %q: %w", r.lo, err)
		}
		if x < lo || (r.loOpen && x == lo) {
			return false, nil
		}
	}
	if r.hi != "" {
		hi, err := parse(r.hi)
		if err != nil {
			return false, fmt.Errorf("range bound %q: %w", r.hi, err)
		}
		if x > hi || (r.hiOpen && x == hi) {
			return false, nil
		}
	}
	return true, nil
}

// rule states the range as a rule, for errors and help: "must be in
// (0, 1]", "must be at least 1ms"; of a string or list, its length.
func (r valueRange) rule(t reflect.Type) string {
	if t.Kind() == reflect.String || t.Kind() == reflect.Slice {
		what := "bytes long"
		if t.Kind() == reflect.Slice {
			what = "items"
		}
		switch {
		case r.lo == "1" && r.hi == "" && !r.loOpen:
			return "must not be empty"
		case r.hi == "":
			return fmt.Sprintf("must be at least %s %s", r.lo, what)
		}
		return fmt.Sprintf("must be %s to %s %s", cmp.Or(r.lo, "0"), r.hi, what)
	}
	switch {
	case r.lo != "" && r.hi != "":
		return fmt.Sprintf("must be in %s%s,%s%s", bracket(r.loOpen, "(", "["), r.lo, r.hi, bracket(r.hiOpen, ")", "]"))
	case r.lo != "" && !r.loOpen && (r.lo == "0" || r.lo == "0s"):
		return "must not be negative"
	case r.lo != "":
		return bracket(r.loOpen, "must be above ", "must be at least ") + r.lo
	}
	return bracket(r.hiOpen, "must be below ", "must be at most ") + r.hi
}

func bracket(open bool, ifOpen, ifClosed string) string {
	if open {
		return ifOpen
	}
	return ifClosed
}

// valueText writes a flag's value as it would be written on the command
// line.
func valueText(v reflect.Value) string {
	switch {
	case v.Type() == durationType:
		return fmtDuration(time.Duration(v.Int()))
	case v.CanFloat():
		return fmtFloat(v.Float())
	case v.Kind() == reflect.String:
		return strconv.Quote(v.String())
	case v.Kind() == reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strconv.Quote(strings.Join(parts, ","))
	}
	return fmt.Sprint(v.Interface())
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
	msg := fmt.Sprintf("--%s %s: %s", f.Name, valueText(v), rule)
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
		tag := f.Tag.Get("range")
		if tag == "" {
			continue
		}
		r, err := parseRange(tag, vars)
		if err != nil {
			return fmt.Errorf("--%s: %w", f.Name, err) // a bad tag: a bug
		}
		v := f.Target
		ok, err := r.contains(v)
		if err != nil {
			return fmt.Errorf("--%s: %w", f.Name, err)
		}
		if !ok {
			errs = append(errs, flagError(kctx, f, v, r.rule(v.Type())))
		}
	}
	return errors.Join(errs...)
}

// helpWithRange is the help formatter: kong's, with the flag's range
// rule added before the environment variable.
func helpWithRange(vars kong.Vars) kong.HelpValueFormatter {
	return func(v *kong.Value) string {
		if tag := v.Tag.Get("range"); tag != "" {
			rule := "range " + tag // unparsable: TestRangeTags fails
			if r, err := parseRange(tag, vars); err == nil {
				rule = r.rule(v.Target.Type())
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
