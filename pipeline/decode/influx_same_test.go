package decode

import (
	"bytes"
	"strings"
	"testing"
)

// checkSameAsBase decodes line with Decode and with baseDecode (the Influx
// path of d7db979), each on a fresh Decoder of format f with default time
// defTS, and fails unless kind, error text and metric are identical.
func checkSameAsBase(t *testing.T, f Format, line []byte, defTS int64) {
	t.Helper()
	d, base := NewDecoder(f), NewDecoder(f)
	d.DefaultTS, base.DefaultTS = defTS, defTS
	checkSame(t, f, d, base, line)
}

// checkSame decodes line with d.Decode and with baseDecode on base, two
// Decoders of format f that have decoded the same lines before (the tag
// keys d predicts come from them), and fails unless kind, error text,
// metric and default time are identical.
func checkSame(t *testing.T, f Format, d, base *Decoder, line []byte) Kind {
	t.Helper()
	k, err := d.Decode(line)
	bk, berr := baseDecode(base, line)
	if k != bk || (err == nil) != (berr == nil) || err != nil && err.Error() != berr.Error() {
		t.Fatalf("%v %q: got %v %v, base %v %v", f, line, k, err, bk, berr)
	}
	if k == KindMetric && d.Metric != base.Metric {
		t.Fatalf("%v %q:\ngot  %+v\nbase %+v", f, line, d.Metric, base.Metric)
	}
	if d.DefaultTS != base.DefaultTS {
		t.Fatalf("%v %q: default time %d, base %d", f, line, d.DefaultTS, base.DefaultTS)
	}
	return k
}

