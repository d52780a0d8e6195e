package decode

import (
	"strings"

	"github.com/skewlens/skewlens/skew"
)

// Metric-name matching. Names arrive in several spellings:
//
//	flink_taskmanager_job_task_buffers_inPoolUsage          (Prometheus)
//	taskmanager_job_task_buffers_inPoolUsage                (InfluxDB)
//	taskmanager.job.task.Shuffle.Netty.Input.Buffers.inPoolUsage (Kafka/JSON)
//	flink_taskmanager_job_task_accumulateBusyTimeMs         (a counter, Prometheus)
//
// '.' and '_' are interchangeable separators and an optional "flink"
// component is stripped. Matching never allocates: the common all-'_'
// spelling is switched on directly, anything with a '.' is normalised into
// a stack buffer first.

const (
	flinkPrefix = "flink_"
	taskPrefix  = "taskmanager_job_task_"
	jobPrefix   = "jobmanager_job_"
	// maxMetricName bounds the names we normalise; every known name is
	// shorter, so anything longer is unknown.
	maxMetricName = 96
)

// LookupMetric maps a full Flink metric name (with scope prefix) to the
// skew.MetricName it denotes, or skew.MetricUnknown. It does not allocate.
func LookupMetric(name string) skew.MetricName {
	if len(name) > maxMetricName {
		return skew.MetricUnknown
	}
	if strings.IndexByte(name, '.') < 0 {
		return lookupNormalized(name)
	}
	var buf [maxMetricName]byte
	n := copy(buf[:], name)
	for i := range n {
		if buf[i] == '.' {
			buf[i] = '_'
		}
	}
	return lookupNormalizedBytes(buf[:n])
}

func lookupNormalizedBytes(b []byte) skew.MetricName {
	// string(b) in a call argument would allocate; the bytes live on the
	// caller's stack and the string does not outlive this call.
	return lookupNormalized(bytesToString(b))
}

func lookupNormalized(s string) skew.MetricName {
	s = strings.TrimPrefix(s, flinkPrefix)
	if rest, ok := strings.CutPrefix(s, taskPrefix); ok {
		return lookupTask(rest)
	}
	if rest, ok := strings.CutPrefix(s, jobPrefix); ok {
		switch rest {
		case "lastCheckpointDuration":
			return skew.LastCheckpointDuration
		case "numberOfFailedCheckpoints":
			return skew.NumberOfFailedCheckpoints
		case "lastCheckpointSize":
			return skew.LastCheckpointSize
		case "numberOfCompletedCheckpoints":
			return skew.NumberOfCompletedCheckpoints
		}
	}
	return skew.MetricUnknown
}

func lookupTask(s string) skew.MetricName {
	switch s {
	case "buffers_inputQueueLength", "Shuffle_Netty_Input_Buffers_inputQueueLength":
		return skew.InputQueueLength
	case "buffers_inPoolUsage", "Shuffle_Netty_Input_Buffers_inPoolUsage":
		return skew.InPoolUsage
	case "buffers_outputQueueLength", "Shuffle_Netty_Output_Buffers_outputQueueLength":
		return skew.OutputQueueLength
	case "buffers_outPoolUsage", "Shuffle_Netty_Output_Buffers_outPoolUsage":
		return skew.OutPoolUsage
	case "buffers_inputFloatingBuffersUsage", "Shuffle_Netty_Input_Buffers_inputFloatingBuffersUsage":
		return skew.InputFloatingBuffersUsage
	case "buffers_inputExclusiveBuffersUsage", "Shuffle_Netty_Input_Buffers_inputExclusiveBuffersUsage":
		return skew.InputExclusiveBuffersUsage
	case "busyTimeMsPerSecond":
		return skew.BusyTimeMsPerSecond
	case "backPressuredTimeMsPerSecond":
		return skew.BackPressuredTimeMsPerSecond
	case "idleTimeMsPerSecond":
		return skew.IdleTimeMsPerSecond
	case "accumulateBusyTimeMs":
		return skew.AccumulateBusyTimeMs
	case "accumulateBackPressuredTimeMs":
		return skew.AccumulateBackPressuredTimeMs
	case "accumulateIdleTimeMs":
		return skew.AccumulateIdleTimeMs
	case "numRecordsIn":
		return skew.NumRecordsIn
	case "numRecordsInPerSecond":
		return skew.NumRecordsInPerSecond
	case "numRecordsOut":
		return skew.NumRecordsOut
	case "numRecordsOutPerSecond":
		return skew.NumRecordsOutPerSecond
	case "checkpointAlignmentTime":
		return skew.CheckpointAlignmentTime
	case "checkpointStartDelayNanos":
		return skew.CheckpointStartDelayNanos
	}
	return skew.MetricUnknown
}

// Flink scope variables, shared by the JSON tags, InfluxDB tags and
// Prometheus labels. varAttemptNum is recognised (so that it is not
// mistaken for anything else) but not used: skew.Metric has no field for it.
type varID uint8

const (
	varNone varID = iota
	varHost
	varTMID
	varJobID
	varJobName
	varTaskID
	varTaskName
	varTaskAttemptID
	varTaskAttemptNum
	varSubtask
)

// lookupVar maps a variable key to its varID. Keys may be written bare
// ("host") or in Flink's scope-format spelling ("<host>").
func lookupVar(k string) varID {
	if len(k) >= 2 && k[0] == '<' && k[len(k)-1] == '>' {
		k = k[1 : len(k)-1]
	}
	switch k {
	case "host":
		return varHost
	case "tm_id":
		return varTMID
	case "job_id":
		return varJobID
	case "job_name":
		return varJobName
	case "task_id":
		return varTaskID
	case "task_name":
		return varTaskName
	case "task_attempt_id":
		return varTaskAttemptID
	case "task_attempt_num":
		return varTaskAttemptNum
	case "subtask_index":
		return varSubtask
	}
	return varNone
}

// varField names a variable in errors.
var varField = [...]string{
	varNone:           "",
	varHost:           "host",
	varTMID:           "tm_id",
	varJobID:          "job_id",
	varJobName:        "job_name",
	varTaskID:         "task_id",
	varTaskName:       "task_name",
	varTaskAttemptID:  "task_attempt_id",
	varTaskAttemptNum: "task_attempt_num",
	varSubtask:        "subtask_index",
}

// setVar stores a decoded variable value into m. subtask_index is handled
// by the caller because it needs parsing.
func setVar(m *skew.Metric, id varID, v string) {
	switch id {
	case varHost:
		m.Host = v
	case varTMID:
		m.TMID = v
	case varJobID:
		m.JobID = v
	case varJobName:
		m.JobName = v
	case varTaskID:
		m.TaskID = v
	case varTaskName:
		m.TaskName = v
	case varTaskAttemptID:
		m.TaskAttemptID = v
	}
}
