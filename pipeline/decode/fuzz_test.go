package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/skewlens/skewlens/skew"
)

var fuzzSeeds = []string{
	keyLine, metricJSONLine, influxLine, promLine,
	ks(`"key":"a\"b\\c\/d\b\f\n\r\t\u00e9\u20ac\ud83d\ude00"`),
	ks(`"key":"\ud800\u0041\udc00"`),
	ks("\"key\":\"\xff\xfe\""),
	ks(`"x":{"a":[1,2,{"b":null}],"c":"}\"{"},"y":[],"z":true,"w":false,"v":null,"u":-1.5e-7`),
	ks(`"parallelism":480,"max_parallelism":0,"subtask_index":479,"weight":2.5,"sample_rate":1e-3`),
	`{"ts":1.593004193363e12,"job_id":"j","task_name":"t","key":"k","ts":1e3}`,
	`{"\u0074s":1000,"job\u005fid":"j","task_name":"t","k\u0065y":"k"}`,
	`{"name":"taskmanager_job_task_Shuffle_Netty_Input_Buffers_inPoolUsage","timestamp":1593004193363,"tags":{"host":"10.0.0.169","job_id":"84dc","task_name":"wide","task_attempt_num":0,"subtask_index":96},"value":1.0}`,
	`{"name":"flink.taskmanager.job.task.buffers.inPoolUsage","time_stamp":"1593004193363","tags":{"<job_id>":"j","<task_name>":"t","<subtask_index>":"3"},"value":{"count":5,"rate":1.5}}`,
	`{"name":"jobmanager_job_lastCheckpointDuration","time_stamp":1000,"job_id":"j","value":{"value":"12"}}`,
	mj(mjBase + `,"host":10,"tags":{"host":"h","tm_id":"tm"},"value":{"count":"7","rate":1.5}`),
	mj(mjBase + `,"tags":{"host":"h"},"tags":"none","value":{"value":0.5},"value":"6"`),
	mj(`"name":"flink_taskmanager_job_task_numRecordsOut","timestamp":12,"tags":{"job_id":"j","task_name":"t","subtask_index":2.0},"value":"NaN"`),
	mj(`"name":"taskmanager.job.task.idleTimeMsPerSecond","time_stamp":true,"job_id":"j","task_name":"t","subtask_index":"-1","value":[1]`),
	`taskmanager_job_task_numRecordsInPerSecond,job_id=j,task_name=Map\ ->\ Sink\,x\=y,subtask_index=3 count=10i,rate=2.5,note="a \"b\"" 1593004193`,
	`jobmanager_job_numberOfFailedCheckpoints,job_id=j value=3u`,
	`flink_taskmanager_job_task_busyTimeMsPerSecond{job_id="j",task_name="a\\b \"q\"\nz",subtask_index="3",} 1.5e+06 1000`,
	`flink_taskmanager_job_task_busyTimeMsPerSecond { job_id = "j" } NaN`,
	ks(`"task_id":"cbc357ccb763df2852fee8c4fc7d55f2","task_name":"KeyedProcess -> enrich"`),
	ks(`"task_id":"a\u0062c","task_name":"KeyedProcess \u2192 enrich"`),
	ks(`"task_id":null`), ks(`"task_id":42`), ks(`"<task_id>":"x"`),
	`flink_taskmanager_job_task_accumulateBusyTimeMs{job_id="j",task_id="cbc357ccb763df2852fee8c4fc7d55f2",task_name="KeyedProcess____enrich",subtask_index="0",task_attempt_id="8f2c0e1d2a3b4c5d6e7f8091a2b3c4d5_cbc357ccb763df2852fee8c4fc7d55f2_0_0",tm_id="localhost:35013_6b1e1c"} 123456.0`,
	`taskmanager_job_task_accumulateIdleTimeMs,job_id=j,task_id=t1,task_name=KeyedProcess\ ->\ enrich,subtask_index=1 value=98765i 1593004193363000000`,
	`flink_taskmanager_job_task_mailboxLatencyMs{job_id="j",task_name="t",subtask_index="0",quantile="0.5"} NaN`,
	"# skewlens-scrape-time 1593004193363", "# skewlens-scrape-time\t 1593004193363 ", "# skewlens-scrape-time x",
	"# skewlens-scrape-time -5", "# skewlens-scrape-timex 1", "#skewlens-scrape-time 1",
	`# HELP flink_x y`, ``, `{`, `{"a":` + strings.Repeat("[", 70), `m value=1`, `m 1 2`, `garbage`,
}

