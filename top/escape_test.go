package top

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteKey(t *testing.T) {
	tests := []struct {
		name  string
		key   string
		width int
		cut   bool
		want  string
	}{
		{"plain", "user-42", 40, false, `"user-42"`},
		{"empty", "", 40, false, `""`},
		{"quotes and backslash", `it's "q" \`, 40, false, `"it's \"q\" \\"`},
		{"controls", "a\nb\rc\td\x00e\x1b[2J", 40, false, `"a\nb\rc\td\x00e\x1b[2J"`},
		{"invalid UTF-8", "\xff\xfe ok \xc3\x28", 40, false, `"\xff\xfe ok \xc3("`},
		{"bidi override and zero-width space", "abc\u202edcba\u200b", 40, false, `"abc\u202edcba\u200b"`},
		{"non-breaking space and line separator", "a\u00a0b\u2028", 40, false, `"a\u00a0b\u2028"`},
		{"printable unicode kept", "emoji 🔥 中文 é", 40, false, `"emoji 🔥 中文 é"`},
		{"combining marks beyond two escaped", "z\u0301\u0302\u0303\u0304", 40, false, "\"z\u0301\u0302\\u0303\\u0304\""},
		{"cut to width", strings.Repeat("k", 100), 10, false, `"kkkkkkk"…`},
		{"fits exactly", "kkkkkkkk", 10, false, `"kkkkkkkk"`},
		{"one too many", "kkkkkkkkk", 10, false, `"kkkkkkk"…`},
		{"escape fits exactly", "kkkkkk\n", 10, false, `"kkkkkk\n"`},
		{"escape not split", "kkkkkkk\n", 10, false, `"kkkkkkk"…`},
		{"wide runes counted twice", "中文中文中文", 10, false, `"中文中"…`},
		{"source cut", "short", 40, true, `"short"…`},
		{"source cut inside a rune", "中文\xe4\xb8", 40, true, `"中文"…`},
		{"source cut after invalid bytes", "a\xff\xff", 40, true, `"a\xff\xff"…`},
		{"64 KB key", strings.Repeat("\\'\n", 22000), 20, true, `"\\'\n\\'\n\\'\n\\"…`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := quoteKey(tc.key, tc.width, tc.cut)
			if got != tc.want {
				t.Errorf("quoteKey(%.40q, %d, %t) = %s, want %s", tc.key, tc.width, tc.cut, got, tc.want)
			}
			if w := textWidth(got); w > tc.width {
				t.Errorf("width %d > %d", w, tc.width)
			}
		})
	}
}

func TestCleanText(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		width int
		want  string
	}{
		{"plain", "tm-3.flink.internal", 60, "tm-3.flink.internal"},
		{"quotes stay", `say "hi" \o/`, 60, `say "hi" \o/`},
		{"controls escaped", "Source: kafka\n-> Map\x1b[0m", 60, `Source: kafka\n-> Map\x1b[0m`},
		{"cut", "Subtask 3 of SessionWindow is saturated", 12, "Subtask 3 o…"},
		{"empty", "", 12, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cleanText(tc.s, tc.width, false); got != tc.want {
				t.Errorf("cleanText(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
			}
		})
	}
}

func TestRuneWidth(t *testing.T) {
	tests := []struct {
		r    rune
		want int
	}{
		{'a', 1}, {'é', 1}, {'\u0301', 0}, {'中', 2}, {'한', 2}, {'🔥', 2}, {'Ａ', 2}, {'→', 1}, {'…', 1},
	}
	for _, tc := range tests {
		if got := runeWidth(tc.r); got != tc.want {
			t.Errorf("runeWidth(%q) = %d, want %d", tc.r, got, tc.want)
		}
	}
}

// FuzzQuoteKey checks, for any key and width, that the result is valid
// UTF-8 of printable runes only, fits the width, and gives the key back
// through strconv.Unquote when it was not cut.
func FuzzQuoteKey(f *testing.F) {
	for _, s := range []string{"", "user-42", "a\nb", "\xff\xfe", "\x1b[2J", "🔥中文", "z\u0301\u0302\u0303",
		"abc\u202e", `"\'`, strings.Repeat("k", 300), "\u00ad\ufeff\U000e0001"} {
		f.Add(s, 40)
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, key string, width int) {
		width = minWidth + abs(width)%200
		got := quoteKey(key, width, false)
		checkSafe(t, got)
		if w := textWidth(got); w > width {
			t.Fatalf("quoteKey(%q, %d) = %s: width %d", key, width, got, w)
		}
		if strings.HasSuffix(got, ellipsis) {
			return
		}
		back, err := strconv.Unquote(got)
		if err != nil || back != key {
			t.Fatalf("quoteKey(%q) = %s; Unquote gives %q, %v", key, got, back, err)
		}
	})
}

func abs(v int) int {
	if v < 0 {
		if -v < 0 { // math.MinInt
			return 0
		}
		return -v
	}
	return v
}

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
