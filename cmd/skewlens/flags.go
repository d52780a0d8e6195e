package main

import (
	"fmt"
	"io"
	"log/slog"
	"reflect"

	"github.com/alecthomas/kong"
	"github.com/skewlens/skewlens/internal/app"
	"github.com/skewlens/skewlens/internal/knob"
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

// millisMapper reads a duration flag (10s) into an int64 of milliseconds,
// the type:"ms" fields of the components' Configs (internal/knob).
type millisMapper struct{}

func (millisMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var text string
	if err := ctx.Scan.PopValueInto("duration", &text); err != nil {
		return err
	}
	v, err := knob.Parse(text, target.Type(), true)
	if err != nil {
		return fmt.Errorf("expected duration but got %q: %w", text, err)
	}
	target.Set(v)
	return nil
}
