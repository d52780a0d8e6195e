package skew

// KeySample is one sampled record key, as seen by a keyed task.
//
// String fields may alias a decoder's buffer: they are valid only for the
// duration of the call that receives the KeySample. Anything that keeps a
// string past that call must copy it (strings.Clone). The engine does so.
type KeySample struct {
	// TS is the event time in epoch milliseconds.
	TS      int64
	JobID   string
	JobName string // optional
	// TaskID is Flink's task_id (the JobVertexID, as in the metric
	// variables); optional. With it, the sample joins the task's metrics
	// by identity, whatever spelling of the name each of them carries.
	TaskID   string
	TaskName string
	Key      string
	// Weight is the number of sampled records this sample stands for (default 1).
	Weight float64
	// SampleRate is the fraction of records that were sampled (default 1).
	// The estimated true record count is Weight / SampleRate.
	SampleRate float64
	// Parallelism and MaxParallelism of the keyed task; 0 when unknown.
	Parallelism    int32
	MaxParallelism int32
	// Subtask is the receiving subtask index, or -1 when unknown. When it is
	// unknown and Parallelism is set, the engine routes the key with Flink's
	// key-group assignment.
	Subtask int32
	// Source is where the sample was read; the zero Source when unknown.
	Source Source
}

// Source names where an event was read: a Kafka topic and partition. The
// engine keeps the sources of each job's events in the job's state
// (JobState.Sources), so that after a rebalance the pipeline restores a
// job where its sources are read now, and only there. The zero Source
// (no Topic) is unknown and is not kept.
type Source struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// MetricName identifies one of the Flink metrics skewlens understands. The
// decoders map both naming generations (legacy buffers_* and
// Shuffle_Netty_*) onto the same name.
type MetricName uint8

// The recognised metrics. MetricUnknown is never handed to the engine.
const (
	MetricUnknown MetricName = iota
	InputQueueLength
	InPoolUsage
	OutputQueueLength
	OutPoolUsage
	InputFloatingBuffersUsage
	InputExclusiveBuffersUsage
	BusyTimeMsPerSecond
	BackPressuredTimeMsPerSecond
	IdleTimeMsPerSecond
	NumRecordsIn
	NumRecordsInPerSecond
	NumRecordsOut
	NumRecordsOutPerSecond
	CheckpointAlignmentTime
	CheckpointStartDelayNanos
	// LastCheckpointDuration and NumberOfFailedCheckpoints are job-scoped:
	// Metric.TaskName is empty and Metric.Subtask is -1.
	LastCheckpointDuration
	NumberOfFailedCheckpoints
	// AccumulateBusyTimeMs, AccumulateBackPressuredTimeMs and
	// AccumulateIdleTimeMs are Flink's cumulative time counters (ms since
	// the attempt started). Their differences follow the load without the
	// 60 s lag of the *TimeMsPerSecond gauges, so the engine prefers them.
	// They come last so that the values of the older names stay put.
	AccumulateBusyTimeMs
	AccumulateBackPressuredTimeMs
	AccumulateIdleTimeMs
	// LastCheckpointSize is job-scoped too (bytes of the last completed
	// checkpoint); it comes after the others for the same reason.
	LastCheckpointSize
	// NumberOfCompletedCheckpoints is job-scoped: the JobManager's count
	// of the job's completed checkpoints. Its rises date the checkpoints
	// the forecast of timeouts reads, and their interval.
	NumberOfCompletedCheckpoints
	numMetricNames
)

// String returns the short Flink name of the metric (without scope prefix),
// for %v in messages; today only test failure messages use it.
func (m MetricName) String() string {
	names := [numMetricNames]string{
		"unknown",
		"inputQueueLength", "inPoolUsage", "outputQueueLength", "outPoolUsage",
		"inputFloatingBuffersUsage", "inputExclusiveBuffersUsage",
		"busyTimeMsPerSecond", "backPressuredTimeMsPerSecond", "idleTimeMsPerSecond",
		"numRecordsIn", "numRecordsInPerSecond", "numRecordsOut", "numRecordsOutPerSecond",
		"checkpointAlignmentTime", "checkpointStartDelayNanos",
		"lastCheckpointDuration", "numberOfFailedCheckpoints",
		"accumulateBusyTimeMs", "accumulateBackPressuredTimeMs", "accumulateIdleTimeMs",
		"lastCheckpointSize", "numberOfCompletedCheckpoints",
	}
	if m < numMetricNames {
		return names[m]
	}
	return "invalid"
}

// JobScoped reports whether the metric belongs to the job rather than a subtask.
func (m MetricName) JobScoped() bool {
	return m == LastCheckpointDuration || m == NumberOfFailedCheckpoints || m == LastCheckpointSize || m == NumberOfCompletedCheckpoints
}

// Metric is one Flink metric observation.
//
// String fields follow the same lifetime rule as KeySample: valid only for
// the duration of the call that receives the Metric.
type Metric struct {
	// TS is the event time in epoch milliseconds.
	TS            int64
	Name          MetricName
	Host          string
	TMID          string
	JobID         string
	JobName       string
	TaskID        string
	TaskName      string
	TaskAttemptID string
	// Subtask is the subtask index, or -1 for job-scoped metrics.
	Subtask int32
	// Value is the gauge value, or the count of a counter or meter.
	Value float64
	// NoValue marks Flink's reading for "no value yet" (the decoders'
	// sentinel table, pipeline/decode/sentinel.go: -1 for the last
	// checkpoint's duration and size before one completed, NaN for a busy
	// time that is not measured); Value is then 0 and means nothing. The
	// report still says the job and its subtask are alive.
	NoValue bool
	// Rate is the per-second rate of a meter; valid when HasRate is set.
	Rate    float64
	HasRate bool
	// Source is where the metric was read; the zero Source when unknown.
	Source Source
}
