// Package app builds skewlens' commands from their resolved
// configuration. RunConfig holds every setting of `skewlens run` (the
// components' Configs, each declared once with internal/knob tags, and
// run's own options), Run wires the components as oklog/run actors, and
// Demo adds the embedded broker, the local ClickHouse and the simulated
// incidents of `skewlens demo`; Serve serves the API. AnalyzeConfig and
// Analyze replay recorded files through the engine (`skewlens analyze`),
// folding findings into incidents through the stages run has;
// SimulateConfig and Simulate write a simulated job or fleet and its
// truth (`skewlens simulate`); Top runs the terminal view (`skewlens
// top`); Text is the width of the lines for people, and Streams the
// standard streams these commands take.
//
// cmd/skewlens parses the command line into these types and calls them;
// the policies (resume or start afresh, which topics to create, how
// alerts link to the API, which rules span flags, what analyze prints
// and when nothing read is a failure, when top retries) are decided here.
//
// Run blocks until its context is cancelled, its Duration has passed or
// a component fails; the shutdown order is written on Run.
package app
