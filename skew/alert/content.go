package alert

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// Alert names, by cause.
const (
	NameHotKey           = "FlinkHotKey"
	NameSubtaskSkew      = "FlinkSubtaskSkew"
	NameRotatingHotKey   = "FlinkRotatingHotKey"
	NameSlowSubtask      = "FlinkSlowSubtask"
	NameUnderProvisioned = "FlinkUnderProvisioned"
	NameCheckpointRisk   = "FlinkCheckpointRisk"
)

// AlertName returns the alertname label of a cause.
func AlertName(cause string) string {
	switch cause {
	case incident.CauseHotKey:
		return NameHotKey
	case skew.CauseDataSkew:
		return NameSubtaskSkew
	case skew.CauseRotatingHotKey:
		return NameRotatingHotKey
	case skew.CauseSlowSubtask:
		return NameSlowSubtask
	case skew.CauseUnderProvisioned:
		return NameUnderProvisioned
	case skew.CauseCheckpointRisk:
		return NameCheckpointRisk
	}
	return "FlinkSkew"
}

// clean makes s valid UTF-8: Alertmanager refuses label and annotation
// values that are not, and task names come from the input.
func clean(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// labels returns the labels of a state's alert, fixed when it fires. Only
// values that cannot change while the condition lasts are labels: the
// identity, the job name, the severity, and the host of a per-subtask
// saturation (a subtask that moves to another host is a new attempt).
func (t *StateMachine) labels(st *state) map[string]string {
	f := &st.latest
	l := map[string]string{
		"alertname": AlertName(st.id.Cause),
		"severity":  t.cfg.severity(st.id.Cause),
		"job_id":    clean(st.id.JobID),
		"task_name": clean(st.id.TaskName),
		"cause":     st.id.Cause,
	}
	if f.JobName != "" {
		l["job_name"] = clean(f.JobName)
	}
	if st.id.Subtask >= 0 {
		l["subtask"] = strconv.Itoa(st.id.Subtask)
		if f.Saturation != nil && f.Host != "" {
			l["host"] = clean(f.Host)
		}
	}
	return l
}

// alert builds the Alert of a state at event time at.
func (t *StateMachine) alert(st *state, status string, at int64, reason string) Alert {
	a := Alert{
		ID:          st.id.String(),
		IncidentID:  st.incidentID(),
		Status:      status,
		Labels:      st.labels,
		Annotations: t.annotations(st),
		StartsAt:    msTime(st.start),
		LastSeenAt:  msTime(st.lastSeen),
		UpdatedAt:   msTime(at),
		Reason:      reason,
		id:          st.id,
	}
	if a.Labels == nil { // pending: labels as they would be if it fired now
		a.Labels = t.labels(st)
	}
	a.Labels = copyMap(a.Labels)
	f := st.latest // its pointers are shared: no one writes through them
	a.Finding = &f
	if status == StatusResolved {
		a.EndsAt = msTime(st.lastSeen)
		if reason != "" {
			a.Annotations["resolved_reason"] = reason
		}
	}
	return a
}

func copyMap(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// annotations describe the latest finding of a state.
func (t *StateMachine) annotations(st *state) map[string]string {
	f := &st.latest
	a := map[string]string{
		"summary":      clean(t.summary(st)),
		"runbook":      clean(t.runbook(st)),
		"window_start": msTime(f.WindowStart).Format(timeLayout),
		"window_end":   msTime(f.WindowEnd).Format(timeLayout),
		"incident_id":  st.incidentID(),
	}
	if f.SubtaskIndex != nil {
		a["subtask"] = strconv.Itoa(*f.SubtaskIndex)
	}
	if ev := evidenceJSON(st); ev != "" {
		a["evidence"] = clean(ev)
	}
	if ks := hotKeysText(st); ks != "" {
		a["hot_keys"] = clean(ks)
	}
	if s := f.Saturation; s != nil {
		if s.Host != "" {
			a["host"] = clean(s.Host)
		}
		if s.TaskAttemptID != "" {
			a["task_attempt_id"] = clean(s.TaskAttemptID)
		}
		if s.TaskManagerID != "" {
			a["tm_id"] = clean(s.TaskManagerID)
		}
		if ev := s.Evidence; ev != nil {
			if ev.TimeBucketKey != "" {
				a["time_bucket_key"] = clean(ev.TimeBucketKey)
			}
			if ev.RecommendedParallelism > 0 {
				a["parallelism"] = strconv.Itoa(ev.Parallelism)
				a["recommended_parallelism"] = strconv.Itoa(ev.RecommendedParallelism)
			}
			// The rescale in the two forms one pastes: the option's value
			// and the flink run argument (the others are in evidence).
			if r := ev.Rescale; r != nil && s.Cause == skew.CauseUnderProvisioned {
				a["parallelism_overrides"] = clean(r.Overrides)
				a["flink_run"] = clean(r.FlinkRun)
			}
			if in := ev.Inspect; in != nil && in.ThreadDump != "" {
				a["thread_dump"] = clean(in.ThreadDump)
			}
		}
	}
	if salting(st.id.Cause) {
		a["salting_plan"] = clean(t.planURL(st.run()))
		if v, ok := t.planVersion(st.run()); ok {
			a["salting_plan_version"] = strconv.FormatUint(v, 10)
		}
	}
	return a
}

// timeLayout is RFC 3339 with milliseconds, as window bounds are.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// salting reports whether a salting plan helps with the cause.
func salting(cause string) bool {
	return cause == incident.CauseHotKey || cause == skew.CauseDataSkew || cause == skew.CauseRotatingHotKey
}

func (t *StateMachine) planVersion(id incident.Identity) (uint64, bool) {
	if t.cfg.PlanVersion == nil {
		return 0, false
	}
	return t.cfg.PlanVersion(id.JobID, id.TaskName)
}

// planURL is where the task's current salting plan is served.
func (t *StateMachine) planURL(id incident.Identity) string {
	return strings.TrimRight(t.cfg.SaltingURL, "/") + "/v1/salting/" + url.PathEscape(id.JobID) + "/" + url.PathEscape(id.TaskName)
}

// summary is the engine's sentence for saturation findings; hot_key
// findings have none, so one is made here.
func (t *StateMachine) summary(st *state) string {
	f := &st.latest
	if f.Summary != "" {
		return f.Summary
	}
	if f.Kind == skew.KindHotKey && len(st.keys) > 0 {
		if len(st.keys) == 1 {
			k := st.keys[0]
			// A key with its share of its subtask is on that subtask:
			// "and 46% ± 8 of subtask 2's" says where it is routed too.
			of, where := "", ""
			switch {
			case k.SubtaskShare > 0 && st.id.Subtask >= 0:
				of = fmt.Sprintf(" and %s of subtask %d's", skew.ShareText(k.SubtaskShare, k.SubtaskShareMargin), st.id.Subtask)
			case k.SubtaskShare > 0:
				of = fmt.Sprintf(" and %s of its subtask's", skew.ShareText(k.SubtaskShare, k.SubtaskShareMargin))
			case st.id.Subtask >= 0:
				where = fmt.Sprintf(" and is routed to subtask %d", st.id.Subtask)
			}
			return fmt.Sprintf("Key %q carries %s of the sampled input of %q%s (about %.0f records in the window)%s.",
				k.Key, skew.ShareText(k.Share, k.ShareMargin), f.TaskName, of, k.EstimatedRecords, where)
		}
		on := ""
		if st.id.Subtask >= 0 {
			on = fmt.Sprintf(" on subtask %d", st.id.Subtask)
		}
		return fmt.Sprintf("%d hot keys%s of %q: %s.", len(st.keys), on, f.TaskName, hotKeysText(st))
	}
	if f.Saturation != nil {
		sub := "task"
		if f.SubtaskIndex != nil {
			sub = "subtask " + strconv.Itoa(*f.SubtaskIndex) + " of"
		}
		return fmt.Sprintf("The %s %q is saturated: %s.", sub, f.TaskName, strings.ReplaceAll(f.Cause, "_", " "))
	}
	return fmt.Sprintf("%s on %q.", AlertName(st.id.Cause), f.TaskName)
}

// keyShareText is a hot key with its share of the task's sampled input
// and, when the engine gave it, of its subtask's: `"u42" 18% ± 3` or
// `"u42" 18% ± 3 (46% ± 8 of subtask 2)`.
func keyShareText(key string, share, margin, subShare, subMargin float64, subtask int) string {
	s := strconv.Quote(key) + " " + skew.ShareText(share, margin)
	if subShare > 0 {
		of := "its subtask"
		if subtask >= 0 {
			of = "subtask " + strconv.Itoa(subtask)
		}
		s += " (" + skew.ShareText(subShare, subMargin) + " of " + of + ")"
	}
	return s
}

// hotKeysText lists the hot keys of the latest window with their shares.
func hotKeysText(st *state) string {
	var parts []string
	switch {
	case len(st.keys) > 0:
		for _, k := range st.keys {
			parts = append(parts, keyShareText(k.Key, k.Share, k.ShareMargin, k.SubtaskShare, k.SubtaskShareMargin, st.id.Subtask))
		}
	case st.latest.Saturation != nil && st.latest.Evidence != nil:
		sub := -1
		if st.latest.SubtaskIndex != nil {
			sub = *st.latest.SubtaskIndex
		}
		for _, k := range st.latest.Evidence.HotKeys {
			parts = append(parts, keyShareText(k.Key, k.Share, k.ShareMargin, k.SubtaskShare, k.SubtaskShareMargin, sub))
		}
	}
	return strings.Join(parts, ", ")
}

// hotKeyEvidence is the evidence annotation of a hot_key alert.
type hotKeyEvidence struct {
	Subtask *int          `json:"subtask_index"`
	Keys    []skew.HotKey `json:"keys"`
}

// evidenceJSON is the evidence of the latest finding as compact JSON: the
// engine's Evidence object for saturation, the keys for hot keys.
func evidenceJSON(st *state) string {
	var v any
	switch f := &st.latest; {
	case f.Saturation != nil && f.Evidence != nil:
		v = f.Evidence
	case f.Kind == skew.KindHotKey:
		v = hotKeyEvidence{Subtask: f.SubtaskIndex, Keys: st.keys}
	default:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil { // NaN or Inf in the evidence: say so rather than fail
		return fmt.Sprintf(`{"error":%q}`, err.Error())
	}
	return string(b)
}

// runbook says what to do, by cause.
func (t *StateMachine) runbook(st *state) string {
	f := &st.latest
	var ev *skew.Evidence
	if f.Saturation != nil {
		ev = f.Evidence
	}
	switch st.id.Cause {
	case skew.CauseSlowSubtask:
		where := "the TaskManager running the subtask"
		if f.Saturation != nil && f.Host != "" {
			where = "the TaskManager on host " + f.Host
			if f.TaskAttemptID != "" {
				where += " (task attempt " + f.TaskAttemptID + ")"
			}
		}
		return "jstack " + where + " and check the sink client for blocked requests; look at GC." + inspectText(f, ev) +
			" Its input is no larger than its peers', so more parallelism or salting will not help."
	case incident.CauseHotKey, skew.CauseDataSkew:
		s := t.applyPlan(st.run()) + " or enable TWO_PHASE aggregation (SQL: table.optimizer.agg-phase-strategy=TWO_PHASE; DataStream: pre-aggregate on the salted key, then merge on the key)."
		if st.id.Cause == skew.CauseDataSkew {
			s += t.autoscalerHint(st.run())
		}
		return s
	case skew.CauseRotatingHotKey:
		what := "The hot subtask moves over time"
		if ev != nil && ev.TimeBucketKey != "" {
			what = fmt.Sprintf("The key %q embeds a time bucket, so its hot spot moves to another subtask with every bucket", ev.TimeBucketKey)
		} else if ev != nil && ev.PreviousHotSubtask != nil {
			what = fmt.Sprintf("The hot subtask moves over time (it was subtask %d before)", *ev.PreviousHotSubtask)
		}
		return what + ": key by the entity and keep the time bucket in the window (or salt the time-bucketed key), so that no single subtask owns a whole bucket; a salting plan for one bucket goes stale with the next. Meanwhile " +
			strings.ToLower(t.applyPlan(st.run())[:1]) + t.applyPlan(st.run())[1:] + " or enable TWO_PHASE aggregation." + t.autoscalerHint(st.run())
	case skew.CauseUnderProvisioned:
		if ev != nil && ev.RecommendedParallelism > 0 {
			s := fmt.Sprintf("Raise the parallelism of %q from %d to %d", st.id.TaskName, ev.Parallelism, ev.RecommendedParallelism)
			switch {
			case ev.MaxParallelism > 0 && ev.MaxParallelism%ev.RecommendedParallelism == 0:
				s += fmt.Sprintf(" (a divisor of its max parallelism %d, so every subtask owns as many key groups)", ev.MaxParallelism)
			case ev.MaxParallelism > 0:
				s += fmt.Sprintf(" (no divisor of its max parallelism %d is near: key groups stay uneven; raise the max parallelism too)", ev.MaxParallelism)
			}
			s += "; the input is balanced, so salting will not help."
			if r := ev.Rescale; r != nil {
				s += fmt.Sprintf(" Flink 1.x: stop the job with a savepoint and resubmit it with %s (on Kubernetes, apply the evidence's rescale.flink_deployment_patch to the FlinkDeployment); Flink 2.x ignores that for DataStream jobs (FLINK-38770): with jobmanager.scheduler: adaptive, PUT %s to %s.",
					r.FlinkRun, r.ResourceRequirements, r.ResourceRequirementsPath)
			}
			if len(ev.ChainableWith) > 0 {
				s += " At that parallelism it matches " + strings.Join(quoteAll(ev.ChainableWith), ", ") + ": over a forward edge Flink can chain them and save a network shuffle."
			}
			return s
		}
		return fmt.Sprintf("Raise the parallelism of %q to the recommended value; the input is balanced, so salting will not help.", st.id.TaskName)
	case skew.CauseCheckpointRisk:
		who := fmt.Sprintf("a subtask of %q holds up the checkpoint barrier", st.id.TaskName)
		if f.SubtaskIndex != nil {
			who = fmt.Sprintf("subtask %d of %q holds up the checkpoint barrier", *f.SubtaskIndex, st.id.TaskName)
		}
		when := "Checkpoints will fail when they reach the checkpoint timeout"
		if ev != nil && ev.ForecastTimeoutInMs != nil && ev.ForecastIntervals != nil {
			// The engine's forecast: when, by the trend of the job's
			// checkpoints.
			switch in := *ev.ForecastTimeoutInMs; {
			case in == 0:
				when = "Checkpoints reach the checkpoint timeout now"
			default:
				when = fmt.Sprintf("Checkpoints are forecast to reach the checkpoint timeout in about %.1f checkpoint intervals (%s)",
					*ev.ForecastIntervals, (time.Duration(in) * time.Millisecond).Round(time.Second))
			}
		}
		return when + ", and " + who +
			": relieve it first (see its own alert for the cause). Meanwhile unaligned checkpoints (execution.checkpointing.unaligned.enabled: true) or buffer debloating (taskmanager.network.memory.buffer-debloat.enabled: true) let the barrier pass the backlog; a longer timeout only postpones the failure."
	}
	return ""
}

// inspectText is a slow subtask's REST requests (the finding's
// evidence.inspect) for its runbook, "" when it has none.
func inspectText(f *skew.Finding, ev *skew.Evidence) string {
	if ev == nil || ev.Inspect == nil {
		return ""
	}
	in := ev.Inspect
	var parts []string
	if in.ThreadDump != "" {
		what := "the whole TaskManager's threads"
		if f.TaskManagerID != "" {
			what = "the threads of TaskManager " + f.TaskManagerID
		}
		parts = append(parts, what+": "+in.ThreadDump)
	}
	if in.FlameGraph != "" {
		parts = append(parts, "the subtask's own (with rest.flamegraph.enabled: true): "+in.FlameGraph)
	}
	if in.Subtask != "" {
		parts = append(parts, "the TaskManager it runs in now (taskmanager-id): "+in.Subtask)
	}
	if len(parts) == 0 {
		return ""
	}
	return " From Flink's REST API, " + strings.Join(parts, "; ") + "."
}

// autoscalerHint points a skew runbook at the job's actions, which hold
// the Flink autoscaler setting that keeps it off the vertex while the
// plan is in force (one place computes it: GET /v1/actions/{job_id}).
func (t *StateMachine) autoscalerHint(id incident.Identity) string {
	return " With the Flink autoscaler on, keep it off this vertex while the plan is in force (job.autoscaler.vertex.exclude.ids: GET " +
		strings.TrimRight(t.cfg.SaltingURL, "/") + "/v1/actions/" + url.PathEscape(id.JobID) + ")."
}

// applyPlan is the salting half of a skew runbook.
func (t *StateMachine) applyPlan(id incident.Identity) string {
	if v, ok := t.planVersion(id); ok {
		return fmt.Sprintf("Apply salting plan v%d (GET %s)", v, t.planURL(id))
	}
	return fmt.Sprintf("Apply the current salting plan (GET %s)", t.planURL(id))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
