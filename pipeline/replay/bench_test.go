package replay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
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

// benchFleet writes (once per machine) a minute of a simulated fleet of
// 20k subtasks (SKEWLENS_BENCH_FLEET_SUBTASKS changes it): metrics of
// every subtask in the simulator's mix of formats, key samples from about
// 5 % of the tasks, five incidents. It returns the path.
func benchFleet(b *testing.B) string {
	b.Helper()
	subtasks := 20000
	if v := os.Getenv("SKEWLENS_BENCH_FLEET_SUBTASKS"); v != "" {
		if _, err := fmtSscan(v, &subtasks); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(os.TempDir(), "skewlens-bench-fleet-"+itoa(subtasks)+".log")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	cfg := simulate.DefaultFleetConfig()
	cfg.Seed, cfg.Subtasks, cfg.Duration = 1, subtasks, time.Minute
	fleet, err := simulate.NewFleet(cfg)
	if err != nil {
		b.Fatal(err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := fleet.WriteTo(w); err != nil {
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

// BenchmarkAnalyzeFleet is `skewlens analyze` (minus printing) on a
// metrics fleet, mostly Flink Influx, Prometheus and JSON metric lines.
// BenchmarkAnalyzeFleetLineCount is its baseline in the same run, as
// `wc -l` is: reading the same file and counting its lines. The
// benchmark also reports the ratio itself, so that a shared machine
// does not skew it: "lines/cpu-s" is lines per second of the process's
// CPU time (user and system: the reads count), and "x-line-count"
// divides it by the same rate of countLines on the same file, timed
// right after (for at least 300 ms of CPU time).
func BenchmarkAnalyzeFleet(b *testing.B) {
	path := benchFleet(b)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	var lines uint64
	c0 := cpuTime()
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		eng, _ := skew.New(skew.Config{})
		stage, _ := window.New(window.Config{}, eng)
		n := 0
		st, err := Run(context.Background(), []Input{{Name: "fleet", R: f}}, stage, Options{}, func(*skew.Finding) error { n++; return nil })
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 || st.Window.Metrics == 0 {
			b.Fatalf("%d findings from %d metrics", n, st.Window.Metrics)
		}
		lines += st.Lines
	}
	rate := float64(lines) / (cpuTime() - c0).Seconds()
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(rate, "lines/cpu-s")
	b.StopTimer()
	buf := make([]byte, 1<<20)
	counted, w0 := 0, cpuTime()
	for cpuTime()-w0 < 300*time.Millisecond {
		counted += countLines(b, path, buf)
	}
	b.ReportMetric(rate/(float64(counted)/(cpuTime()-w0).Seconds()), "x-line-count")
}

// countLines reads the file at path through buf and counts its lines, as
// wc -l does.
func countLines(b *testing.B, path string, buf []byte) int {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for {
		n, err := f.Read(buf)
		lines += bytes.Count(buf[:n], []byte{'\n'})
		if err != nil {
			return lines
		}
	}
}

func BenchmarkAnalyzeFleetLineCount(b *testing.B) {
	path := benchFleet(b)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	buf := make([]byte, 1<<20)
	var lines int
	c0 := cpuTime()
	for b.Loop() {
		lines += countLines(b, path, buf)
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(lines)/(cpuTime()-c0).Seconds(), "lines/cpu-s")
}

// flinkInflux returns the Influx captures of real Flink 2.3 jobs under
// testdata/flink, one uncompressed buffer per job.
func flinkInflux(b *testing.B) [][]byte {
	b.Helper()
	files, err := filepath.Glob("../../testdata/flink/*/influx.txt.gz")
	if err != nil || len(files) == 0 {
		b.Fatalf("no Flink Influx fixtures: %v", err)
	}
	var out [][]byte
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		fh.Close()
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// BenchmarkFlinkInfluxDecodeAndEngine is what a metrics fleet costs per
// line: real Flink Influx reporter output read, decoded, windowed and
// diagnosed (replay.Run: analyze minus printing), each job's capture with
// an engine of its own. Its "lines/cpu-s" (lines per second of the
// process's CPU time, which a shared machine does not inflate) is the
// issue's 3 M target; "x-wc-l" divides it by the rate of counting the
// same lines (bytes.Count, as wc -l does) timed right after.
func BenchmarkFlinkInfluxDecodeAndEngine(b *testing.B) {
	jobs := flinkInflux(b)
	var size int64
	lines := 0
	for _, d := range jobs {
		size += int64(len(d))
		lines += bytes.Count(d, []byte{'\n'})
	}
	b.SetBytes(size)
	b.ReportAllocs()
	c0 := cpuTime()
	for b.Loop() {
		for _, d := range jobs {
			eng, _ := skew.New(skew.Config{})
			stage, _ := window.New(window.Config{}, eng)
			st, err := Run(context.Background(), []Input{{Name: "flink", R: bytes.NewReader(d)}}, stage, Options{}, func(*skew.Finding) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			if st.Window.Metrics == 0 || st.Bad.Total() != 0 {
				b.Fatalf("%d metrics, %d bad lines", st.Window.Metrics, st.Bad.Total())
			}
		}
	}
	cpu := cpuTime() - c0
	n := float64(b.N * lines)
	b.ReportMetric(n/b.Elapsed().Seconds(), "lines/s")
	rate := n / cpu.Seconds()
	b.ReportMetric(rate, "lines/cpu-s")
	// The baseline: counting the same lines, for at least 100 ms of CPU.
	counted, w0 := 0, cpuTime()
	for cpuTime()-w0 < 100*time.Millisecond {
		for _, d := range jobs {
			counted += bytes.Count(d, []byte{'\n'})
		}
	}
	b.ReportMetric(rate/(float64(counted)/(cpuTime()-w0).Seconds()), "x-wc-l")
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
