package app

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// TestAnalyzeNothingRead: an input with no valid record is ErrNoRecords,
// said on standard error after the summary.
func TestAnalyzeNothingRead(t *testing.T) {
	var out, errOut bytes.Buffer
	cfg := AnalyzeConfig{Input: []string{"-"}, Format: "auto", Output: "json", Progress: "never",
		Window: window.DefaultConfig(), Engine: skew.DefaultConfig(), BusyFrom: "auto"}
	err := Analyze(context.Background(), cfg, Streams{In: strings.NewReader("not a record\n"), Out: &out, Err: &errOut})
	if !errors.Is(err, ErrNoRecords) {
		t.Fatalf("Analyze: %v, want ErrNoRecords", err)
	}
	if !strings.HasSuffix(errOut.String(), "skewlens analyze: no valid record read\n") || out.Len() != 0 {
		t.Errorf("stdout %q, stderr:\n%s", out.String(), errOut.String())
	}
}
