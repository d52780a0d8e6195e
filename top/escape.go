package top

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ellipsis marks text that was cut.
const ellipsis = "…"

// maxCombining is how many combining marks in a row are shown as they are;
// more are escaped, so that a key cannot stack marks over other lines.
const maxCombining = 2

// quoteKey returns key as a terminal-safe, double-quoted string at most
// width columns wide, in Go's escaping (strconv.Unquote gives key back when
// nothing was cut): control characters, invalid UTF-8, format characters
// (such as bidi overrides) and other non-printable runes are escaped. A
// key that was cut, or was cut already before (cut: the source read only a
// prefix), ends in `"…`; a trailing incomplete UTF-8 sequence of such a
// prefix is dropped rather than escaped.
func quoteKey(key string, width int, cut bool) string {
	return escape(key, width, true, cut)
}

// cleanText returns s as terminal-safe, unquoted text at most width
// columns wide, escaped like quoteKey but without quotes; cut text ends in
// "…".
func cleanText(s string, width int, cut bool) string {
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
	// pieces are appended until they would not fit; the widths let the
	// cut back off to make room for the ellipsis.
	var b strings.Builder
	type mark struct{ len, width int }
	var marks []mark
	used, combining := 0, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		piece, w := escapeRune(s[i:i+size], r, size, quote, &combining)
		if frame+used+w > width {
			cut = true
			break
		}
		marks = append(marks, mark{b.Len(), used})
		b.WriteString(piece)
		used += w
		i += size
	}
	out := b.String()
	if cut {
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
		out += ellipsis
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
	return raw, runeWidth(r)
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

// isWide reports whether a terminal shows r two columns wide: the East
// Asian wide and fullwidth blocks and the emoji blocks. It approximates
// Unicode's East Asian Width property, well enough to keep columns aligned
// for common scripts.
func isWide(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x115f, // Hangul Jamo
		r == 0x231a, r == 0x231b, r == 0x2329, r == 0x232a,
		r >= 0x23e9 && r <= 0x23ec, r == 0x2614, r == 0x2615,
		r >= 0x2e80 && r <= 0x303e, // CJK radicals, punctuation
		r >= 0x3041 && r <= 0x33ff, // kana, CJK compatibility
		r >= 0x3400 && r <= 0x4dbf, // CJK extension A
		r >= 0x4e00 && r <= 0x9fff, // CJK unified ideographs
		r >= 0xa000 && r <= 0xa4cf, // Yi
		r >= 0xa960 && r <= 0xa97f, // Hangul Jamo extended A
		r >= 0xac00 && r <= 0xd7a3, // Hangul syllables
		r >= 0xf900 && r <= 0xfaff, // CJK compatibility ideographs
		r >= 0xfe10 && r <= 0xfe19, // vertical forms
		r >= 0xfe30 && r <= 0xfe6f, // CJK compatibility forms
		r >= 0xff00 && r <= 0xff60, // fullwidth forms
		r >= 0xffe0 && r <= 0xffe6,
		r >= 0x16fe0 && r <= 0x18aff, // Tangut
		r >= 0x1b000 && r <= 0x1b2ff, // kana supplement
		r == 0x1f004, r == 0x1f0cf, r == 0x1f18e,
		r >= 0x1f191 && r <= 0x1f19a,
		r >= 0x1f200 && r <= 0x1f2ff,
		r >= 0x1f300 && r <= 0x1f64f, // emoji
		r >= 0x1f680 && r <= 0x1f6ff,
		r >= 0x1f7e0 && r <= 0x1f7eb,
		r >= 0x1f90c && r <= 0x1f9ff,
		r >= 0x1fa70 && r <= 0x1faff,
		r >= 0x20000 && r <= 0x2fffd, // CJK extensions B..F
		r >= 0x30000 && r <= 0x3fffd:
		return true
	}
	return false
}

// runeWidth is the number of columns a printable rune takes.
func runeWidth(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me):
		return 0
	case isWide(r):
		return 2
	}
	return 1
}

// textWidth is the number of columns s takes; s must be escaped (only
// printable runes).
func textWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}
