package findingtext

import (
	"bytes"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/rescale"
)

// TestWriteFindingSaysWhatToRun: a saturation line ends with what to run
// when the summary does not say it: the rescale's `flink run` argument,
// or the request that finds a slow subtask's TaskManager; escaped like
// the rest of the line.
func TestWriteFindingSaysWhatToRun(t *testing.T) {
	sub := func(i int) *int { return &i }
	const vid = "cbc357ccb763df2852fee8c4fc7d55f2"
	c, err := rescale.New("j1", rescale.Vertex{ID: vid, Parallelism: 8})
	if err != nil {
		t.Fatal(err)
	}
	forms, err := c.Forms()
	if err != nil {
		t.Fatal(err)
	}
	sat := func(cause string, ev *skew.Evidence, summary string, subtask *int) *skew.Finding {
		return &skew.Finding{Kind: skew.KindSaturation, JobID: "j1", TaskName: "agg", SubtaskIndex: subtask, WindowStart: 1593004380000,
			Saturation: &skew.Saturation{Cause: cause, Evidence: ev}, Summary: summary}
	}
	tests := []struct {
		name string
		f    *skew.Finding
		want string // the line's end
	}{
		{"under_provisioned", sat(skew.CauseUnderProvisioned, &skew.Evidence{Rescale: forms}, "Raise it to 8.", nil),
			"Raise it to 8. Apply: -Dpipeline.jobvertex-parallelism-overrides=" + vid + ":8\n"},
		{"under_provisioned without a vertex id", sat(skew.CauseUnderProvisioned, &skew.Evidence{}, "Raise it to 8.", nil),
			"Raise it to 8.\n"},
		{"slow, no tm_id", sat(skew.CauseSlowSubtask, &skew.Evidence{Inspect: &skew.Inspect{Subtask: "GET /jobs/j1/vertices/" + vid + "/subtasks/2"}}, "Slow.", sub(2)),
			"Slow. Its TaskManager: GET /jobs/j1/vertices/" + vid + "/subtasks/2\n"},
		{"slow, the summary has the thread dump", sat(skew.CauseSlowSubtask, &skew.Evidence{Inspect: &skew.Inspect{Subtask: "GET x", ThreadDump: "GET /taskmanagers/tm/thread-dump"}}, "Slow; GET /taskmanagers/tm/thread-dump.", sub(2)),
			"Slow; GET /taskmanagers/tm/thread-dump.\n"},
		{"hostile id escaped", sat(skew.CauseSlowSubtask, &skew.Evidence{Inspect: &skew.Inspect{Subtask: "GET /jobs/\x1b[2J"}}, "Slow.", sub(2)),
			`Slow. Its TaskManager: GET /jobs/\x1b[2J` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteFinding(&b, tt.f, 0); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(b.String(), tt.want) {
				t.Errorf("line %q, want it to end %q", b.String(), tt.want)
			}
		})
	}
}
