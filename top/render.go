package top

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/skewlens/skewlens/internal/termtext"
	"github.com/skewlens/skewlens/sinks/topstore"
	"github.com/skewlens/skewlens/skew"
)

// Frame is what one screen shows: the last snapshot read and how the last
// refresh went.
type Frame struct {
	// Snapshot is the last snapshot read successfully.
	Snapshot topstore.Snapshot
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
	// ellipsis included. Default: Config's.
	KeyWidth int
	// NameWidth is the widest a task name, host or cause is drawn in a
	// table. Default: Config's.
	NameWidth int
	// SummaryWidth is the widest a summary, a job's name and id and the
	// jobs filter are drawn. Default: Config's.
	SummaryWidth int
	// Width is the widest a line is drawn, in columns: the terminal's
	// width. Tables narrow their key, name and summary columns (down to
	// minCell) to fit it, and what still does not fit is cut with an
	// ellipsis. Default 0: no limit.
	Width int
}

// minCell is the narrowest a key, name or summary column gets when a
// table narrows to fit Style.Width.
const minCell = 8

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
// data is escaped and cut to its column (termtext.Quote, termtext.Clean),
// so hostile keys and names cannot move the cursor, change colors or break
// the layout, and every line fits Style.Width. Times are shown in now's
// location, with its zone. Render is pure: the same arguments give the
// same bytes. It returns w's error.
func Render(w io.Writer, f Frame, now time.Time, st Style) error {
	if st.KeyWidth <= 0 || st.NameWidth <= 0 || st.SummaryWidth <= 0 {
		d := DefaultConfig()
		if st.KeyWidth <= 0 {
			st.KeyWidth = d.KeyWidth
		}
		if st.NameWidth <= 0 {
			st.NameWidth = d.NameWidth
		}
		if st.SummaryWidth <= 0 {
			st.SummaryWidth = d.SummaryWidth
		}
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

// line writes one line, cut to Style.Width.
func (r *renderer) line(parts ...string) {
	r.b.WriteString(termtext.Fit(strings.TrimRight(strings.Join(parts, ""), " "), r.st.Width))
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
			names[i] = termtext.Clean(j, r.st.SummaryWidth, false)
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
func windowRange(jobs []topstore.Job) (lo, hi int64, ok bool) {
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

func (r *renderer) job(j *topstore.Job) {
	r.line("")
	name := "JOB "
	if j.JobName != "" {
		name += termtext.Clean(j.JobName, r.st.SummaryWidth, false) + "  "
	}
	r.line(r.paint(sgrBold, name+termtext.Clean(j.JobID, r.st.SummaryWidth, false)))
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
				flexCell(k.TaskName, r.st.NameWidth, false, false),
				cell{text: strconv.FormatFloat(k.SkewScore, 'f', 1, 64), sgr: level(k.SkewScore, 20, 50)},
				cell{text: strconv.FormatFloat(k.MaxMedianRatio, 'f', 2, 64)},
				cell{text: r.cellClock(k.Window.Start)},
			)
		}
		r.table(t)
	}

	r.line("")
	r.sectionTitle("HOT KEYS", len(j.HotKeys), j.HotKeysTotal)
	if len(j.HotKeys) > 0 {
		t := newTable("TASK", "SUBTASK>", "KEY", "SHARE>", "OF SUBTASK>", "EST. RECORDS>", "WINDOWS>", "LAST WINDOW")
		for _, h := range j.HotKeys {
			ofSubtask := cell{text: "-"}
			if h.SubtaskShare > 0 {
				ofSubtask = cell{text: skew.ShareText(h.SubtaskShare, h.SubtaskShareMargin)}
			}
			t.row(
				flexCell(h.TaskName, r.st.NameWidth, false, false),
				cell{text: subtask(h.SubtaskIndex)},
				flexCell(h.Key, r.st.KeyWidth, h.KeyBytes > len(h.Key), true),
				cell{text: skew.ShareText(h.Share, h.ShareMargin), sgr: level(h.Share, 0.2, 0.5)},
				ofSubtask,
				cell{text: count(h.EstimatedRecords)},
				cell{text: fmt.Sprintf("%d/%d", h.Windows, nWin)},
				cell{text: r.cellClock(h.Window.Start)},
			)
		}
		r.table(t)
	}

	r.line("")
	r.sectionTitle("SATURATED SUBTASKS", len(j.Saturated), j.SaturatedTotal)
	if len(j.Saturated) > 0 {
		t := newTable("TASK", "SUBTASK>", "CAUSE", "BUSY ms/s>", "BACKPRESSURED ms/s>", "HOST", "WINDOWS>", "LAST WINDOW", "SUMMARY")
		t.lastBelow = true
		for _, s := range j.Saturated {
			host := flexCell(s.Host, r.st.NameWidth, false, false)
			if s.Host == "" {
				host = cell{text: "-"}
			}
			t.row(
				flexCell(s.TaskName, r.st.NameWidth, false, false),
				cell{text: subtask(s.SubtaskIndex)},
				cell{text: termtext.Clean(s.Cause, r.st.NameWidth, false), sgr: sgrRed},
				cell{text: strconv.FormatFloat(s.BusyMsPerSecond, 'f', 0, 64), sgr: level(s.BusyMsPerSecond, 500, 900)},
				cell{text: strconv.FormatFloat(s.BackPressuredMsPerSecond, 'f', 0, 64), sgr: level(s.BackPressuredMsPerSecond, 500, 900)},
				host,
				cell{text: fmt.Sprintf("%d/%d", s.Windows, nWin)},
				cell{text: r.cellClock(s.Window.Start)},
				flexCell(s.Summary, r.st.SummaryWidth, s.SummaryBytes > len(s.Summary), false),
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
	msg += ": " + termtext.Clean(f.Err.Error(), errorWidth, false)
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

// clock formats t in now's location with the zone: the time of day, with
// the date when it is not now's date ("12:00:05 UTC", "2026-02-28
// 11:00:05 CET").
func (r *renderer) clock(t time.Time) string {
	return r.clockOnly(t) + " " + t.In(r.now.Location()).Format("MST")
}

// clockOnly is clock without the zone.
func (r *renderer) clockOnly(t time.Time) string {
	t = t.In(r.now.Location())
	y, m, d := t.Date()
	ny, nm, nd := r.now.Date()
	if y == ny && m == nm && d == nd {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// cellClock formats a time of a table cell: as clock, without the zone
// when it is now's, which the frame's header line states (a table's
// columns are narrow).
func (r *renderer) cellClock(ms int64) string {
	t := time.UnixMilli(ms)
	if t.In(r.now.Location()).Format("MST") == r.now.Format("MST") {
		return r.clockOnly(t)
	}
	return r.clock(t)
}

// span formats a time range of epoch milliseconds, with the zone once
// when both ends are in the same one.
func (r *renderer) span(from, to int64) string {
	a, b := time.UnixMilli(from), time.UnixMilli(to)
	loc := r.now.Location()
	if a.In(loc).Format("MST") == b.In(loc).Format("MST") {
		return r.clockOnly(a) + "-" + r.clock(b)
	}
	return r.clock(a) + "-" + r.clock(b)
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
	// fit, when set, draws the cell's text again at most that many
	// columns wide, for a table that narrows to fit Style.Width.
	fit func(width int) string
}

// flexCell is a cell of text from the data, escaped (quoted when quote)
// and at most width columns wide; a table may narrow it further. cut says
// the source read only a prefix of s.
func flexCell(s string, width int, cut, quote bool) cell {
	draw := termtext.Clean
	if quote {
		draw = termtext.Quote
	}
	return cell{text: draw(s, width, cut), fit: func(w int) string { return draw(s, min(w, width), cut) }}
}

// table aligns cells in columns by their display width (text/tabwriter
// counts runes, which misaligns wide characters, and would count color
// sequences). A header ending in ">" is right-aligned.
type table struct {
	head  []string
	right []bool
	rows  [][]cell
	// lastBelow lets the last column move under each row when the table
	// cannot fit Style.Width otherwise.
	lastBelow bool
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
// last column unpadded. When the rows are wider than Style.Width, the
// widest of the columns whose cells can narrow (keys, names, summaries)
// gives up a column at a time, down to minCell. When that is not enough
// and t.lastBelow is set, the last column moves to a line of its own
// under each row (the summary stays readable on a narrow terminal); a
// line that still does not fit is cut by line.
func (r *renderer) table(t *table) {
	cols := len(t.head)
	widths, fits := t.layout(cols, r.st.Width)
	below := !fits && t.lastBelow && cols > 1
	if below {
		cols--
		widths, _ = t.layout(cols, r.st.Width)
	}
	if r.st.Width > 0 {
		for _, row := range t.rows {
			for i := range cols {
				if c := &row[i]; c.fit != nil && termtext.Width(c.text) > widths[i] {
					c.text = c.fit(widths[i])
				}
			}
		}
	}
	write := func(cells []cell) {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-termtext.Width(c.text))
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
	head := make([]cell, cols)
	for i, h := range t.head[:cols] {
		head[i] = cell{text: h, sgr: sgrCyan}
	}
	write(head)
	for _, row := range t.rows {
		write(row[:cols])
		if below {
			c := row[cols]
			if c.fit != nil {
				c.text = c.fit(max(minCell, r.st.Width-len(belowIndent)))
			}
			r.line(belowIndent, r.paint(c.sgr, c.text))
		}
	}
}

// belowIndent indents the last column of a row on its own line.
const belowIndent = "      "

// layout returns the widths of t's first cols columns, narrowed as far as
// needed and possible to fit width (0: no limit), and whether they fit.
func (t *table) layout(cols, width int) ([]int, bool) {
	widths := make([]int, cols)
	floor := make([]int, cols) // 0: the column cannot narrow
	for i, h := range t.head[:cols] {
		widths[i] = termtext.Width(h)
	}
	for _, row := range t.rows {
		for i, c := range row[:cols] {
			widths[i] = max(widths[i], termtext.Width(c.text))
			if c.fit != nil {
				floor[i] = max(minCell, termtext.Width(t.head[i]))
			}
		}
	}
	if width <= 0 {
		return widths, true
	}
	total := 2 + 2*(cols-1)
	for _, w := range widths {
		total += w
	}
	for total > width {
		widest := -1
		for i, w := range widths {
			if floor[i] > 0 && w > floor[i] && (widest < 0 || w > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			return widths, false
		}
		widths[widest]--
		total--
	}
	return widths, true
}
