package skew

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// msText formats a duration in milliseconds the way a person says it:
// 850 ms, 22.9 s, 12.5 min.
func msText(ms float64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 60000:
		return fmt.Sprintf("%.1f s", ms/1000)
	default:
		return fmt.Sprintf("%.1f min", ms/60000)
	}
}

// skewSummary says why subtask i is saturated and what to do. For a
// rotating hot key it says where the hot spot was before (move), or
// that it was not seen elsewhere yet when only the key's time bucket
// gives the rotation away (move nil). The move's time is in UTC, so the
// text is the same wherever it is made.
func skewSummary(base Finding, i int, ev *Evidence, onSub []hotKey, cause string, move *hotSpotMove) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Subtask %d of %q is saturated (busy %.0f ms/s) because it gets %s its peers' input",
		i, base.TaskName, ev.BusyMsPerSecond, ratioText(ev.InputRatio))
	if len(onSub) > 0 {
		k := onSub[0]
		fmt.Fprintf(&b, ": hot key %q carries %s of the task's records", k.key, ShareText(k.share, k.margin))
		if k.subShare > 0 {
			fmt.Fprintf(&b, " and %s of this subtask's", ShareText(k.subShare, k.subMargin))
			if k.excess > 0 {
				fmt.Fprintf(&b, " (%.0f%% of its excess over its peers' median)", k.explained*100)
			}
		}
		if len(onSub) > 1 {
			fmt.Fprintf(&b, " (%d keys named on it)", len(onSub))
		}
	}
	if cause == CauseRotatingHotKey {
		b.WriteString("; the hot key moves between subtasks over time")
		if ev.TimeBucketKey != "" {
			b.WriteString(" because it embeds a time bucket")
		}
		switch {
		case move == nil:
			b.WriteString(" (not seen on another subtask yet)")
		case move.to == i:
			fmt.Fprintf(&b, " (the hot spot was on subtask %d before and moved here in the window starting %s)", move.from, utcTime(move.windowStart))
		default:
			fmt.Fprintf(&b, " (the hot spot was on subtask %d before and moved to subtask %d in the window starting %s)", move.from, move.to, utcTime(move.windowStart))
		}
		b.WriteString(", so drop the time bucket from the key or salt it and aggregate in two phases.")
	} else {
		b.WriteString("; apply the salting plan (two-phase aggregation) for this task.")
	}
	return b.String()
}

// utcTime formats epoch milliseconds for a summary, in UTC with the zone.
func utcTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 MST")
}

func slowSummary(f *Finding, slowOnHost int) string {
	ev := f.Evidence
	var b strings.Builder
	fmt.Fprintf(&b, "Subtask %d of %q is busy %.0f ms/s while its input is %s its peers': it is slow, not overloaded",
		*f.SubtaskIndex, f.TaskName, ev.BusyMsPerSecond, ratioText(ev.InputRatio))
	if f.Host != "" {
		fmt.Fprintf(&b, "; jstack the TaskManager on host %s", f.Host)
	} else {
		b.WriteString("; jstack its TaskManager")
	}
	var ids []string
	if f.TaskManagerID != "" {
		ids = append(ids, "TaskManager "+f.TaskManagerID)
	}
	if f.TaskAttemptID != "" && f.Host != "" {
		ids = append(ids, "attempt "+f.TaskAttemptID)
	}
	if len(ids) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(ids, ", "))
	}
	if ev.Inspect != nil && ev.Inspect.ThreadDump != "" {
		fmt.Fprintf(&b, " or take its thread dump (%s)", ev.Inspect.ThreadDump)
	}
	b.WriteString(", check its sink client for blocked requests, and look at GC")
	if f.Host != "" && slowOnHost > 1 {
		fmt.Fprintf(&b, "; %d slow subtasks share this host, so suspect the host itself", slowOnHost)
	}
	b.WriteString(".")
	return b.String()
}

// ShareText formats a share (a fraction) with margin, half the width of
// its 95 % interval: "18% ± 3" is 18 % of the records, give or take 3
// percentage points. A share or margin under 1 % keeps one decimal
// ("0.4% ± 0.2", "31% ± 0.6"); a margin that would show as 0.0 shows as
// "<0.1", so a shown margin is never zero. Without a margin (findings
// made before the engine gave one) the share keeps the format it always
// had, one decimal: "31.0%". Summaries, alerts, top and analyze's text
// all write shares with it.
func ShareText(share, margin float64) string {
	if !(margin > 0) {
		return strconv.FormatFloat(share*100, 'f', 1, 64) + "%"
	}
	f := func(x float64) string {
		if math.Abs(x) < 0.01 {
			return strconv.FormatFloat(x*100, 'f', 1, 64)
		}
		return strconv.FormatFloat(x*100, 'f', 0, 64)
	}
	m := f(margin)
	if m == "0.0" {
		m = "<0.1"
	}
	return f(share) + "% ± " + m
}

func ratioText(r float64) string {
	if r == 0 {
		return "an unknown multiple of"
	}
	if math.IsInf(r, 1) {
		return "far more than"
	}
	return strconv.FormatFloat(r, 'f', 1, 64) + "×"
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}
