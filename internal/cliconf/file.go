package cliconf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"gopkg.in/yaml.v3"

	"github.com/skewlens/skewlens/internal/knob"
)

// configFile is the --config file of `skewlens run`: a YAML map whose keys
// are the command's flag names with underscores for dashes
// (clickhouse_addr: ch-1:9000). It is a kong.Resolver: kong asks it for
// the value of each flag the command line left unset.
//
// Precedence is docs/cli.md's: the command line wins over the environment
// (SKEWLENS_<FLAG>), which wins over the file. kong applies resolvers
// after the environment, so Resolve answers nothing for a flag whose
// variable is set.
//
// Every key must name a flag: Validate, which kong calls while parsing,
// rejects the others, with the nearest key as a suggestion, so that a
// misspelled key fails at start rather than silently leaving its flag at
// the default (a misspelled `brokers` would start the embedded broker).
type configFile struct {
	name   string         // for messages
	values map[string]any // key: scalar or list, as YAML decoded it
	lines  map[string]int // key: its line in the file
}

// where names a key of the file for an error message: "key window at
// skewlens.yaml:3". Every error about a value the file set says where.
func (c *configFile) where(key string) string {
	if line := c.lines[key]; line > 0 {
		return fmt.Sprintf("key %s at %s:%d", key, c.name, line)
	}
	return fmt.Sprintf("key %s in %s", key, c.name)
}

// ReadFile reads a YAML configuration file for a --config flag. It
// rejects what is not a map of scalars and lists; whether each key names
// a flag is checked when the command line is parsed (Validate).
func ReadFile(r io.Reader) (kong.Resolver, error) {
	return readConfigFile(r)
}

// keyAt names key of the config file at path for an error message, with
// its line (configFile.where); the file is read again, as this is only
// for a message.
func keyAt(path, key string) string {
	c := &configFile{name: path}
	if f, err := os.Open(path); err == nil {
		if read, err := readConfigFile(f); err == nil {
			c = read
		}
		f.Close()
	}
	return c.where(key)
}

// ConfigFlag gives a command the --config flag. The file is loaded by
// BeforeResolve, which kong calls while parsing, after the environment is
// read: so SKEWLENS_CONFIG names a file as --config does (kong's own
// ConfigFlag reads only the command line).
type ConfigFlag struct {
	Config string `placeholder:"FILE" type:"existingfile" help:"YAML file with any of these flags: keys are the flag names with underscores (clickhouse_addr: ch-1:9000); unknown keys are errors. The command line wins over the environment, which wins over the file."`
}

// BeforeResolve adds the --config file, if one is named, as a resolver.
func (f *ConfigFlag) BeforeResolve(kctx *kong.Context) error {
	var path string
	for _, fl := range kctx.Flags() {
		if fl.Name == "config" {
			path, _ = kctx.FlagValue(fl).(string)
		}
	}
	if path == "" {
		return nil
	}
	r, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	defer r.Close()
	res, err := ReadFile(r)
	if err != nil {
		return err
	}
	kctx.AddResolver(res)
	return nil
}

func readConfigFile(r io.Reader) (*configFile, error) {
	name := "config file"
	if f, ok := r.(interface{ Name() string }); ok {
		name = f.Name()
	}
	// A node first, for the line of each key; then its values.
	var doc yaml.Node
	if err := yaml.NewDecoder(r).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &configFile{name: name, values: map[string]any{}, lines: map[string]int{}}
	if len(doc.Content) == 0 {
		return c, nil // empty, or only comments
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a map of flag names to values (brokers: [kafka-1:9092]), not a %s", name, root.Line, nodeKind(root))
	}
	var v map[string]any
	if err := root.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		c.lines[root.Content[i].Value] = root.Content[i].Line
	}
	for k, x := range v {
		val, err := configValue(x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.where(k), err)
		}
		c.values[k] = val
	}
	return c, nil
}

// nodeKind names a YAML node's kind for an error message.
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	}
	return "YAML node"
}

// configValue turns a decoded YAML value into what kong parses: a
// scalar becomes the text it would be on the command line, so that a
// bare number is not taken for a duration in nanoseconds (window: 10)
// or rounded into an integer (top_k: 2.5), and a list becomes a list of
// such texts. A null is nil: the key is present but sets nothing.
func configValue(x any) (any, error) {
	switch x := x.(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]any, 0, len(x))
		for i, el := range x {
			s, err := scalarText(el)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return scalarText(x)
}

