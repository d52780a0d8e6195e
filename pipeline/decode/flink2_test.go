package decode

import (
	"testing"

	"github.com/skewlens/skewlens/skew"
)

// Lines as a Flink 2.3 job wrote them with its own PrometheusReporter and
// InfluxdbReporter (MiniCluster: no host; task_attempt_id in the 2.x
// compound form; Shuffle_Netty_* buffer names only; busy time a float;
// alignment time in ns). PrometheusReporter filters label values to
// [A-Za-z0-9:_], so the task and job names differ from Influx's.
const (
	f2Job     = "4f2c6a1bd0e94c7a8b3d5e6f70819203"
	f2Task    = "cbc357ccb763df2852fee8c4fc7d55f2"
	f2Attempt = "8f2c0e1d2a3b4c5d6e7f8091a2b3c4d5_" + f2Task + "_1_0"
	f2Prom    = `{job_id="` + f2Job + `",job_name="enrich_job",subtask_index="1",task_attempt_id="` + f2Attempt +
		`",task_attempt_num="0",task_id="` + f2Task + `",task_name="KeyedProcess____enrich",tm_id="localhost:35013_6b1e1c",}`
	f2Influx = `,job_id=` + f2Job + `,job_name=enrich\ job,subtask_index=1,task_attempt_id=` + f2Attempt +
		`,task_attempt_num=0,task_id=` + f2Task + `,task_name=KeyedProcess\ ->\ enrich,tm_id=localhost:35013-6b1e1c`
)

func f2Metric(name skew.MetricName, prom bool, v float64, ts int64) skew.Metric {
	m := skew.Metric{TS: ts, Name: name, JobID: f2Job, TaskID: f2Task, TaskAttemptID: f2Attempt, Subtask: 1, Value: v,
		JobName: "enrich job", TaskName: "KeyedProcess -> enrich", TMID: "localhost:35013-6b1e1c"}
	if prom {
		m.JobName, m.TaskName, m.TMID = "enrich_job", "KeyedProcess____enrich", "localhost:35013_6b1e1c"
	}
	return m
}

func TestFlink2Prometheus(t *testing.T) {
	const p = "flink_taskmanager_job_task_"
	runTextCases(t, []Format{FormatAuto, FormatPrometheus}, []textCase{
		{name: "busy float, scrape without timestamp", defTS: 1593004200000, line: p + "busyTimeMsPerSecond" + f2Prom + " 12.345",
			want: f2Metric(skew.BusyTimeMsPerSecond, true, 12.345, 1593004200000)},
		{name: "accumulate busy", defTS: 1593004200000, line: p + "accumulateBusyTimeMs" + f2Prom + " 123456.0",
			want: f2Metric(skew.AccumulateBusyTimeMs, true, 123456, 1593004200000)},
		{name: "accumulate back-pressured", line: p + "accumulateBackPressuredTimeMs" + f2Prom + " 0.0 1593004200000",
			want: f2Metric(skew.AccumulateBackPressuredTimeMs, true, 0, 1593004200000)},
		{name: "accumulate idle", line: p + "accumulateIdleTimeMs" + f2Prom + " 98765.0 1593004200000",
			want: f2Metric(skew.AccumulateIdleTimeMs, true, 98765, 1593004200000)},
		{name: "shuffle netty", line: p + "Shuffle_Netty_Input_Buffers_inPoolUsage" + f2Prom + " 0.1 1593004200000",
			want: f2Metric(skew.InPoolUsage, true, 0.1, 1593004200000)},
		{name: "alignment ns", line: p + "checkpointAlignmentTime" + f2Prom + " 1500000.0 1593004200000",
			want: f2Metric(skew.CheckpointAlignmentTime, true, 1.5e6, 1593004200000)},
		{name: "mailbox latency NaN", line: `flink_taskmanager_job_task_mailboxLatencyMs{job_id="` + f2Job + `",task_name="KeyedProcess____enrich",subtask_index="1",quantile="0.5",} NaN`,
			wantNo: true},
		{name: "mailbox latency count", line: `flink_taskmanager_job_task_mailboxLatencyMs_count{job_id="` + f2Job + `",subtask_index="1",} 0.0`,
			wantNo: true},
	})
}

