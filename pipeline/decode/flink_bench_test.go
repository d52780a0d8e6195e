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
	return decodeLinesWith(tb, d.Decode, data)
}

// decodeLinesWith is decodeLines with any decode function (Decode or the
// d7db979 path).
func decodeLinesWith(tb testing.TB, decode func([]byte) (Kind, error), data []byte) int {
	metrics := 0
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n')
		if n < 0 {
			n = len(data)
		}
		k, err := decode(data[:n])
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
// line through Decode, FormatAuto as analyze and run use it; about two
// thirds of the lines are metrics skewlens ignores) and compares it with a
// `wc -l` over the same buffer in the same run: the sub-benchmark "wc-l"
// is the baseline alone, and "decode" reports wc-l-ratio, its own rate
// divided by the rate of bytes.Count over the same buffer, timed in the
// same process right after the decode loop (timer stopped). Both rates of
// the ratio are per CPU second (cpuClock): on a shared machine wall time
// would also count the waits for a core. "new-vs-base" compares Decode
// with the d7db979 Influx path, interleaved (benchVsBase).
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
		c0 := cpuClock()
		for range b.N {
			decodeLines(b, d, data)
		}
		cpu := cpuClock() - c0
		b.StopTimer()
		reportLines(b, b.N*lines)
		cpuRate := float64(b.N*lines) / cpu.Seconds()
		b.ReportMetric(cpuRate, "lines/cpu-s")
		b.ReportMetric(cpuRate/wcRate(b, data, lines), "wc-l-ratio")
	})
	b.Run("new-vs-base", func(b *testing.B) { benchVsBase(b, data, lines) })
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

// wcRate times wcLines over data for at least 100 ms of CPU time and
// returns its lines per CPU second.
func wcRate(b *testing.B, data []byte, lines int) float64 {
	n := 0
	start := cpuClock()
	for cpuClock()-start < 100*time.Millisecond {
		n += wcLines(data)
	}
	if n%lines != 0 {
		b.Fatalf("counted %d lines, not a multiple of %d", n, lines)
	}
	return float64(n) / (cpuClock() - start).Seconds()
}

// cpuClock is processCPU, or wall time where the platform has no CPU
// clock: only differences of it mean anything.
func cpuClock() time.Duration {
	if t, ok := processCPU(); ok {
		return t
	}
	return time.Duration(time.Now().UnixNano())
}

// benchVsBase decodes data with Decode and with the d7db979 Influx path
// (baseDecode) in turn, once each per iteration, so that both see the same
// load on a shared machine, and reports each one's lines/s and the
// speed-up. It times both by process CPU time where the platform has it
// (processCPU), by wall time otherwise.
func benchVsBase(b *testing.B, data []byte, lines int) {
	d, base := NewDecoder(FormatAuto), NewDecoder(FormatAuto)
	baseFn := func(l []byte) (Kind, error) { return baseDecode(base, l) }
	if decodeLinesWith(b, d.Decode, data) != decodeLinesWith(b, baseFn, data) {
		b.Fatal("new and base decode different numbers of metrics")
	}
	b.ReportAllocs()
	b.SetBytes(2 * int64(len(data)))
	var tNew, tBase time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := cpuClock()
		decodeLinesWith(b, d.Decode, data)
		t1 := cpuClock()
		decodeLinesWith(b, baseFn, data)
		tNew, tBase = tNew+t1-t0, tBase+cpuClock()-t1
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*lines)/tNew.Seconds(), "new-lines/s")
	b.ReportMetric(float64(b.N*lines)/tBase.Seconds(), "base-lines/s")
	b.ReportMetric(tBase.Seconds()/tNew.Seconds(), "speedup")
}

// BenchmarkInfluxVsBase is benchVsBase on one Flink InfluxdbReporter line
// of a metric skewlens uses (influxLine), repeated: the line of
// BenchmarkInflux.
func BenchmarkInfluxVsBase(b *testing.B) {
	data := bytes.Repeat([]byte(influxLine+"\n"), 10000)
	benchVsBase(b, data, 10000)
}
