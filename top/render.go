package top

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Frame is what one screen shows: the last snapshot read and how the last
// refresh went.
type Frame struct {
	// Snapshot is the last snapshot read successfully.
	Snapshot Snapshot
	// Updated is when Snapshot was read; zero while no refresh succeeded.
	Updated time.Time
	// Err is the error of the last refresh, nil when it succeeded. It is
	// shown in the footer, above which Snapshot stays on screen.
	Err error
	// Failures counts the refreshes that failed in a row.
	Failures int
	// Refresh is the refresh interval shown in the header; 0 for a single
	// frame.
	Refresh time.Duration
}

// Style says how Render draws. The zero value of a field means its
// default.
type Style struct {
	// Color turns on ANSI colors (SGR sequences); default off.
	Color bool
	// KeyWidth is the widest a key is drawn, in columns, quotes and
	// ellipsis included. Default 40 (DefaultKeyWidth).
	KeyWidth int
	// NameWidth is the widest a task name, host or cause is drawn in a
	// table. Default 32 (DefaultNameWidth).
	NameWidth int
	// SummaryWidth is the widest a summary, a job's name and id and the
	// jobs filter are drawn. Default 80 (DefaultSummaryWidth).
	SummaryWidth int
}

// ANSI SGR sequences; sgrReset ends each colored cell.
const (
	sgrBold   = "\x1b[1m"
	sgrDim    = "\x1b[2m"
	sgrRed    = "\x1b[31m"
	sgrYellow = "\x1b[33m"
	sgrCyan   = "\x1b[36m"
	sgrRedB   = "\x1b[1;31m"
	sgrReset  = "\x1b[0m"
)

// errorWidth bounds the error text of the footer, in columns.
const errorWidth = 300

// Render writes f as text to w: a header (time, windows, jobs), per job a
// task skew table, a HOT KEYS table and a SATURATED SUBTASKS table with
// aligned columns, and a footer with the last error. Every string from the
// data is escaped and cut to its column (see quoteKey), so hostile keys
// cannot move the cursor, change colors or break the layout. Times are
// shown in now's location. Render is pure: the same arguments give the
// same bytes. It returns w's error.
func Render(w io.Writer, f Frame, now time.Time, st Style) error {
	if st.KeyWidth <= 0 {
		st.KeyWidth = DefaultKeyWidth
	}
	if st.NameWidth <= 0 {
		st.NameWidth = DefaultNameWidth
	}
	if st.SummaryWidth <= 0 {
		st.SummaryWidth = DefaultSummaryWidth
	}
	r := renderer{st: st, now: now}
	r.header(f)
	for i := range f.Snapshot.Jobs {
		r.job(&f.Snapshot.Jobs[i])
	}
	r.footer(f)
	if _, err := io.WriteString(w, r.b.String()); err != nil {
		return fmt.Errorf("top: write frame: %w", err)
	}
	return nil
}

type renderer struct {
	st  Style
	now time.Time
	b   strings.Builder
}

// paint wraps s in sgr when colors are on.
func (r *renderer) paint(sgr, s string) string {
	if !r.st.Color || sgr == "" || s == "" {
		return s
	}
	return sgr + s + sgrReset
}

func (r *renderer) line(parts ...string) {
	r.b.WriteString(strings.TrimRight(strings.Join(parts, ""), " "))
	r.b.WriteByte('\n')
}

func (r *renderer) header(f Frame) {
	title := "skewlens top  " + r.now.Format("2006-01-02 15:04:05 MST")
	if f.Refresh > 0 {
		title += "  refresh " + f.Refresh.String()
	}
	r.line(r.paint(sgrBold, title))
	q := f.Snapshot.Query
	if f.Updated.IsZero() {
		r.line("no data yet")
		return
	}
	jobs := fmt.Sprintf("jobs %d", len(f.Snapshot.Jobs))
	if len(q.Jobs) > 0 {
		names := make([]string, len(q.Jobs))
		for i, j := range q.Jobs {
			names[i] = cleanText(j, r.st.SummaryWidth, false)
		}
		jobs += " (only " + strings.Join(names, ", ") + ")"
	}
	windows := fmt.Sprintf("windows: %d newest per job since %s", q.Windows, r.clock(q.Since))
	if lo, hi, ok := windowRange(f.Snapshot.Jobs); ok {
		windows += " (" + r.span(lo, hi) + ")"
	}
	r.line(jobs, "  ", windows)
	if len(f.Snapshot.Jobs) == 0 {
		r.line("")
		r.line("no findings since ", r.clock(q.Since))
	}
}

