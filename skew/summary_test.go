package skew

import (
	"strings"
	"testing"
)

// TestSkewSummary: the summary of data skew says to salt; the summary of
// a rotating hot key says where the hot spot was before (with the window,
// in UTC) or that it was not seen elsewhere yet, and to fix the key.
func TestSkewSummary(t *testing.T) {
	base := Finding{TaskName: "agg"}
	onSub := []hotKey{{key: "u42|1593004500000", share: 0.34, margin: 0.03, subtask: 1}}
	tests := []struct {
		name    string
		sub     int
		ev      Evidence
		cause   string
		move    *hotSpotMove
		want    []string
		notWant []string
	}{
		{
			name: "data skew", sub: 1, ev: Evidence{BusyMsPerSecond: 990, InputRatio: 5.3}, cause: CauseDataSkew,
			want:    []string{`Subtask 1 of "agg"`, "5.3×", `hot key "u42|1593004500000" carries 34% ± 3`, "apply the salting plan"},
			notWant: []string{"before", "moves between subtasks"},
		},
		{
			name: "time bucket, no move seen", sub: 1, ev: Evidence{BusyMsPerSecond: 990, InputRatio: 5.3, TimeBucketKey: "u42|1593004500000"},
			cause: CauseRotatingHotKey,
			want:  []string{"because it embeds a time bucket (not seen on another subtask yet)", "drop the time bucket"},
		},
		{
			name: "moved here", sub: 1, ev: Evidence{BusyMsPerSecond: 990, InputRatio: 5.3, TimeBucketKey: "u42|1593004500000"},
			cause: CauseRotatingHotKey, move: &hotSpotMove{from: 2, to: 1, windowStart: 1593004500000},
			want: []string{"(the hot spot was on subtask 2 before and moved here in the window starting 2020-06-24 13:15:00 UTC)",
				"drop the time bucket"},
			notWant: []string{"not seen"},
		},
		{
			name: "moved elsewhere, no time bucket", sub: 4, ev: Evidence{BusyMsPerSecond: 990, InputRatio: 2},
			cause: CauseRotatingHotKey, move: &hotSpotMove{from: 2, to: 1, windowStart: 1593004510000},
			want:    []string{"moves between subtasks over time (the hot spot was on subtask 2 before and moved to subtask 1 in the window starting 2020-06-24 13:15:10 UTC)"},
			notWant: []string{"embeds a time bucket"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.ev
			got := skewSummary(base, tc.sub, &ev, onSub, tc.cause, tc.move)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("summary has %q:\n%s", w, got)
				}
			}
			if !strings.HasSuffix(got, ".") {
				t.Errorf("summary does not end a sentence: %s", got)
			}
		})
	}
}
