package decode

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Decoding depends on the lines before only for speed: the predicted
// Influx tag keys and JSON keys, and the tag or label set repeated from
// the line before (tagCache). These tests
// hold a Decoder that has decoded other lines to what a fresh Decoder
// gives for the same line.

// checkAfter decodes line with warm, a Decoder that has decoded other
// lines, and with a fresh Decoder of the same format and default time,
// and fails unless kind, error, sample or metric and default time are
// identical. The line is first copied over the bytes of the line before
// (buf), as LineReader reuses its buffer, so that anything kept pointing
// at the old bytes shows.
func checkAfter(t *testing.T, warm *Decoder, buf *[]byte, line []byte) {
	t.Helper()
	fresh := NewDecoder(warm.format)
	fresh.DefaultTS = warm.DefaultTS
	for i := range *buf {
		(*buf)[i] = '#'
	}
	*buf = append((*buf)[:0], line...)
	k, err := warm.Decode(*buf)
	fk, ferr := fresh.Decode(line)
	if k != fk || (err == nil) != (ferr == nil) || err != nil && err.Error() != ferr.Error() {
		t.Fatalf("%v %q: warm %v %v, fresh %v %v", warm.format, line, k, err, fk, ferr)
	}
	switch {
	case k == KindMetric && warm.Metric != fresh.Metric:
		t.Fatalf("%v %q:\nwarm  %+v\nfresh %+v", warm.format, line, warm.Metric, fresh.Metric)
	case k == KindKeySample && warm.Sample != fresh.Sample:
		t.Fatalf("%v %q:\nwarm  %+v\nfresh %+v", warm.format, line, warm.Sample, fresh.Sample)
	}
	if warm.DefaultTS != fresh.DefaultTS {
		t.Fatalf("%v %q: default time %d, fresh %d", warm.format, line, warm.DefaultTS, fresh.DefaultTS)
	}
}

