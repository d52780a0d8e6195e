package decode

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
)

// DefaultMaxLine is the line-length limit LineReader applies when given 0.
const DefaultMaxLine = 1 << 20

// maxMaxLine caps the limit (and so the buffer LineReader allocates).
const maxMaxLine = 1 << 30

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// LineReader splits a stream into lines without reading it whole. It reads
// through one bufio buffer of about maxLine bytes, allocated once; lines
// are returned as slices of that buffer (no copy).
//
// A line longer than the limit is skipped entirely (the reader discards
// it up to its newline) and reported once, as an *Error with
// ReasonLineTooLong; reading then goes on with the next line.
//
// A LineReader is not safe for concurrent use.
type LineReader struct {
	br  *bufio.Reader
	max int
	n   int
	err error // sticky: returned by every later Next
}

// NewLineReader returns a LineReader over r that accepts lines of up to
// maxLine bytes (not counting the "\n" or "\r\n" ending). maxLine <= 0
// means DefaultMaxLine.
func NewLineReader(r io.Reader, maxLine int) *LineReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	maxLine = min(maxLine, maxMaxLine)
	// Room for a maximal line plus "\r\n" (and a byte-order mark): such a
	// line is always returned by one ReadSlice, so a full buffer means
	// "too long".
	size := max(maxLine+len(utf8BOM)+2, 4096)
	return &LineReader{br: bufio.NewReaderSize(r, size), max: maxLine}
}

// Next returns the next line without its "\n" and without one trailing
// '\r', and its 1-based line number. The slice is valid until the next
// call to Next. A final line without a newline is returned like any other.
// At the end of input Next returns io.EOF (and then keeps returning it); a
// read error is returned likewise, after any line data read before it.
// A UTF-8 byte-order mark at the start of the first line is removed.
func (lr *LineReader) Next() (line []byte, n int, err error) {
	if lr.err != nil {
		return nil, lr.n, lr.err
	}
	line, err = lr.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		lr.n++
		for err == bufio.ErrBufferFull {
			_, err = lr.br.ReadSlice('\n')
		}
		if err != nil {
			lr.err = err
		}
		return nil, lr.n, lr.tooLong()
	}
	if err != nil {
		lr.err = err
		if len(line) == 0 {
			return nil, lr.n, err
		}
	}
	lr.n++
	if k := len(line); k > 0 && line[k-1] == '\n' {
		line = line[:k-1]
	}
	if k := len(line); k > 0 && line[k-1] == '\r' {
		line = line[:k-1]
	}
	if lr.n == 1 {
		line = bytes.TrimPrefix(line, utf8BOM)
	}
	if len(line) > lr.max {
		return nil, lr.n, lr.tooLong()
	}
	return line, lr.n, nil
}

func (lr *LineReader) tooLong() *Error {
	return newErr(ReasonLineTooLong, "", "longer than "+strconv.Itoa(lr.max)+" bytes; skipped")
}

// Reset makes lr read from r, starting again at line 1, and keeps its
// buffer (no allocation). Only tests call Reset and LineNumber today
// (callers count lines themselves); they are kept for reusing one reader
// across files and for error positions.
func (lr *LineReader) Reset(r io.Reader) {
	lr.br.Reset(r)
	lr.n = 0
	lr.err = nil
}

// LineNumber returns the number of the line last returned (0 before the
// first).
func (lr *LineReader) LineNumber() int { return lr.n }
