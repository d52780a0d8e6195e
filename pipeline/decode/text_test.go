package decode

import (
	"errors"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew"
)

const influxTags = `host=10.0.0.169,job_id=84dce1ec8aa5a4df2d1758d6e9278693,job_name=billing,subtask_index=96,task_attempt_id=0d2b9593f56af1f5719a00bf4f6,task_attempt_num=0,task_id=cbc357ccb763df2852fee8c4fc7d55f2,task_name=wideReduce-toNarrow,tm_id=container_e17_1592223040493_0006_01_000002`

const influxLine = `taskmanager_job_task_buffers_inPoolUsage,` + influxTags + ` value=1.0 1593004193363000000`

const promLabels = `host="10.0.0.169",job_id="84dce1ec8aa5a4df2d1758d6e9278693",job_name="billing",subtask_index="96",task_attempt_id="0d2b9593f56af1f5719a00bf4f6",task_attempt_num="0",task_id="cbc357ccb763df2852fee8c4fc7d55f2",task_name="wideReduce-toNarrow",tm_id="container_e17_1592223040493_0006_01_000002"`

const promLine = `flink_taskmanager_job_task_buffers_inPoolUsage{` + promLabels + `} 1.0 1593004193363`

type textCase struct {
	name   string
	line   string
	defTS  int64
	want   skew.Metric
	wantNo bool
}

