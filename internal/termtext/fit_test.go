package termtext

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWidth(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want int
	}{
		{"ascii", "hot_key", 7},
		{"CJK counts twice", "中文", 4},
		{"emoji counts twice", "🔥x", 3},
		{"combining mark counts zero", "e\u0301", 1},
		{"colors take no columns", "\x1b[1;31mred\x1b[0m", 3},
		{"escaped escape counts as text", `\x1b[31m`, 8},
		{"empty", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Width(tc.s); got != tc.want {
				t.Errorf("Width(%q) = %d, want %d", tc.s, got, tc.want)
			}
		})
	}
}

func TestFit(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		width int
		want  string
	}{
		{"fits", "abc", 3, "abc"},
		{"no limit", strings.Repeat("x", 500), 0, strings.Repeat("x", 500)},
		{"negative is no limit", "abcdef", -1, "abcdef"},
		{"cut with ellipsis", "abcdef", 4, "abc…"},
		{"width one", "abcdef", 1, "…"},
		{"CJK not split", "中文中文", 6, "中文…"},
		{"CJK at the edge leaves a column free", "a中文中文", 6, "a中文…"},
		{"emoji not split", "🔥🔥🔥", 5, "🔥🔥…"},
		{"combining mark kept with its base", "ae\u0301bcdef", 3, "ae\u0301…"},
		{"escaped key cut between runes", Quote("new\nline\x1b[31m", 0, false), 12, `"new\nline\…`},
		{"colors kept and reset", "\x1b[1mtitle\x1b[0m and more", 6, "\x1b[1mtitle\x1b[0m…\x1b[0m"},
		{"colors fit uncut", "\x1b[1mtitle\x1b[0m", 5, "\x1b[1mtitle\x1b[0m"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Fit(tc.line, tc.width)
			if got != tc.want {
				t.Errorf("Fit(%q, %d) = %q, want %q", tc.line, tc.width, got, tc.want)
			}
			if tc.width > 0 && Width(got) > tc.width {
				t.Errorf("Fit(%q, %d) is %d columns wide", tc.line, tc.width, Width(got))
			}
			if !utf8.ValidString(got) {
				t.Errorf("Fit(%q, %d) = %q: invalid UTF-8", tc.line, tc.width, got)
			}
		})
	}
}

// TestHostileFits draws hostile names the way the text lines and top do
// (Clean or Quote, then Fit) at many widths: no raw control character
// reaches the output, no line is wider than asked, and the cut never
// splits a rune.
func TestHostileFits(t *testing.T) {
	hostile := []string{
		"\x1b[31mred\x1b[0m",
		"\x1b[2J\x1b[H",
		"\x1b]0;title\x07",
		"new\nline\r\n",
		"tab\there",
		`"quoted" \ back`,
		"\xff\xfe\xc3\x28",
		"abc\u202edcba\u2066",
		"z\u0301\u0302\u0303\u0304",
		"中文中文中文中文中文",
		"emoji 🔥🔥🔥 ok",
		"\x00\x7f\u0085\u2028",
	}
	for _, s := range hostile {
		for width := 1; width <= 40; width++ {
			for _, piece := range []string{Quote(s, 0, false), Clean(s, 0, false), Quote(s, max(width, 3), false), Clean(s, width, false)} {
				line := Fit("task "+piece+" carries 40%", width)
				if Width(line) > width {
					t.Fatalf("%q at width %d: %q is %d columns", s, width, line, Width(line))
				}
				if !utf8.ValidString(line) {
					t.Fatalf("%q at width %d: invalid UTF-8 %q", s, width, line)
				}
				checkSafe(t, line)
				if bytes.ContainsAny([]byte(line), "\x1b\n\r\x07\x00") {
					t.Fatalf("%q at width %d: raw control byte in %q", s, width, line)
				}
			}
		}
	}
}