// checkErr: every error is an *Error with a real reason.
func checkErr(t *testing.T, k Kind, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if k != KindNone {
		t.Fatalf("kind %v with error %v", k, err)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is %T", err, err)
	}
	if e.Reason == ReasonUnknown || e.Reason >= numReasons || e.Reason == ReasonLineTooLong {
		t.Fatalf("error %v: reason %d", err, e.Reason)
	}
	_ = e.Error()
}

func checkSample(t *testing.T, s *skew.KeySample) {
	t.Helper()
	switch {
	case s.TS < 0:
		t.Fatalf("ts %d", s.TS)
	case s.JobID == "" || s.TaskName == "":
		t.Fatalf("empty job or task: %+v", s)
	case !(s.Weight > 0) || math.IsInf(s.Weight, 0):
		t.Fatalf("weight %v", s.Weight)
	case !(s.SampleRate > 0 && s.SampleRate <= 1):
		t.Fatalf("sample rate %v", s.SampleRate)
	case s.Parallelism < 0 || s.Parallelism > MaxParallelism || s.MaxParallelism < 0 || s.MaxParallelism > MaxParallelism:
		t.Fatalf("parallelism %+v", s)
	case s.MaxParallelism > 0 && s.Parallelism > s.MaxParallelism:
		t.Fatalf("parallelism > max: %+v", s)
	case s.Subtask < -1 || s.Subtask > maxSubtask || (s.Parallelism > 0 && s.Subtask >= s.Parallelism):
		t.Fatalf("subtask %+v", s)
	}
}

func checkMetric(t *testing.T, m *skew.Metric) {
	t.Helper()
	switch {
	case m.Name == skew.MetricUnknown || m.Name.String() == "invalid":
		t.Fatalf("name %v", m.Name)
	case m.TS < 0:
		t.Fatalf("ts %d", m.TS)
	case m.JobID == "":
		t.Fatalf("empty job id: %+v", m)
	case !finite(m.Value) || (m.HasRate && !finite(m.Rate)) || (!m.HasRate && m.Rate != 0):
		t.Fatalf("value %+v", m)
	case m.Name.JobScoped() && (m.Subtask != -1 || m.TaskName != ""):
		t.Fatalf("job scoped %+v", m)
	case !m.Name.JobScoped() && (m.Subtask < 0 || m.Subtask > maxSubtask || m.TaskName == ""):
		t.Fatalf("task scoped %+v", m)
	}
}

// jsonCoerce is what encoding/json makes of a string: every invalid UTF-8
// byte becomes U+FFFD.
func jsonCoerce(s string) string { return string([]rune(s)) }

type keySampleJSON struct {
	TS             int64   `json:"ts"`
	JobID          string  `json:"job_id"`
	JobName        string  `json:"job_name,omitempty"`
	TaskID         string  `json:"task_id,omitempty"`
	TaskName       string  `json:"task_name"`
	Key            string  `json:"key"`
	Weight         float64 `json:"weight"`
	SampleRate     float64 `json:"sample_rate"`
	Parallelism    int32   `json:"parallelism,omitempty"`
	MaxParallelism int32   `json:"max_parallelism"`
	Subtask        *int32  `json:"subtask_index,omitempty"`
}

func coerceSample(s skew.KeySample) skew.KeySample {
	s.JobID, s.JobName, s.TaskName, s.Key = jsonCoerce(s.JobID), jsonCoerce(s.JobName), jsonCoerce(s.TaskName), jsonCoerce(s.Key)
	s.TaskID = jsonCoerce(s.TaskID)
	return s
}