func runTextCases(t *testing.T, formats []Format, tests []textCase) {
	t.Helper()
	for _, f := range formats {
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

type errCase struct {
	name   string
	line   string
	reason Reason
	field  string
}

func runErrCases(t *testing.T, formats []Format, tests []errCase) {
	t.Helper()
	for _, f := range formats {
		for _, tc := range tests {
			t.Run(f.String()+"/"+tc.name, func(t *testing.T) {
				d := NewDecoder(f)
				k, err := d.Decode([]byte(tc.line))
				if err == nil {
					t.Fatalf("Decode = %v, nil; want %v (metric %+v)", k, tc.reason, d.Metric)
				}
				if k != KindNone {
					t.Errorf("kind %v with error", k)
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
}

const ixTags = `,job_id=j,task_name=t,subtask_index=3`

func TestInflux(t *testing.T) {
	tests := []textCase{
		{name: "canonical ns", line: influxLine, want: metricTask(skew.InPoolUsage, nil)},
		{name: "shuffle name", line: `taskmanager_job_task_Shuffle_Netty_Input_Buffers_inPoolUsage,` + influxTags + ` value=1 1593004193363000000`,
			want: metricTask(skew.InPoolUsage, nil)},
		{name: "seconds", line: `taskmanager_job_task_busyTimeMsPerSecond` + ixTags + ` value=1 1593004193`,
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.TS = 1593004193000 })},
		{name: "millis", line: `taskmanager_job_task_busyTimeMsPerSecond` + ixTags + ` value=1 1593004193363`,
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.TS = 1593004193363 })},
		{name: "micros", line: `taskmanager_job_task_busyTimeMsPerSecond` + ixTags + ` value=1 1593004193363123`,
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.TS = 1593004193363 })},
		{name: "nanos", line: `taskmanager_job_task_busyTimeMsPerSecond` + ixTags + ` value=1 1593004193363123456`,
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.TS = 1593004193363 })},
		{name: "counter int", line: `taskmanager_job_task_numRecordsIn` + ixTags + ` count=5i 1000`,
			want: smallMetric(skew.NumRecordsIn, func(m *skew.Metric) { m.Value = 5; m.TS = 1000000 })},
		{name: "meter", line: `taskmanager_job_task_numRecordsInPerSecond` + ixTags + ` count=10i,rate=2.5 1593004193363`,
			want: smallMetric(skew.NumRecordsInPerSecond, func(m *skew.Metric) { m.Value = 10; m.Rate = 2.5; m.HasRate = true; m.TS = 1593004193363 })},
		{name: "uint and negative", line: `taskmanager_job_task_numRecordsOut` + ixTags + ` count=18446744073709551615u,value=-3i 1593004193363`,
			want: smallMetric(skew.NumRecordsOut, func(m *skew.Metric) { m.Value = -3; m.TS = 1593004193363 })},
		{name: "escapes", line: `taskmanager_job_task_idleTimeMsPerSecond,job_id=j,task_name=Map\ ->\ Sink\,x\=y,subtask_index=3,host=a\b value=1 1593004193363`,
			want: smallMetric(skew.IdleTimeMsPerSecond, func(m *skew.Metric) { m.TaskName = `Map -> Sink,x=y`; m.Host = `a\b`; m.TS = 1593004193363 })},
		{name: "escaped field key", line: `taskmanager_job_task_idleTimeMsPerSecond` + ixTags + ` my\ f=3,val\ue=2,value=1 1593004193363`,
			want: smallMetric(skew.IdleTimeMsPerSecond, func(m *skew.Metric) { m.TS = 1593004193363 })},
		{name: "numeric string field", line: `taskmanager_job_task_busyTimeMsPerSecond` + ixTags + ` value="1.5" 1593004193363`,
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.Value = 1.5; m.TS = 1593004193363 })},
		{name: "other fields ignored", line: `taskmanager_job_task_busyTimeMsPerSecond` + ixTags + ` note="a \"b\", c",flag=true,value=1,x=abc 1593004193363`,
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.TS = 1593004193363 })},
		{name: "non-numeric string value falls back to count", line: `taskmanager_job_task_numRecordsIn` + ixTags + ` value="n/a",count=4 1593004193363`,
			want: smallMetric(skew.NumRecordsIn, func(m *skew.Metric) { m.Value = 4; m.TS = 1593004193363 })},
		{name: "value beats count", line: `taskmanager_job_task_numRecordsIn` + ixTags + ` count=4,value=2 1593004193363`,
			want: smallMetric(skew.NumRecordsIn, func(m *skew.Metric) { m.Value = 2; m.TS = 1593004193363 })},
		{name: "duplicate tag last wins", line: `taskmanager_job_task_busyTimeMsPerSecond,task_name=a` + ixTags + ` value=1 1593004193363`,
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.TS = 1593004193363 })},
		{name: "default ts", defTS: 1000, line: `taskmanager_job_task_busyTimeMsPerSecond` + ixTags + ` value=1`,
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "crlf and blanks", line: ` taskmanager_job_task_busyTimeMsPerSecond` + ixTags + `  value=1  1593004193363 ` + "\r",
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.TS = 1593004193363 })},
		{name: "dotted name", line: `flink.taskmanager.job.task.backPressuredTimeMsPerSecond` + ixTags + ` value=0 1593004193363`,
			want: smallMetric(skew.BackPressuredTimeMsPerSecond, func(m *skew.Metric) { m.Value = 0; m.TS = 1593004193363 })},
		{name: "job scoped", line: `jobmanager_job_numberOfFailedCheckpoints,job_id=j,host=h value=3i 1593004193363`,
			want: skew.Metric{TS: 1593004193363, Name: skew.NumberOfFailedCheckpoints, JobID: "j", Host: "h", Subtask: -1, Value: 3}},
		{name: "no tags job scoped needs job id", line: `jobmanager_job_lastCheckpointDuration,job_id=j value=7 0`,
			want: skew.Metric{TS: 0, Name: skew.LastCheckpointDuration, JobID: "j", Subtask: -1, Value: 7}},
		{name: "job scoped size", line: `jobmanager_job_lastCheckpointSize,job_id=j,host=h value=4096i 1593004193363`,
			want: skew.Metric{TS: 1593004193363, Name: skew.LastCheckpointSize, JobID: "j", Host: "h", Subtask: -1, Value: 4096}},
		{name: "job scoped completed", line: `jobmanager_job_numberOfCompletedCheckpoints,job_id=j,host=h value=17i 1593004193363`,
			want: skew.Metric{TS: 1593004193363, Name: skew.NumberOfCompletedCheckpoints, JobID: "j", Host: "h", Subtask: -1, Value: 17}},
		{name: "unknown", line: `taskmanager_job_task_operator_numRecordsIn,job_id=j value=1 1`, wantNo: true},
		{name: "unknown with fields", line: `foo,bar baz=qux`, wantNo: true},
		{name: "comment", line: `# a comment`, wantNo: true},
		{name: "blank", line: " \t\r", wantNo: true},
	}
	runTextCases(t, []Format{FormatAuto, FormatInflux}, tests)
}

