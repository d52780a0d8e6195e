package simulate

import (
	"strconv"
)

// The ground truth of a run: what the engine should find, fixed by the
// Config before any line is generated.

// HotSpan is a time span during which one hot key saturates one keyed
// subtask.
type HotSpan struct {
	From          int64  `json:"from"` // epoch ms, [From, To)
	To            int64  `json:"to"`
	Key           string `json:"key"`
	Subtask       int    `json:"subtask_index"`
	Host          string `json:"host"`
	TaskAttemptID string `json:"task_attempt_id"`
}

// Checkpoint is one checkpoint of a run, as it ended: when it was
// triggered (epoch ms), how long it took (the timeout, for one that timed
// out) and whether it timed out. Unlike Truth it is known only as the run
// goes (Generator.Checkpoints): it follows from the model.
type Checkpoint struct {
	Trigger    int64 `json:"trigger"`
	DurationMs int64 `json:"duration_ms"`
	TimedOut   bool  `json:"timed_out"`
}

// End is when the checkpoint completed or timed out (epoch ms).
func (c Checkpoint) End() int64 { return c.Trigger + c.DurationMs }

// Truth is the ground truth of a generated run: what the engine should
// find. It is fixed by the Config and known before any line is generated.
type Truth struct {
	Scenario Scenario `json:"scenario"`
	Cause    Cause    `json:"cause"`
	JobID    string   `json:"job_id"`
	JobName  string   `json:"job_name"`
	// TaskName and TaskID name the task with the cause; empty when healthy.
	TaskName string `json:"task_name"`
	TaskID   string `json:"task_id"`
	// Subtask is the culprit subtask index, or -1 when the cause is
	// task-wide (under_provisioned, checkpoint_timeout), moves
	// (rotating_hot_key: see Hot) or there is none (healthy).
	Subtask int `json:"subtask_index"`
	// Host, TMID and TaskAttemptID of Subtask (empty when Subtask is -1).
	Host          string `json:"host"`
	TMID          string `json:"tm_id"`
	TaskAttemptID string `json:"task_attempt_id"`
	// HotKeys are the hot keys in time order (hot_key: one; rotating: one
	// per 5-minute bucket the run touches).
	HotKeys []string `json:"hot_keys"`
	// Hot lists, per time span, the hot key and the keyed subtask it
	// saturates (hot_key: one span, rotating_hot_key: one per bucket).
	Hot []HotSpan `json:"hot"`
	// From and To bound the incident's cause in epoch ms: the whole run,
	// or for checkpoint_timeout the demand burst (the sink stays saturated
	// after it until the backlog drains), or with Config.Slowdown from its
	// first step to its recovery (or the run's end).
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Parallelism and MaxParallelism of the keyed task (MaxParallelism
	// resolved to Flink's default when the Config left it 0).
	Parallelism    int `json:"parallelism"`
	MaxParallelism int `json:"max_parallelism"`
	// DemandRate is the base demand in records/s (before noise and burst).
	DemandRate float64 `json:"demand_rate"`
	// Healthy per-subtask capacities in records/s.
	SourceCapacity float64 `json:"source_capacity"`
	KeyedCapacity  float64 `json:"keyed_capacity"`
	SinkCapacity   float64 `json:"sink_capacity"`
	// SlowCapacity is the stuck sink subtask's capacity (slow_sink only).
	SlowCapacity float64 `json:"slow_capacity"`
}

func (g *Generator) buildTruth() {
	cfg := &g.cfg
	end := cfg.Start + int64(g.nInt)*cfg.Interval.Milliseconds()
	t := Truth{
		Scenario: cfg.Scenario, JobID: g.jobID, JobName: cfg.JobName, Subtask: -1,
		From: cfg.Start, To: end, Parallelism: g.par[tKeyed], MaxParallelism: g.maxPar,
		DemandRate: g.baseRate, SourceCapacity: g.baseCap[tSource], KeyedCapacity: g.baseCap[tKeyed],
		SinkCapacity: g.baseCap[tSink],
	}
	setTask := func(task int) { t.TaskName, t.TaskID = taskName(task, len(g.cfg.SideTasks)), g.taskIDs[task] }
	setSub := func(task, i int) {
		t.Subtask = i
		s := &g.subs[g.off[task]+i]
		t.Host, t.TMID, t.TaskAttemptID = g.tms[s.tm].host, g.tms[s.tm].id, s.attemptID
	}
	span := func(from, to int64, key string, sub int) HotSpan {
		s := &g.subs[g.off[tKeyed]+sub]
		return HotSpan{From: from, To: to, Key: key, Subtask: sub, Host: g.tms[s.tm].host, TaskAttemptID: s.attemptID}
	}
	switch cfg.Scenario {
	case HotKey:
		t.Cause = CauseDataSkew
		setTask(tKeyed)
		setSub(tKeyed, g.fixedHotSub)
		t.HotKeys = []string{HotKeyBase}
		t.Hot = []HotSpan{span(cfg.Start, end, HotKeyBase, g.fixedHotSub)}
	case RotatingHotKey:
		t.Cause = CauseRotatingHotKey
		setTask(tKeyed)
		for b := floorBucket(cfg.Start); b < end; b += BucketMillis {
			k := HotKeyBase + "|" + strconv.FormatInt(b, 10)
			t.HotKeys = append(t.HotKeys, k)
			t.Hot = append(t.Hot, span(max(b, cfg.Start), min(b+BucketMillis, end), k, g.router.Subtask(k)))
		}
	case SlowSink:
		t.Cause = CauseSlowSubtask
		setTask(tSink)
		setSub(tSink, cfg.SlowSubtask)
		t.SlowCapacity = g.baseCap[tSink] * slowSinkFactor
	case UnderProvisioned:
		t.Cause = CauseUnderProvisioned
		setTask(tKeyed)
	case CheckpointTimeout:
		t.Cause = CauseUnderProvisioned
		setTask(tSink)
		iv := cfg.Interval.Milliseconds()
		if sd := cfg.Slowdown; sd != nil {
			t.From = min(end, cfg.Start+sd.At.Milliseconds())
			if sd.RecoverAt > 0 {
				t.To = min(end, cfg.Start+sd.RecoverAt.Milliseconds())
			}
			break
		}
		t.From = cfg.Start + int64(g.burstFrom)*iv
		t.To = min(end, cfg.Start+int64(g.burstTo)*iv)
	}
	g.truth = t
}

// Truth returns the ground truth of the run.
func (g *Generator) Truth() Truth {
	t := g.truth
	t.HotKeys = append([]string(nil), t.HotKeys...)
	t.Hot = append([]HotSpan(nil), t.Hot...)
	return t
}
