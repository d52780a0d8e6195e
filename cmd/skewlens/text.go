package main

import (
	"fmt"
)

// textFlags fit the lines for people to the terminal.
type textFlags struct {
	Width int `default:"0" placeholder:"COLUMNS" help:"Widest line of text output, in columns (0: the terminal's width when standard output is a terminal, else no limit)." range:"[0,${max_width}]"`
}

// lineWidth returns the columns a line may take: --width, else the
// terminal's width when standard output is one (asked each time, so a
// resize takes effect), else 0 (no limit).
func (f *textFlags) lineWidth(e *env) (int, error) {
	switch {
	case f.Width < 0:
		return 0, fmt.Errorf("--width %d: want 0 (the terminal's) or more", f.Width)
	case f.Width > 0:
		return f.Width, nil
	case e.stdoutColumns != nil:
		return e.stdoutColumns(), nil
	}
	return 0, nil
}