func TestInfluxErrors(t *testing.T) {
	const m = `taskmanager_job_task_busyTimeMsPerSecond`
	tests := []errCase{
		{"no fields", m + ixTags, ReasonBadLine, ""},
		{"no fields trailing space", m + ixTags + "   ", ReasonBadLine, ""},
		{"tag without =", m + `,job_id` + ` value=1 1`, ReasonBadLine, ""},
		{"empty tag key", m + `,=x value=1 1`, ReasonBadLine, ""},
		{"empty tag", m + `,,job_id=j value=1 1`, ReasonBadLine, ""},
		{"field without =", m + ixTags + ` value 1593004193363`, ReasonBadLine, ""},
		{"empty field value", m + ixTags + ` value=,count=1 1`, ReasonBadLine, ""},
		{"unterminated string", m + ixTags + ` value="1 1`, ReasonBadLine, ""},
		{"garbage after string", m + ixTags + ` note="x"y,value=1 1`, ReasonBadLine, ""},
		{"garbage after last string", m + ixTags + ` value=1,note="x"y 1`, ReasonBadLine, ""},
		{"trailing garbage", m + ixTags + ` value=1 1593004193363 x`, ReasonBadLine, ""},
		{"bad timestamp", m + ixTags + ` value=1 soon`, ReasonBadTimestamp, ""},
		{"negative timestamp", m + ixTags + ` value=1 -1593004193363`, ReasonBadTimestamp, ""},
		{"timestamp overflow", m + ixTags + ` value=1 99999999999999999999`, ReasonBadTimestamp, ""},
		{"no timestamp", m + ixTags + ` value=1`, ReasonMissingTimestamp, ""},
		{"bad value", m + ixTags + ` value=abc 1`, ReasonBadValue, "value"},
		{"bad int", m + ixTags + ` value=1.5i 1`, ReasonBadValue, "value"},
		{"bad uint", m + ixTags + ` count=-1u 1`, ReasonBadValue, "count"},
		{"only string", m + ixTags + ` value="abc" 1`, ReasonBadValue, ""},
		{"only bool", m + ixTags + ` value=true 1`, ReasonBadValue, ""},
		{"rate only", m + ixTags + ` rate=1 1`, ReasonBadValue, ""},
		{"NaN string of a metric without that sentinel", strings.Replace(m, "busyTime", "idleTime", 1) + ixTags + ` value="NaN" 1`, ReasonBadValue, "value"},
		{"bad rate", m + ixTags + ` count=1,rate=x 1`, ReasonBadValue, "rate"},
		{"missing job_id", m + `,task_name=t,subtask_index=3 value=1 1`, ReasonMissingField, "job_id"},
		{"missing task_name", m + `,job_id=j,subtask_index=3 value=1 1`, ReasonMissingField, "task_name"},
		{"missing subtask", m + `,job_id=j,task_name=t value=1 1`, ReasonMissingField, "subtask_index"},
		{"empty job_id", m + `,job_id=,task_name=t,subtask_index=3 value=1 1`, ReasonBadField, "job_id"},
		{"bad subtask", m + `,job_id=j,task_name=t,subtask_index=three value=1 1`, ReasonBadField, "subtask_index"},
		{"subtask too big", m + `,job_id=j,task_name=t,subtask_index=40000 value=1 1`, ReasonBadField, "subtask_index"},
	}
	runErrCases(t, []Format{FormatAuto, FormatInflux}, tests)
	// A bare measurement is not a line (in auto mode it goes to the
	// Prometheus parser, which says the same).
	runErrCases(t, []Format{FormatAuto, FormatInflux}, []errCase{{"bare", m, ReasonBadLine, ""}})
	runErrCases(t, []Format{FormatInflux}, []errCase{{"empty measurement", `,job_id=j value=1 1`, ReasonBadLine, ""}})
}