func TestFlink2Influx(t *testing.T) {
	const p = "taskmanager_job_task_"
	runTextCases(t, []Format{FormatAuto, FormatInflux}, []textCase{
		{name: "busy float", line: p + "busyTimeMsPerSecond" + f2Influx + " value=12.345 1593004200000000000",
			want: f2Metric(skew.BusyTimeMsPerSecond, false, 12.345, 1593004200000)},
		{name: "accumulate busy", line: p + "accumulateBusyTimeMs" + f2Influx + " value=123456i 1593004200000000000",
			want: f2Metric(skew.AccumulateBusyTimeMs, false, 123456, 1593004200000)},
		{name: "accumulate back-pressured", line: p + "accumulateBackPressuredTimeMs" + f2Influx + " value=0i 1593004200000000000",
			want: f2Metric(skew.AccumulateBackPressuredTimeMs, false, 0, 1593004200000)},
		{name: "accumulate idle", line: p + "accumulateIdleTimeMs" + f2Influx + " value=98765i 1593004200000000000",
			want: f2Metric(skew.AccumulateIdleTimeMs, false, 98765, 1593004200000)},
		{name: "shuffle netty", line: p + "Shuffle_Netty_Output_Buffers_outPoolUsage" + f2Influx + " value=0.25 1593004200000000000",
			want: f2Metric(skew.OutPoolUsage, false, 0.25, 1593004200000)},
		{name: "alignment ns", line: p + "checkpointAlignmentTime" + f2Influx + " value=1500000i 1593004200000000000",
			want: f2Metric(skew.CheckpointAlignmentTime, false, 1.5e6, 1593004200000)},
		{name: "mailbox latency NaN", line: p + "mailboxLatencyMs" + f2Influx + " count=0i,max=0i,mean=NaN,min=0i,p50=NaN,p99=NaN,stddev=NaN 1593004200000000000",
			wantNo: true},
	})
}

func TestFlink2MetricJSON(t *testing.T) {
	vars := `"job_id":"` + f2Job + `","job_name":"enrich job","task_id":"` + f2Task + `","task_name":"KeyedProcess -> enrich","task_attempt_id":"` + f2Attempt +
		`","task_attempt_num":"0","subtask_index":"1","tm_id":"localhost:35013-6b1e1c"`
	runTextCases(t, []Format{FormatAuto, FormatMetricJSON}, []textCase{
		{name: "accumulate busy", line: `{"name":"taskmanager.job.task.accumulateBusyTimeMs","time_stamp":1593004200000,` + vars + `,"value":123456}`,
			want: f2Metric(skew.AccumulateBusyTimeMs, false, 123456, 1593004200000)},
		{name: "accumulate idle, tags", line: `{"name":"taskmanager.job.task.accumulateIdleTimeMs","time_stamp":1593004200000,"tags":{` + vars + `},"value":98765}`,
			want: f2Metric(skew.AccumulateIdleTimeMs, false, 98765, 1593004200000)},
		{name: "mailbox latency NaN string", line: `{"name":"taskmanager.job.task.mailboxLatencyMs","time_stamp":1593004200000,` + vars + `,"value":"NaN"}`,
			wantNo: true},
	})
}

