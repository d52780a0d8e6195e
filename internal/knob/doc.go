// Package knob reads the settings a component declares once, as struct
// tags on the fields of its Config:
//
//	WindowMs int64 `name:"window" type:"ms" default:"10s" range:"[1ms,]" help:"Tumbling event-time window."`
//
// The tags are kong's (the command line binds a component's Config
// directly), plus range:
//
//   - name: the flag (--window); the environment variable
//     (SKEWLENS_WINDOW, Env) and the YAML key (window, Key) derive from it.
//   - default: the value in flag syntax; DefaultConfig functions get it
//     from Defaults, and -h shows it.
//   - range: the valid values, checked by Check and shown by -h (Rule):
//     [lo,hi] with ( or ) for an excluded bound and either bound empty
//     for none; on a string its length in bytes, on a list its items.
//     A bound may name a variable, ${max_top_k}, that the Config gives
//     through a KnobVars method.
//   - zero:"default": a zero value means the default, though zero is in
//     the range (FillZero); for a library user a zero field otherwise
//     means the default only when the range excludes it.
//   - type:"ms": an int64 field holding milliseconds, written as a
//     duration (10s).
//   - help, group, placeholder, enum: documentation, as kong reads them.
//   - embed:"": a nested struct whose fields are settings too.
//
// A field with a default or range but no name is a setting no flag sets
// (tagged kong:"-"); a field with none of the three is not a setting, and
// is tagged kong:"-" when its Config is bound to the command line.
//
// Everything here is reflection over types, done at start-up and in
// tests: a malformed tag is a programming error, which Defaults reports
// by panicking (as regexp.MustCompile does) and each package's test of
// its settings (Settings) catches. Functions are safe for concurrent use.
package knob