func FuzzKeySampleJSON(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		d := NewDecoder(FormatKeyJSON)
		k, err := d.Decode(line)
		checkErr(t, k, err)
		trimmed := trimBlank(line)
		isObj := len(trimmed) > 0 && trimmed[0] == '{'

		// Syntax agrees with encoding/json (except our depth limit).
		if isObj && json.Valid(line) && bytes.Count(line, []byte("{"))+bytes.Count(line, []byte("[")) <= MaxJSONDepth {
			if r, _ := ReasonOf(err); r == ReasonInvalidJSON {
				t.Fatalf("encoding/json accepts, we say %v", err)
			}
		}
		if isObj && !json.Valid(line) {
			if r, _ := ReasonOf(err); r != ReasonInvalidJSON {
				t.Fatalf("encoding/json rejects, we say %v, %v", k, err)
			}
		}
		if k != KindKeySample {
			return
		}
		got := d.Sample
		checkSample(t, &got)

		// Same fields as encoding/json reading the same line.
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("encoding/json fails on a line we accept: %v", err)
		}
		cs := coerceSample(got)
		if v, _ := m["key"].(string); v != cs.Key {
			t.Fatalf("key: encoding/json %q, ours %q", v, cs.Key)
		}
		bracketed := false // "<job_id>" and "job_id" share one slot here
		for k := range m {
			bracketed = bracketed || strings.HasPrefix(k, "<")
		}
		if !bracketed {
			if v, _ := m["job_id"].(string); v != cs.JobID {
				t.Fatalf("job_id: encoding/json %q, ours %q", v, cs.JobID)
			}
			if v, _ := m["task_name"].(string); v != cs.TaskName {
				t.Fatalf("task_name: encoding/json %q, ours %q", v, cs.TaskName)
			}
			if v, _ := m["task_id"].(string); v != cs.TaskID {
				t.Fatalf("task_id: encoding/json %q, ours %q", v, cs.TaskID)
			}
		}
		if n, ok := m["ts"].(json.Number); !ok {
			t.Fatalf("ts %v", m["ts"])
		} else if ts, ok := jsonInt64(n); !ok || keySampleMillis(ts) != got.TS {
			t.Fatalf("ts %v vs %d", n, got.TS)
		}

		// Round trip: encode with encoding/json, decode again.
		want := cs
		enc := keySampleJSON{
			TS: want.TS, JobID: want.JobID, JobName: want.JobName, TaskID: want.TaskID, TaskName: want.TaskName, Key: want.Key,
			Weight: want.Weight, SampleRate: want.SampleRate, Parallelism: want.Parallelism, MaxParallelism: want.MaxParallelism,
		}
		if want.Subtask >= 0 {
			enc.Subtask = &want.Subtask
		}
		out, err := json.Marshal(enc)
		if err != nil {
			t.Fatal(err)
		}
		d2 := NewDecoder(FormatAuto)
		if k, err := d2.Decode(out); k != KindKeySample || err != nil {
			t.Fatalf("re-decode %s: %v %v", out, k, err)
		}
		if d2.Sample != want {
			t.Fatalf("round trip %s:\n got %+v\nwant %+v", out, d2.Sample, want)
		}
	})
}

// Encoders for metric round trips.

var canonicalName = map[skew.MetricName]string{}

func init() {
	for _, s := range []string{
		"buffers_inputQueueLength", "buffers_inPoolUsage", "buffers_outputQueueLength", "buffers_outPoolUsage",
		"buffers_inputFloatingBuffersUsage", "buffers_inputExclusiveBuffersUsage", "busyTimeMsPerSecond",
		"backPressuredTimeMsPerSecond", "idleTimeMsPerSecond", "numRecordsIn", "numRecordsInPerSecond",
		"numRecordsOut", "numRecordsOutPerSecond", "checkpointAlignmentTime", "checkpointStartDelayNanos",
		"accumulateBusyTimeMs", "accumulateBackPressuredTimeMs", "accumulateIdleTimeMs",
	} {
		canonicalName[LookupMetric(taskPrefix+s)] = taskPrefix + s
	}
	canonicalName[skew.LastCheckpointDuration] = jobPrefix + "lastCheckpointDuration"
	canonicalName[skew.NumberOfFailedCheckpoints] = jobPrefix + "numberOfFailedCheckpoints"
	canonicalName[skew.LastCheckpointSize] = jobPrefix + "lastCheckpointSize"
	canonicalName[skew.NumberOfCompletedCheckpoints] = jobPrefix + "numberOfCompletedCheckpoints"
}

type metricVar struct {
	name string
	val  string
}

