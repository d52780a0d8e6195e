package top

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkSafe fails t when s holds anything but newlines and printable
// runes (ANSI color sequences removed first).
func checkSafe(t *testing.T, s string) {
	t.Helper()
	s = stripSGR(s)
	if !utf8.ValidString(s) {
		t.Fatalf("invalid UTF-8 in %q", s)
	}
	for _, r := range s {
		if r != '\n' && !strconv.IsPrint(r) {
			t.Fatalf("unsafe rune %U in %q", r, s)
		}
	}
}

// stripSGR removes the color sequences Render writes.
func stripSGR(s string) string {
	for _, sgr := range []string{sgrBold, sgrDim, sgrRed, sgrYellow, sgrCyan, sgrRedB, sgrReset} {
		s = strings.ReplaceAll(s, sgr, "")
	}
	return s
}
