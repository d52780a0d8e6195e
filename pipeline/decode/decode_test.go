package decode

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Format
	}{
		{"auto", FormatAuto}, {"json", FormatJSON}, {"influx", FormatInflux},
		{"prometheus", FormatPrometheus}, {"key-json", FormatKeyJSON}, {"metric-json", FormatMetricJSON},
	} {
		got, err := ParseFormat(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseFormat(%q) = %v, %v", tc.in, got, err)
		}
		if got.String() != tc.in {
			t.Errorf("%v.String() = %q", got, got.String())
		}
		var f Format
		if err := f.UnmarshalText([]byte(tc.in)); err != nil || f != tc.want {
			t.Errorf("UnmarshalText(%q) = %v, %v", tc.in, f, err)
		}
	}
	for _, bad := range []string{"", "JSON", "prom", "csv"} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("ParseFormat(%q) succeeded", bad)
		}
	}
}

func TestReasonNames(t *testing.T) {
	want := map[Reason]string{
		ReasonUnknown: "unknown", ReasonInvalidJSON: "invalid_json", ReasonMissingField: "missing_field",
		ReasonBadField: "bad_field", ReasonBadTimestamp: "bad_timestamp", ReasonBadValue: "bad_value",
		ReasonBadLine: "bad_line", ReasonMissingTimestamp: "missing_timestamp", ReasonLineTooLong: "line_too_long",
	}
	if len(want) != NumReasons {
		t.Fatalf("test covers %d reasons, package has %d", len(want), NumReasons)
	}
	for r, s := range want {
		if r.String() != s {
			t.Errorf("%d.String() = %q, want %q", r, r.String(), s)
		}
	}
	if Reason(200).String() != "reason_200" {
		t.Errorf("out of range: %q", Reason(200).String())
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Reason: ReasonMissingField, Field: "job_id"}, `missing field "job_id"`},
		{Error{Reason: ReasonBadField, Field: "weight", Msg: "must be finite and > 0"}, `bad field "weight": must be finite and > 0`},
		{Error{Reason: ReasonInvalidJSON, Msg: "unexpected end of input"}, `invalid JSON: unexpected end of input`},
		{Error{Reason: ReasonMissingTimestamp}, `missing timestamp`},
		{Error{}, `unknown`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	d := NewDecoder(FormatAuto)
	_, err := d.Decode([]byte(`{"ts":1,"task_name":"t","key":"k"}`))
	wrapped := fmt.Errorf("line 7: %w", err)
	var e *Error
	if !errors.As(wrapped, &e) || e.Reason != ReasonMissingField || e.Field != "job_id" {
		t.Errorf("errors.As: %v", e)
	}
	if !errors.Is(wrapped, &Error{Reason: ReasonMissingField}) ||
		!errors.Is(wrapped, &Error{Reason: ReasonMissingField, Field: "job_id"}) ||
		errors.Is(wrapped, &Error{Reason: ReasonMissingField, Field: "key"}) ||
		errors.Is(wrapped, &Error{Reason: ReasonBadField}) {
		t.Error("errors.Is")
	}
	if r, ok := ReasonOf(wrapped); !ok || r != ReasonMissingField {
		t.Errorf("ReasonOf = %v, %v", r, ok)
	}
	if _, ok := ReasonOf(errors.New("x")); ok {
		t.Error("ReasonOf plain error")
	}
}

