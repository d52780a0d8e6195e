package main

import (
	"io"
	"log/slog"

	"github.com/skewlens/skewlens/internal/app"
)

// clickhouseFlags connect serve, top and migrate to ClickHouse; the
// field is unexported for the reason of runSettings.
type clickhouseFlags struct{ app.ClickHouse }

// logFlags choose the log format of the commands that log.
type logFlags struct {
	LogFormat string `enum:"text,json" default:"text" help:"Log format: ${enum}."`
}

// logger returns a logger writing to w in the chosen format; opts may be
// nil.
func (f *logFlags) logger(w io.Writer, opts *slog.HandlerOptions) *slog.Logger {
	if f.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
