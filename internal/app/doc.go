// Package app builds skewlens' commands from their resolved
// configuration: RunConfig holds every setting of `skewlens run` (the
// components' Configs, each declared once with internal/knob tags, and
// run's own options), Run wires the components as oklog/run actors, and
// Demo adds the embedded broker, the local ClickHouse and the simulated
// incidents of `skewlens demo`. cmd/skewlens parses the command line
// into these types and calls them; the policies (resume or start afresh,
// which topics to create, how alerts link to the API) are decided here.
//
// Run blocks until its context is cancelled, its Duration has passed or
// a component fails; the shutdown order is written on Run.
package app
