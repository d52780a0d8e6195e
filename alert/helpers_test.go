package alert

import (
	"fmt"
	"strings"

	"github.com/skewlens/skewlens/alert/internal/alerttest"
	"github.com/skewlens/skewlens/skew"
)

// Test findings: 10 s windows starting at ws (ms).
const win = alerttest.Window

var (
	intp = alerttest.IntPtr
	sat  = alerttest.Sat
	hot  = alerttest.Hot
)

func statsOf(job string, ws int64) skew.Finding {
	return skew.Finding{Kind: skew.KindSubtaskStats, JobID: job, TaskName: "src", SubtaskIndex: intp(0),
		WindowStart: ws, WindowEnd: ws + win, Stats: &skew.SubtaskStats{}}
}

// evs renders events compactly: "kind id @ms [reason]".
func evs(events []Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		s := fmt.Sprintf("%s %s @%d", e.Kind, e.Alert.ID, e.Alert.UpdatedAt.UnixMilli())
		if e.Alert.Reason != "" {
			s += " " + e.Alert.Reason
		}
		out[i] = s
	}
	return out
}

func joinLines(ss []string) string { return strings.Join(ss, "\n") }
