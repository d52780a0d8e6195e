package knob

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Setting is one declared setting of a Config.
type Setting struct {
	Name    string // the flag name: window; "" for a setting no flag sets
	Field   string // the Go field path: WindowMs
	Default string // as declared; "" when none
	Range   string // as declared, variables expanded; "" when any value goes
	Help    string
	Group   string
	Millis  bool // an int64 of milliseconds, written as a duration
	Type    reflect.Type
	index   []int
	// zeroDefault: a zero value means the default (zero:"default"),
	// though zero is in the range or there is none.
	zeroDefault bool
}

// Key is the YAML key of the setting named name: hot_key_share.
func Key(name string) string { return strings.ReplaceAll(name, "-", "_") }

// Env is the environment variable of the setting named name under
// prefix: SKEWLENS_HOT_KEY_SHARE, as kong.DefaultEnvars derives it.
func Env(prefix, name string) string {
	return prefix + "_" + strings.ToUpper(Key(name))
}

// varser is a Config whose range bounds name variables.
type varser interface{ KnobVars() map[string]string }

// Vars returns the range variables of the given Configs, merged.
func Vars(cfgs ...any) map[string]string {
	out := map[string]string{}
	for _, c := range cfgs {
		addVars(reflect.TypeOf(c), out)
	}
	return out
}

func addVars(t reflect.Type, out map[string]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	if v, ok := reflect.Zero(t).Interface().(varser); ok {
		for k, x := range v.KnobVars() {
			out[k] = x
		}
	}
	for i := range t.NumField() {
		if f := t.Field(i); hasTag(f, "embed") {
			addVars(f.Type, out)
		}
	}
}

func hasTag(f reflect.StructField, key string) bool {
	_, ok := f.Tag.Lookup(key)
	return ok
}

// Settings returns the settings cfg (a struct or a pointer to one)
// declares, in field order, nested embed:"" structs included.
//
// The range variables come from the KnobVars methods of cfg's type and
// of its nested Configs, and from vars: a type defined from a Config
// (type bound skew.Config) has its fields and tags but not its methods.
func Settings(cfg any, vars ...map[string]string) ([]Setting, error) {
	t := reflect.TypeOf(cfg)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("knob: %T is not a struct", cfg)
	}
	all := map[string]string{}
	for _, v := range vars {
		for k, x := range v {
			all[k] = x
		}
	}
	addVars(t, all)
	var out []Setting
	err := walk(t, nil, "", all, &out)
	return out, err
}

func walk(t reflect.Type, index []int, path string, vars map[string]string, out *[]Setting) error {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(append([]int(nil), index...), i)
		if !f.IsExported() {
			continue
		}
		if hasTag(f, "embed") {
			if f.Type.Kind() != reflect.Struct {
				return fmt.Errorf("knob: %s%s: embed on a %s", path, f.Name, f.Type)
			}
			if err := walk(f.Type, idx, path+f.Name+".", vars, out); err != nil {
				return err
			}
			continue
		}
		name := f.Tag.Get("name")
		if name == "" && !hasTag(f, "default") && !hasTag(f, "range") {
			continue
		}
		s := Setting{
			Name: name, Field: path + f.Name, Default: f.Tag.Get("default"), Help: f.Tag.Get("help"),
			Group: f.Tag.Get("group"), Millis: f.Tag.Get("type") == "ms", Type: f.Type, index: idx,
			zeroDefault: f.Tag.Get("zero") == "default",
		}
		if s.Millis && f.Type.Kind() != reflect.Int64 {
			return fmt.Errorf("knob: %s: type:\"ms\" on a %s, want int64", s.Field, f.Type)
		}
		if r := f.Tag.Get("range"); r != "" {
			expanded, err := Expand(r, vars)
			if err != nil {
				return fmt.Errorf("knob: %s: %w", s.Field, err)
			}
			if _, err := ParseRange(expanded); err != nil {
				return fmt.Errorf("knob: %s: %w", s.Field, err)
			}
			s.Range = expanded
		}
		if s.Default != "" {
			if _, err := s.parse(s.Default); err != nil {
				return fmt.Errorf("knob: %s: default: %w", s.Field, err)
			}
		}
		*out = append(*out, s)
	}
	return nil
}

// Expand replaces each ${name} in a range tag with its variable; a name
// without one is an error.
func Expand(s string, vars map[string]string) (string, error) {
	var b strings.Builder
	var missing []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("range %q: unclosed ${", s)
		}
		name := s[i+2 : i+j]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
	b.WriteString(s)
	if len(missing) > 0 {
		return "", fmt.Errorf("range %q: unknown variables %v (KnobVars)", b.String(), missing)
	}
	return b.String(), nil
}

