package decode

import (
	"testing"

	"github.com/skewlens/skewlens/skew"
)

// TestSentinels: Flink's "no value yet" readings, as its reporters write
// them in each format, decode as a metric with NoValue (Value 0), not as
// a bad value and not as a number to measure; a NaN where the metric has
// no such sentinel, and any other negative value, stay what they were.
func TestSentinels(t *testing.T) {
	const job = `job_id="j",job_name="billing"`
	const task = `job_id="j",task_name="t",subtask_index="3"`
	tests := []struct {
		name    string
		line    string
		metric  skew.MetricName
		noValue bool
		value   float64
		reason  Reason // a rejection, when not 0
	}{
		{"prometheus duration -1", `flink_jobmanager_job_lastCheckpointDuration{` + job + `} -1.0 1000`, skew.LastCheckpointDuration, true, 0, 0},
		{"prometheus size -1", `flink_jobmanager_job_lastCheckpointSize{` + job + `} -1 1000`, skew.LastCheckpointSize, true, 0, 0},
		{"prometheus busy NaN", `flink_taskmanager_job_task_busyTimeMsPerSecond{` + task + `} NaN 1000`, skew.BusyTimeMsPerSecond, true, 0, 0},
		{"prometheus busy counter NaN", `flink_taskmanager_job_task_accumulateBusyTimeMs{` + task + `} NaN 1000`, skew.AccumulateBusyTimeMs, true, 0, 0},
		{"influx duration -1i", `jobmanager_job_lastCheckpointDuration,job_id=j,job_name=billing value=-1i 1000`, skew.LastCheckpointDuration, true, 0, 0},
		{"influx busy NaN", `taskmanager_job_task_busyTimeMsPerSecond,job_id=j,task_name=t,subtask_index=3 value="NaN" 1000`, skew.BusyTimeMsPerSecond, true, 0, 0},
		{"json duration -1", `{"name":"jobmanager.job.lastCheckpointDuration","timestamp":1000,"tags":{"job_id":"j"},"value":-1}`, skew.LastCheckpointDuration, true, 0, 0},
		{"json size -1 string", `{"name":"jobmanager.job.lastCheckpointSize","timestamp":1000,"tags":{"job_id":"j"},"value":"-1"}`, skew.LastCheckpointSize, true, 0, 0},
		{"json busy NaN", `{"name":"taskmanager.job.task.busyTimeMsPerSecond","timestamp":1000,"tags":{"job_id":"j","task_name":"t","subtask_index":"3"},"value":"NaN"}`, skew.BusyTimeMsPerSecond, true, 0, 0},
		{"a real duration", `flink_jobmanager_job_lastCheckpointDuration{` + job + `} 812 1000`, skew.LastCheckpointDuration, false, 812, 0},
		{"no checkpoint is 0 failures", `flink_jobmanager_job_numberOfFailedCheckpoints{` + job + `} 0 1000`, skew.NumberOfFailedCheckpoints, false, 0, 0},
		{"busy time of a measured task", `flink_taskmanager_job_task_busyTimeMsPerSecond{` + task + `} 0 1000`, skew.BusyTimeMsPerSecond, false, 0, 0},
		{"-1 where it is no sentinel", `flink_taskmanager_job_task_numRecordsIn{` + task + `} -1 1000`, skew.NumRecordsIn, false, -1, 0},
		{"NaN where it is no sentinel", `flink_taskmanager_job_task_idleTimeMsPerSecond{` + task + `} NaN 1000`, 0, false, 0, ReasonBadValue},
		{"+Inf busy time", `flink_taskmanager_job_task_busyTimeMsPerSecond{` + task + `} +Inf 1000`, 0, false, 0, ReasonBadValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(FormatAuto)
			k, err := d.Decode([]byte(tc.line))
			if tc.reason != 0 {
				if e, ok := err.(*Error); !ok || e.Reason != tc.reason {
					t.Fatalf("Decode = %v, %v; want %v", k, err, tc.reason)
				}
				return
			}
			if err != nil || k != KindMetric {
				t.Fatalf("Decode = %v, %v; want a metric", k, err)
			}
			m := d.Metric
			if m.Name != tc.metric || m.NoValue != tc.noValue || m.Value != tc.value || m.JobID != "j" {
				t.Fatalf("metric %+v, want %v with NoValue %v and value %v", m, tc.metric, tc.noValue, tc.value)
			}
		})
	}
	// The flag does not outlive its line.
	d := NewDecoder(FormatAuto)
	for _, l := range []string{`flink_jobmanager_job_lastCheckpointDuration{` + job + `} -1.0 1000`, `flink_jobmanager_job_lastCheckpointDuration{` + job + `} 812 1000`} {
		if _, err := d.Decode([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if d.Metric.NoValue || d.Metric.Value != 812 {
		t.Fatalf("after a sentinel, a real reading decodes as %+v", d.Metric)
	}
}
