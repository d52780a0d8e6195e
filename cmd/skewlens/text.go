package main

import (
	"github.com/skewlens/skewlens/internal/app"
)

// textFlags bind the width of the lines for people (app.Text).
type textFlags struct{ app.Text }

// lineWidth returns the columns a line may take (app.Text.LineWidth).
func (f *textFlags) lineWidth(e *env) (int, error) { return f.LineWidth(e.stdoutColumns) }

// streams are e's streams and terminal, as app's commands take them.
func (e *env) streams() app.Streams {
	return app.Streams{In: e.stdin, Out: e.stdout, Err: e.stderr, ErrIsTerminal: e.stderrIsTerminal, Columns: e.stdoutColumns}
}
