package top

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/termtext"
	"github.com/skewlens/skewlens/sinks/topstore"
	"github.com/skewlens/skewlens/skew"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testNow is the clock of every golden frame.
var testNow = time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC)

// ms returns the epoch milliseconds of testNow plus d.
func ms(d time.Duration) int64 { return testNow.Add(d).UnixMilli() }

// win returns the 10 s window that ends at testNow - 5s - i*10s.
func win(i int) topstore.Window {
	end := ms(-5*time.Second - time.Duration(i)*10*time.Second)
	return topstore.Window{Start: end - 10_000, End: end}
}

func testQuery() topstore.Query {
	return topstore.Query{Since: testNow.Add(-time.Hour), Windows: 3, Limit: 10, MaxStringBytes: 244}
}

// fixtureSnapshot is a snapshot like the store's top reader returns for the sink's test
// fixtures: a job with a hot key saturating a subtask and a job with a
// slow subtask and an under-provisioned task.
func fixtureSnapshot() topstore.Snapshot {
	newest := []topstore.Window{win(0), win(1), win(2)}
	return topstore.Snapshot{
		Query: testQuery(),
		Jobs: []topstore.Job{
			{
				JobID: "84dce1ec8aa5a4df2d1758d6e9278693", JobName: "clickstream-sessions", Windows: newest,
				Tasks: []topstore.Task{
					{TaskName: "SessionWindow", SkewScore: 62, MaxMedianRatio: 5, Window: win(0)},
					{TaskName: "Dedup", SkewScore: 40, MaxMedianRatio: 3, Window: win(0)},
				},
				TasksTotal: 2,
				HotKeys: []topstore.HotKey{
					{TaskName: "SessionWindow", SubtaskIndex: 3, Key: "user-42", KeyBytes: 7, Share: 0.6, EstimatedRecords: 1_234_567, Window: win(0), Windows: 3,
						ShareMargin: 0.031, SubtaskShare: 0.86, SubtaskShareMargin: 0.024},
					// Written before the engine gave margins: as before.
					{TaskName: "SessionWindow", SubtaskIndex: 1, Key: "user-7", KeyBytes: 6, Share: 0.1, EstimatedRecords: 30_000, Window: win(1), Windows: 2},
				},
				HotKeysTotal: 2,
				Saturated: []topstore.Saturated{
					{TaskName: "SessionWindow", SubtaskIndex: 3, Cause: skew.CauseDataSkew, BusyMsPerSecond: 950,
						Host: "tm-3.flink.internal", Summary: "Subtask 3 of SessionWindow is saturated by hot key user-42.",
						SummaryBytes: 59, Window: win(0), Windows: 3},
					{TaskName: "Dedup", SubtaskIndex: 1, Cause: skew.CauseRotatingHotKey, BusyMsPerSecond: 920, BackPressuredMsPerSecond: 12,
						Host: "tm-1.flink.internal", Summary: "The hot key of Dedup moves every 5 minutes.",
						SummaryBytes: 43, Window: win(0), Windows: 1},
				},
				SaturatedTotal: 2,
			},
			{
				JobID: "f3c1a2b4d5e6f708192a3b4c5d6e7f80", JobName: "payments-fraud", Windows: newest,
				Tasks: []topstore.Task{
					{TaskName: "Enrich", SkewScore: 4, MaxMedianRatio: 1.05, Window: win(0)},
					{TaskName: "FraudScore", SkewScore: 3, MaxMedianRatio: 1.1, Window: win(0)},
				},
				TasksTotal: 2,
				Saturated: []topstore.Saturated{
					{TaskName: "FraudScore", SubtaskIndex: 5, Cause: skew.CauseSlowSubtask, BusyMsPerSecond: 990, BackPressuredMsPerSecond: 0,
						Host: "tm-9.flink.internal", Summary: "Subtask 5 of FraudScore on tm-9.flink.internal is slow; look at its sink client.",
						SummaryBytes: 81, Window: win(0), Windows: 3},
					{TaskName: "Enrich", SubtaskIndex: -1, Cause: skew.CauseUnderProvisioned, BusyMsPerSecond: 900,
						Summary: "Enrich needs parallelism 8 instead of 4.", SummaryBytes: 40, Window: win(0), Windows: 3},
				},
				SaturatedTotal: 2,
			},
		},
	}
}

