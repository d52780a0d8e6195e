package replay

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// benchIncident writes (once per machine) a hot_key incident of about 1 GB,
// mostly key samples as a busy job's sampler sends them, and returns its
// path. SKEWLENS_BENCH_MB scales it down for a quick look.
func benchIncident(b *testing.B) string {
	b.Helper()
	mb := 1000
	if v := os.Getenv("SKEWLENS_BENCH_MB"); v != "" {
		if _, err := fmtSscan(v, &mb); err != nil {
			b.Fatal(err)
		}
	}
	// 170k samples per 10 s interval come to about 36 MB per interval.
	intervals := max(1, mb/36)
	path := filepath.Join(os.TempDir(), "skewlens-bench-"+itoa(intervals)+".log")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	g, err := simulate.New(simulate.Config{Scenario: simulate.HotKey, Duration: time.Duration(intervals) * 10 * time.Second,
		SamplesPerInterval: 170000, MetricFormat: "mixed"})
	if err != nil {
		b.Fatal(err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := g.WriteTo(w); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkAnalyzeFile is `skewlens analyze` end to end, minus printing:
// read, decode, window, sketch and diagnose a ~1 GB incident file.
func BenchmarkAnalyzeFile(b *testing.B) {
	path := benchIncident(b)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	var lines uint64
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		eng, _ := skew.New(skew.Config{})
		stage, _ := window.New(window.Config{}, eng)
		n := 0
		st, err := Run(context.Background(), []Input{{Name: "bench", R: f}}, stage, Options{}, func(*skew.Finding) error { n++; return nil })
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 || st.Bad.Total() != 0 {
			b.Fatalf("%d findings, %d bad lines", n, st.Bad.Total())
		}
		lines += st.Lines
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }
func itoa(i int) string                      { return strconv.Itoa(i) }

// sampleLines returns n key-sample lines of a hot_key incident, as the
// simulator writes them.
func sampleLines(b *testing.B, n int) [][]byte {
	b.Helper()
	g, err := simulate.New(simulate.Config{Scenario: simulate.HotKey, Duration: time.Minute, SamplesPerInterval: n})
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	buf, _ := g.Next(nil)
	for _, l := range bytes.Split(buf, []byte("\n")) {
		if bytes.Contains(l, []byte(`"key":`)) {
			lines = append(lines, l)
		}
	}
	if len(lines) < n/2 {
		b.Fatalf("only %d sample lines", len(lines))
	}
	return lines
}

// BenchmarkKeySampleDecodeAndUpdate is the per-sample hot path: decode one
// JSON key sample and add it to the engine (window lookup, routing check,
// Space-Saving update). BenchmarkKeySampleDecodeAndExactCount is the
// baseline in the same run: the same decode feeding an exact map counter.
func BenchmarkKeySampleDecodeAndUpdate(b *testing.B) {
	lines := sampleLines(b, 8192)
	eng, _ := skew.New(skew.Config{})
	d := decode.NewDecoder(decode.FormatAuto)
	b.SetBytes(avgLineSize(lines))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l := lines[i%len(lines)]
		if _, err := d.Decode(l); err != nil {
			b.Fatal(err)
		}
		// Keep every sample inside one window so the benchmark measures the
		// update, not window turnover.
		d.Sample.TS = 1593004200000
		if eng.AddSample(&d.Sample) != skew.Accepted {
			b.Fatal("sample not accepted")
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkKeySampleDecodeAndExactCount(b *testing.B) {
	lines := sampleLines(b, 8192)
	d := decode.NewDecoder(decode.FormatAuto)
	counts := map[string]float64{}
	b.SetBytes(avgLineSize(lines))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := d.Decode(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
		counts[d.Sample.Key] += d.Sample.Weight
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// avgLineSize is the mean size of lines, newline included, for b.SetBytes.
func avgLineSize(lines [][]byte) int64 {
	var size int
	for _, l := range lines {
		size += len(l) + 1
	}
	return int64(size / len(lines))
}
