package decode

import (
	"errors"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew"
)

const keyLine = `{"ts":1593004193363,"job_id":"84dce1ec8aa5a4df2d1758d6e9278693","job_name":"billing","task_name":"wideReduce-toNarrow","key":"u42|1593004200000","weight":1,"sample_rate":0.01,"parallelism":480,"max_parallelism":720,"subtask_index":96}`

const metricJSONLine = `{"name":"taskmanager_job_task_buffers_inPoolUsage","time_stamp":1593004193363,"host":"10.0.0.169","tm_id":"container_e17_1592223040493_0006_01_000002","job_id":"84dce1ec8aa5a4df2d1758d6e9278693","job_name":"billing","task_id":"cbc357ccb763df2852fee8c4fc7d55f2","task_name":"wideReduce-toNarrow","task_attempt_id":"0d2b9593f56af1f5719a00bf4f6","task_attempt_num":"0","subtask_index":"96","value":1.0}`

var keyWant = skew.KeySample{
	TS: 1593004193363, JobID: "84dce1ec8aa5a4df2d1758d6e9278693", JobName: "billing",
	TaskName: "wideReduce-toNarrow", Key: "u42|1593004200000", Weight: 1, SampleRate: 0.01,
	Parallelism: 480, MaxParallelism: 720, Subtask: 96,
}