const pmLabels = `{job_id="j",task_name="t",subtask_index="3"}`

func TestPrometheus(t *testing.T) {
	tests := []textCase{
		{name: "canonical", line: promLine, want: metricTask(skew.InPoolUsage, nil)},
		{name: "shuffle name", line: `flink_taskmanager_job_task_Shuffle_Netty_Input_Buffers_inPoolUsage{` + promLabels + `} 1 1593004193363`,
			want: metricTask(skew.InPoolUsage, nil)},
		{name: "no flink prefix", line: `taskmanager_job_task_busyTimeMsPerSecond` + pmLabels + ` 1 1000`,
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "default ts", defTS: 1000, line: `flink_taskmanager_job_task_busyTimeMsPerSecond` + pmLabels + ` 1`,
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "label escapes", line: `flink_taskmanager_job_task_busyTimeMsPerSecond{job_id="j",task_name="a\\b \"q\"\nz\t",subtask_index="3",host="x\y"} 1 1000`,
			want: smallMetric(skew.BusyTimeMsPerSecond, func(m *skew.Metric) { m.TaskName = "a\\b \"q\"\nz\\t"; m.Host = `x\y` })},
		{name: "blanks and trailing comma", line: "flink_taskmanager_job_task_busyTimeMsPerSecond { job_id = \"j\" ,\ttask_name=\"t\", subtask_index=\"3\", } \t 1e0 \t 1000 \r",
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "unusual label names", line: `flink_taskmanager_job_task_busyTimeMsPerSecond{job_id="j",task_name="t",subtask_index="3",a:b="{,}"} 1 1000`,
			want: smallMetric(skew.BusyTimeMsPerSecond, nil)},
		{name: "exponent value", line: `flink_taskmanager_job_task_numRecordsOut` + pmLabels + ` 1.5e+06 1000`,
			want: smallMetric(skew.NumRecordsOut, func(m *skew.Metric) { m.Value = 1.5e6 })},
		{name: "negative value", line: `flink_taskmanager_job_task_checkpointStartDelayNanos` + pmLabels + ` -0.25 1000`,
			want: smallMetric(skew.CheckpointStartDelayNanos, func(m *skew.Metric) { m.Value = -0.25 })},
		{name: "job scoped", line: `flink_jobmanager_job_lastCheckpointDuration{job_id="j",job_name="billing"} 812 1000`,
			want: skew.Metric{TS: 1000, Name: skew.LastCheckpointDuration, JobID: "j", JobName: "billing", Subtask: -1, Value: 812}},
		{name: "job scoped size", line: `flink_jobmanager_job_lastCheckpointSize{job_id="j",job_name="billing"} 1.5e+09 1000`,
			want: skew.Metric{TS: 1000, Name: skew.LastCheckpointSize, JobID: "j", JobName: "billing", Subtask: -1, Value: 1.5e9}},
		{name: "no labels unknown", line: `process_cpu_seconds_total 12.5`, wantNo: true},
		{name: "operator scope unknown", line: `flink_taskmanager_job_task_operator_numRecordsIn{job_id="j"} NaN`, wantNo: true},
		{name: "HELP", line: `# HELP flink_taskmanager_job_task_buffers_inPoolUsage inPoolUsage (scope: taskmanager_job_task_buffers)`, wantNo: true},
		{name: "TYPE", line: `# TYPE flink_taskmanager_job_task_buffers_inPoolUsage gauge`, wantNo: true},
	}
	runTextCases(t, []Format{FormatAuto, FormatPrometheus}, tests)
}