func metricVars(m *skew.Metric) []metricVar {
	vars := []metricVar{{"host", m.Host}, {"tm_id", m.TMID}, {"job_id", m.JobID}, {"job_name", m.JobName},
		{"task_id", m.TaskID}, {"task_name", m.TaskName}, {"task_attempt_id", m.TaskAttemptID}}
	if m.Subtask >= 0 {
		vars = append(vars, metricVar{"subtask_index", strconv.Itoa(int(m.Subtask))})
	}
	return vars
}

func encodeMetricJSON(m *skew.Metric, tags bool) []byte {
	obj := map[string]any{"name": canonicalName[m.Name], "time_stamp": m.TS}
	vars := map[string]any{}
	for _, v := range metricVars(m) {
		if v.val != "" || v.name == "job_id" || v.name == "task_name" {
			vars[v.name] = v.val
		}
	}
	if tags {
		obj["tags"] = vars
	} else {
		for k, v := range vars {
			obj[k] = v
		}
	}
	if m.HasRate {
		obj["value"] = map[string]float64{"count": m.Value, "rate": m.Rate}
	} else {
		obj["value"] = m.Value
	}
	out, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return out
}

var influxEscaper = strings.NewReplacer(",", `\,`, " ", `\ `, "=", `\=`)

// encodeInflux returns false when m cannot be written as line protocol
// exactly (backslashes, or a timestamp whose unit would be misread).
func encodeInflux(m *skew.Metric) ([]byte, bool) {
	if m.TS < 1e11 || m.TS >= math.MaxInt64/1_000_000 {
		return nil, false
	}
	var b []byte
	b = append(b, canonicalName[m.Name]...)
	for _, v := range metricVars(m) {
		if strings.ContainsAny(v.val, "\\\n\r\t") {
			return nil, false
		}
		if v.val == "" && v.name != "job_id" && v.name != "task_name" {
			continue
		}
		b = append(b, ',')
		b = append(b, v.name...)
		b = append(b, '=')
		b = append(b, influxEscaper.Replace(v.val)...)
	}
	b = append(b, " value="...)
	b = strconv.AppendFloat(b, m.Value, 'g', -1, 64)
	if m.HasRate {
		b = append(b, ",rate="...)
		b = strconv.AppendFloat(b, m.Rate, 'g', -1, 64)
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, m.TS*1e6, 10)
	return b, true
}

var promEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func encodeProm(m *skew.Metric) []byte {
	var b []byte
	b = append(b, "flink_"...)
	b = append(b, canonicalName[m.Name]...)
	b = append(b, '{')
	for _, v := range metricVars(m) {
		b = append(b, v.name...)
		b = append(b, `="`...)
		b = append(b, promEscaper.Replace(v.val)...)
		b = append(b, `",`...)
	}
	b = append(b, "} "...)
	b = strconv.AppendFloat(b, m.Value, 'g', -1, 64)
	b = append(b, ' ')
	b = strconv.AppendInt(b, m.TS, 10)
	return b
}

func coerceMetric(m skew.Metric) skew.Metric {
	for _, p := range []*string{&m.Host, &m.TMID, &m.JobID, &m.JobName, &m.TaskID, &m.TaskName, &m.TaskAttemptID} {
		*p = jsonCoerce(*p)
	}
	return m
}

// roundTripMetric re-encodes a decoded metric in every format and checks
// that decoding gives it back.
func roundTripMetric(t *testing.T, m skew.Metric) {
	t.Helper()
	check := func(what string, line []byte, want skew.Metric) {
		t.Helper()
		d := NewDecoder(FormatAuto)
		k, err := d.Decode(line)
		if k != KindMetric || err != nil {
			t.Fatalf("%s re-decode %q: %v %v", what, line, k, err)
		}
		if d.Metric != want {
			t.Fatalf("%s round trip %q:\n got %+v\nwant %+v", what, line, d.Metric, want)
		}
	}
	cm := coerceMetric(m)
	check("json", encodeMetricJSON(&cm, false), cm)
	check("json tags", encodeMetricJSON(&cm, true), cm)
	if line, ok := encodeInflux(&m); ok {
		check("influx", line, m)
	}
	pm := m
	pm.Rate, pm.HasRate = 0, false
	check("prometheus", encodeProm(&pm), pm)
}

