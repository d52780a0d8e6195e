package findingtext

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skewlens/skewlens/internal/termtext"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// Columns of a text line: the kind (or cause) and the place
// (job/task #subtask) are padded to these widths.
const (
	textKindWidth  = 18
	textWhereWidth = 36
	// textMinRoom is the fewest columns a key or summary is cut to when
	// a line fits a narrow terminal; the line is cut after it.
	textMinRoom = 10
	// textMinName is the fewest columns a job or task name is cut to.
	textMinName = 8
	// textMinWhere is the narrowest the place gets on a narrow terminal,
	// so that a hot key line keeps room for its key and share.
	textMinWhere = 16
	// textHotKeyRoom is what a hot key line needs after the place: the
	// key (about 20 columns) and its share and count.
	textHotKeyRoom = 56
)

// WriteFinding prints one finding as a line for people: window start (UTC,
// with the zone), kind or cause, where (job/task #subtask), and the key,
// the summary or the numbers. Every string from the data (job and task
// names, keys, summaries, which quote hosts and keys) is escaped as top
// escapes it (termtext), so a hostile name cannot reach the terminal raw.
// width > 0 fits the line to that many columns: names, key and summary
// are cut first (to no fewer than textMinRoom columns), then the line.
func WriteFinding(w io.Writer, f *skew.Finding, width int) error {
	at := time.UnixMilli(f.WindowStart).UTC().Format("2006-01-02 15:04:05 MST")
	kind := f.Kind
	if f.Saturation != nil {
		kind = f.Cause
	}
	// On a terminal narrower than the full layout, the place column
	// narrows (down to textMinWhere) before the key or summary is cut.
	whereWidth := textWhereWidth
	if width > 0 {
		fixed := termtext.Width(at) + 2 + textKindWidth + 1 + 1
		whereWidth = max(textMinWhere, min(textWhereWidth, width-fixed-textHotKeyRoom))
	}
	where := textWhere(f, 0)
	if width > 0 {
		where = textWhere(f, whereWidth)
	}
	head := at + "  " + pad(kind, textKindWidth) + " " + pad(where, whereWidth) + " "
	// room is what the line leaves for its last part.
	room := func(rest string) int {
		if width <= 0 {
			return 0
		}
		return max(textMinRoom, width-termtext.Width(head)-termtext.Width(rest))
	}
	var tail string
	switch {
	case f.HotKey != nil:
		label := ""
		if f.Saturated != nil && !*f.Saturated {
			label = "; task not saturated"
			if !f.SkewsSubtask {
				label += ", no alert"
			}
		}
		of := ""
		if f.SubtaskShare > 0 {
			of = " and " + skew.ShareText(f.SubtaskShare, f.SubtaskShareMargin) + " of its subtask"
		}
		rest := fmt.Sprintf(" carries %s%s (~%.0f records)%s", skew.ShareText(f.Share, f.ShareMargin), of, f.EstimatedRecords, label)
		tail = "key " + termtext.Quote(f.Key, room("key "+rest), false) + rest
	case f.Stats != nil:
		st := f.Stats
		tail = fmt.Sprintf("busy %4.0f  bp %4.0f  idle %4.0f ms/s  in %9.1f/s  share %5.1f%%  inPool %.2f  outPool %.2f",
			st.BusyMsPerSecond, st.BackPressuredMsPerSecond, st.IdleMsPerSecond, st.RecordsInPerSecond, st.InputShare*100, st.InPoolUsage, st.OutPoolUsage)
	default:
		tail = termtext.Clean(f.Summary+actText(f), room(""), false)
	}
	_, err := io.WriteString(w, termtext.Fit(head+tail, width)+"\n")
	return err
}

// actText is what to run for a saturation finding, when its summary
// does not say it already: the `flink run` argument of an
// under_provisioned finding's rescale (the other forms are in its
// evidence), or for a slow subtask whose TaskManager id is unknown the
// REST request that names it.
func actText(f *skew.Finding) string {
	if f.Saturation == nil || f.Evidence == nil {
		return ""
	}
	ev := f.Evidence
	switch {
	case f.Cause == skew.CauseUnderProvisioned && ev.Rescale != nil:
		return " Apply: " + ev.Rescale.FlinkRun
	case f.Cause == skew.CauseSlowSubtask && ev.Inspect != nil && ev.Inspect.ThreadDump == "" && ev.Inspect.Subtask != "":
		return " Its TaskManager: " + ev.Inspect.Subtask
	}
	return ""
}

