package termtext

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// sgrReset ends the colors of a line that Fit cut.
const sgrReset = "\x1b[0m"

// Width is the number of columns s takes on a terminal. s must be
// escaped (Quote, Clean) or the caller's own text: its runes count by
// RuneWidth, and control sequences (ESC [ ... final byte, such as colors)
// take no columns.
func Width(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if l := csiLen(s[i:]); l > 0 {
			i += l
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += RuneWidth(r)
		i += size
	}
	return n
}

// Fit returns line cut to at most width columns (width <= 0: line as it
// is), the cut marked with an ellipsis. line is one line of escaped text
// and the caller's own control sequences (colors), as Width counts it; the
// cut falls between runes and keeps the sequences before it, and a line
// with colors that was cut ends with a reset, so no color leaks into the
// next line.
func Fit(line string, width int) string {
	if width <= 0 || Width(line) <= width {
		return line
	}
	var b strings.Builder
	used, colored := 0, false
	for i := 0; i < len(line); {
		if l := csiLen(line[i:]); l > 0 {
			b.WriteString(line[i : i+l])
			colored = true
			i += l
			continue
		}
		r, size := utf8.DecodeRuneInString(line[i:])
		w := RuneWidth(r)
		if used+w > width-1 { // room for the ellipsis
			break
		}
		b.WriteString(line[i : i+size])
		used += w
		i += size
	}
	b.WriteString(Ellipsis)
	if colored {
		b.WriteString(sgrReset)
	}
	return b.String()
}

// csiLen returns the length of the control sequence (ESC [, parameter
// and intermediate bytes, one final byte) at the start of s, or 0.
func csiLen(s string) int {
	if len(s) < 2 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s); i++ {
		if c := s[i]; c >= 0x40 && c <= 0x7e {
			return i + 1
		} else if c < 0x20 || c > 0x3f {
			return 0 // not a CSI sequence: counted rune by rune
		}
	}
	return 0
}

// IsTerminal reports whether w is a terminal (an *os.File on one).
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Columns returns the width of the terminal w writes to, or 0 when w is
// not a terminal or its size is unknown. It asks the terminal each time,
// so a caller that draws again after a resize sees the new width.
func Columns(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil || cols <= 0 {
		return 0
	}
	return cols
}
