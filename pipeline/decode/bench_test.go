package decode

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

func reportLines(b *testing.B, lines int) {
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

func benchDecode(b *testing.B, f Format, line string) {
	d := NewDecoder(f)
	buf := []byte(line)
	if k, err := d.Decode(buf); k == KindNone || err != nil {
		b.Fatalf("Decode: %v %v", k, err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for range b.N {
		if _, err := d.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
	reportLines(b, b.N)
}

func BenchmarkKeySampleJSON(b *testing.B) { benchDecode(b, FormatAuto, keyLine) }

// BenchmarkKeySampleEncodingJSON is the baseline: encoding/json decoding
// the same line into a struct.
func BenchmarkKeySampleEncodingJSON(b *testing.B) {
	buf := []byte(keyLine)
	var s struct {
		TS             int64   `json:"ts"`
		JobID          string  `json:"job_id"`
		JobName        string  `json:"job_name"`
		TaskName       string  `json:"task_name"`
		Key            string  `json:"key"`
		Weight         float64 `json:"weight"`
		SampleRate     float64 `json:"sample_rate"`
		Parallelism    int32   `json:"parallelism"`
		MaxParallelism int32   `json:"max_parallelism"`
		Subtask        int32   `json:"subtask_index"`
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for range b.N {
		if err := json.Unmarshal(buf, &s); err != nil {
			b.Fatal(err)
		}
	}
	reportLines(b, b.N)
}

func BenchmarkMetricJSON(b *testing.B) { benchDecode(b, FormatAuto, metricJSONLine) }

func BenchmarkInflux(b *testing.B) { benchDecode(b, FormatAuto, influxLine) }

func BenchmarkPrometheus(b *testing.B) { benchDecode(b, FormatAuto, promLine) }

// BenchmarkUnknownMetric: the common case of a reporter line skewlens
// does not use.
func BenchmarkUnknownMetric(b *testing.B) {
	d := NewDecoder(FormatAuto)
	buf := []byte(`flink_taskmanager_job_task_operator_numRecordsIn{` + promLabels + `} 1.0 1593004193363`)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for range b.N {
		if k, err := d.Decode(buf); k != KindNone || err != nil {
			b.Fatal(k, err)
		}
	}
	reportLines(b, b.N)
}

// BenchmarkLineReader splits a ~64 MiB in-memory input of mixed lines.
func BenchmarkLineReader(b *testing.B) {
	var in bytes.Buffer
	lines := 0
	for in.Len() < 64<<20 {
		for _, l := range []string{keyLine, metricJSONLine, influxLine, promLine} {
			in.WriteString(l)
			in.WriteByte('\n')
			lines++
		}
	}
	data := in.Bytes()
	rd := bytes.NewReader(data)
	lr := NewLineReader(rd, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		rd.Reset(data)
		lr.Reset(rd)
		for {
			_, _, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	reportLines(b, b.N*lines)
}

// BenchmarkReadAndDecode: LineReader plus Decode over the same input.
func BenchmarkReadAndDecode(b *testing.B) {
	var in bytes.Buffer
	lines := 0
	for in.Len() < 16<<20 {
		for _, l := range []string{keyLine, keyLine, keyLine, metricJSONLine, influxLine, promLine} {
			in.WriteString(l)
			in.WriteByte('\n')
			lines++
		}
	}
	data := in.Bytes()
	rd := bytes.NewReader(data)
	d := NewDecoder(FormatAuto)
	lr := NewLineReader(rd, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		rd.Reset(data)
		lr.Reset(rd)
		for {
			line, _, err := lr.Next()
			if err == io.EOF {
				break
			}
			if _, err := d.Decode(line); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportLines(b, b.N*lines)
}