// parse reads text as a value of the setting's type.
func (s Setting) parse(text string) (reflect.Value, error) {
	return Parse(text, s.Type, s.Millis)
}

// Value returns the setting's field in the Config cfg points to.
func (s Setting) Value(cfg any) reflect.Value {
	return reflect.ValueOf(cfg).Elem().FieldByIndex(s.index)
}

// Text writes the setting's value in cfg (a struct or a pointer to one)
// as it is written on the command line.
func (s Setting) Text(cfg any) string {
	v := reflect.Indirect(reflect.ValueOf(cfg)).FieldByIndex(s.index)
	return Format(v, s.Millis)
}

// Label names the setting in messages: its flag name, or for a setting
// no flag sets its field's words (ReadyTimeout: "ready timeout").
func (s Setting) Label() string {
	if s.Name != "" {
		return s.Name
	}
	field := s.Field[strings.LastIndexByte(s.Field, '.')+1:]
	var b strings.Builder
	for i, r := range field {
		upper := r >= 'A' && r <= 'Z'
		// A word starts at an upper-case letter after a lower-case one,
		// or before a lower-case one in a run of capitals (TTLDays).
		if upper && i > 0 {
			prevLower := field[i-1] >= 'a' && field[i-1] <= 'z'
			nextLower := i+1 < len(field) && field[i+1] >= 'a' && field[i+1] <= 'z'
			if prevLower || nextLower && field[i-1] >= 'A' && field[i-1] <= 'Z' {
				b.WriteByte(' ')
			}
		}
		if upper {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Rule states the setting's range as a rule ("must be in (0,1]"), or ""
// when it has none.
func (s Setting) Rule() string {
	if s.Range == "" {
		return ""
	}
	r, _ := ParseRange(s.Range) // checked by Settings
	return r.Rule(s.Type)
}

// Defaults returns a T with every setting at its declared default and
// the other fields zero. It panics on a malformed declaration (a
// programming error, which the package's tests catch).
func Defaults[T any]() T {
	var c T
	Reset(&c)
	return c
}

// Reset sets every setting of the Config cfg points to that declares a
// default to it, and leaves the other fields alone; vars are as for
// Settings. It panics on a malformed declaration.
func Reset(cfg any, vars ...map[string]string) {
	ss, err := Settings(cfg, vars...)
	if err != nil {
		panic(err)
	}
	for _, s := range ss {
		if s.Default == "" {
			continue
		}
		v, _ := s.parse(s.Default) // checked by Settings
		s.Value(cfg).Set(v)
	}
}

// FillZero sets each zero setting of the Config cfg points to whose
// range excludes zero, or that is tagged zero:"default", to its default:
// for a library user a zero field means "the default", unless zero is a
// valid value of its own (a lateness of 0s). It panics on a malformed
// declaration.
func FillZero(cfg any) {
	ss, err := Settings(cfg)
	if err != nil {
		panic(err)
	}
	for _, s := range ss {
		f := s.Value(cfg)
		if s.Default == "" || !f.IsZero() || !s.zeroDefault && s.Range == "" {
			continue
		}
		if !s.zeroDefault {
			r, _ := ParseRange(s.Range)
			if ok, _ := r.Contains(f); ok {
				continue
			}
		}
		v, _ := s.parse(s.Default)
		f.Set(v)
	}
}

// CheckFilled is Check of cfg (a struct or a pointer to one) as
// FillZero would make it: a zero that stands for its default passes.
// cfg itself does not change.
func CheckFilled(cfg any) error {
	v := reflect.Indirect(reflect.ValueOf(cfg))
	cp := reflect.New(v.Type())
	cp.Elem().Set(v)
	FillZero(cp.Interface())
	return Check(cp.Interface())
}

// Check checks every setting of cfg (a struct or a pointer to one)
// against its range and reports every value out of it, each as
// "name value: rule".
func Check(cfg any) error {
	ss, err := Settings(cfg)
	if err != nil {
		return err
	}
	v := reflect.Indirect(reflect.ValueOf(cfg))
	var errs []error
	for _, s := range ss {
		if s.Range == "" {
			continue
		}
		r, _ := ParseRange(s.Range)
		f := v.FieldByIndex(s.index)
		ok, err := r.Contains(f)
		if err != nil {
			return fmt.Errorf("knob: %s: %w", s.Field, err)
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s %s: %s", s.Label(), Format(f, s.Millis), r.Rule(f.Type())))
		}
	}
	return errors.Join(errs...)
}