func TestPrometheusErrors(t *testing.T) {
	const m = `flink_taskmanager_job_task_busyTimeMsPerSecond`
	tests := []errCase{
		{"NaN of a metric without that sentinel", strings.Replace(m, "busyTime", "idleTime", 1) + pmLabels + ` NaN 1000`, ReasonBadValue, ""},
		{"+Inf", m + pmLabels + ` +Inf 1000`, ReasonBadValue, ""},
		{"-Inf", m + pmLabels + ` -Inf 1000`, ReasonBadValue, ""},
		{"word", m + pmLabels + ` abc 1000`, ReasonBadValue, ""},
		{"no value", m + pmLabels, ReasonBadLine, ""},
		{"no value, blanks", m + pmLabels + "  \t", ReasonBadLine, ""},
		{"no space before value", m + pmLabels + `1 1000`, ReasonBadLine, ""},
		{"unterminated labels", m + `{job_id="j"`, ReasonBadLine, ""},
		{"unterminated label value", m + `{job_id="j} 1 1000`, ReasonBadLine, ""},
		{"missing =", m + `{job_id "j"} 1 1000`, ReasonBadLine, ""},
		{"unquoted value", m + `{job_id=j} 1 1000`, ReasonBadLine, ""},
		{"empty label name", m + `{="j"} 1 1000`, ReasonBadLine, ""},
		{"missing comma", m + `{job_id="j" task_name="t"} 1 1000`, ReasonBadLine, ""},
		{"trailing garbage", m + pmLabels + ` 1 1000 x`, ReasonBadLine, ""},
		{"bad timestamp", m + pmLabels + ` 1 soon`, ReasonBadTimestamp, ""},
		{"negative timestamp", m + pmLabels + ` 1 -1000`, ReasonBadTimestamp, ""},
		{"fraction timestamp", m + pmLabels + ` 1 1000.5`, ReasonBadTimestamp, ""},
		{"no timestamp", m + pmLabels + ` 1`, ReasonMissingTimestamp, ""},
		{"missing job_id", m + `{task_name="t",subtask_index="3"} 1 1000`, ReasonMissingField, "job_id"},
		{"missing task_name", m + `{job_id="j",subtask_index="3"} 1 1000`, ReasonMissingField, "task_name"},
		{"missing subtask", m + `{job_id="j",task_name="t"} 1 1000`, ReasonMissingField, "subtask_index"},
		{"no labels", m + ` 1 1000`, ReasonMissingField, "job_id"},
		{"empty task_name", m + `{job_id="j",task_name="",subtask_index="3"} 1 1000`, ReasonBadField, "task_name"},
		{"negative subtask", m + `{job_id="j",task_name="t",subtask_index="-1"} 1 1000`, ReasonBadField, "subtask_index"},
		{"bare token", `garbage`, ReasonBadLine, ""},
	}
	runErrCases(t, []Format{FormatAuto, FormatPrometheus}, tests)
	runErrCases(t, []Format{FormatPrometheus}, []errCase{
		{"empty name", `{job_id="j"} 1 1000`, ReasonBadLine, ""},
		{"influx line", influxLine, ReasonBadLine, ""},
	})
}

