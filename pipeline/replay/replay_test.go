package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
)

const t0 = int64(1593004200000)

// twoFiles returns a metrics file and a key-sample file covering the same
// 100 s, with a few bad lines in the sample file.
func twoFiles() (metrics, samples string, nMetrics, nSamples, nBad int) {
	var m, s strings.Builder
	for i := range 100 {
		ts := t0 + int64(i)*1000
		for sub := range 2 {
			fmt.Fprintf(&m, `{"name":"taskmanager_job_task_busyTimeMsPerSecond","time_stamp":%d,"host":"h","job_id":"j","task_name":"t","subtask_index":"%d","value":100}`+"\n", ts, sub)
			nMetrics++
		}
		fmt.Fprintf(&s, `{"ts":%d,"job_id":"j","task_name":"t","key":"k%d","parallelism":2}`+"\n", ts+500, i%3)
		nSamples++
		if i%25 == 0 {
			s.WriteString("{\"ts\":oops}\n\n# a comment\n")
			nBad++
		}
	}
	return m.String(), s.String(), nMetrics, nSamples, nBad
}

// looseHotKeys judges hot keys without statistical margins: the files
// have 10 key samples per window, far too few for the default ones.
var looseHotKeys = skew.Config{MinSamples: 1, HotKeyConfidence: 0.5}

