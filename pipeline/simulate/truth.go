package simulate

import (
	"strconv"
)

// The ground truth of a run: what the engine should find, fixed by the
// Config before any line is generated.

// HotSpan is a time span during which one hot key saturates one keyed
// subtask.
type HotSpan struct {
	From, To      int64 // epoch ms, [From, To)
	Key           string
	Subtask       int
	Host          string
	TaskAttemptID string
}

// Truth is the ground truth of a generated run: what the engine should
// find. It is fixed by the Config and known before any line is generated.
type Truth struct {
	Scenario Scenario
	Cause    Cause
	JobID    string
	JobName  string
	// TaskName and TaskID name the task with the cause; empty when healthy.
	TaskName, TaskID string
	// Subtask is the culprit subtask index, or -1 when the cause is
	// task-wide (under_provisioned, checkpoint_timeout), moves
	// (rotating_hot_key: see Hot) or there is none (healthy).
	Subtask int
	// Host, TMID and TaskAttemptID of Subtask (empty when Subtask is -1).
	Host, TMID, TaskAttemptID string
	// HotKeys are the hot keys in time order (hot_key: one; rotating: one
	// per 5-minute bucket the run touches).
	HotKeys []string
	// Hot lists, per time span, the hot key and the keyed subtask it
	// saturates (hot_key: one span, rotating_hot_key: one per bucket).
	Hot []HotSpan
	// From and To bound the incident's cause in epoch ms: the whole run,
	// or for checkpoint_timeout the demand burst (the sink stays saturated
	// after it until the backlog drains).
	From, To int64
	// Parallelism and MaxParallelism of the keyed task (MaxParallelism
	// resolved to Flink's default when the Config left it 0).
	Parallelism, MaxParallelism int
	// DemandRate is the base demand in records/s (before noise and burst).
	DemandRate float64
	// Healthy per-subtask capacities in records/s.
	SourceCapacity, KeyedCapacity, SinkCapacity float64
	// SlowCapacity is the stuck sink subtask's capacity (slow_sink only).
	SlowCapacity float64
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