// hostileSnapshot has keys and names that try to break the screen:
// terminal escapes, newlines, invalid UTF-8, bidi overrides, stacked
// combining marks, wide characters and keys cut by the source.
func hostileSnapshot() topstore.Snapshot {
	key := func(k string, full int) topstore.HotKey {
		return topstore.HotKey{TaskName: "task\t\x1b[2J" + k[:min(len(k), 10)], SubtaskIndex: 0,
			Key: k, KeyBytes: full, Share: 0.05, EstimatedRecords: 999, Window: win(0), Windows: 1}
	}
	long := strings.Repeat("k", 244)
	keys := []topstore.HotKey{
		key("\x1b[2J\x1b[31mred\x1b]0;title\x07", 0),
		key("new\nline\r\ttab", 0),
		key("\xff\xfe invalid UTF-8 \xc3\x28", 0),
		key("nul\x00byte", 0),
		key("emoji 🔥 and 中文", 0),
		key("abc\u202edcba\u2066x", 0),
		key("z\u0301\u0302\u0303\u0304\u0305a", 0),
		key(`it's "quoted" \ and \n literally`, 0),
		key("", 0),
		key(long, 65536),
		key("中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文\xe4\xb8", 65536),
	}
	for i := range keys {
		if keys[i].KeyBytes == 0 {
			keys[i].KeyBytes = len(keys[i].Key)
		}
		keys[i].SubtaskIndex = i
	}
	return topstore.Snapshot{
		Query: topstore.Query{Jobs: []string{"hostile'job\\\n", "\x1b[2J"}, Since: testNow.Add(-time.Hour),
			Windows: 1, Limit: 20, MaxStringBytes: 244},
		Jobs: []topstore.Job{{
			JobID: "hostile'job\\\n", JobName: "name\x1b[31m\nwith 中文 " + strings.Repeat("n", 100),
			Windows: []topstore.Window{win(0)},
			Tasks: []topstore.Task{
				{TaskName: "Source: Kafka\n-> Map -> Filter -> " + strings.Repeat("Operator -> ", 20) + "Sink", SkewScore: 99.95, MaxMedianRatio: 100, Window: win(0)},
			},
			TasksTotal: 1,
			HotKeys:    keys, HotKeysTotal: len(keys),
			Saturated: []topstore.Saturated{{
				TaskName: "task\x00", SubtaskIndex: 2147483647, Cause: "cause\x1b[0m", BusyMsPerSecond: 1000, BackPressuredMsPerSecond: 600,
				Host: "host\x1b[2J\n🔥", Summary: "line one\nline two \x1b[31m" + strings.Repeat("s", 300), SummaryBytes: 10000,
				Window: win(0), Windows: 1,
			}},
			SaturatedTotal: 1,
		}},
	}
}