func fuzzMetric(f *testing.F, format Format, extra func(t *testing.T, line []byte, defTS int64, k Kind, err error, m skew.Metric)) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), int64(0))
	}
	f.Add([]byte(`taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=3 value=1`), int64(1000))
	f.Fuzz(func(t *testing.T, line []byte, defTS int64) {
		d := NewDecoder(format)
		d.DefaultTS = defTS
		k, err := d.Decode(line)
		checkErr(t, k, err)
		if k == KindKeySample {
			t.Fatalf("%v decoder returned a key sample", format)
		}
		if extra != nil {
			extra(t, line, defTS, k, err, d.Metric)
		}
		if k != KindMetric {
			return
		}
		m := d.Metric
		checkMetric(t, &m)
		roundTripMetric(t, m)
	})
}

// FuzzMetricJSON: besides the shared checks, compare with a reference
// built on encoding/json (refMetricJSON) for lines without duplicate or
// bracketed keys, where the order of fields cannot matter.
func FuzzMetricJSON(f *testing.F) {
	fuzzMetric(f, FormatMetricJSON, func(t *testing.T, line []byte, defTS int64, k Kind, err error, got skew.Metric) {
		want, wantReason, ok := refMetricJSON(line, defTS)
		if !ok {
			return
		}
		gotReason, _ := ReasonOf(err)
		if wantReason != gotReason || (k == KindMetric) != (wantReason == ReasonUnknown && want.Name != skew.MetricUnknown) {
			t.Fatalf("got %v %v, reference %v %+v", k, err, wantReason, want)
		}
		if k == KindMetric && coerceMetric(got) != want {
			t.Fatalf("got %+v\nreference %+v", coerceMetric(got), want)
		}
	})
}

func FuzzInflux(f *testing.F)     { fuzzMetric(f, FormatInflux, nil) }
func FuzzPrometheus(f *testing.F) { fuzzMetric(f, FormatPrometheus, nil) }

// objectFields returns the members of a JSON object, or ok=false when raw
// is not an object, repeats a key or has a "<...>" key.
func objectFields(raw []byte) (vals map[string]json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	vals = map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key := tok.(string)
		if _, dup := vals[key]; dup || strings.HasPrefix(key, "<") {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		vals[key] = v
	}
	return vals, true
}

