package termtext

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
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
		{"no limit", strings.Repeat("k", 300) + "\x1b[31m", 0, false, `"` + strings.Repeat("k", 300) + `\x1b[31m"`},
		{"no limit, source cut", "中文\xe4\xb8", 0, true, `"中文"…`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Quote(tc.key, tc.width, tc.cut)
			if got != tc.want {
				t.Errorf("Quote(%.40q, %d, %t) = %s, want %s", tc.key, tc.width, tc.cut, got, tc.want)
			}
			if w := Width(got); tc.width > 0 && w > tc.width {
				t.Errorf("width %d > %d", w, tc.width)
			}
		})
	}
}

func TestClean(t *testing.T) {
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
		{"no limit", "Source: " + strings.Repeat("Map -> ", 50) + "\x1b]0;t\x07", 0, "Source: " + strings.Repeat("Map -> ", 50) + `\x1b]0;t\x07`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Clean(tc.s, tc.width, false); got != tc.want {
				t.Errorf("Clean(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
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
		if got := RuneWidth(tc.r); got != tc.want {
			t.Errorf("RuneWidth(%q) = %d, want %d", tc.r, got, tc.want)
		}
	}
}

// FuzzQuote checks, for any key and width, that the result is valid
// UTF-8 of printable runes only, fits the width, and gives the key back
// through strconv.Unquote when it was not cut.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "user-42", "a\nb", "\xff\xfe", "\x1b[2J", "🔥中文", "z\u0301\u0302\u0303",
		"abc\u202e", `"\'`, strings.Repeat("k", 300), "\u00ad\ufeff\U000e0001"} {
		f.Add(s, 40)
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, key string, width int) {
		width = 8 + abs(width)%200
		got := Quote(key, width, false)
		checkSafe(t, got)
		if w := Width(got); w > width {
			t.Fatalf("Quote(%q, %d) = %s: width %d", key, width, got, w)
		}
		if strings.HasSuffix(got, Ellipsis) {
			return
		}
		back, err := strconv.Unquote(got)
		if err != nil || back != key {
			t.Fatalf("Quote(%q) = %s; Unquote gives %q, %v", key, got, back, err)
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

// checkSafe fails t when s holds anything but printable runes.
func checkSafe(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("invalid UTF-8 in %q", s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			t.Fatalf("unsafe rune %U in %q", r, s)
		}
	}
}
