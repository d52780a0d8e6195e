package app

import (
	"fmt"
	"io"
)

// Streams are a command's standard streams and what it knows of the
// terminal.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
	// ErrIsTerminal turns progress lines on by default.
	ErrIsTerminal bool
	// Columns returns the width of the terminal standard output is, 0
	// when it is none; nil means none.
	Columns func() int
}

// Text fits the lines for people to the terminal: the width of every
// command that prints them.
type Text struct {
	Width int `default:"0" placeholder:"COLUMNS" help:"Widest line of text output, in columns (0: the terminal's width when standard output is a terminal, else no limit)." range:"[0,${max_width}]"`
}

// LineWidth returns the columns a line may take: Width, else the width
// columns returns, that of the terminal standard output is (asked each
// time, so a resize takes effect; nil: none), else 0 (no limit).
func (t Text) LineWidth(columns func() int) (int, error) {
	switch {
	case t.Width < 0:
		return 0, fmt.Errorf("--width %d: want 0 (the terminal's) or more", t.Width)
	case t.Width > 0:
		return t.Width, nil
	case columns != nil:
		return columns(), nil
	}
	return 0, nil
}