func scalarText(x any) (string, error) {
	switch x := x.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case map[string]any:
		return "", errors.New("want a value or a list, not a map (keys are flag names, not nested)")
	case nil:
		return "", errors.New("empty list item")
	}
	return "", fmt.Errorf("want a string, number or boolean, not %T", x)
}

// Resolve returns the file's value for flag, or nil when the file does
// not set it or the flag's environment variable is set (the environment
// wins over the file).
func (c *configFile) Resolve(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	for _, env := range flag.Envs {
		if _, ok := os.LookupEnv(env); ok {
			return nil, nil
		}
	}
	key := knob.Key(flag.Name)
	v := c.values[key]
	if v == nil {
		return nil, nil
	}
	// kong parses the value after Resolve returns and reports a value
	// that does not parse without saying where it came from: try it here
	// first, so that the error names the file, the key and its line
	// (kong puts the flag's name before it).
	if err := tryValue(flag, v); err != nil {
		return nil, fmt.Errorf("%w (set by %s)", err, c.where(key))
	}
	return v, nil
}

// tryValue parses v as kong will for flag, into a scratch value, and
// checks it against the flag's enum: the errors kong would give, less
// the flag's name.
func tryValue(flag *kong.Flag, v any) error {
	if _, list := v.([]any); list && !flag.IsSlice() && !flag.IsMap() {
		return errors.New("want one value, not a list")
	}
	target := reflect.New(flag.Target.Type()).Elem()
	if target.Kind() == reflect.Pointer {
		target.Set(reflect.New(target.Type().Elem()))
	}
	scan := kong.Scan().PushTyped(v, kong.FlagValueToken)
	if err := flag.Mapper.Decode(&kong.DecodeContext{Value: flag.Value, Scan: scan}, target); err != nil {
		return err
	}
	if flag.Enum == "" || target.Kind() != reflect.String {
		return nil
	}
	if enum := flag.EnumMap(); !enum[target.String()] {
		return fmt.Errorf("must be one of %s but got %q", strings.Join(flag.EnumSlice(), ", "), target.String())
	}
	return nil
}

// Validate rejects every key that names no flag of the commands that
// read a config file, naming the nearest known key.
func (c *configFile) Validate(app *kong.Application) error {
	known := configKeys(app.Node)
	var bad []string
	for k := range c.values {
		if !slices.Contains(known, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	errs := make([]error, 0, len(bad))
	for _, k := range bad {
		at := c.name
		if line := c.lines[k]; line > 0 {
			at = fmt.Sprintf("%s:%d", c.name, line)
		}
		msg := fmt.Sprintf("%s: unknown key %q", at, k)
		if s := nearestKey(k, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

// configKeys returns the keys a config file may hold: the flags of the
// commands that have a --config flag, less help and config itself.
func configKeys(root *kong.Node) []string {
	var keys []string
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		if slices.ContainsFunc(n.Flags, func(f *kong.Flag) bool { return f.Name == "config" }) {
			for _, f := range n.Flags {
				if f.Name != "help" && f.Name != "config" {
					keys = append(keys, knob.Key(f.Name))
				}
			}
		}
		for _, ch := range n.Children {
			walk(ch)
		}
	}
	walk(root)
	sort.Strings(keys)
	return slices.Compact(keys)
}

// nearestKey suggests the known key a mistyped key most likely meant: the
// same key written the flag's way (clickhouse-addr) or in camelCase
// (clickhouseAddr), else the closest by edit distance, if it is close
// enough to be a typo rather than another word. It returns "" when none
// is.
func nearestKey(k string, known []string) string {
	for _, cand := range []string{knob.Key(k), snakeCase(k), knob.Key(strings.ToLower(k))} {
		if slices.Contains(known, cand) {
			return cand
		}
	}
	best, bestD := "", len(k)/3+2 // a third of the key, and at least 2 edits
	for _, cand := range known {
		if d := editDistance(knob.Key(strings.ToLower(k)), cand); d < bestD {
			best, bestD = cand, d
		}
	}
	return best
}

// snakeCase writes a camelCase key with underscores: clickhouseAddr
// becomes clickhouse_addr.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// editDistance is the Levenshtein distance of a and b, in bytes (keys are
// ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