// refMetricJSON decodes a metric JSON line with encoding/json following
// the rules in the package documentation. ok is false when the line is
// outside what the reference handles; reason is ReasonUnknown on success
// (want.Name is MetricUnknown for an ignored metric).
func refMetricJSON(line []byte, defTS int64) (want skew.Metric, reason Reason, ok bool) {
	if !json.Valid(line) || bytes.Count(line, []byte("{"))+bytes.Count(line, []byte("[")) > MaxJSONDepth {
		return want, 0, false
	}
	if b := trimBlank(line); len(b) == 0 || b[0] != '{' {
		return want, 0, false
	}
	top, ok := objectFields(line)
	if !ok {
		return want, 0, false
	}
	if _, a := top["time_stamp"]; a {
		if _, b := top["timestamp"]; b {
			return want, 0, false
		}
	}
	var tags, value map[string]json.RawMessage
	if raw, has := top["tags"]; has && bytes.HasPrefix(raw, []byte("{")) {
		if tags, ok = objectFields(raw); !ok {
			return want, 0, false
		}
	}
	if raw, has := top["value"]; has && bytes.HasPrefix(raw, []byte("{")) {
		if value, ok = objectFields(raw); !ok {
			return want, 0, false
		}
	}
	present := func(m map[string]json.RawMessage, k string) (json.RawMessage, bool) {
		v, has := m[k]
		return v, has && string(v) != "null"
	}
	text := func(raw json.RawMessage) (string, bool) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, true
		}
		var n json.Number
		if json.Unmarshal(raw, &n) == nil && raw[0] != '"' {
			return string(raw), true
		}
		return "", false
	}
	num := func(raw json.RawMessage) (float64, bool) {
		s, ok := text(raw)
		if !ok {
			return 0, false
		}
		v, ok := parseFloat(s)
		return v, ok && finite(v)
	}

	nameRaw, has := present(top, "name")
	if !has {
		return want, ReasonMissingField, true
	}
	var name string
	if json.Unmarshal(nameRaw, &name) != nil {
		return want, ReasonBadField, true
	}
	if want.Name = LookupMetric(name); want.Name == skew.MetricUnknown {
		return want, 0, true
	}
	want.Subtask = -1
	vars := map[string]*string{"host": &want.Host, "tm_id": &want.TMID, "job_id": &want.JobID, "job_name": &want.JobName,
		"task_id": &want.TaskID, "task_name": &want.TaskName, "task_attempt_id": &want.TaskAttemptID}
	var sub string
	seen := map[string]bool{}
	for _, v := range []string{"host", "tm_id", "job_id", "job_name", "task_id", "task_name", "task_attempt_id", "subtask_index"} {
		raw, has := present(top, v)
		if !has {
			if raw, has = present(tags, v); !has {
				continue
			}
		}
		s, ok := text(raw)
		if !ok {
			return want, ReasonBadField, true
		}
		seen[v] = true
		if v == "subtask_index" {
			sub = s
		} else {
			*vars[v] = s
		}
	}
	switch {
	case !seen["job_id"]:
		return want, ReasonMissingField, true
	case want.JobID == "":
		return want, ReasonBadField, true
	}
	if want.Name.JobScoped() {
		want.TaskName = ""
	} else {
		switch {
		case !seen["task_name"]:
			return want, ReasonMissingField, true
		case want.TaskName == "":
			return want, ReasonBadField, true
		case !seen["subtask_index"]:
			return want, ReasonMissingField, true
		}
		v, ok := parseInt(sub)
		if !ok || v < 0 || v > maxSubtask {
			return want, ReasonBadField, true
		}
		want.Subtask = int32(v)
	}
	tsRaw, has := present(top, "time_stamp")
	if !has {
		tsRaw, has = present(top, "timestamp")
	}
	switch {
	case has:
		s, ok := text(tsRaw)
		if !ok {
			return want, ReasonBadTimestamp, true
		}
		ts, ok := parseInt(s)
		if !ok || ts < 0 {
			return want, ReasonBadTimestamp, true
		}
		want.TS = ts
	case defTS > 0:
		want.TS = defTS
	default:
		return want, ReasonMissingTimestamp, true
	}
	vRaw, has := present(top, "value")
	if !has {
		return want, ReasonMissingField, true
	}
	if value == nil {
		v, ok := num(vRaw)
		if !ok {
			return want, ReasonBadValue, true
		}
		want.Value = v
		return want, 0, true
	}
	inner, has := present(value, "value")
	if !has {
		if inner, has = present(value, "count"); !has {
			return want, ReasonBadValue, true
		}
	}
	v, ok := num(inner)
	if !ok {
		return want, ReasonBadValue, true
	}
	want.Value = v
	if r, has := present(value, "rate"); has {
		if want.Rate, ok = num(r); !ok {
			return want, ReasonBadValue, true
		}
		want.HasRate = true
	}
	return want, 0, true
}

// FuzzAuto: auto detection gives exactly what forcing the detected format
// gives, and never panics.
func FuzzAuto(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		d := NewDecoder(FormatAuto)
		d.DefaultTS = 7
		k, err := d.Decode(line)
		checkErr(t, k, err)
		switch k {
		case KindKeySample:
			checkSample(t, &d.Sample)
		case KindMetric:
			checkMetric(t, &d.Metric)
		}
		b := trimBlank(line)
		if len(b) == 0 || b[0] == '#' {
			// Only a scrape-time directive with a bad time is an error,
			// and it clears the default time; a good one sets it.
			directive := bytes.HasPrefix(b, []byte(ScrapeTimeDirective+" ")) || bytes.HasPrefix(b, []byte(ScrapeTimeDirective+"\t"))
			r, _ := ReasonOf(err)
			switch {
			case k != KindNone:
				t.Fatalf("blank/comment gave %v", k)
			case err != nil && (!directive || r != ReasonBadTimestamp || d.DefaultTS != 0):
				t.Fatalf("comment %q gave %v (default time %d)", b, err, d.DefaultTS)
			case err == nil && directive && d.DefaultTS <= 0:
				t.Fatalf("directive %q accepted with default time %d", b, d.DefaultTS)
			case err == nil && !directive && d.DefaultTS != 7:
				t.Fatalf("comment %q changed the default time to %d", b, d.DefaultTS)
			}
			return
		}
		d2 := NewDecoder(detect(b))
		d2.DefaultTS = 7
		k2, err2 := d2.Decode(line)
		r1, _ := ReasonOf(err)
		r2, _ := ReasonOf(err2)
		if k != k2 || r1 != r2 || (err == nil) != (err2 == nil) {
			t.Fatalf("auto %v %v, forced %v: %v %v", k, err, detect(b), k2, err2)
		}
		if k == KindKeySample && d.Sample != d2.Sample || k == KindMetric && d.Metric != d2.Metric {
			t.Fatalf("auto and forced differ")
		}

		// A Decoder that has seen other lines (key prediction state,
		// scratch contents) gives the same result as a fresh one.
		warm := NewDecoder(FormatAuto)
		warm.DefaultTS = 7
		for _, prev := range [][]byte{[]byte(keyLine), []byte(metricJSONLine), line} {
			warm.Decode(prev)
		}
		k3, err3 := warm.Decode(line)
		r3, _ := ReasonOf(err3)
		if k != k3 || r1 != r3 || (err == nil) != (err3 == nil) {
			t.Fatalf("fresh %v %v, warm %v %v", k, err, k3, err3)
		}
		if k == KindKeySample && d.Sample != warm.Sample || k == KindMetric && d.Metric != warm.Metric {
			t.Fatalf("fresh and warm differ:\n%+v\n%+v", d.Sample, warm.Sample)
		}
	})
}

