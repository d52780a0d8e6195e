package top

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skewlens/skewlens/sinks/topstore"
)

// response is one answer of fakeSource.
type response struct {
	snap topstore.Snapshot
	err  error
	// block makes the call wait for its context to end.
	block bool
}

// fakeSource answers View calls from a script and cancels the run
// (cancel) when the script is used up.
type fakeSource struct {
	mu      sync.Mutex
	script  []response
	cancel  context.CancelFunc
	queries []topstore.Query
}

func (f *fakeSource) View(ctx context.Context, q topstore.Query) (topstore.Snapshot, error) {
	f.mu.Lock()
	f.queries = append(f.queries, q)
	if len(f.script) == 0 {
		f.mu.Unlock()
		f.cancel()
		<-ctx.Done()
		return topstore.Snapshot{}, ctx.Err()
	}
	r := f.script[0]
	f.script = f.script[1:]
	f.mu.Unlock()
	if r.block {
		<-ctx.Done()
		return topstore.Snapshot{}, ctx.Err()
	}
	return r.snap, r.err
}

// newTestTop returns a Top on a fixed clock that draws into a buffer.
func newTestTop(t *testing.T, cfg Config, script ...response) (*Top, *fakeSource, *bytes.Buffer, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	src := &fakeSource{script: script, cancel: cancel}
	var out bytes.Buffer
	tp, err := New(cfg, src, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	tp.now = func() time.Time { return testNow }
	// Faster than Validate allows, to keep the test short.
	tp.cfg.Refresh = time.Millisecond
	return tp, src, &out, ctx
}

func TestRunRefreshesAndShowsErrors(t *testing.T) {
	second := fixtureSnapshot()
	second.Jobs = second.Jobs[1:]
	tp, src, out, ctx := newTestTop(t, Config{Jobs: []string{"84dce1ec8aa5a4df2d1758d6e9278693"}, Windows: 2, MaxRows: 5},
		response{snap: fixtureSnapshot()},
		response{err: errors.New("dial tcp 127.0.0.1:9000: connection refused")},
		response{err: errors.New("clickhouse sink: top view: read hot keys: code: 60, Table doesn't exist")},
		response{snap: second},
	)
	if err := tp.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := out.String()
	checkSafe(t, got)
	golden(t, filepath.Join("testdata", "run.golden"), got)

	frames := strings.Split(got, separator+"\n")
	if len(frames) != 4 {
		t.Fatalf("%d frames, want 4 (the fifth refresh was interrupted)", len(frames))
	}
	tests := []struct {
		frame         int
		want, notWant []string
	}{
		{0, []string{"refresh 1ms", `"user-42"`, "payments-fraud"}, []string{"ERROR"}},
		// The error shows under the last good data.
		{1, []string{`"user-42"`, "ERROR: dial tcp 127.0.0.1:9000: connection refused", "showing data read at 12:00:05"}, nil},
		{2, []string{`"user-42"`, "ERROR (2 refreshes in a row): clickhouse sink: top view: read hot keys"}, nil},
		// Recovered: new data, no error.
		{3, []string{"payments-fraud"}, []string{"ERROR", "clickstream-sessions"}},
	}
	for _, tc := range tests {
		for _, w := range tc.want {
			if !strings.Contains(frames[tc.frame], w) {
				t.Errorf("frame %d lacks %q:\n%s", tc.frame, w, frames[tc.frame])
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(frames[tc.frame], w) {
				t.Errorf("frame %d has %q:\n%s", tc.frame, w, frames[tc.frame])
			}
		}
	}
	// Every refresh asked the same query, built from the Config.
	want := topstore.Query{Jobs: []string{"84dce1ec8aa5a4df2d1758d6e9278693"}, Since: testNow.Add(-topstore.DefaultLookback),
		Windows: 2, Limit: 5, MaxStringBytes: 4*DefaultConfig().SummaryWidth + 4}
	if len(src.queries) != 5 {
		t.Errorf("%d refreshes, want 5", len(src.queries))
	}
	for i, q := range src.queries {
		if !reflect.DeepEqual(q, want) {
			t.Errorf("query %d = %+v, want %+v", i, q, want)
		}
	}
}

func TestRunTerminalRedrawsInPlace(t *testing.T) {
	tp, _, out, ctx := newTestTop(t, Config{Color: ColorNever},
		response{snap: fixtureSnapshot()}, response{snap: fixtureSnapshot()})
	tp.term = true
	if err := tp.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if n := strings.Count(got, clearScreen); n != 2 {
		t.Errorf("%d screen clears, want 2", n)
	}
	if !strings.HasPrefix(got, clearScreen) {
		t.Errorf("frame does not start by clearing the screen: %.40q", got)
	}
	if strings.Contains(got, separator) {
		t.Errorf("separator on a terminal")
	}
	checkSafe(t, strings.ReplaceAll(got, clearScreen, ""))
}

func TestRunTimeoutKeepsRunning(t *testing.T) {
	tp, _, out, ctx := newTestTop(t, Config{Timeout: 20 * time.Millisecond},
		response{block: true}, response{snap: fixtureSnapshot()})
	start := time.Now()
	if err := tp.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v", d)
	}
	frames := strings.Split(out.String(), separator+"\n")
	if len(frames) != 2 {
		t.Fatalf("%d frames, want 2:\n%s", len(frames), out.String())
	}
	if !strings.Contains(frames[0], "ERROR: context deadline exceeded") || !strings.Contains(frames[0], "no data read yet") {
		t.Errorf("first frame lacks the timeout:\n%s", frames[0])
	}
	if strings.Contains(frames[1], "ERROR") || !strings.Contains(frames[1], `"user-42"`) {
		t.Errorf("second frame did not recover:\n%s", frames[1])
	}
}

func TestRunOnce(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		script  response
		wantErr error
		want    string
	}{
		{"ok", response{snap: fixtureSnapshot()}, nil, `"user-42"`},
		{"error", response{err: boom}, boom, "ERROR: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp, src, out, ctx := newTestTop(t, Config{Once: true}, tc.script)
			tp.term = true // Once never clears the screen.
			err := tp.Run(ctx)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Run = %v, want %v", err, tc.wantErr)
			}
			got := out.String()
			if strings.Contains(got, clearScreen) || strings.Contains(got, separator) {
				t.Errorf("once: screen clear or separator in %q", got)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("frame lacks %q:\n%s", tc.want, got)
			}
			if strings.Contains(got, "refresh ") || strings.Contains(got, "retrying") {
				t.Errorf("once: the frame speaks of refreshes:\n%s", got)
			}
			if len(src.queries) != 1 {
				t.Errorf("%d refreshes, want 1", len(src.queries))
			}
		})
	}
}