// ks builds a minimal key-sample line with extra fields appended.
func ks(extra string) string {
	s := `{"ts":1000,"job_id":"j","task_name":"t","key":"k"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func minimalKS(mod func(*skew.KeySample)) skew.KeySample {
	k := skew.KeySample{TS: 1000, JobID: "j", TaskName: "t", Key: "k", Weight: 1, SampleRate: 1, Subtask: -1}
	if mod != nil {
		mod(&k)
	}
	return k
}

func reasonOf(t *testing.T, err error) Reason {
	t.Helper()
	if err == nil {
		return ReasonUnknown
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if e.Reason == ReasonUnknown || e.Reason >= numReasons {
		t.Fatalf("error %v has reason %d", err, e.Reason)
	}
	return e.Reason
}

func TestKeySampleJSON(t *testing.T) {
	tests := []struct {
		name string
		line string
		want skew.KeySample
	}{
		{"canonical", keyLine, keyWant},
		{"minimal", ks(""), minimalKS(nil)},
		{"crlf", ks("") + "\r", minimalKS(nil)},
		{"blanks", " \t{ \"ts\" : 1000 ,\n\"job_id\":\"j\" , \"task_name\":\"t\",\"key\":\"k\" } \t\r", minimalKS(nil)},
		{"ts float integral", `{"ts":1.593004193363e12,"job_id":"j","task_name":"t","key":"k"}`,
			minimalKS(func(k *skew.KeySample) { k.TS = 1593004193363 })},
		{"ts .0", `{"ts":1593004193363.0,"job_id":"j","task_name":"t","key":"k"}`,
			minimalKS(func(k *skew.KeySample) { k.TS = 1593004193363 })},
		{"ts 1e3", `{"ts":1e3,"job_id":"j","task_name":"t","key":"k"}`, minimalKS(nil)},
		{"ts 0", `{"ts":0,"job_id":"j","task_name":"t","key":"k"}`, minimalKS(func(k *skew.KeySample) { k.TS = 0 })},
		// The largest ts is accepted, in nanoseconds (see TestKeySampleTSUnits).
		{"ts max int64", `{"ts":9223372036854775807,"job_id":"j","task_name":"t","key":"k"}`,
			minimalKS(func(k *skew.KeySample) { k.TS = (1<<63 - 1) / 1_000_000 })},
		{"fields any order", `{"key":"k","subtask_index":3,"task_name":"t","parallelism":4,"job_id":"j","ts":1000}`,
			minimalKS(func(k *skew.KeySample) { k.Subtask = 3; k.Parallelism = 4 })},
		{"escapes", ks(`"key":"a\"b\\c\/d\b\f\n\r\t\u00e9\u20ac\ud83d\ude00"`),
			minimalKS(func(k *skew.KeySample) { k.Key = "a\"b\\c/d\b\f\n\r\t\u00e9\u20ac\U0001F600" })},
		{"lone high surrogate", ks(`"key":"\ud800x"`), minimalKS(func(k *skew.KeySample) { k.Key = "\uFFFDx" })},
		{"lone low surrogate", ks(`"key":"\udc00"`), minimalKS(func(k *skew.KeySample) { k.Key = "\uFFFD" })},
		{"high then non-low", ks(`"key":"\ud800\u0041"`), minimalKS(func(k *skew.KeySample) { k.Key = "\uFFFDA" })},
		{"high high low", ks(`"key":"\ud800\ud83d\ude00"`), minimalKS(func(k *skew.KeySample) { k.Key = "\uFFFD\U0001F600" })},
		{"high at end", ks(`"key":"x\ud83d"`), minimalKS(func(k *skew.KeySample) { k.Key = "x\uFFFD" })},
		{"invalid utf8 passes", ks("\"key\":\"\xff\xfe\xc3\""), minimalKS(func(k *skew.KeySample) { k.Key = "\xff\xfe\xc3" })},
		{"raw utf8", ks(`"key":"日本語"`), minimalKS(func(k *skew.KeySample) { k.Key = "日本語" })},
		{"empty key", ks(`"key":""`), minimalKS(func(k *skew.KeySample) { k.Key = "" })},
		{"escaped field name", `{"\u0074s":1000,"job\u005fid":"j","task_name":"t","k\u0065y":"k"}`, minimalKS(nil)},
		{"duplicate last wins", ks(`"key":"a","ts":2000,"key":"b"`),
			minimalKS(func(k *skew.KeySample) { k.Key = "b"; k.TS = 2000 })},
		{"unknown fields", ks(`"x":{"a":[1,2,{"b":null}],"c":"}\"{"},"y":[],"z":true,"w":false,"v":null,"u":-1.5e-7,"name2":"n","tags":{"a":1}`), minimalKS(nil)},
		{"unknown value with name-like keys", ks(`"nested":{"name":"taskmanager_job_task_buffers_inPoolUsage","key":"zz"}`), minimalKS(nil)},
		{"null optional", ks(`"job_name":null,"weight":null,"sample_rate":null,"parallelism":null,"max_parallelism":null,"subtask_index":null`), minimalKS(nil)},
		{"null name ignored", ks(`"name":null`), minimalKS(nil)},
		{"weight and rate", ks(`"weight":2.5,"sample_rate":1e-3`),
			minimalKS(func(k *skew.KeySample) { k.Weight = 2.5; k.SampleRate = 0.001 })},
		{"sample_rate 1", ks(`"sample_rate":1`), minimalKS(nil)},
		{"max_parallelism 0", ks(`"parallelism":480,"max_parallelism":0`),
			minimalKS(func(k *skew.KeySample) { k.Parallelism = 480 })},
		{"max_parallelism alone", ks(`"max_parallelism":128`),
			minimalKS(func(k *skew.KeySample) { k.MaxParallelism = 128 })},
		{"par == max", ks(`"parallelism":128,"max_parallelism":128,"subtask_index":127`),
			minimalKS(func(k *skew.KeySample) { k.Parallelism = 128; k.MaxParallelism = 128; k.Subtask = 127 })},
		{"flink bounds", ks(`"parallelism":32768,"max_parallelism":32768,"subtask_index":32767`),
			minimalKS(func(k *skew.KeySample) { k.Parallelism = 32768; k.MaxParallelism = 32768; k.Subtask = 32767 })},
		{"subtask without parallelism", ks(`"subtask_index":7`), minimalKS(func(k *skew.KeySample) { k.Subtask = 7 })},
		{"int as float", ks(`"parallelism":4.0,"subtask_index":3e0`),
			minimalKS(func(k *skew.KeySample) { k.Parallelism = 4; k.Subtask = 3 })},
		{"bracketed variables", `{"ts":1000,"<job_id>":"j","<task_name>":"t","key":"k","<subtask_index>":2}`,
			minimalKS(func(k *skew.KeySample) { k.Subtask = 2 })},
		{"job_name", ks(`"job_name":"billing"`), minimalKS(func(k *skew.KeySample) { k.JobName = "billing" })},
		{"task_id", ks(`"task_id":"cbc357ccb763df2852fee8c4fc7d55f2","task_name":"KeyedProcess -> enrich"`),
			minimalKS(func(k *skew.KeySample) {
				k.TaskID = "cbc357ccb763df2852fee8c4fc7d55f2"
				k.TaskName = "KeyedProcess -> enrich"
			})},
		{"task_id escaped", ks(`"task_id":"cbc3"`), minimalKS(func(k *skew.KeySample) { k.TaskID = "cbc3" })},
		{"task_id null", ks(`"task_id":null`), minimalKS(nil)},
		{"task_id empty", ks(`"task_id":""`), minimalKS(nil)},
		{"task_id bracketed", ks(`"<task_id>":"t1"`), minimalKS(func(k *skew.KeySample) { k.TaskID = "t1" })},
	}
	for _, f := range []Format{FormatAuto, FormatJSON, FormatKeyJSON} {
		// warm is shared by all cases: it carries key predictions from
		// one line to the next, which must never change a result.
		warm := NewDecoder(f)
		for _, tc := range tests {
			t.Run(f.String()+"/"+tc.name, func(t *testing.T) {
				for _, d := range []*Decoder{NewDecoder(f), warm} {
					k, err := d.Decode([]byte(tc.line))
					if err != nil || k != KindKeySample {
						t.Fatalf("Decode = %v, %v; want key sample", k, err)
					}
					if d.Sample != tc.want {
						t.Errorf("got  %+v\nwant %+v", d.Sample, tc.want)
					}
				}
			})
		}
	}
}

func TestKeyPrediction(t *testing.T) {
	// Lines whose keys share prefixes with, or are shifted against, the
	// previous line's layout.
	lines := []string{
		keyLine,
		`{"ts":1,"job_id":"j","task_name":"t","key":"k","weight":2}`,
		`{"tsx":5,"ts":1,"job_id":"j","task_name":"t","key":"k"}`,
		`{"t":5,"ts":1,"job_idx":"q","job_id":"j","task_name":"t","key":"k"}`,
		`{"ts":1,"job_id":"j","task_nam":"x","task_name":"t","key":"k"}`,
		`{"ts":1,"job_id":"j","task_name":"t","key":"k","max_parallelism":4,"parallelism":4}`,
		`{"ts":1,"job_id":"j","task_name":"t","key":"k","max_parallelism" :4}`,
		`{"ts":1,"job_id":"j","task_name":"t","ke\u0079":"k2"}`,
		`{"ts":1,"job_id":"j","task_name":"t","key":"k","subtask_index":3}`,
		metricJSONLine,
		`{"ts":1,"job_id":"j","task_name":"t","key":"k"}`,
	}
	warm := NewDecoder(FormatAuto)
	for round := range 3 {
		for i, line := range lines {
			fresh := NewDecoder(FormatAuto)
			k1, err1 := fresh.Decode([]byte(line))
			k2, err2 := warm.Decode([]byte(line))
			if k1 != k2 || (err1 == nil) != (err2 == nil) ||
				k1 == KindKeySample && fresh.Sample != warm.Sample || k1 == KindMetric && fresh.Metric != warm.Metric {
				t.Errorf("round %d line %d: fresh %v %v %+v, warm %v %v %+v", round, i, k1, err1, fresh.Sample, k2, err2, warm.Sample)
			}
		}
	}
}

func TestKeySampleJSONErrors(t *testing.T) {
	deep := func(n int) string { // n nested arrays as the value of an unknown field
		return ks(`"deep":` + strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	tests := []struct {
		name   string
		line   string
		reason Reason
		field  string
	}{
		{"missing ts", `{"job_id":"j","task_name":"t","key":"k"}`, ReasonMissingField, "ts"},
		{"null ts", `{"ts":null,"job_id":"j","task_name":"t","key":"k"}`, ReasonMissingField, "ts"},
		{"missing job_id", `{"ts":1,"task_name":"t","key":"k"}`, ReasonMissingField, "job_id"},
		{"missing task_name", `{"ts":1,"job_id":"j","key":"k"}`, ReasonMissingField, "task_name"},
		{"neither key nor name", `{"ts":1,"job_id":"j","task_name":"t"}`, ReasonMissingField, "key"},
		{"ts string", `{"ts":"1000","job_id":"j","task_name":"t","key":"k"}`, ReasonBadTimestamp, "ts"},
		{"ts fraction", `{"ts":1000.5,"job_id":"j","task_name":"t","key":"k"}`, ReasonBadTimestamp, "ts"},
		{"ts negative", `{"ts":-1,"job_id":"j","task_name":"t","key":"k"}`, ReasonBadTimestamp, "ts"},
		{"ts huge", `{"ts":99999999999999999999,"job_id":"j","task_name":"t","key":"k"}`, ReasonBadTimestamp, "ts"},
		{"ts 2^63", `{"ts":9223372036854775808,"job_id":"j","task_name":"t","key":"k"}`, ReasonBadTimestamp, "ts"},
		{"ts 1e300", `{"ts":1e300,"job_id":"j","task_name":"t","key":"k"}`, ReasonBadTimestamp, "ts"},
		{"ts 1e400", `{"ts":1e400,"job_id":"j","task_name":"t","key":"k"}`, ReasonBadTimestamp, "ts"},
		{"job_id number", `{"ts":1,"job_id":5,"task_name":"t","key":"k"}`, ReasonBadField, "job_id"},
		{"job_id empty", `{"ts":1,"job_id":"","task_name":"t","key":"k"}`, ReasonBadField, "job_id"},
		{"task_name empty", `{"ts":1,"job_id":"j","task_name":"","key":"k"}`, ReasonBadField, "task_name"},
		{"key number", `{"ts":1,"job_id":"j","task_name":"t","key":42}`, ReasonBadField, "key"},
		{"key object", `{"ts":1,"job_id":"j","task_name":"t","key":{"a":1}}`, ReasonBadField, "key"},
		{"job_name number", ks(`"job_name":1`), ReasonBadField, "job_name"},
		{"task_id number", ks(`"task_id":1`), ReasonBadField, "task_id"},
		{"task_id object", ks(`"task_id":{"a":"b"}`), ReasonBadField, "task_id"},
		{"weight 0", ks(`"weight":0`), ReasonBadField, "weight"},
		{"weight -0", ks(`"weight":-0`), ReasonBadField, "weight"},
		{"weight negative", ks(`"weight":-1`), ReasonBadField, "weight"},
		{"weight inf", ks(`"weight":1e400`), ReasonBadField, "weight"},
		{"weight string", ks(`"weight":"1"`), ReasonBadField, "weight"},
		{"sample_rate 0", ks(`"sample_rate":0`), ReasonBadField, "sample_rate"},
		{"sample_rate >1", ks(`"sample_rate":1.0000001`), ReasonBadField, "sample_rate"},
		{"sample_rate negative", ks(`"sample_rate":-0.5`), ReasonBadField, "sample_rate"},
		{"parallelism 0", ks(`"parallelism":0`), ReasonBadField, "parallelism"},
		{"parallelism negative", ks(`"parallelism":-4`), ReasonBadField, "parallelism"},
		{"parallelism fraction", ks(`"parallelism":4.5`), ReasonBadField, "parallelism"},
		{"parallelism too big", ks(`"parallelism":32769`), ReasonBadField, "parallelism"},
		{"parallelism bool", ks(`"parallelism":true`), ReasonBadField, "parallelism"},
		{"max_parallelism too big", ks(`"max_parallelism":65536`), ReasonBadField, "max_parallelism"},
		{"max_parallelism negative", ks(`"max_parallelism":-1`), ReasonBadField, "max_parallelism"},
		{"par > max", ks(`"parallelism":200,"max_parallelism":128`), ReasonBadField, "parallelism"},
		{"subtask = par", ks(`"parallelism":4,"subtask_index":4`), ReasonBadField, "subtask_index"},
		{"subtask negative", ks(`"subtask_index":-1`), ReasonBadField, "subtask_index"},
		{"subtask string", ks(`"subtask_index":"3"`), ReasonBadField, "subtask_index"},
		{"subtask huge", ks(`"subtask_index":4294967296`), ReasonBadField, "subtask_index"},

		{"empty object", `{}`, ReasonMissingField, "key"},
		{"unterminated", `{"ts":1`, ReasonInvalidJSON, ""},
		{"only brace", `{`, ReasonInvalidJSON, ""},
		{"trailing comma", ks("") + `,`, ReasonInvalidJSON, ""},
		{"trailing comma in object", `{"ts":1,}`, ReasonInvalidJSON, ""},
		{"trailing garbage", ks("") + ` x`, ReasonInvalidJSON, ""},
		{"two objects", ks("") + ks(""), ReasonInvalidJSON, ""},
		{"leading zero", `{"ts":01,"job_id":"j","task_name":"t","key":"k"}`, ReasonInvalidJSON, ""},
		{"plus sign", ks(`"x":+1`), ReasonInvalidJSON, ""},
		{"bare minus", ks(`"x":-`), ReasonInvalidJSON, ""},
		{"leading dot", ks(`"x":.5`), ReasonInvalidJSON, ""},
		{"trailing dot", ks(`"x":1.`), ReasonInvalidJSON, ""},
		{"empty exponent", ks(`"x":1e`), ReasonInvalidJSON, ""},
		{"NaN", ks(`"x":NaN`), ReasonInvalidJSON, ""},
		{"bad literal", ks(`"x":tru`), ReasonInvalidJSON, ""},
		{"literal prefix", ks(`"x":truex`), ReasonInvalidJSON, ""},
		{"number then letters", ks(`"x":12ab`), ReasonInvalidJSON, ""},
		{"single quotes", `{'ts':1}`, ReasonInvalidJSON, ""},
		{"missing colon", `{"ts" 1}`, ReasonInvalidJSON, ""},
		{"missing comma", `{"ts":1 "key":"k"}`, ReasonInvalidJSON, ""},
		{"array trailing comma", ks(`"x":[1,]`), ReasonInvalidJSON, ""},
		{"unterminated array", ks(`"x":[1`), ReasonInvalidJSON, ""},
		{"mismatched brackets", ks(`"x":[1}`), ReasonInvalidJSON, ""},
		{"bad escape", ks(`"key":"\x"`), ReasonInvalidJSON, ""},
		{"short unicode escape", ks(`"key":"\u12"`), ReasonInvalidJSON, ""},
		{"bad hex", ks(`"key":"\u12g4"`), ReasonInvalidJSON, ""},
		{"control char", ks("\"key\":\"a\x01b\""), ReasonInvalidJSON, ""},
		{"raw newline in string", ks("\"key\":\"a\nb\""), ReasonInvalidJSON, ""},
		{"unterminated string", `{"ts":1,"key":"abc`, ReasonInvalidJSON, ""},
		{"backslash at end", `{"ts":1,"key":"abc\`, ReasonInvalidJSON, ""},
		{"non-string key", `{1:2}`, ReasonInvalidJSON, ""},
		{"too deep", deep(MaxJSONDepth), ReasonInvalidJSON, ""},
		{"much too deep", deep(100000), ReasonInvalidJSON, ""},
		{"deep tags", ks(`"tags":` + strings.Repeat(`{"a":`, MaxJSONDepth) + `1` + strings.Repeat("}", MaxJSONDepth)), ReasonInvalidJSON, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(FormatAuto)
			k, err := d.Decode([]byte(tc.line))
			if err == nil {
				t.Fatalf("Decode = %v, nil; want %v error (sample %+v)", k, tc.reason, d.Sample)
			}
			if k != KindNone {
				t.Errorf("kind = %v with error", k)
			}
			if r := reasonOf(t, err); r != tc.reason {
				t.Errorf("reason = %v (%v), want %v", r, err, tc.reason)
			}
			var e *Error
			errors.As(err, &e)
			if e.Field != tc.field {
				t.Errorf("field = %q (%v), want %q", e.Field, err, tc.field)
			}
		})
	}
	// Depth limit is inclusive.
	d := NewDecoder(FormatAuto)
	if _, err := d.Decode([]byte(deep(MaxJSONDepth - 1))); err != nil {
		t.Errorf("depth %d: %v", MaxJSONDepth, err)
	}
}

func TestJSONNotObject(t *testing.T) {
	for _, line := range []string{`[1,2]`, `"x"`, `1`, `null`} {
		d := NewDecoder(FormatJSON)
		_, err := d.Decode([]byte(line))
		if r := reasonOf(t, err); r != ReasonInvalidJSON {
			t.Errorf("%s: reason %v, want invalid_json", line, r)
		}
	}
}

func metricTask(name skew.MetricName, mod func(*skew.Metric)) skew.Metric {
	m := skew.Metric{
		TS: 1593004193363, Name: name, Host: "10.0.0.169",
		TMID: "container_e17_1592223040493_0006_01_000002", JobID: "84dce1ec8aa5a4df2d1758d6e9278693",
		JobName: "billing", TaskID: "cbc357ccb763df2852fee8c4fc7d55f2", TaskName: "wideReduce-toNarrow",
		TaskAttemptID: "0d2b9593f56af1f5719a00bf4f6", Subtask: 96, Value: 1,
	}
	if mod != nil {
		mod(&m)
	}
	return m
}

// mj builds a small metric JSON line.
func mj(fields string) string { return `{` + fields + `}` }

const mjBase = `"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1000,"job_id":"j","task_name":"t","subtask_index":"3"`

func smallMetric(name skew.MetricName, mod func(*skew.Metric)) skew.Metric {
	m := skew.Metric{TS: 1000, Name: name, JobID: "j", TaskName: "t", Subtask: 3, Value: 1}
	if mod != nil {
		mod(&m)
	}
	return m
}

func TestMetricJSON(t *testing.T) {
	tagsLine := `{"name":"taskmanager_job_task_Shuffle_Netty_Input_Buffers_inPoolUsage","timestamp":1593004193363,"tags":{"host":"10.0.0.169","tm_id":"container_e17_1592223040493_0006_01_000002","job_id":"84dce1ec8aa5a4df2d1758d6e9278693","job_name":"billing","task_id":"cbc357ccb763df2852fee8c4fc7d55f2","task_name":"wideReduce-toNarrow","task_attempt_id":"0d2b9593f56af1f5719a00bf4f6","task_attempt_num":0,"subtask_index":96},"value":1.0}`
	bracketLine := `{"name":"flink.taskmanager.job.task.buffers.inPoolUsage","time_stamp":1593004193363,"tags":{"<host>":"10.0.0.169","<tm_id>":"container_e17_1592223040493_0006_01_000002","<job_id>":"84dce1ec8aa5a4df2d1758d6e9278693","<job_name>":"billing","<task_id>":"cbc357ccb763df2852fee8c4fc7d55f2","<task_name>":"wideReduce-toNarrow","<task_attempt_id>":"0d2b9593f56af1f5719a00bf4f6","<task_attempt_num>":"0","<subtask_index>":"96"},"value":"1"}`
	tests := []struct {
		name   string
		line   string
		defTS  int64
		want   skew.Metric
		wantNo bool // KindNone
	}{
		{name: "canonical top-level", line: metricJSONLine, want: metricTask(skew.InPoolUsage, nil)},
		{name: "tags, timestamp, shuffle name", line: tagsLine, want: metricTask(skew.InPoolUsage, nil)},
		{name: "angle brackets, dotted name, string value", line: bracketLine, want: metricTask(skew.InPoolUsage, nil)},
		{name: "numeric subtask", line: mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1000,"job_id":"j","task_name":"t","subtask_index":3,"value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "numeric variables", line: mj(mjBase + `,"host":10,"task_id":12.5,"value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Host = "10"; m.TaskID = "12.5" })},
		{name: "top-level wins over tags", line: mj(mjBase + `,"tags":{"job_id":"other","host":"h"},"value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Host = "h" })},
		{name: "top-level null falls back to tags", line: mj(mjBase + `,"host":null,"tags":{"host":"h"},"value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Host = "h" })},
		{name: "duplicate tags last wins", line: mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1000,"tags":{"job_id":"x","host":"h"},"tags":{"job_id":"j","task_name":"t","subtask_index":"3"},"value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "meter object", line: mj(mjBase + `,"value":{"count":10,"rate":2.5}`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Value = 10; m.Rate = 2.5; m.HasRate = true })},
		{name: "counter object", line: mj(mjBase + `,"value":{"count":"7"}`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Value = 7 })},
		{name: "gauge object", line: mj(mjBase + `,"value":{"value":0.25,"extra":[1,{"a":2}]}`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Value = 0.25 })},
		{name: "value string with exponent", line: mj(mjBase + `,"value":"-2.5e2"`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Value = -250 })},
		{name: "later non-object tags wipe earlier tags", line: mj(mjBase + `,"tags":{"host":"h"},"tags":"none","value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "later string value wins over object", line: mj(mjBase + `,"value":{"count":1,"rate":2},"value":"6"`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Value = 6 })},
		{name: "duplicate value last wins", line: mj(mjBase + `,"value":{"count":1,"rate":2},"value":5`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Value = 5 })},
		{name: "time as string", line: mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":"1000","job_id":"j","task_name":"t","subtask_index":"3","value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "default ts", defTS: 1000, line: mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","job_id":"j","task_name":"t","subtask_index":"3","value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "own ts beats default", defTS: 5, line: mj(mjBase + `,"value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "job scoped", line: mj(`"name":"jobmanager_job_lastCheckpointDuration","time_stamp":1000,"job_id":"j","value":1234`),
			want: skew.Metric{TS: 1000, Name: skew.LastCheckpointDuration, JobID: "j", Subtask: -1, Value: 1234}},
		{name: "job scoped ignores task vars", line: mj(`"name":"flink_jobmanager_job_numberOfFailedCheckpoints","time_stamp":1000,"job_id":"j","task_name":"t","subtask_index":"x","value":2`),
			want: skew.Metric{TS: 1000, Name: skew.NumberOfFailedCheckpoints, JobID: "j", Subtask: -1, Value: 2}},
		{name: "job scoped size", line: mj(`"name":"jobmanager_job_lastCheckpointSize","time_stamp":1000,"job_id":"j","value":{"value":"2048"}`),
			want: skew.Metric{TS: 1000, Name: skew.LastCheckpointSize, JobID: "j", Subtask: -1, Value: 2048}},
		{name: "job scoped completed", line: mj(`"name":"jobmanager.job.numberOfCompletedCheckpoints","time_stamp":1000,"job_id":"j","value":12`),
			want: skew.Metric{TS: 1000, Name: skew.NumberOfCompletedCheckpoints, JobID: "j", Subtask: -1, Value: 12}},
		{name: "name wins over key", line: mj(mjBase + `,"key":"k","value":1`), want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "escaped strings", line: mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1000,"job_id":"j","task_name":"Map \u002d\u003e Sink: \"x\"","subtask_index":"3","value":1`),
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.TaskName = `Map -> Sink: "x"` })},
		{name: "unknown metric", line: mj(`"name":"taskmanager_job_task_operator_numRecordsIn","value":1`), wantNo: true},
		{name: "unknown metric bad everything", line: mj(`"name":"foo","value":"NaN","time_stamp":"x"`), wantNo: true},
	}
	for _, f := range []Format{FormatAuto, FormatJSON, FormatMetricJSON} {
		for _, tc := range tests {
			t.Run(f.String()+"/"+tc.name, func(t *testing.T) {
				d := NewDecoder(f)
				d.DefaultTS = tc.defTS
				k, err := d.Decode([]byte(tc.line))
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if tc.wantNo {
					if k != KindNone {
						t.Fatalf("kind %v, want none", k)
					}
					return
				}
				if k != KindMetric {
					t.Fatalf("kind %v, want metric", k)
				}
				if d.Metric != tc.want {
					t.Errorf("got  %+v\nwant %+v", d.Metric, tc.want)
				}
			})
		}
	}
}

func TestMetricJSONErrors(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		reason Reason
		field  string
	}{
		{"missing job_id", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1,"task_name":"t","subtask_index":"3","value":1`), ReasonMissingField, "job_id"},
		{"missing task_name", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1,"job_id":"j","subtask_index":"3","value":1`), ReasonMissingField, "task_name"},
		{"missing subtask", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1,"job_id":"j","task_name":"t","value":1`), ReasonMissingField, "subtask_index"},
		{"job scoped missing job_id", mj(`"name":"jobmanager_job_lastCheckpointDuration","time_stamp":1,"value":1`), ReasonMissingField, "job_id"},
		{"empty job_id", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1,"job_id":"","task_name":"t","subtask_index":"3","value":1`), ReasonBadField, "job_id"},
		{"subtask word", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1,"job_id":"j","task_name":"t","subtask_index":"x","value":1`), ReasonBadField, "subtask_index"},
		{"subtask negative", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1,"job_id":"j","task_name":"t","subtask_index":-1,"value":1`), ReasonBadField, "subtask_index"},
		{"variable object", mj(mjBase + `,"host":{"a":1},"value":1`), ReasonBadField, "host"},
		{"variable bool in tags", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":1,"tags":{"job_id":true},"value":1`), ReasonBadField, "job_id"},
		{"no timestamp", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","job_id":"j","task_name":"t","subtask_index":"3","value":1`), ReasonMissingTimestamp, ""},
		{"bad timestamp", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":"soon","job_id":"j","task_name":"t","subtask_index":"3","value":1`), ReasonBadTimestamp, "time_stamp"},
		{"negative timestamp", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","timestamp":-5,"job_id":"j","task_name":"t","subtask_index":"3","value":1`), ReasonBadTimestamp, "time_stamp"},
		{"fraction timestamp", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","timestamp":1.5,"job_id":"j","task_name":"t","subtask_index":"3","value":1`), ReasonBadTimestamp, "time_stamp"},
		{"bool timestamp", mj(`"name":"taskmanager_job_task_busyTimeMsPerSecond","timestamp":true,"job_id":"j","task_name":"t","subtask_index":"3","value":1`), ReasonBadTimestamp, "time_stamp"},
		{"missing value", mj(mjBase), ReasonMissingField, "value"},
		{"null value", mj(mjBase + `,"value":null`), ReasonMissingField, "value"},
		{"word value", mj(mjBase + `,"value":"abc"`), ReasonBadValue, "value"},
		{"NaN value of a metric without that sentinel", mj(strings.Replace(mjBase, "busyTime", "idleTime", 1) + `,"value":"NaN"`), ReasonBadValue, "value"},
		{"Inf value", mj(mjBase + `,"value":"-Inf"`), ReasonBadValue, "value"},
		{"huge value", mj(mjBase + `,"value":1e400`), ReasonBadValue, "value"},
		{"bool value", mj(mjBase + `,"value":true`), ReasonBadValue, "value"},
		{"array value", mj(mjBase + `,"value":[1]`), ReasonBadValue, "value"},
		{"empty object value", mj(mjBase + `,"value":{}`), ReasonBadValue, "value"},
		{"rate only", mj(mjBase + `,"value":{"rate":1}`), ReasonBadValue, "value"},
		{"bad rate", mj(mjBase + `,"value":{"count":1,"rate":"x"}`), ReasonBadValue, "value"},
		{"nested count", mj(mjBase + `,"value":{"count":{"n":1}}`), ReasonBadValue, "value"},
		{"name number", mj(`"name":5,"value":1`), ReasonBadField, "name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(FormatAuto)
			k, err := d.Decode([]byte(tc.line))
			if err == nil {
				t.Fatalf("Decode = %v, nil; want %v (metric %+v)", k, tc.reason, d.Metric)
			}
			if r := reasonOf(t, err); r != tc.reason {
				t.Errorf("reason = %v (%v), want %v", r, err, tc.reason)
			}
			var e *Error
			errors.As(err, &e)
			if e.Field != tc.field {
				t.Errorf("field = %q (%v), want %q", e.Field, err, tc.field)
			}
		})
	}
}

func TestForcedJSONShapes(t *testing.T) {
	// A metric line forced to be a key sample lacks the key-sample fields,
	// and vice versa.
	d := NewDecoder(FormatKeyJSON)
	_, err := d.Decode([]byte(metricJSONLine))
	if r := reasonOf(t, err); r != ReasonMissingField {
		t.Errorf("metric as key sample: %v", err)
	}
	d = NewDecoder(FormatMetricJSON)
	_, err = d.Decode([]byte(keyLine))
	if err == nil || err.Error() != `missing field "name"` {
		t.Errorf("key sample as metric: %v", err)
	}
	// Forced text formats reject JSON.
	for _, f := range []Format{FormatInflux, FormatPrometheus} {
		d = NewDecoder(f)
		_, err = d.Decode([]byte(keyLine))
		if r := reasonOf(t, err); r != ReasonBadLine {
			t.Errorf("%v: JSON line gave %v", f, err)
		}
	}
}

func TestStringsAliasLine(t *testing.T) {
	line := []byte(keyLine)
	d := NewDecoder(FormatAuto)
	if _, err := d.Decode(line); err != nil {
		t.Fatal(err)
	}
	key := d.Sample.Key
	// Zero copy: the string shares the line's memory, which is why the
	// lifetime rule exists.
	copy(line[strings.Index(keyLine, "u42"):], "X")
	if key[0] != 'X' {
		t.Errorf("key %q does not alias the line", key)
	}
}

// TestKeySampleTSUnits: a key sample's ts in seconds, microseconds or
// nanoseconds is read as the same instant in milliseconds (before, a ts
// in seconds was taken for milliseconds in January 1970 and every sample
// counted late); milliseconds, and small values, stay as they are.
func TestKeySampleTSUnits(t *testing.T) {
	const ms = 1593004193363 // 2020-06-24T13:09:53.363Z
	tests := []struct {
		name string
		ts   string
		want int64
	}{
		{"seconds", "1593004193", 1593004193000},
		{"seconds, first", "1000000000", 1000000000000},
		{"seconds, last", "99999999999", 99999999999000},
		{"milliseconds", "1593004193363", ms},
		{"milliseconds, first", "100000000000", 100000000000},
		{"milliseconds, last", "99999999999999", 99999999999999},
		{"microseconds", "1593004193363123", ms},
		{"microseconds as float", "1.593004193363e15", ms},
		{"nanoseconds", "1593004193363123456", ms},
		{"small values are milliseconds", "999999999", 999999999},
		{"zero", "0", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := `{"ts":` + tt.ts + `,"job_id":"j","task_name":"t","key":"k"}`
			for _, slow := range []bool{false, true} {
				d := NewDecoder(FormatAuto)
				l := line
				if slow {
					// An escape in the key takes the general path.
					l = `{"ts":` + tt.ts + `,"job_id":"j","task_name":"t","key":"\u006b"}`
				}
				k, err := d.Decode([]byte(l))
				if err != nil || k != KindKeySample {
					t.Fatalf("%s: %v %v", l, k, err)
				}
				if d.Sample.TS != tt.want {
					t.Errorf("%s: ts %d, want %d", l, d.Sample.TS, tt.want)
				}
			}
		})
	}
}