// textWhere is where a finding is: job/task #subtask, escaped; with a
// limit (> 0 columns), the task name and then the job name are cut (to
// no fewer than textMinName columns each) to fit it.
func textWhere(f *skew.Finding, limit int) string {
	sub := ""
	if f.SubtaskIndex != nil {
		sub = fmt.Sprintf(" #%d", *f.SubtaskIndex)
	}
	name, id := termtext.Clean(f.JobName, 0, false), termtext.Clean(f.JobID, 0, false)
	job, task := skew.JobLabel(name, id), termtext.Clean(f.TaskName, 0, false)
	over := func() int {
		n := termtext.Width(job) + termtext.Width(task) + len(sub) - limit
		if job != "" {
			n++ // the slash
		}
		return n
	}
	if n := over(); limit > 0 && n > 0 {
		task = termtext.Clean(f.TaskName, max(textMinName, termtext.Width(task)-n), false)
	}
	if n := over(); limit > 0 && n > 0 && f.JobName != "" {
		job = skew.JobLabel(termtext.Clean(f.JobName, max(textMinName, termtext.Width(name)-n), false), id)
	}
	if job != "" {
		return job + "/" + task + sub
	}
	return task + sub
}

// pad fills s with spaces to width columns, by display width.
func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-termtext.Width(s)))
}

// WriteIncident writes one line for an incident: its start (with
// the zone), label (opened, closed, …), cause, where, duration and
// windows, why it closed when its run ended, the key and peaks, and the
// latest summary. Names, the key and
// the summary are escaped (termtext), so a hostile name cannot reach the
// terminal raw; width > 0 fits the line to that many columns.
func WriteIncident(w io.Writer, label string, in *incident.Incident, width int) error {
	at := time.UnixMilli(in.Start).UTC().Format("2006-01-02 15:04:05 MST")
	where := termtext.Clean(in.TaskName, 0, false)
	if job := skew.JobLabel(termtext.Clean(in.JobName, 0, false), termtext.Clean(in.JobID, 0, false)); job != "" {
		where = job + "/" + where
	}
	if in.Subtask >= 0 {
		where = fmt.Sprintf("%s #%d", where, in.Subtask)
	}
	var peaks []string
	if in.Busy.N > 0 {
		peaks = append(peaks, fmt.Sprintf("busy %.0f ms/s", in.Busy.Peak))
	}
	if in.InputRatio.N > 0 {
		peaks = append(peaks, fmt.Sprintf("input %.1f× median", in.InputRatio.Peak))
	}
	if in.Share.N > 0 {
		peaks = append(peaks, fmt.Sprintf("share %.1f%%", in.Share.Peak*100))
	}
	var detail string
	if in.Key != "" {
		detail = "key " + termtext.Quote(in.Key, 0, false) + ", "
	}
	if len(peaks) > 0 {
		detail += "peak " + strings.Join(peaks, ", ")
	}
	detail = strings.TrimSuffix(detail, ", ")
	if p := in.Plan; p != nil && p.Overdue && in.State == incident.StateOpen {
		detail = fmt.Sprintf("plan v%d not working: served %s ago; ", p.Version,
			time.Duration(in.LastSeen-p.At)*time.Millisecond) + detail
	}
	if r := in.Rescale; r != nil && r.Overdue && in.State == incident.StateOpen {
		detail = fmt.Sprintf("rescale %d → %d not working: still saturated; ", r.ParallelismBefore, r.ParallelismAfter) + detail
	}
	if why := in.Why(); why != "" {
		// Why it closed comes first: the rest is history.
		detail = termtext.Clean(why, 0, false) + "; " + detail
	}
	if in.Summary != "" {
		detail += " — " + termtext.Clean(in.Summary, 0, false)
	}
	line := fmt.Sprintf("%s  %-7s %-18s %-36s %8s (%d windows)  %s",
		at, label, in.Cause, where, in.Duration().Round(time.Second), in.Windows, strings.TrimPrefix(detail, " "))
	_, err := io.WriteString(w, termtext.Fit(line, width)+"\n")
	return err
}