func TestCounts(t *testing.T) {
	var c Counts
	if c.String() != "" || c.Total() != 0 {
		t.Errorf("zero Counts: %q %d", c.String(), c.Total())
	}
	c.Add(ReasonMissingField)
	c.Add(ReasonInvalidJSON)
	c.Add(ReasonInvalidJSON)
	c.Add(ReasonLineTooLong)
	c.Add(Reason(250)) // counted as unknown
	c.AddErr(nil)
	c.AddErr(&Error{Reason: ReasonBadValue})
	c.AddErr(errors.New("other"))
	if got, want := c.String(), "unknown=2 invalid_json=2 missing_field=1 bad_value=1 line_too_long=1"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if c.Total() != 7 || c.Get(ReasonInvalidJSON) != 2 || c.Get(ReasonBadLine) != 0 || c.Get(Reason(250)) != 0 {
		t.Errorf("Total %d Get %d", c.Total(), c.Get(ReasonInvalidJSON))
	}
	var order []Reason
	c.Each(func(r Reason, n uint64) { order = append(order, r) })
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Errorf("Each order %v", order)
		}
	}
	c.Reset()
	if c.Total() != 0 {
		t.Error("Reset")
	}
}

func TestKindString(t *testing.T) {
	if KindNone.String() != "none" || KindKeySample.String() != "key_sample" || KindMetric.String() != "metric" {
		t.Error("Kind.String")
	}
}

// TestAllocs: steady-state decoding of every format allocates nothing,
// including lines whose strings need unescaping.
func TestAllocs(t *testing.T) {
	lines := []struct {
		f    Format
		line string
	}{
		{FormatAuto, keyLine},
		{FormatKeyJSON, keyLine},
		{FormatAuto, ks(`"key":"a\"b\u00e9\ud83d\ude00","job_name":"x\ty","extra":{"a":[1,2,{"b":null}]}`)},
		{FormatAuto, metricJSONLine},
		{FormatMetricJSON, `{"name":"flink.taskmanager.job.task.Shuffle.Netty.Input.Buffers.inPoolUsage","timestamp":1593004193363,"tags":{"<host>":"h","<job_id>":"j","<task_name>":"t\u0020x","<subtask_index>":"3"},"value":{"count":5,"rate":1.5}}`},
		{FormatAuto, influxLine},
		{FormatInflux, `taskmanager_job_task_numRecordsIn,job_id=j,task_name=Map\ ->\ Sink,subtask_index=3 count=5i,rate=2.5,note="x\"y" 1593004193363`},
		{FormatAuto, promLine},
		{FormatPrometheus, `flink_taskmanager_job_task_busyTimeMsPerSecond{job_id="j",task_name="a\"b\\c",subtask_index="3"} 12.5`},
		{FormatAuto, `flink_taskmanager_job_task_operator_numRecordsIn{job_id="j"} 1`}, // unknown metric
		{FormatAuto, `# HELP x y`},
		{FormatAuto, `# skewlens-scrape-time 1593004200000`},
		{FormatAuto, ks(`"task_id":"cbc357ccb763df2852fee8c4fc7d55f2","task_name":"KeyedProcess -> enrich"`)},
		{FormatAuto, ks(`"task_id":"cbc\u0033"`)},
		{FormatAuto, `flink_taskmanager_job_task_accumulateBusyTimeMs` + f2Prom + ` 123456.0`},
		{FormatAuto, `taskmanager_job_task_accumulateIdleTimeMs` + f2Influx + ` value=98765i 1593004200000000000`},
		{FormatAuto, `{"ts":1,"name":"other","value":{"a":[true,false,null]}}`},
	}
	for _, tc := range lines {
		d := NewDecoder(tc.f)
		d.DefaultTS = 1
		line := []byte(tc.line)
		if _, err := d.Decode(line); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		n := testing.AllocsPerRun(200, func() {
			if _, err := d.Decode(line); err != nil {
				panic(err)
			}
		})
		if n != 0 {
			t.Errorf("%v %s: %v allocs/op", tc.f, tc.line, n)
		}
	}
	n := testing.AllocsPerRun(100, func() {
		for _, name := range []string{"flink.taskmanager.job.task.buffers.inPoolUsage", "flink_taskmanager_job_task_buffers_inPoolUsage", "nope"} {
			LookupMetric(name)
		}
	})
	if n != 0 {
		t.Errorf("LookupMetric: %v allocs", n)
	}
}

