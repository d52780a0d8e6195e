package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/top/termtext"
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

// textFlags fit the lines for people to the terminal.
type textFlags struct {
	Width int `default:"0" placeholder:"COLUMNS" help:"Widest line of text output, in columns (0: the terminal's width when standard output is a terminal, else no limit)." range:"[0,${max_width}]"`
}

// lineWidth returns the columns a line may take: --width, else the
// terminal's width when standard output is one (asked each time, so a
// resize takes effect), else 0 (no limit).
func (f *textFlags) lineWidth(e *env) (int, error) {
	switch {
	case f.Width < 0:
		return 0, fmt.Errorf("--width %d: want 0 (the terminal's) or more", f.Width)
	case f.Width > 0:
		return f.Width, nil
	case e.stdoutColumns != nil:
		return e.stdoutColumns(), nil
	}
	return 0, nil
}

// writeText prints one finding as a line for people: window start (UTC,
// with the zone), kind or cause, where (job/task #subtask), and the key,
// the summary or the numbers. Every string from the data (job and task
// names, keys, summaries, which quote hosts and keys) is escaped as top
// escapes it (termtext), so a hostile name cannot reach the terminal raw.
// width > 0 fits the line to that many columns: names, key and summary
// are cut first (to no fewer than textMinRoom columns), then the line.
func writeText(w io.Writer, f *skew.Finding, width int) error {
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
		tail = termtext.Clean(f.Summary, room(""), false)
	}
	_, err := io.WriteString(w, termtext.Fit(head+tail, width)+"\n")
	return err
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