func TestDetect(t *testing.T) {
	tests := []struct {
		line string
		want Format
	}{
		{keyLine, FormatJSON},
		{metricJSONLine, FormatJSON},
		{influxLine, FormatInflux},
		{promLine, FormatPrometheus},
		{`m value=1 1000`, FormatInflux},
		{`m value=1`, FormatInflux},
		{`m  value=1`, FormatInflux},
		{`m 1 1000`, FormatPrometheus},
		{`m{a="b"} 1`, FormatPrometheus},
		{`m\ x value=1`, FormatInflux},
		{`m\,x value=1`, FormatInflux},
		{`m\ x 1`, FormatPrometheus},
		{`m\,x,a=b value=1`, FormatInflux},
		{`m`, FormatPrometheus},
		{`m `, FormatPrometheus},
		{`m a\=b`, FormatPrometheus},
		{`m a\ b=c`, FormatInflux},
	}
	for _, tc := range tests {
		if got := detect([]byte(tc.line)); got != tc.want {
			t.Errorf("detect(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestLookupMetric(t *testing.T) {
	type nm = skew.MetricName
	pairs := map[string]nm{
		"buffers_inputQueueLength":                               skew.InputQueueLength,
		"Shuffle_Netty_Input_Buffers_inputQueueLength":           skew.InputQueueLength,
		"buffers_inPoolUsage":                                    skew.InPoolUsage,
		"Shuffle_Netty_Input_Buffers_inPoolUsage":                skew.InPoolUsage,
		"buffers_outputQueueLength":                              skew.OutputQueueLength,
		"Shuffle_Netty_Output_Buffers_outputQueueLength":         skew.OutputQueueLength,
		"buffers_outPoolUsage":                                   skew.OutPoolUsage,
		"Shuffle_Netty_Output_Buffers_outPoolUsage":              skew.OutPoolUsage,
		"buffers_inputFloatingBuffersUsage":                      skew.InputFloatingBuffersUsage,
		"Shuffle_Netty_Input_Buffers_inputFloatingBuffersUsage":  skew.InputFloatingBuffersUsage,
		"buffers_inputExclusiveBuffersUsage":                     skew.InputExclusiveBuffersUsage,
		"Shuffle_Netty_Input_Buffers_inputExclusiveBuffersUsage": skew.InputExclusiveBuffersUsage,
		"busyTimeMsPerSecond":                                    skew.BusyTimeMsPerSecond,
		"backPressuredTimeMsPerSecond":                           skew.BackPressuredTimeMsPerSecond,
		"idleTimeMsPerSecond":                                    skew.IdleTimeMsPerSecond,
		"numRecordsIn":                                           skew.NumRecordsIn,
		"numRecordsInPerSecond":                                  skew.NumRecordsInPerSecond,
		"numRecordsOut":                                          skew.NumRecordsOut,
		"numRecordsOutPerSecond":                                 skew.NumRecordsOutPerSecond,
		"checkpointAlignmentTime":                                skew.CheckpointAlignmentTime,
		"checkpointStartDelayNanos":                              skew.CheckpointStartDelayNanos,
		"accumulateBusyTimeMs":                                   skew.AccumulateBusyTimeMs,
		"accumulateBackPressuredTimeMs":                          skew.AccumulateBackPressuredTimeMs,
		"accumulateIdleTimeMs":                                   skew.AccumulateIdleTimeMs,
	}
	seen := map[nm]bool{}
	for suffix, want := range pairs {
		seen[want] = true
		for _, prefix := range []string{"taskmanager_job_task_", "flink_taskmanager_job_task_", "flink.taskmanager.job.task.", "taskmanager.job_task."} {
			name := prefix + suffix
			if got := LookupMetric(name); got != want {
				t.Errorf("LookupMetric(%q) = %v, want %v", name, got, want)
			}
		}
		// The whole name may use dots.
		dotted := "flink.taskmanager.job.task." + dots(suffix)
		if got := LookupMetric(dotted); got != want {
			t.Errorf("LookupMetric(%q) = %v, want %v", dotted, got, want)
		}
		if got := LookupMetric("jobmanager_job_" + suffix); got != skew.MetricUnknown {
			t.Errorf("job scope %q = %v", suffix, got)
		}
	}
	for _, name := range []string{"jobmanager_job_lastCheckpointDuration", "flink_jobmanager_job_lastCheckpointDuration", "flink.jobmanager.job.lastCheckpointDuration"} {
		if got := LookupMetric(name); got != skew.LastCheckpointDuration {
			t.Errorf("LookupMetric(%q) = %v", name, got)
		}
	}
	seen[skew.LastCheckpointDuration] = true
	if got := LookupMetric("flink_jobmanager_job_numberOfFailedCheckpoints"); got != skew.NumberOfFailedCheckpoints {
		t.Errorf("numberOfFailedCheckpoints = %v", got)
	}
	seen[skew.NumberOfFailedCheckpoints] = true
	for _, name := range []string{"jobmanager_job_lastCheckpointSize", "flink_jobmanager_job_lastCheckpointSize", "flink.jobmanager.job.lastCheckpointSize"} {
		if got := LookupMetric(name); got != skew.LastCheckpointSize {
			t.Errorf("LookupMetric(%q) = %v", name, got)
		}
	}
	seen[skew.LastCheckpointSize] = true
	for _, name := range []string{"jobmanager_job_numberOfCompletedCheckpoints", "flink_jobmanager_job_numberOfCompletedCheckpoints", "flink.jobmanager.job.numberOfCompletedCheckpoints"} {
		if got := LookupMetric(name); got != skew.NumberOfCompletedCheckpoints {
			t.Errorf("LookupMetric(%q) = %v", name, got)
		}
	}
	seen[skew.NumberOfCompletedCheckpoints] = true
	for n := skew.MetricName(1); n.String() != "invalid"; n++ {
		if !seen[n] {
			t.Errorf("metric %v has no test name", n)
		}
	}
	for _, name := range []string{
		"", "flink_", "taskmanager_job_task_", "taskmanager_job_task_operator_numRecordsIn",
		"taskmanager_job_task_buffers_inPoolUsage_x", "taskmanager_job_task_inPoolUsage",
		"flink_flink_taskmanager_job_task_numRecordsIn", "Taskmanager_job_task_numRecordsIn",
		"taskmanager_job_task_busytimemspersecond", "taskmanager_job_numRecordsIn",
		"jobmanager_job_task_numRecordsIn", "taskmanager_job_task__numRecordsIn",
		"taskmanager_job_task_" + string(make([]byte, 200)),
	} {
		if got := LookupMetric(name); got != skew.MetricUnknown {
			t.Errorf("LookupMetric(%q) = %v, want unknown", name, got)
		}
	}
}

func dots(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '_' {
			b[i] = '.'
		}
	}
	return string(b)
}

// TestUnknownButMalformed: lines of metrics skewlens ignores are still
// checked for shape, so that text which is not a metric at all is counted
// as a bad line instead of vanishing.
func TestUnknownButMalformed(t *testing.T) {
	tests := []struct {
		format Format
		line   string
		bad    bool
	}{
		{FormatAuto, `not a record at all`, true},
		{FormatAuto, `hello world`, true},
		{FormatAuto, `process_cpu_seconds_total 12.5`, false},
		{FormatAuto, `process_cpu_seconds_total 12.5 1593004193363`, false},
		{FormatAuto, `process_cpu_seconds_total 12.5 1593004193363 extra`, true},
		{FormatAuto, `jvm_memory{area="heap",x="a}b\"c"} 1e6`, false},
		{FormatAuto, `jvm_memory{area="heap" 1e6`, true},
		{FormatAuto, `jvm_memory{area="heap"} lots`, true},
		{FormatPrometheus, `up NaN`, false},
		{FormatInflux, `foo,bar=baz qux`, true},
		{FormatInflux, `foo,bar=baz`, true},
		{FormatInflux, `foo,bar=baz qux=1 123`, false},
		{FormatInflux, `foo\ bar qux=1`, false},
	}
	for _, tt := range tests {
		d := NewDecoder(tt.format)
		k, err := d.Decode([]byte(tt.line))
		if k != KindNone {
			t.Errorf("%q: kind %v, want none", tt.line, k)
		}
		if gotBad := err != nil; gotBad != tt.bad {
			t.Errorf("%s %q: err = %v, want bad=%v", tt.format, tt.line, err, tt.bad)
		} else if r, _ := ReasonOf(err); err != nil && r != ReasonBadLine {
			t.Errorf("%q: reason %v, want bad_line", tt.line, r)
		}
	}
}