func TestRenderGolden(t *testing.T) {
	fixture := fixtureSnapshot()
	truncated := fixtureSnapshot()
	truncated.Query.Limit = 1
	truncated.Jobs[0].HotKeys = truncated.Jobs[0].HotKeys[:1]
	truncated.Jobs[0].HotKeysTotal = 57
	truncated.Jobs[0].Saturated = truncated.Jobs[0].Saturated[:1]
	truncated.Jobs[0].Tasks = truncated.Jobs[0].Tasks[:1]
	truncated.Jobs[1].Tasks = nil // a Limit of 0 rows is not possible, but a race between queries is
	truncated.Jobs[1].Saturated = truncated.Jobs[1].Saturated[:1]

	// Windows of yesterday and of the future show their date and "in".
	otherDay := fixtureSnapshot()
	otherDay.Jobs = otherDay.Jobs[:1]
	otherDay.Jobs[0].Windows = []topstore.Window{{Start: ms(10 * time.Second), End: ms(20 * time.Second)},
		win(0), {Start: ms(-25 * time.Hour), End: ms(-25*time.Hour + 10*time.Second)}}

	updated := testNow.Add(-7 * time.Second)
	tests := []struct {
		name  string
		frame Frame
		style Style
	}{
		{"fixture", Frame{Snapshot: fixture, Updated: testNow, Refresh: 2 * time.Second}, Style{}},
		{"fixture-color", Frame{Snapshot: fixture, Updated: testNow, Refresh: 2 * time.Second}, Style{Color: true}},
		{"hostile", Frame{Snapshot: hostileSnapshot(), Updated: testNow}, Style{}},
		{"hostile-narrow", Frame{Snapshot: hostileSnapshot(), Updated: testNow}, Style{KeyWidth: 8, NameWidth: 8, SummaryWidth: 8}},
		{"hostile-color", Frame{Snapshot: hostileSnapshot(), Updated: testNow}, Style{Color: true}},
		// A terminal's width: the key, name and summary columns narrow,
		// the rest of a line that still does not fit is cut.
		{"fixture-width-100", Frame{Snapshot: fixture, Updated: testNow, Refresh: 2 * time.Second}, Style{Width: 100}},
		{"fixture-width-40", Frame{Snapshot: fixture, Updated: testNow, Refresh: 2 * time.Second}, Style{Width: 40}},
		{"hostile-width-80", Frame{Snapshot: hostileSnapshot(), Updated: testNow}, Style{Width: 80}},
		{"hostile-color-width-80", Frame{Snapshot: hostileSnapshot(), Updated: testNow}, Style{Color: true, Width: 80}},
		{"truncated", Frame{Snapshot: truncated, Updated: testNow}, Style{}},
		{"other-day", Frame{Snapshot: otherDay, Updated: testNow}, Style{}},
		{"empty", Frame{Snapshot: topstore.Snapshot{Query: topstore.Query{Jobs: []string{"84dce1ec8aa5a4df2d1758d6e9278693"},
			Since: testNow.Add(-time.Hour), Windows: 3}}, Updated: testNow}, Style{}},
		{"error-stale", Frame{Snapshot: fixture, Updated: updated, Refresh: 2 * time.Second, Failures: 3,
			Err: errors.New("clickhouse sink: top view: read hot keys: dial tcp 127.0.0.1:9000: connect: connection refused\n\x1b[2Jstack")}, Style{}},
		{"error-stale-color", Frame{Snapshot: fixture, Updated: updated, Refresh: 2 * time.Second, Failures: 1,
			Err: errors.New("read newest windows: code: 60, message: Table skewlens.findings doesn't exist")}, Style{Color: true}},
		{"error-no-data", Frame{Refresh: 2 * time.Second, Failures: 1,
			Err: errors.New("clickhouse sink: top view: read newest windows: context deadline exceeded")}, Style{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, tc.frame, testNow, tc.style); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			checkSafe(t, got)
			if !tc.style.Color && strings.Contains(got, "\x1b") {
				t.Errorf("escape character in a frame without colors")
			}
			checkAligned(t, got, tc.style.Color)
			if tc.style.Width > 0 {
				for i, line := range strings.Split(got, "\n") {
					if w := termtext.Width(line); w > tc.style.Width {
						t.Errorf("line %d is %d columns, wider than %d: %q", i+1, w, tc.style.Width, line)
					}
				}
			}
			golden(t, filepath.Join("testdata", tc.name+".golden"), got)

			// Render is pure.
			var again bytes.Buffer
			if err := Render(&again, tc.frame, testNow, tc.style); err != nil {
				t.Fatal(err)
			}
			if again.String() != got {
				t.Errorf("second Render differs")
			}
		})
	}
}

// checkAligned checks every table (lines from a header line to a blank
// line): each header cell spans display columns [start, end], and in every
// row the cell in that column is either left-aligned (starts at start,
// after a space) or right-aligned (ends at end, before a space or the end
// of the line). A wide rune counted as one column shifts the rest of its
// row and fails both.
func checkAligned(t *testing.T, frame string, color bool) {
	t.Helper()
	if color {
		frame = stripSGR(frame)
	}
	lines := strings.Split(frame, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "  TASK  ") {
			continue
		}
		header := displayColumns(lines[i])
		type span struct{ start, end int }
		var cells []span
		for c := 2; c < len(header); c++ {
			if header[c] != ' ' && header[c-1] == ' ' && header[c-2] == ' ' {
				cells = append(cells, span{start: c})
			}
			if header[c] != ' ' && (c+1 == len(header) || (header[c+1] == ' ' && (c+2 >= len(header) || header[c+2] == ' '))) {
				cells[len(cells)-1].end = c
			}
		}
		for j := i + 1; j < len(lines) && lines[j] != ""; j++ {
			if strings.HasPrefix(lines[j], belowIndent) {
				continue // the last column of the row above, on its own line
			}
			row := displayColumns(lines[j])
			at := func(c int) rune {
				if c >= len(row) {
					return ' '
				}
				return row[c]
			}
			for k, cell := range cells {
				left := at(cell.start) != ' ' && at(cell.start-1) == ' '
				right := at(cell.end) != ' ' && at(cell.end+1) == ' '
				last := k == len(cells)-1
				if !left && !right && !(last && cell.start >= len(row)) {
					t.Errorf("line %d: cell %d (columns %d-%d) misaligned:\n%s\n%s", j+1, k, cell.start, cell.end, lines[i], lines[j])
					break
				}
			}
		}
	}
}

// displayColumns returns the rune at each display column of line (a wide
// rune fills two columns; a zero-width one adds none).
func displayColumns(line string) []rune {
	var cols []rune
	for _, r := range line {
		for k := 0; k < termtext.RuneWidth(r); k++ {
			cols = append(cols, r)
		}
	}
	return cols
}

// golden compares got with the file at path, or writes it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./top -update)", err)
	}
	if got != string(want) {
		t.Errorf("frame differs from %s (run go test ./top -update and review the diff):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
