package decode

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// flinkInfluxInput returns the InfluxdbReporter output of every recorded
// Flink scenario (testdata/flink/*/influx.txt.gz) concatenated, and its
// number of lines. These are the lines a metrics fleet sends: most of them
// are metrics skewlens ignores, so the benchmark measures the measurement
// and tail scans as much as the tag and field decoding.
func flinkInfluxInput(tb testing.TB) ([]byte, int) {
	tb.Helper()
	files, err := filepath.Glob("../../testdata/flink/*/influx.txt.gz")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no Flink Influx fixtures: %v", err)
	}
	var all bytes.Buffer
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			tb.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := io.Copy(&all, zr); err != nil {
			tb.Fatal(err)
		}
		fh.Close()
		if all.Len() > 0 && all.Bytes()[all.Len()-1] != '\n' {
			all.WriteByte('\n')
		}
	}
	data := all.Bytes()
	return data, bytes.Count(data, []byte{'\n'})
}

// decodeLines splits data at '\n' and decodes every line, as analyze does
// but without the LineReader's copying, and returns the number of metrics
// skewlens uses. It fails on a rejected line: the fixtures are all valid.
func decodeLines(tb testing.TB, d *Decoder, data []byte) int {
	metrics := 0
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n')
		if n < 0 {
			n = len(data)
		}
		k, err := d.Decode(data[:n])
		if err != nil {
			tb.Fatalf("Decode %q: %v", data[:n], err)
		}
		if k == KindMetric {
			metrics++
		}
		data = data[min(n+1, len(data)):]
	}
	return metrics
}

// wcLines is the `wc -l` baseline: count the newlines of data.
func wcLines(data []byte) int { return bytes.Count(data, []byte{'\n'}) }

// BenchmarkFlinkInflux decodes real Flink InfluxdbReporter output (every
// line through Decode, FormatAuto as analyze and run use it) and compares
// it with a `wc -l` over the same buffer in the same run: the sub-benchmark
// "wc-l" is the baseline alone, and "decode" reports wc-l-ratio, its own
// rate divided by the rate of bytes.Count over the same buffer, timed in
// the same process right after the decode loop (timer stopped).
func BenchmarkFlinkInflux(b *testing.B) {
	data, lines := flinkInfluxInput(b)
	b.Run("decode", func(b *testing.B) {
		d := NewDecoder(FormatAuto)
		if decodeLines(b, d, data) == 0 {
			b.Fatal("no metric skewlens uses in the fixtures")
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		b.ResetTimer()
		for range b.N {
			decodeLines(b, d, data)
		}
		b.StopTimer()
		decodeRate := float64(b.N*lines) / b.Elapsed().Seconds()
		b.ReportMetric(decodeRate, "lines/s")
		b.ReportMetric(decodeRate/wcRate(b, data, lines), "wc-l-ratio")
	})
	b.Run("wc-l", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		n := 0
		for range b.N {
			n += wcLines(data)
		}
		if n != b.N*lines {
			b.Fatalf("counted %d lines, want %d", n, b.N*lines)
		}
		reportLines(b, n)
	})
}

// wcRate times wcLines over data for at least 100 ms and returns its
// lines/s.
func wcRate(b *testing.B, data []byte, lines int) float64 {
	n := 0
	start := time.Now()
	for time.Since(start) < 100*time.Millisecond {
		n += wcLines(data)
	}
	if n%lines != 0 {
		b.Fatalf("counted %d lines, not a multiple of %d", n, lines)
	}
	return float64(n) / time.Since(start).Seconds()
}