// windowRange returns the oldest start and the newest end of the jobs'
// windows.
func windowRange(jobs []Job) (lo, hi int64, ok bool) {
	for _, j := range jobs {
		for _, w := range j.Windows {
			if !ok || w.Start < lo {
				lo = w.Start
			}
			if !ok || w.End > hi {
				hi = w.End
			}
			ok = true
		}
	}
	return lo, hi, ok
}

func (r *renderer) job(j *Job) {
	r.line("")
	name := "JOB "
	if j.JobName != "" {
		name += cleanText(j.JobName, r.st.SummaryWidth, false) + "  "
	}
	r.line(r.paint(sgrBold, name+cleanText(j.JobID, r.st.SummaryWidth, false)))
	if len(j.Windows) > 0 {
		newest, oldest := j.Windows[0], j.Windows[len(j.Windows)-1]
		age := r.now.Sub(time.UnixMilli(newest.End)).Round(time.Second)
		when := "newest ended " + age.String() + " ago"
		if age < 0 {
			when = "newest ends in " + (-age).String()
		}
		r.line("  ", r.paint(sgrDim, fmt.Sprintf("windows %s (%d), %s", r.span(oldest.Start, newest.End), len(j.Windows), when)))
	}
	nWin := len(j.Windows)

	r.line("")
	r.sectionTitle("TASK SKEW", len(j.Tasks), j.TasksTotal)
	if len(j.Tasks) > 0 {
		t := newTable("TASK", "SKEW>", "MAX/MEDIAN>", "WINDOW")
		for _, k := range j.Tasks {
			t.row(
				cell{text: cleanText(k.TaskName, r.st.NameWidth, false)},
				cell{text: strconv.FormatFloat(k.SkewScore, 'f', 1, 64), sgr: level(k.SkewScore, 20, 50)},
				cell{text: strconv.FormatFloat(k.MaxMedianRatio, 'f', 2, 64)},
				cell{text: r.clockMs(k.Window.Start)},
			)
		}
		r.table(t)
	}

	r.line("")
	r.sectionTitle("HOT KEYS", len(j.HotKeys), j.HotKeysTotal)
	if len(j.HotKeys) > 0 {
		t := newTable("TASK", "SUBTASK>", "KEY", "SHARE>", "EST. RECORDS>", "WINDOWS>", "LAST WINDOW")
		for _, h := range j.HotKeys {
			t.row(
				cell{text: cleanText(h.TaskName, r.st.NameWidth, false)},
				cell{text: subtask(h.SubtaskIndex)},
				cell{text: quoteKey(h.Key, r.st.KeyWidth, h.KeyBytes > len(h.Key))},
				cell{text: strconv.FormatFloat(h.Share*100, 'f', 1, 64) + "%", sgr: level(h.Share, 0.2, 0.5)},
				cell{text: count(h.EstimatedRecords)},
				cell{text: fmt.Sprintf("%d/%d", h.Windows, nWin)},
				cell{text: r.clockMs(h.Window.Start)},
			)
		}
		r.table(t)
	}

	r.line("")
	r.sectionTitle("SATURATED SUBTASKS", len(j.Saturated), j.SaturatedTotal)
	if len(j.Saturated) > 0 {
		t := newTable("TASK", "SUBTASK>", "CAUSE", "BUSY ms/s>", "BACKPRESSURED ms/s>", "HOST", "WINDOWS>", "LAST WINDOW", "SUMMARY")
		for _, s := range j.Saturated {
			host := cleanText(s.Host, r.st.NameWidth, false)
			if host == "" {
				host = "-"
			}
			t.row(
				cell{text: cleanText(s.TaskName, r.st.NameWidth, false)},
				cell{text: subtask(s.SubtaskIndex)},
				cell{text: cleanText(s.Cause, r.st.NameWidth, false), sgr: sgrRed},
				cell{text: strconv.FormatFloat(s.BusyMsPerSecond, 'f', 0, 64), sgr: level(s.BusyMsPerSecond, 500, 900)},
				cell{text: strconv.FormatFloat(s.BackPressuredMsPerSecond, 'f', 0, 64), sgr: level(s.BackPressuredMsPerSecond, 500, 900)},
				cell{text: host},
				cell{text: fmt.Sprintf("%d/%d", s.Windows, nWin)},
				cell{text: r.clockMs(s.Window.Start)},
				cell{text: cleanText(s.Summary, r.st.SummaryWidth, s.SummaryBytes > len(s.Summary))},
			)
		}
		r.table(t)
	}
}

