package replay

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
)

// MaybeGunzip returns a reader of r's content, decompressed when it starts
// with the gzip magic bytes, so recorded incidents can stay compressed. It
// looks at the content, not the file name.
func MaybeGunzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
		return br, nil // Short or plain input: the line reader reports what it finds.
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("gzip header: %w", err)
	}
	return zr, nil
}