// influxEdgeLines are lines whose special bytes sit at word boundaries,
// at the end of short lines and after backslashes: the places where a
// word-at-a-time scan could go wrong.
func influxEdgeLines() []string {
	lines := []string{
		`a`, `a,`, `a `, `a\`, `a\,`, `a\ b`, `ab\`, `abcdefg\`, `abcdefgh\`, `abcdefghi\`,
		`m,k=v f=1`, `m,k=v\`, `m,k=v\ `, `m,k\=x=v f=1`, `m,=v f=1`, `m,k= f=1`,
		`x y=1`, `x y`, `x\ y=1`, `x,a=b\ c`, `x,a=b\ c d=1`, `x,a=b c=`,
		`cpu{a="b"} 1`, "cpu\t1", `cpu 1`, `cpu\{ a=1`, `cpu\,a=1 b=2`,
		`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=3 value=1`,
		`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t\ x,subtask_index=3 value=1 1593004193363`,
		`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t\,x\=y,subtask_index=3 value=1i,rate=2 1`,
		`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=3 value="1\"",count=2`,
		`taskmanager_job_task_busyTimeMsPerSecond\,x,job_id=j,task_name=t,subtask_index=3 value=1`,
		`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=3\`,
		`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=3\ value=1`,
		`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=3 v\=a\ l\,ue=1,value=3`,
		`taskmanager_job_task_numRecordsIn,job_id=j\\,task_name=t,subtask_index=3 count=5`,
		`jobmanager_job_lastCheckpointSize,job_id=j value=5`,
		`taskmanager_job_task_operator_numRecordsIn,job_id=j,task_name=t,subtask_index=3 value=1 1593004193363`,
		`taskmanager_job_task_operator_numRecordsIn,job_id=j,task_name=t\ x,subtask_index=3\ value`,
	}
	// Tag keys where a Decoder that has seen Flink's lines expects others:
	// a longer key, a key without '=', at the end of the line, spelled
	// "<job_id>", escaped.
	const p = `taskmanager_job_task_busyTimeMsPerSecond,`
	lines = append(lines,
		p+`job_idx=j,job_name=n,subtask_index=3 value=1`, p+`job_id,job_name=n value=1`, p+`job_id`, p+`job_id=`,
		p+`job_i`, p+`job_id=j,job_name`, p+`<job_id>=j,job_name=n,task_name=t,subtask_index=1 value=1`,
		p+`job\_id=j,task_name=t,subtask_index=1 value=1`, p+`job_id\=x=j,task_name=t,subtask_index=1 value=1`,
		p+`job_id=j,job_name=n,subtask_index=1,task_attempt_id=a,task_attempt_num=0,task_id=i,task_name=t,tm_id=x,job_id=k value=1`,
		p+`job_name=n,job_id=j,task_name=t,subtask_index=1 value=1`, p+`job_id==j,task_name=t,subtask_index=1 value=1`)
	// Runs of backslashes: escaped spaces, escaped backslashes, a
	// backslash escaping the separator, and one at the very end.
	for _, run := range []string{`\ `, `\\`, `\x`, `\\\ `} {
		for _, n := range []int{1, 2, 7, 8, 9, 40} {
			r := strings.Repeat(run, n)
			lines = append(lines, `m,k=`+r+` f=1`, `m,k=`+r+`,j=`+r+`\ f=1`, `m,k=`+r, `m,`+r+`=v f=`+r,
				`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=`+r+`,subtask_index=3 value=1`)
		}
	}
	// Every prefix of a long line puts each separator at every word offset
	// relative to the end of the input.
	long := `taskmanager_job_task_busyTimeMsPerSecond,job_id=j\ 1,task_name=t\,2,subtask_index=3 value=1.5,count=2i 1593004193363`
	for n := 1; n <= len(long); n++ {
		lines = append(lines, long[:n], long[len(long)-n:])
	}
	return lines
}

// TestInfluxSameAsBase: the word-at-a-time Influx path decodes the real
// Flink InfluxdbReporter output, the fuzz seeds and lines built to hit its
// edge cases exactly as the byte-at-a-time path of d7db979 did: same kind,
// same error, same metric.
func TestInfluxSameAsBase(t *testing.T) {
	data, lines := flinkInfluxInput(t)
	all := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(all) != lines {
		t.Fatalf("split %d lines, counted %d", len(all), lines)
	}
	all = append(all, fuzzSeeds...)
	all = append(all, influxEdgeLines()...)
	metrics := 0
	for _, f := range []Format{FormatAuto, FormatInflux} {
		for _, defTS := range []int64{0, 7} {
			for _, l := range all {
				checkSameAsBase(t, f, []byte(l), defTS)
				// Without the final byte and with a trailing tab: a
				// separator moves to or from the very end of the line.
				checkSameAsBase(t, f, []byte(l[:max(len(l)-1, 0)]), defTS)
				checkSameAsBase(t, f, []byte(l+"\t"), defTS)
			}
		}
		// One Decoder for all lines, as a pipeline uses it: the tag keys
		// it predicts from the lines before are right for most lines and
		// wrong for some (every variant below follows its original).
		d, base := NewDecoder(f), NewDecoder(f)
		for _, l := range all {
			if checkSame(t, f, d, base, []byte(l)) == KindMetric {
				metrics++
			}
			checkSame(t, f, d, base, []byte(l[:max(len(l)-1, 0)]))
			checkSame(t, f, d, base, []byte(l+"\t"))
		}
	}
	if metrics == 0 {
		t.Fatal("no line of the fixtures decoded to a metric: the comparison checked errors only")
	}
}

// flinkWarmLine is a Flink 2 InfluxdbReporter line: no host, escaped
// names.
const flinkWarmLine = "taskmanager_job_task_busyTimeMsPerSecond" + f2Influx + " value=12.345 1593004200000000000"

// FuzzInfluxSameAsBase compares Decode with the d7db979 Influx path on
// arbitrary input, both auto-detected and forced to Influx.
func FuzzInfluxSameAsBase(f *testing.F) {
	for _, s := range append(append([]string{}, fuzzSeeds...), influxEdgeLines()...) {
		f.Add([]byte(s), int64(0))
	}
	f.Add([]byte(`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=3 value=1`), int64(1000))
	f.Fuzz(func(t *testing.T, line []byte, defTS int64) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // one line at a time, as LineReader hands them over
		}
		checkSameAsBase(t, FormatAuto, line, defTS)
		checkSameAsBase(t, FormatInflux, line, defTS)
		// Warm: the tag keys predicted from real lines, then from line.
		for _, f := range []Format{FormatAuto, FormatInflux} {
			d, base := NewDecoder(f), NewDecoder(f)
			d.DefaultTS, base.DefaultTS = defTS, defTS
			for _, l := range []string{influxLine, flinkWarmLine, string(line)} {
				checkSame(t, f, d, base, []byte(l))
			}
			checkSame(t, f, d, base, line)
		}
	})
}