// TestScrapeTimeDirective runs line sequences through one Decoder: the
// directive gives the following timestamp-less metric lines its time,
// a timestamp on the line wins, and key samples still need their own.
func TestScrapeTimeDirective(t *testing.T) {
	const (
		busy  = `flink_taskmanager_job_task_busyTimeMsPerSecond{job_id="j",task_name="t",subtask_index="3"} 1`
		influ = `taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=3 value=1`
		mjson = `{"name":"taskmanager.job.task.busyTimeMsPerSecond","job_id":"j","task_name":"t","subtask_index":3,"value":1}`
	)
	type step struct {
		line   string
		ts     int64  // the metric's timestamp (0: not a metric)
		reason Reason // the error, if any
		defTS  int64  // DefaultTS after the line
	}
	tests := []struct {
		name  string
		defTS int64 // as `run` sets it from the Kafka record time
		steps []step
	}{
		{"analyze: raw scrape", 0, []step{
			{busy, 0, ReasonMissingTimestamp, 0},
			{"# skewlens-scrape-time 1593004200000", 0, 0, 1593004200000},
			{"# HELP flink_taskmanager_job_task_busyTimeMsPerSecond busyTimeMsPerSecond", 0, 0, 1593004200000},
			{"# TYPE flink_taskmanager_job_task_busyTimeMsPerSecond gauge", 0, 0, 1593004200000},
			{busy, 1593004200000, 0, 1593004200000},
			{busy + " 1000", 1000, 0, 1593004200000},
			{influ, 1593004200000, 0, 1593004200000},
			{mjson, 1593004200000, 0, 1593004200000},
			{`{"job_id":"j","task_name":"t","key":"k"}`, 0, ReasonMissingField, 1593004200000},
			{"  # skewlens-scrape-time\t1593004210000 \r", 0, 0, 1593004210000},
			{busy, 1593004210000, 0, 1593004210000},
		}},
		{"run: the directive wins over the record time", 5000, []step{
			{busy, 5000, 0, 5000},
			{"# skewlens-scrape-time 1593004200000", 0, 0, 1593004200000},
			{busy, 1593004200000, 0, 1593004200000},
		}},
		{"bad directive clears the time", 5000, []step{
			{"# skewlens-scrape-time soon", 0, ReasonBadTimestamp, 0},
			{busy, 0, ReasonMissingTimestamp, 0},
			{"# skewlens-scrape-time 0", 0, ReasonBadTimestamp, 0},
			{"# skewlens-scrape-time -1593004200000", 0, ReasonBadTimestamp, 0},
			{"# skewlens-scrape-time 1593004200000 1593004200001", 0, ReasonBadTimestamp, 0},
			{"# skewlens-scrape-time ", 0, 0, 0}, // no time at all: a plain comment
			{"# skewlens-scrape-time 1593004200000", 0, 0, 1593004200000},
		}},
		{"other spellings are plain comments", 5000, []step{
			{"#skewlens-scrape-time 1", 0, 0, 5000},
			{"# skewlens-scrape-timex 1", 0, 0, 5000},
			{"# SKEWLENS-SCRAPE-TIME 1", 0, 0, 5000},
			{"## skewlens-scrape-time 1", 0, 0, 5000},
			{"# skewlens-scrape-time", 0, 0, 5000},
			{busy, 5000, 0, 5000},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(FormatAuto)
			d.DefaultTS = tc.defTS
			for i, st := range tc.steps {
				k, err := d.Decode([]byte(st.line))
				if r := reasonOf(t, err); r != st.reason {
					t.Fatalf("step %d %q: reason %v (%v), want %v", i, st.line, r, err, st.reason)
				}
				switch {
				case st.ts != 0 && (k != KindMetric || d.Metric.TS != st.ts):
					t.Errorf("step %d %q: %v at %d, want a metric at %d", i, st.line, k, d.Metric.TS, st.ts)
				case st.ts == 0 && k != KindNone:
					t.Errorf("step %d %q: %v, want none", i, st.line, k)
				}
				if d.DefaultTS != st.defTS {
					t.Errorf("step %d %q: DefaultTS %d, want %d", i, st.line, d.DefaultTS, st.defTS)
				}
			}
		})
	}
}