// flinkFixtureLines returns the lines of every recorded Flink capture
// (testdata/flink/*/*.gz: Influx, Prometheus, Kafka JSON metrics, key
// samples), file by file in order.
func flinkFixtureLines(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../testdata/flink/*/*.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Flink fixtures: %v", err)
	}
	var lines []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
	}
	return lines
}

// repeatEdgeLines are lines built to repeat a set of the line before
// with something else around it: the set followed by another tag or by
// an escaped blank, a set that is a prefix of a longer one, an escaped
// or duplicated value, and JSON runs that stop mid-value.
func repeatEdgeLines() []string {
	const (
		in = `taskmanager_job_task_busyTimeMsPerSecond`
		pr = `flink_taskmanager_job_task_busyTimeMsPerSecond`
		mj = `{"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1000,`
	)
	return []string{
		in + `,job_id=j,task_name=t,subtask_index=3 value=1`,
		in + `,job_id=j,task_name=t,subtask_index=3 value=2 5`,
		in + `,job_id=j,task_name=t,subtask_index=3,x=y value=1`,
		in + `,job_id=j,task_name=t,subtask_index=3\ value=1`,
		in + `,job_id=j,task_name=t,subtask_index=34 value=1`,
		in + `,job_id=j,task_name=t,subtask_index=3`,
		in + `,job_id=j,task_name=t,subtask_index=3 `,
		in + `,job_id=j,task_name=t\ x,subtask_index=3 value=1`,
		in + `,job_id=j,task_name=t\ x,subtask_index=3 value=1`,
		in + `,job_id=j,task_name=t,task_name=u,subtask_index=3 value=1`,
		in + `,job_id=j,task_name=t,task_name=u,subtask_index=3 value=1`,
		`jobmanager_job_lastCheckpointSize,job_id=j,task_name=t,subtask_index=3 value=1`,
		`taskmanager_job_task_numRecordsIn,job_id=j,task_name=t,subtask_index=3 count=1`,
		pr + `{job_id="j",task_name="t",subtask_index="3"} 1`,
		pr + `{job_id="j",task_name="t",subtask_index="3"} 2 7`,
		pr + `{job_id="j",task_name="t",subtask_index="3"}`,
		pr + `{job_id="j",task_name="t",subtask_index="3"}x 1`,
		pr + ` {job_id="j",task_name="t",subtask_index="3"} 1`,
		pr + `{job_id="j",task_name="t",subtask_index="3",} 1`,
		pr + `{job_id="j",task_name="t\"",subtask_index="3"} 1`,
		pr + `{job_id="j",task_name="t\"",subtask_index="3"} 1`,
		pr + `{job_id="j",job_id="k",task_name="t",subtask_index="3"} 1`,
		`flink_jobmanager_job_lastCheckpointSize{job_id="j",task_name="t",subtask_index="3"} 1`,
		mj + `"job_id":"j","task_name":"t","subtask_index":"3","value":1}`,
		mj + `"job_id":"j","task_name":"t","subtask_index":"3","value":12}`,
		mj + `"job_id":"j","task_name":"t","subtask_index":"3","value":1.5}`,
		mj + `"job_id":"j","task_name":"t","subtask_index":"3","value":1 }`,
		mj + `"job_id":"j","task_name":"t","subtask_index":"3","value":1`,
		mj + `"job_id":"j","task_name":"t","subtask_index":"3","value":{"count":1,"rate":2}}`,
		mj + `"job_id":"j","task_name":"t","subtask_index":"3","value":{"count":1,"rate":3}}`,
		mj + `"job_id":"j","task_name":"t\u0041","subtask_index":"3","value":1}`,
		mj + `"job_id":"j","task_name":"t\u0041","subtask_index":"3","value":1}`,
		mj + `"job_id":"j","task_name":"t","subtask_index":3,"value":1}`,
		mj + `"job_id":"j","task_name":"t","subtask_index":34,"value":1}`,
		mj + `"job_id":"j","task_name":"t","subtask_index":3e0,"value":1}`,
		mj + `"job_id":"j","task_name":"t","x":{"a":[1,{"b":2}]},"subtask_index":"3","value":1}`,
		mj + `"job_id":"j","task_name":"t","x":{"a":[1,{"b":2}]},"subtask_index":"3","value":1}`,
		mj + `"job_id":"j","tags":{"task_name":"t","subtask_index":"3"},"value":1}`,
		mj + `"job_id":"j","tags":{"task_name":"t","subtask_index":"3"},"tags":1,"value":1}`,
		mj + `"job_id":"j","task_name":"t","subtask_index":"3","job_id":"k","value":1}`,
		mj + `"job_id":"j","task_name":"t","subtask_index":"3",` + strings.Repeat(`"x":[`, 70),
		mj + `"job_id" : "j", "task_name":"t","subtask_index":"3","value":1}`,
		`{"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1001,"job_id":"j","task_name":"t","subtask_index":"3","value":1}`,
		`{"ts":1000,"job_id":"j","task_name":"t","key":"a","weight":1,"sample_rate":0.5,"parallelism":4,"subtask_index":1}`,
		`{"ts":1001,"job_id":"j","task_name":"t","key":"b","weight":1,"sample_rate":0.5,"parallelism":4,"subtask_index":1}`,
		`{"ts":1001,"job_id":"j","task_name":"t","key":"b","weight":1,"sample_rate":0.5,"parallelism":4,"subtask_index":5}`,
		`{"ts":1001,"job_id":"j","task_name":"t","key":"b","weight":1,"sample_rate":0.5,"parallelism":40,"subtask_index":5}`,
	}
}

// TestDecodeAfterOtherLines: a Decoder that decodes the recorded Flink
// captures in order, as `analyze` does, gives for every line what a fresh
// Decoder gives; so does one that decodes every pair of the fuzz seeds,
// the Influx edge lines and the repeat edge lines (with the second line
// of each pair also cut short by one byte and given a trailing tab).
func TestDecodeAfterOtherLines(t *testing.T) {
	var buf []byte
	for _, f := range []Format{FormatAuto, FormatJSON, FormatInflux, FormatPrometheus} {
		d := NewDecoder(f)
		for _, l := range flinkFixtureLines(t) {
			checkAfter(t, d, &buf, []byte(l))
		}
	}
	edge := append(append(append([]string{}, fuzzSeeds...), influxEdgeLines()...), repeatEdgeLines()...)
	if testing.Short() {
		edge = append(append([]string{}, fuzzSeeds...), repeatEdgeLines()...)
	}
	for _, f := range []Format{FormatAuto, FormatMetricJSON} {
		for _, a := range edge {
			for _, b := range edge {
				d := NewDecoder(f)
				d.DefaultTS = 7
				checkAfter(t, d, &buf, []byte(a))
				checkAfter(t, d, &buf, []byte(b))
				checkAfter(t, d, &buf, []byte(b[:max(len(b)-1, 0)]))
				checkAfter(t, d, &buf, []byte(b+"\t"))
			}
		}
	}
}

// FuzzDecodeAfter: after any line, any line decodes as on a fresh
// Decoder, and so does the second line decoded twice in a row.
func FuzzDecodeAfter(f *testing.F) {
	edge := append(append([]string{}, fuzzSeeds...), repeatEdgeLines()...)
	for i, s := range edge {
		f.Add([]byte(s), []byte(edge[(i+1)%len(edge)]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if bytes.IndexByte(a, '\n') >= 0 || bytes.IndexByte(b, '\n') >= 0 {
			return // one line at a time, as LineReader hands them over
		}
		var buf []byte
		for _, f := range []Format{FormatAuto, FormatJSON, FormatInflux, FormatPrometheus} {
			d := NewDecoder(f)
			d.DefaultTS = 7
			checkAfter(t, d, &buf, a)
			checkAfter(t, d, &buf, b)
			checkAfter(t, d, &buf, b)
			checkAfter(t, d, &buf, a)
		}
	})
}