func TestBadLinesAllocateOnlyTheError(t *testing.T) {
	d := NewDecoder(FormatAuto)
	for _, line := range []string{`{"ts":`, `{"ts":1}`, influxLine[:50] + " value=x 1", `garbage`, ks(`"weight":0`), ks(`"weight":1e-400`), `taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=1 value=1 x`, `# skewlens-scrape-time soon`} {
		b := []byte(line)
		n := testing.AllocsPerRun(100, func() {
			if _, err := d.Decode(b); err == nil {
				panic("no error")
			}
		})
		if n > 1 {
			t.Errorf("%s: %v allocs", line, n)
		}
	}
}

func TestParseNumbers(t *testing.T) {
	floats := []string{
		"0", "-0", "1", "1.5", "0.1", "0.01", "123456789012345", "1234567890123456", "0.000123",
		"1e3", "1E+3", "1e-3", "-2.5e-7", "9007199254740993", "1.7976931348623157e308", "5e-324",
		"1e22", "1e23", "123456789012345e-22", "3.14159265358979", "+7", "1e0000", ".5", "5.",
		"NaN", "Inf", "-Infinity", "0x1p-2", "", "-", "e5", "1e", "1.2.3", "00012", "1e99999",
	}
	for _, s := range floats {
		want, err := strconv.ParseFloat(s, 64)
		got, ok := parseFloat(s)
		if (err == nil) != ok {
			t.Errorf("parseFloat(%q) ok=%v, strconv err=%v", s, ok, err)
			continue
		}
		if ok && math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("parseFloat(%q) = %v, want %v", s, got, want)
		}
	}
	// Go-literal underscores are not numbers in any input format.
	if _, ok := parseFloat("1_0"); ok {
		t.Error(`parseFloat("1_0") accepted`)
	}
	ints := map[string]int64{
		"0": 0, "-0": 0, "42": 42, "+42": 42, "-42": -42, "007": 7, "1e3": 1000, "1.5e3": 1500, "2.0": 2,
		"9223372036854775807": math.MaxInt64, "-9223372036854775808": math.MinInt64,
		"0000000000000000000000001": 1,
	}
	for s, want := range ints {
		if got, ok := parseInt(s); !ok || got != want {
			t.Errorf("parseInt(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "-", "+", "1.5", "9223372036854775808", "-9223372036854775809", "99999999999999999999", "1e19", "NaN", "Inf", "x", "1x", "--1"} {
		if got, ok := parseInt(s); ok {
			t.Errorf("parseInt(%q) = %v, ok", s, got)
		}
	}
}

func TestToMillis(t *testing.T) {
	for _, tc := range [][2]int64{
		{0, 0}, {1593004193, 1593004193000}, {99999999999, 99999999999000}, {100000000000, 100000000000},
		{1593004193363, 1593004193363}, {1593004193363123, 1593004193363},
		{1593004193363123456, 1593004193363}, {math.MaxInt64, math.MaxInt64 / 1_000_000},
	} {
		if got := toMillis(tc[0]); got != tc[1] {
			t.Errorf("toMillis(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}

func TestEightDigits(t *testing.T) {
	for _, s := range []string{"00000000", "12345678", "99999999", "10000000", "00000001", "90817263"} {
		want, _ := strconv.ParseUint(s, 10, 64)
		var w uint64
		for i := 7; i >= 0; i-- {
			w = w<<8 | uint64(s[i])
		}
		if got := eightDigits(w); got != want {
			t.Errorf("eightDigits(%s) = %d", s, got)
		}
	}
}

func TestZeroDecoder(t *testing.T) {
	var d Decoder
	if k, err := d.Decode([]byte(keyLine)); k != KindKeySample || err != nil || d.Sample != keyWant {
		t.Errorf("zero Decoder: %v %v %+v", k, err, d.Sample)
	}
	if d.Format() != FormatAuto {
		t.Errorf("format %v", d.Format())
	}
}
