// Package cliconf is the command line's side of the settings the
// components declare (internal/knob) and kong binds: the --config YAML
// file as a kong resolver that rejects unknown keys (ConfigFlag,
// ReadFile), the range check of every flag that names where a bad value
// was set (Checker), help texts with the ranges, the mapper of
// millisecond durations, and Reset, which gives a command tree's Configs
// their declared defaults before kong parses.
//
// Everything here runs once, while a command line is parsed; nothing is
// safe for concurrent use unless it says so.
package cliconf