func TestRunCanceledMidRefresh(t *testing.T) {
	for _, once := range []bool{false, true} {
		// The script is empty: the first refresh cancels the run.
		tp, _, out, ctx := newTestTop(t, Config{Once: once})
		err := tp.Run(ctx)
		if once != (err != nil) {
			t.Errorf("once=%t: Run = %v", once, err)
		}
		if once && !errors.Is(err, context.Canceled) {
			t.Errorf("once: Run = %v, want context.Canceled", err)
		}
		if out.Len() != 0 {
			t.Errorf("once=%t: a frame was drawn after the interrupt: %q", once, out.String())
		}
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRunWriteError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tp, err := New(Config{}, &fakeSource{script: []response{{snap: fixtureSnapshot()}}, cancel: cancel}, failingWriter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Run(ctx); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Run = %v, want the write error", err)
	}
}

func TestNew(t *testing.T) {
	src := &fakeSource{cancel: func() {}}
	tests := []struct {
		name      string
		cfg       Config
		src       topstore.Reader
		out       *bytes.Buffer
		wantErr   string
		wantColor bool
	}{
		{name: "defaults", src: src, out: &bytes.Buffer{}},
		{name: "always color", cfg: Config{Color: ColorAlways}, src: src, out: &bytes.Buffer{}, wantColor: true},
		{name: "auto is off off a terminal", cfg: Config{Color: ColorAuto}, src: src, out: &bytes.Buffer{}},
		{name: "nil source", out: &bytes.Buffer{}, wantErr: "nil source"},
		{name: "nil output", src: src, wantErr: "nil output"},
		{name: "bad config", cfg: Config{Color: "sometimes"}, src: src, out: &bytes.Buffer{}, wantErr: "color"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out io.Writer
			if tc.out != nil {
				out = tc.out
			}
			tp, err := New(tc.cfg, tc.src, out, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New = %v, want an error about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tp.style.Color != tc.wantColor || tp.term {
				t.Errorf("color %t terminal %t, want color %t on a buffer", tp.style.Color, tp.term, tc.wantColor)
			}
		})
	}
}