// sectionTitle writes a section's title with its row count ("3", or
// "10 of 57" when the limit cut rows, or "none").
func (r *renderer) sectionTitle(title string, shown, total int) {
	n := "none"
	switch {
	case shown == 0 && total > 0:
		n = fmt.Sprintf("%d not shown", total)
	case total > shown:
		n = fmt.Sprintf("%d of %d", shown, total)
	case shown > 0:
		n = strconv.Itoa(shown)
	}
	r.line("  ", r.paint(sgrBold, title), " (", n, ")")
}

func (r *renderer) footer(f Frame) {
	if f.Err == nil {
		return
	}
	r.line("")
	msg := "ERROR"
	if f.Failures > 1 {
		msg += fmt.Sprintf(" (%d refreshes in a row)", f.Failures)
	}
	msg += ": " + cleanText(f.Err.Error(), errorWidth, false)
	r.line(r.paint(sgrRedB, msg))
	status := "no data read yet"
	if !f.Updated.IsZero() {
		status = fmt.Sprintf("showing data read at %s (%s ago)", r.clock(f.Updated), r.now.Sub(f.Updated).Round(time.Second))
	}
	if f.Refresh > 0 {
		status += "; retrying in " + f.Refresh.String()
	}
	r.line(status)
}

// clock formats t in now's location: the time of day, with the date when
// it is not now's date.
func (r *renderer) clock(t time.Time) string {
	t = t.In(r.now.Location())
	y, m, d := t.Date()
	ny, nm, nd := r.now.Date()
	if y == ny && m == nm && d == nd {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

func (r *renderer) clockMs(ms int64) string { return r.clock(time.UnixMilli(ms)) }

// span formats a time range of epoch milliseconds.
func (r *renderer) span(from, to int64) string {
	return r.clockMs(from) + "-" + r.clockMs(to)
}

// subtask formats a subtask index; -1 means the whole task.
func subtask(i int) string {
	if i < 0 {
		return "all"
	}
	return strconv.Itoa(i)
}

// count formats an estimated record count compactly.
func count(v float64) string {
	switch {
	case v < 1e3:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v < 1e6:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case v < 1e9:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	}
	return strconv.FormatFloat(v/1e9, 'f', 1, 64) + "G"
}

// level colors v yellow from warn and red from bad on.
func level(v, warn, bad float64) string {
	switch {
	case v >= bad:
		return sgrRed
	case v >= warn:
		return sgrYellow
	}
	return ""
}

// cell is one table cell: escaped text and an optional color.
type cell struct {
	text string
	sgr  string
}

// table aligns cells in columns by their display width (text/tabwriter
// counts runes, which misaligns wide characters, and would count color
// sequences). A header ending in ">" is right-aligned.
type table struct {
	head  []string
	right []bool
	rows  [][]cell
}

func newTable(head ...string) *table {
	t := &table{head: make([]string, len(head)), right: make([]bool, len(head))}
	for i, h := range head {
		t.head[i], t.right[i] = strings.CutSuffix(h, ">")
	}
	return t
}

func (t *table) row(cells ...cell) { t.rows = append(t.rows, cells) }

// table writes t indented by two spaces, columns two spaces apart, the
// last column unpadded.
func (r *renderer) table(t *table) {
	widths := make([]int, len(t.head))
	for i, h := range t.head {
		widths[i] = textWidth(h)
	}
	for _, row := range t.rows {
		for i, c := range row {
			widths[i] = max(widths[i], textWidth(c.text))
		}
	}
	write := func(cells []cell) {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-textWidth(c.text))
			last := i == len(cells)-1
			switch {
			case t.right[i]:
				b.WriteString(pad + r.paint(c.sgr, c.text))
			case last:
				b.WriteString(r.paint(c.sgr, c.text))
			default:
				b.WriteString(r.paint(c.sgr, c.text) + pad)
			}
			if !last {
				b.WriteString("  ")
			}
		}
		r.line(b.String())
	}
	head := make([]cell, len(t.head))
	for i, h := range t.head {
		head[i] = cell{text: h, sgr: sgrCyan}
	}
	write(head)
	for _, row := range t.rows {
		write(row)
	}
}
