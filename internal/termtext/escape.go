package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// Ellipsis marks text that was cut.
const Ellipsis = "…"

// maxCombining is how many combining marks in a row are shown as they are;
// more are escaped, so that a key cannot stack marks over other lines.
const maxCombining = 2

// Quote returns s as a terminal-safe, double-quoted string at most width
// columns wide (width <= 0: no limit), in Go's escaping (strconv.Unquote
// gives s back when nothing was cut): control characters, invalid UTF-8,
// format characters (such as bidi overrides) and other non-printable
// runes are escaped. A string that was cut, or was cut already before
// (cut: the source read only a prefix), ends in `"…`; a trailing
// incomplete UTF-8 sequence of such a prefix is dropped rather than
// escaped. Keys are drawn with it.
func Quote(s string, width int, cut bool) string {
	return escape(s, width, true, cut)
}

// Clean returns s as terminal-safe, unquoted text at most width columns
// wide (width <= 0: no limit), escaped like Quote but without quotes (a
// quote or backslash stays as it is); cut text ends in "…". Names,
// summaries and errors are drawn with it.
func Clean(s string, width int, cut bool) string {
	return escape(s, width, false, cut)
}

func escape(s string, width int, quote, cut bool) string {
	if cut {
		s = dropIncompleteRune(s)
	}
	frame := 0 // columns of the quotes
	if quote {
		frame = 2
	}
	limited := width > 0
	// pieces are appended until they would not fit; the widths let the
	// cut back off to make room for the ellipsis.
	var b strings.Builder
	type mark struct{ len, width int }
	var marks []mark
	used, combining := 0, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		piece, w := escapeRune(s[i:i+size], r, size, quote, &combining)
		if limited && frame+used+w > width {
			cut = true
			break
		}
		if limited {
			marks = append(marks, mark{b.Len(), used})
		}
		b.WriteString(piece)
		used += w
		i += size
	}
	out := b.String()
	if cut && limited {
		// Make room for the ellipsis.
		for len(marks) > 0 && frame+used+1 > width {
			m := marks[len(marks)-1]
			marks = marks[:len(marks)-1]
			out, used = out[:m.len], m.width
		}
	}
	if quote {
		out = `"` + out + `"`
	}
	if cut {
		out += Ellipsis
	}
	return out
}

// escapeRune returns how one rune (raw: its bytes in the source) is shown
// and its width in columns.
func escapeRune(raw string, r rune, size int, quote bool, combining *int) (string, int) {
	if r == utf8.RuneError && size == 1 {
		*combining = 0
		return fmt.Sprintf(`\x%02x`, raw[0]), 4
	}
	if unicode.In(r, unicode.Mn, unicode.Me) {
		*combining++
		if *combining <= maxCombining && strconv.IsPrint(r) {
			return raw, 0
		}
		return escapeCode(r), len(escapeCode(r))
	}
	*combining = 0
	switch r {
	case '\n':
		return `\n`, 2
	case '\r':
		return `\r`, 2
	case '\t':
		return `\t`, 2
	case '"', '\\':
		if quote {
			return `\` + raw, 2
		}
		return raw, 1
	}
	if !strconv.IsPrint(r) {
		e := escapeCode(r)
		return e, len(e)
	}
	return raw, RuneWidth(r)
}

// escapeCode is Go's escape of a rune: \x.. below 0x80, else \u.... or
// \U.........
func escapeCode(r rune) string {
	switch {
	case r < 0x80:
		return fmt.Sprintf(`\x%02x`, r)
	case r < 0x10000:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}

// dropIncompleteRune removes a UTF-8 sequence cut short at the end of s
// (a prefix read with substring() may end inside one).
func dropIncompleteRune(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}

// RuneWidth is the number of columns a printable rune takes, by
// Unicode's East Asian Width and emoji properties as go-runewidth tables
// them (maintained with each Unicode version, where a hand-kept list of
// blocks drifts). The condition is fixed rather than read from the
// locale: ambiguous runes are narrow and emoji wide, so output is the
// same on every terminal and golden files stay stable.
func RuneWidth(r rune) int {
	c := runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}
	return c.RuneWidth(r)
}