func TestRunMergesByEventTime(t *testing.T) {
	metrics, samples, nm, ns, nb := twoFiles()
	eng, err := skew.New(looseHotKeys)
	if err != nil {
		t.Fatal(err)
	}
	stage, err := window.New(window.Config{OutOfOrderMs: 1000}, eng)
	if err != nil {
		t.Fatal(err)
	}
	var bad []BadLine
	var findings []skew.Finding
	st, err := Run(context.Background(),
		[]Input{{Name: "metrics", R: strings.NewReader(metrics)}, {Name: "samples", R: strings.NewReader(samples)}},
		stage, Options{OnBad: func(b BadLine) { bad = append(bad, b) }},
		func(f *skew.Finding) error { findings = append(findings, *f); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Window.Late != 0 || st.Window.Metrics != uint64(nm) || st.Window.Samples != uint64(ns) {
		t.Fatalf("window counts %+v, want %d metrics, %d samples, none late", st.Window, nm, ns)
	}
	if st.Bad.Total() != uint64(nb) || len(bad) != nb {
		t.Fatalf("bad lines %d (callbacks %d), want %d", st.Bad.Total(), len(bad), nb)
	}
	if bad[0].Input != "samples" || bad[0].Line != 2 || bad[0].Err.Reason != decode.ReasonInvalidJSON {
		t.Errorf("first bad line %+v", bad[0])
	}
	if st.Skipped != uint64(2*nb) {
		t.Errorf("skipped %d, want %d", st.Skipped, 2*nb)
	}
	if st.Bytes != int64(len(metrics)+len(samples)) {
		t.Errorf("bytes %d, want %d", st.Bytes, len(metrics)+len(samples))
	}
	// Three keys share every window evenly: each is hot (33% > 25%, half
	// the fair share at parallelism 2).
	hot := 0
	for _, f := range findings {
		if f.Kind == skew.KindHotKey {
			hot++
		}
	}
	if hot != 30 {
		t.Errorf("hot_key findings %d, want 30 (3 keys × 10 windows)", hot)
	}
}

func TestRunStopsOnEmitError(t *testing.T) {
	_, samples, _, _, _ := twoFiles()
	eng, _ := skew.New(looseHotKeys)
	stage, _ := window.New(window.Config{}, eng)
	want := fmt.Errorf("sink full")
	_, err := Run(context.Background(), []Input{{Name: "s", R: strings.NewReader(samples)}}, stage, Options{},
		func(*skew.Finding) error { return want })
	if err != want {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func TestMaybeGunzip(t *testing.T) {
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte("line one\nline two\n"))
	zw.Close()
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"gzip", zb.Bytes(), "line one\nline two\n"},
		{"plain", []byte("plain\n"), "plain\n"},
		{"one byte", []byte{0x1f}, "\x1f"},
		{"empty", nil, ""},
	}
	for _, tt := range tests {
		r, err := MaybeGunzip(bytes.NewReader(tt.in))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := MaybeGunzip(bytes.NewReader([]byte{0x1f, 0x8b, 0})); err == nil {
		t.Error("truncated gzip header accepted")
	}
}

// TestRunJoinsPrometheusScrapes: raw PrometheusReporter scrapes (no
// timestamps, each after its skewlens-scrape-time comment, task and job
// names filtered to [A-Za-z0-9:_]) and key samples under the names the
// Flink API gives make one task: the data_skew finding carries the hot
// key and the human task name. The scrape time applies per input file:
// a scrape file without the comment keeps failing with missing_timestamp.
func TestRunJoinsPrometheusScrapes(t *testing.T) {
	const (
		p      = 8
		taskID = "cbc357ccb763df2852fee8c4fc7d55f2"
		human  = "KeyedProcess -> enrich"
	)
	r, err := keygroup.NewRouter(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	hot := r.Subtask("u42")
	var scrape, keys, noTime strings.Builder
	for w := range 4 {
		ws := t0 + int64(w)*10000
		fmt.Fprintf(&scrape, "# skewlens-scrape-time %d\n", ws+5000)
		scrape.WriteString("# HELP flink_taskmanager_job_task_busyTimeMsPerSecond busyTimeMsPerSecond (scope: taskmanager_job_task)\n")
		scrape.WriteString("# TYPE flink_taskmanager_job_task_busyTimeMsPerSecond gauge\n")
		for i := range p {
			busy, rate := 250.0, 300.0
			if i == hot {
				busy, rate = 995, 1400
			}
			labels := fmt.Sprintf(`{job_id="j",job_name="enrich_job",subtask_index="%d",task_attempt_id="a_%s_%d_0",task_id="%s",task_name="KeyedProcess____enrich",tm_id="localhost:35013_6b1e1c",}`, i, taskID, i, taskID)
			fmt.Fprintf(&scrape, "flink_taskmanager_job_task_busyTimeMsPerSecond%s %.1f\n", labels, busy)
			fmt.Fprintf(&scrape, "flink_taskmanager_job_task_numRecordsInPerSecond%s %.1f\n", labels, rate)
			if w == 0 {
				fmt.Fprintf(&noTime, "flink_taskmanager_job_task_busyTimeMsPerSecond%s %.1f\n", labels, busy)
			}
		}
		for i := range 1000 {
			key := fmt.Sprintf("user%d", i)
			if i < 400 {
				key = "u42"
			}
			fmt.Fprintf(&keys, `{"ts":%d,"job_id":"j","job_name":"enrich job","task_name":%q,"key":%q,"sample_rate":0.01,"parallelism":%d}`+"\n", ws+1000, human, key, p)
		}
	}
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stage, err := window.New(window.Config{OutOfOrderMs: 1000}, eng)
	if err != nil {
		t.Fatal(err)
	}
	var findings []skew.Finding
	st, err := Run(context.Background(), []Input{
		{Name: "scrape.prom", R: strings.NewReader(scrape.String())},
		{Name: "keys.jsonl", R: strings.NewReader(keys.String())},
		{Name: "no-time.prom", R: strings.NewReader(noTime.String())},
	}, stage, Options{}, func(f *skew.Finding) error { findings = append(findings, *f); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Bad.Total() != p || st.Bad.Get(decode.ReasonMissingTimestamp) != p {
		t.Errorf("bad lines %s, want %d missing_timestamp (the file without the comment)", st.Bad.String(), p)
	}
	if st.Window.Metrics != 4*2*p || st.Window.Late != 0 {
		t.Errorf("window counts %+v", st.Window)
	}
	var sat []skew.Finding
	for _, f := range findings {
		if f.TaskName != human || f.JobName != "enrich job" {
			t.Errorf("%s finding on %q/%q", f.Kind, f.JobName, f.TaskName)
		}
		if f.Kind == skew.KindSaturation {
			sat = append(sat, f)
		}
	}
	if len(sat) != 3 {
		t.Fatalf("%d saturation findings, want 3 (windows 1 to 3)", len(sat))
	}
	for _, f := range sat {
		if f.Cause != skew.CauseDataSkew || *f.SubtaskIndex != hot || len(f.Evidence.HotKeys) != 1 || f.Evidence.HotKeys[0].Key != "u42" {
			t.Errorf("finding %+v %+v", f.Saturation, f.Evidence)
		}
	}
}

// TestRunTruncatedGzip: a gzip input cut short ends where it stops. The
// records before the cut are replayed and counted, the other input plays
// to its end, the windows are flushed, and Run says which input ended
// early (before, it returned "unexpected EOF" with every count zero).
func TestRunTruncatedGzip(t *testing.T) {
	metrics, samples, nm, ns, _ := twoFiles()
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(samples))
	zw.Close()
	cut := zb.Bytes()[:zb.Len()*2/3]
	eng, _ := skew.New(looseHotKeys)
	stage, _ := window.New(window.Config{OutOfOrderMs: 1000}, eng)
	zr, err := MaybeGunzip(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	hot := 0
	st, err := Run(context.Background(),
		[]Input{{Name: "metrics", R: strings.NewReader(metrics)}, {Name: "samples.gz", R: zr}},
		stage, Options{}, func(f *skew.Finding) error {
			if f.Kind == skew.KindHotKey {
				hot++
			}
			return nil
		})
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "samples.gz") {
		t.Fatalf("err = %v, want ErrTruncated naming samples.gz", err)
	}
	if len(st.Truncated) != 1 || st.Truncated[0] != "samples.gz" {
		t.Errorf("Truncated %q, want [samples.gz]", st.Truncated)
	}
	if st.Window.Metrics != uint64(nm) {
		t.Errorf("metrics %d, want all %d (that input is whole)", st.Window.Metrics, nm)
	}
	if st.Window.Samples == 0 || st.Window.Samples >= uint64(ns) {
		t.Errorf("key samples %d, want some but fewer than %d", st.Window.Samples, ns)
	}
	if st.Bytes <= int64(len(metrics)) || st.Lines == 0 {
		t.Errorf("bytes %d, lines %d: the part read is not counted", st.Bytes, st.Lines)
	}
	if hot == 0 {
		t.Error("no hot_key finding from the part read")
	}
}

// TestRunCountsOnError: when Run stops on an error, its Stats still count
// what was read.
func TestRunCountsOnError(t *testing.T) {
	_, samples, _, _, _ := twoFiles()
	eng, _ := skew.New(looseHotKeys)
	stage, _ := window.New(window.Config{}, eng)
	st, err := Run(context.Background(), []Input{{Name: "s", R: strings.NewReader(samples)}}, stage, Options{},
		func(*skew.Finding) error { return errors.New("sink full") })
	if err == nil {
		t.Fatal("no error")
	}
	if st.Window.Samples == 0 || st.Bytes == 0 || st.Lines == 0 {
		t.Errorf("stats %+v: what was read is not counted", st)
	}
}
