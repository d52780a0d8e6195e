package decode

import (
	"strconv"
	"strings"
	"testing"
)

// checkParseInt fails unless parseInt agrees with strconv.ParseInt on s
// where strconv accepts it, and, where only parseInt accepts it, s is a
// number parseFloat reads (1e3, 5.0) of the same value.
func checkParseInt(t *testing.T, s string) {
	t.Helper()
	got, ok := parseInt(s)
	want, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err == nil && (!ok || got != want):
		t.Fatalf("parseInt(%q) = %d, %v; strconv %d", s, got, ok, want)
	case err != nil && ok:
		if f, fok := parseFloat(s); !fok || f != float64(got) {
			t.Fatalf("parseInt(%q) = %d, but strconv: %v and parseFloat %v, %v", s, got, err, f, fok)
		}
	}
}

// TestParseIntEightAtATime: digit strings of every length around the
// eight-digit steps and the int64 limit, signed and not, with a non-digit
// (each of the bytes just outside '0'..'9', and '.', 'e', a high byte) at
// every position.
func TestParseIntEightAtATime(t *testing.T) {
	const digits = "9223372036854775807123456789"
	for n := 1; n <= 24; n++ {
		for _, base := range []string{digits[:n], strings.Repeat("9", n), strings.Repeat("0", n-1) + "1", "1" + strings.Repeat("0", n-1)} {
			for _, sign := range []string{"", "-", "+"} {
				checkParseInt(t, sign+base)
				for p := range n {
					for _, c := range []byte{'/', ':', '.', 'e', 0x80 | '5', ' '} {
						b := []byte(base)
						b[p] = c
						checkParseInt(t, sign+string(b))
					}
				}
			}
		}
	}
	for _, tc := range []struct {
		s    string
		want int64
	}{
		{"1593004193363000000", 1593004193363000000},
		{"12345678", 12345678},
		{"0000000012345678", 12345678},
		{"-9223372036854775808", -9223372036854775808},
	} {
		if got, ok := parseInt(tc.s); !ok || got != tc.want {
			t.Errorf("parseInt(%q) = %d, %v; want %d", tc.s, got, ok, tc.want)
		}
	}
}

// FuzzParseInt compares parseInt with strconv.ParseInt.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "1593004193363000000", "99999999999999999999", "12345678x", "1e3", "00000000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(checkParseInt)
}