// FuzzLineReader compares LineReader, fed one byte at a time, with a
// simple split of the whole input.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nc"), uint8(4))
	f.Add([]byte("\xEF\xBB\xBFabc\r\r\n0123456789\n"), uint8(3))
	f.Add([]byte(""), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, maxLine uint8) {
		// Small limits only: every NewLineReader allocates a buffer of
		// about the limit (DefaultMaxLine is covered by the unit tests).
		max := int(maxLine)%100 + 1
		lr := NewLineReader(iotest.OneByteReader(bytes.NewReader(data)), max)
		var want [][]byte
		if len(data) > 0 {
			want = bytes.Split(data, []byte("\n"))
			if len(want[len(want)-1]) == 0 {
				want = want[:len(want)-1] // newline-terminated: no empty last line
			}
		}
		for i, w := range want {
			w = bytes.TrimSuffix(w, []byte("\r"))
			if i == 0 {
				w = bytes.TrimPrefix(w, utf8BOM)
			}
			line, n, err := lr.Next()
			if n != i+1 {
				t.Fatalf("line %d numbered %d", i+1, n)
			}
			if len(w) > max {
				if r, _ := ReasonOf(err); r != ReasonLineTooLong {
					t.Fatalf("line %d (%d bytes, max %d): %q, %v", n, len(w), max, line, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(line, w) {
				t.Fatalf("line %d: got %q, %v; want %q", n, line, err, w)
			}
		}
		if _, _, err := lr.Next(); err != io.EOF {
			t.Fatalf("after %d lines: %v", len(want), err)
		}
	})
}

// FuzzParseFloat: the fast path agrees bit for bit with strconv.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"0", "-0", "1.5", "0.000123", "1e22", "123456789012345e-22", "9007199254740993", "1e-3", "+7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseFloat(s)
		want, err := strconv.ParseFloat(s, 64)
		if ok {
			if err != nil {
				t.Fatalf("parseFloat(%q) = %v, strconv: %v", s, got, err)
			}
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("parseFloat(%q) = %v, strconv %v", s, got, want)
			}
		} else if err == nil && !strings.Contains(s, "_") {
			t.Fatalf("parseFloat(%q) rejected, strconv gives %v", s, want)
		}
		if v, ok := parseInt(s); ok {
			if err == nil && float64(v) != want {
				t.Fatalf("parseInt(%q) = %d, strconv float %v", s, v, want)
			}
		}
	})
}

// jsonInt64 is the exact value of an integral JSON number that fits in
// int64 (1e3 and 5.0 included), found without the decoder's code.
func jsonInt64(n json.Number) (int64, bool) {
	f, _, err := big.ParseFloat(string(n), 10, 256, big.ToNearestEven)
	if err != nil || !f.IsInt() {
		return 0, false
	}
	v, acc := f.Int64()
	return v, acc == big.Exact
}
