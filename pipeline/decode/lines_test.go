package decode

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type gotLine struct {
	line string
	n    int
	err  Reason // ReasonUnknown: no error
}

func readAll(t *testing.T, lr *LineReader) ([]gotLine, error) {
	t.Helper()
	var out []gotLine
	for range 1_000_000 {
		line, n, err := lr.Next()
		if err == io.EOF {
			// EOF is sticky.
			if _, _, err2 := lr.Next(); err2 != io.EOF {
				t.Errorf("second Next after EOF: %v", err2)
			}
			return out, nil
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				return out, err
			}
			if line != nil {
				t.Errorf("line %d: non-nil line with error", n)
			}
			out = append(out, gotLine{"", n, e.Reason})
			continue
		}
		out = append(out, gotLine{string(line), n, ReasonUnknown})
	}
	t.Fatal("LineReader does not end")
	return nil, nil
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 20)
	tests := []struct {
		name string
		in   string
		max  int
		want []gotLine
	}{
		{"empty", "", 0, nil},
		{"one line no newline", "abc", 0, []gotLine{{"abc", 1, 0}}},
		{"one line", "abc\n", 0, []gotLine{{"abc", 1, 0}}},
		{"blank lines", "\n\na\n\n", 0, []gotLine{{"", 1, 0}, {"", 2, 0}, {"a", 3, 0}, {"", 4, 0}}},
		{"crlf", "a\r\nb\r\n\r\nc\r", 0, []gotLine{{"a", 1, 0}, {"b", 2, 0}, {"", 3, 0}, {"c", 4, 0}}},
		{"only one cr stripped", "a\r\r\n", 0, []gotLine{{"a\r", 1, 0}}},
		{"bare cr is not a newline", "a\rb\n", 0, []gotLine{{"a\rb", 1, 0}}},
		{"bom", "\xEF\xBB\xBFa\n\xEF\xBB\xBFb\n", 0, []gotLine{{"a", 1, 0}, {"\xEF\xBB\xBFb", 2, 0}}},
		{"exact limit", "0123456789\n0123456789\r\n", 10, []gotLine{{"0123456789", 1, 0}, {"0123456789", 2, 0}}},
		{"one over", "01234567890\nok\n", 10, []gotLine{{"", 1, ReasonLineTooLong}, {"ok", 2, 0}}},
		{"one over with crlf", "01234567890\r\nok", 10, []gotLine{{"", 1, ReasonLineTooLong}, {"ok", 2, 0}}},
		{"long in middle", "a\n" + long + long + long + "\nb\n", 10, []gotLine{{"a", 1, 0}, {"", 2, ReasonLineTooLong}, {"b", 3, 0}}},
		{"long at end no newline", "a\n" + long, 10, []gotLine{{"a", 1, 0}, {"", 2, ReasonLineTooLong}}},
		{"two long", long + "\n" + long + "\n", 10, []gotLine{{"", 1, ReasonLineTooLong}, {"", 2, ReasonLineTooLong}}},
	}
	for _, tc := range tests {
		for _, slow := range []bool{false, true} {
			name := tc.name
			if slow {
				name += "/onebyte"
			}
			t.Run(name, func(t *testing.T) {
				var r io.Reader = strings.NewReader(tc.in)
				if slow {
					r = iotest.OneByteReader(r)
				}
				got, err := readAll(t, NewLineReader(r, tc.max))
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("line %d: got %+v, want %+v", i, got[i], tc.want[i])
					}
				}
			})
		}
	}
}

func TestLineReaderHugeLines(t *testing.T) {
	// Lines far longer than the buffer are skipped without growing it.
	var in bytes.Buffer
	in.WriteString("first\n")
	in.Write(bytes.Repeat([]byte("y"), 5<<20))
	in.WriteString("\nsecond\n")
	in.Write(bytes.Repeat([]byte("z"), 3<<20))
	lr := NewLineReader(iotest.HalfReader(&in), 0)
	got, err := readAll(t, lr)
	if err != nil {
		t.Fatal(err)
	}
	want := []gotLine{{"first", 1, 0}, {"", 2, ReasonLineTooLong}, {"second", 3, 0}, {"", 4, ReasonLineTooLong}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("got %+v, want %+v", got[i], want[i])
		}
	}
	if lr.br.Size() > DefaultMaxLine+4096 {
		t.Errorf("buffer grew to %d", lr.br.Size())
	}
}

func TestLineReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom))
	lr := NewLineReader(r, 0)
	for _, want := range []string{"a", "b"} {
		line, _, err := lr.Next()
		if err != nil || string(line) != want {
			t.Fatalf("Next = %q, %v; want %q", line, err, want)
		}
	}
	for range 2 {
		if _, _, err := lr.Next(); err != boom {
			t.Fatalf("Next err = %v, want boom", err)
		}
	}
}

func TestLineReaderMessage(t *testing.T) {
	lr := NewLineReader(strings.NewReader("0123456789ab\n"), 10)
	_, n, err := lr.Next()
	if n != 1 || err == nil || err.Error() != "line too long: longer than 10 bytes; skipped" {
		t.Errorf("Next = %d, %v", n, err)
	}
	if !errors.Is(err, &Error{Reason: ReasonLineTooLong}) {
		t.Errorf("errors.Is failed for %v", err)
	}
}

func TestLineReaderDecodeAllocs(t *testing.T) {
	// Steady-state reading plus decoding allocates nothing per line.
	var in bytes.Buffer
	lines := []string{keyLine, metricJSONLine, influxLine, promLine, "", "# comment"}
	for range 2000 {
		for _, l := range lines {
			in.WriteString(l)
			in.WriteString("\n")
		}
	}
	data := in.Bytes()
	rd := bytes.NewReader(data)
	lr := NewLineReader(rd, 0)
	d := NewDecoder(FormatAuto)
	d.DefaultTS = 1
	run := func() {
		for {
			line, _, err := lr.Next()
			if err == io.EOF {
				return
			}
			if _, err := d.Decode(line); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	allocs := testing.AllocsPerRun(5, func() {
		rd.Reset(data)
		lr.Reset(rd)
		run()
	})
	if lr.LineNumber() != 2000*len(lines) {
		t.Errorf("LineNumber %d after Reset and a full pass", lr.LineNumber())
	}
	if allocs != 0 {
		t.Errorf("%v allocs per %d lines", allocs, 2000*len(lines))
	}
}
