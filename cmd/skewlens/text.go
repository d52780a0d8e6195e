package main

import (
	"github.com/skewlens/skewlens/internal/app"
)

// textFlags bind the width of the lines for people (app.Text).
type textFlags struct{ app.Text }

// lineWidth returns the columns a line may take (app.Text.LineWidth).
func (f *textFlags) lineWidth(e *env) (int, error) { return f.LineWidth(e.stdoutColumns) }
