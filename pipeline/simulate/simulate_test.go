package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew/keygroup"
)

// line is one decoded JSON line: a metric (Name set) or a key sample.
type line struct {
	// metric
	Name      string          `json:"name"`
	TimeStamp int64           `json:"time_stamp"`
	Host      string          `json:"host"`
	TMID      string          `json:"tm_id"`
	TaskID    string          `json:"task_id"`
	AttemptID string          `json:"task_attempt_id"`
	Attempt   string          `json:"task_attempt_num"`
	Subtask   string          `json:"subtask_index"`
	Value     json.RawMessage `json:"value"`
	// both
	JobID    string `json:"job_id"`
	JobName  string `json:"job_name"`
	TaskName string `json:"task_name"`
	// sample
	TS             int64   `json:"ts"`
	Key            *string `json:"key"`
	Weight         float64 `json:"weight"`
	SampleRate     float64 `json:"sample_rate"`
	Parallelism    int     `json:"parallelism"`
	MaxParallelism *int    `json:"max_parallelism"`
	SubtaskIndex   *int    `json:"subtask_index_int"`
}

type sample struct {
	ts         int64
	key        string
	sampleRate float64
	subtask    int // -1 when absent
	maxPar     int // 0 when absent
	par        int
}

// interval is the decoded content of one reporting interval.
type interval struct {
	from, to int64
	// metric[task][subtask][short name] = gauge value, counter count, meter rate
	metric  map[string]map[int]map[string]float64
	count   map[string]map[int]map[string]int64 // counters and meter counts
	job     map[string]float64
	samples []sample
}

func (iv *interval) get(task string, sub int, name string) float64 {
	v, ok := iv.metric[task][sub][name]
	if !ok {
		panic(fmt.Sprintf("no metric %s/%d/%s", task, sub, name))
	}
	return v
}

func shortName(name string) string { return name[strings.LastIndexByte(name, '_')+1:] }

// run generates cfg and decodes its JSON output interval by interval,
// checking every line on the way.
func run(t *testing.T, cfg Config) (*Generator, []*interval) {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := g.Config()
	if c.MetricFormat != FormatJSON {
		t.Fatal("run decodes JSON output only")
	}
	iv := c.Interval.Milliseconds()
	var out []*interval
	var buf []byte
	for n := 0; ; n++ {
		var ok bool
		buf, ok = g.Next(buf[:0])
		if !ok {
			break
		}
		in := &interval{
			from: c.Start + int64(n)*iv, to: c.Start + int64(n+1)*iv,
			metric: map[string]map[int]map[string]float64{},
			count:  map[string]map[int]map[string]int64{},
			job:    map[string]float64{},
		}
		for _, raw := range bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n")) {
			decodeLine(t, raw, in)
		}
		out = append(out, in)
	}
	if len(out) != int(c.Duration/c.Interval) {
		t.Fatalf("%d intervals, want %d", len(out), c.Duration/c.Interval)
	}
	return g, out
}

func decodeLine(t *testing.T, raw []byte, in *interval) {
	t.Helper()
	if bytes.HasPrefix(raw, []byte(`{"ts":`)) {
		var s struct {
			TS             int64    `json:"ts"`
			JobID          string   `json:"job_id"`
			JobName        string   `json:"job_name"`
			TaskName       string   `json:"task_name"`
			Key            string   `json:"key"`
			Weight         float64  `json:"weight"`
			SampleRate     float64  `json:"sample_rate"`
			Parallelism    int      `json:"parallelism"`
			MaxParallelism *int     `json:"max_parallelism"`
			SubtaskIndex   *int     `json:"subtask_index"`
			Extra          struct{} `json:"-"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("sample: %v: %s", err, raw)
		}
		if s.TS < in.from || s.TS >= in.to {
			t.Fatalf("sample ts %d outside [%d, %d)", s.TS, in.from, in.to)
		}
		if s.TaskName != KeyedTaskName || s.Weight != 1 || !(s.SampleRate > 0 && s.SampleRate <= 1) || s.JobID == "" {
			t.Fatalf("bad sample %s", raw)
		}
		smp := sample{ts: s.TS, key: s.Key, sampleRate: s.SampleRate, subtask: -1, par: s.Parallelism}
		if s.SubtaskIndex != nil {
			smp.subtask = *s.SubtaskIndex
		}
		if s.MaxParallelism != nil {
			smp.maxPar = *s.MaxParallelism
		}
		in.samples = append(in.samples, smp)
		return
	}
	var m line
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("metric: %v: %s", err, raw)
	}
	if m.TimeStamp < in.from || m.TimeStamp >= in.to {
		t.Fatalf("metric ts %d outside [%d, %d)", m.TimeStamp, in.from, in.to)
	}
	var v float64
	var cnt int64
	isCount := false
	if len(m.Value) > 0 && m.Value[0] == '{' {
		var mv struct {
			Count int64   `json:"count"`
			Rate  float64 `json:"rate"`
		}
		if err := json.Unmarshal(m.Value, &mv); err != nil {
			t.Fatalf("meter: %v: %s", err, raw)
		}
		v, cnt, isCount = mv.Rate, mv.Count, true
	} else if err := json.Unmarshal(m.Value, &v); err != nil {
		t.Fatalf("value: %v: %s", err, raw)
	}
	short := shortName(m.Name)
	if strings.HasPrefix(m.Name, "jobmanager_job_") {
		if m.TaskName != "" || m.Subtask != "" {
			t.Fatalf("job metric with task tags: %s", raw)
		}
		in.job[short] = v
		return
	}
	if !strings.HasPrefix(m.Name, "taskmanager_job_task_") || m.Attempt != "0" || m.TMID == "" || m.AttemptID == "" || m.TaskID == "" {
		t.Fatalf("bad metric %s", raw)
	}
	sub, err := strconv.Atoi(m.Subtask)
	if err != nil {
		t.Fatalf("subtask_index %q: %s", m.Subtask, raw)
	}
	if short == "numRecordsIn" || short == "numRecordsOut" {
		cnt, isCount = int64(v), true
	}
	put := func(task string, sub int, k string, v float64) {
		if in.metric[task] == nil {
			in.metric[task] = map[int]map[string]float64{}
		}
		if in.metric[task][sub] == nil {
			in.metric[task][sub] = map[string]float64{}
		}
		if _, dup := in.metric[task][sub][k]; dup {
			t.Fatalf("duplicate metric %s/%d/%s", task, sub, k)
		}
		in.metric[task][sub][k] = v
	}
	put(m.TaskName, sub, short, v)
	if isCount {
		if in.count[m.TaskName] == nil {
			in.count[m.TaskName] = map[int]map[string]int64{}
		}
		if in.count[m.TaskName][sub] == nil {
			in.count[m.TaskName][sub] = map[string]int64{}
		}
		in.count[m.TaskName][sub][short] = cnt
	}
}

func generate(t testing.TB, cfg Config) []byte {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	n, err := g.WriteTo(&b)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteTo: %d, %v (buffer %d)", n, err, b.Len())
	}
	return b.Bytes()
}

func TestDeterminism(t *testing.T) {
	for _, sc := range Scenarios() {
		cfg := Config{Scenario: sc, Seed: 7, Duration: 3 * time.Minute, MetricFormat: FormatMixed, Naming: NamingMixed, SamplesPerInterval: 300}
		a, b := generate(t, cfg), generate(t, cfg)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: two runs differ", sc)
		}
		cfg.Seed = 8
		if bytes.Equal(a, generate(t, cfg)) {
			t.Fatalf("%s: seeds 7 and 8 give the same output", sc)
		}
	}
}

func TestMetricsDoNotDependOnSampleCount(t *testing.T) {
	strip := func(b []byte) string {
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.Contains(l, `"key":`) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	cfg := Config{Scenario: HotKey, Duration: 2 * time.Minute, SamplesPerInterval: 10}
	a := strip(generate(t, cfg))
	cfg.SamplesPerInterval = 5000
	if a != strip(generate(t, cfg)) {
		t.Fatal("metric lines changed with SamplesPerInterval")
	}
}

var (
	influxLine = regexp.MustCompile(`^([A-Za-z_]+)((?:,[a-z_]+=(?:[^,= \\]|\\[,= ]|\\)+)+) ((?:count=-?[0-9]+i,rate=-?[0-9]+\.[0-9]+)|(?:count=-?[0-9]+i)|(?:value=-?[0-9]+i)|(?:value=-?[0-9]+\.[0-9]+)) ([0-9]{19})$`)
	promLine   = regexp.MustCompile(`^(flink_[A-Za-z_]+)\{((?:[a-z_]+="(?:[^"\\\n]|\\[\\"n])*",?)+)\} (-?[0-9]+\.[0-9]+) ([0-9]{13})$`)
	promLabel  = regexp.MustCompile(`([a-z_]+)="((?:[^"\\\n]|\\[\\"n])*)"`)
)

func unescapeInflux(s string) string {
	return strings.NewReplacer(`\,`, ",", `\=`, "=", `\ `, " ").Replace(s)
}

func unescapeProm(s string) string {
	return strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n").Replace(s)
}

// TestEveryLineParses checks every line of every format: JSON with
// encoding/json, influx and Prometheus structurally, tags round-tripping
// a job name that needs escaping in all three.
func TestEveryLineParses(t *testing.T) {
	const jobName = `bill "ing"\ ü,=x`
	for _, format := range []string{FormatJSON, FormatInflux, FormatPrometheus, FormatMixed} {
		for _, naming := range []string{NamingLegacy, NamingCurrent, NamingMixed} {
			cfg := Config{Scenario: SlowSink, Seed: 3, Duration: time.Minute, MetricFormat: format, Naming: naming,
				JobName: jobName, SamplesPerInterval: 50, SlotsPerTM: 2, CheckpointDetail: true}
			g, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			names := map[string]bool{}
			var buf []byte
			for n := 0; ; n++ {
				var ok bool
				buf, ok = g.Next(buf[:0])
				if !ok {
					break
				}
				from := cfg.Start + int64(n)*10000
				if cfg.Start == 0 {
					from = DefaultConfig().Start + int64(n)*10000
				}
				to := from + 10000
				if len(buf) == 0 || buf[len(buf)-1] != '\n' {
					t.Fatal("interval not newline-terminated")
				}
				for _, l := range strings.Split(strings.TrimSuffix(string(buf), "\n"), "\n") {
					var ts int64
					switch {
					case strings.HasPrefix(l, "{"):
						var m map[string]any
						if err := json.Unmarshal([]byte(l), &m); err != nil {
							t.Fatalf("%s/%s: %v: %s", format, naming, err, l)
						}
						if m["job_name"] != jobName {
							t.Fatalf("job_name %q, want %q", m["job_name"], jobName)
						}
						if _, ok := m["key"]; ok {
							seen["sample"]++
							ts = int64(m["ts"].(float64))
						} else {
							seen["json"]++
							ts = int64(m["time_stamp"].(float64))
							names[m["name"].(string)] = true
						}
					case strings.HasPrefix(l, "flink_"):
						seen["prometheus"]++
						p := promLine.FindStringSubmatch(l)
						if p == nil {
							t.Fatalf("%s/%s: bad prometheus line: %q", format, naming, l)
						}
						labels := map[string]string{}
						for _, kv := range promLabel.FindAllStringSubmatch(p[2], -1) {
							labels[kv[1]] = unescapeProm(kv[2])
						}
						if labels["job_name"] != jobName || labels["host"] == "" || labels["job_id"] == "" {
							t.Fatalf("bad labels %v in %q", labels, l)
						}
						if strings.HasPrefix(p[1], "flink_taskmanager_") && (labels["task_attempt_id"] == "" || labels["subtask_index"] == "" || labels["tm_id"] == "" || labels["task_name"] == "") {
							t.Fatalf("missing labels in %q", l)
						}
						ts, _ = strconv.ParseInt(p[4], 10, 64)
						names[strings.TrimPrefix(p[1], "flink_")] = true
					default:
						seen["influx"]++
						p := influxLine.FindStringSubmatch(l)
						if p == nil {
							t.Fatalf("%s/%s: bad influx line: %q", format, naming, l)
						}
						tags := map[string]string{}
						var keys []string
						for _, kv := range regexp.MustCompile(`,([a-z_]+)=((?:[^,= \\]|\\[,= ]|\\)+)`).FindAllStringSubmatch(p[2], -1) {
							tags[kv[1]] = unescapeInflux(kv[2])
							keys = append(keys, kv[1])
						}
						for i := 1; i < len(keys); i++ {
							if keys[i-1] >= keys[i] {
								t.Fatalf("influx tags not sorted: %v", keys)
							}
						}
						if tags["job_name"] != jobName {
							t.Fatalf("influx job_name %q in %q", tags["job_name"], l)
						}
						if strings.HasPrefix(p[1], "taskmanager_") && !strings.Contains(l, `task_name=Source:\ kafka`) && tags["task_name"] == SourceTaskName {
							t.Fatalf("space in task name not escaped: %q", l)
						}
						ns, _ := strconv.ParseInt(p[4], 10, 64)
						if ns%1e6 != 0 {
							t.Fatalf("influx timestamp not whole ms: %q", l)
						}
						ts = ns / 1e6
						names[p[1]] = true
					}
					if ts < from || ts >= to {
						t.Fatalf("ts %d outside [%d, %d): %q", ts, from, to, l)
					}
				}
			}
			if seen["sample"] == 0 {
				t.Fatal("no samples")
			}
			want := map[string]bool{FormatJSON: seen["json"] > 0, FormatInflux: seen["influx"] > 0, FormatPrometheus: seen["prometheus"] > 0}
			for f, ok := range want {
				if (format == f || format == FormatMixed) != ok {
					t.Fatalf("format %s: saw %v", format, seen)
				}
			}
			legacy, current := names["taskmanager_job_task_buffers_inPoolUsage"], names["taskmanager_job_task_Shuffle_Netty_Input_Buffers_inPoolUsage"]
			if (naming == NamingLegacy) != (legacy && !current) && naming != NamingMixed || naming == NamingMixed && !(legacy && current) {
				t.Fatalf("naming %s: legacy=%v current=%v", naming, legacy, current)
			}
			for _, n := range []string{"taskmanager_job_task_busyTimeMsPerSecond", "taskmanager_job_task_numRecordsInPerSecond",
				"jobmanager_job_lastCheckpointDuration", "jobmanager_job_numberOfFailedCheckpoints", "taskmanager_job_task_checkpointStartDelayNanos",
				"jobmanager_job_numberOfCompletedCheckpoints", "jobmanager_job_lastCheckpointSize"} {
				if !names[n] {
					t.Fatalf("%s/%s: no %s", format, naming, n)
				}
			}
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "user1", `a"b\c`, "tab\there\nnl\r\x00\x1f", "ü€𝄞", "bad\xffutf8", "\u2028\u2029", "u42|1593004200000"} {
		enc := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("%q -> %s: %v", s, enc, err)
		}
		want, _ := json.Marshal(s)
		if string(enc) != string(want) {
			t.Errorf("%q: got %s, encoding/json %s", s, enc, want)
		}
	}
}

func TestValidate(t *testing.T) {
	// Validate only checks: the zero Config has no interval.
	if err := (Config{}).Validate(); err == nil {
		t.Fatal("Validate accepted the zero Config")
	}
	c := Config{}.withDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, DefaultConfig()) {
		t.Fatalf("zero fields filled with %+v, want DefaultConfig %+v", c, DefaultConfig())
	}
	if c.Scenario != Healthy || c.Start != 1593004200000 || c.Duration != 10*time.Minute || c.Interval != 10*time.Second ||
		c.SourceParallelism != 4 || c.Parallelism != 8 || c.MaxParallelism != 0 || c.SinkParallelism != 4 || c.SlotsPerTM != 4 ||
		c.SamplesPerInterval != 2000 || c.KeySpace != 100000 || c.HotShare != 0.35 || c.SlowSubtask != 2 ||
		c.MetricFormat != FormatJSON || c.Naming != NamingCurrent || c.JobName != "billing" {
		t.Fatalf("defaults: %+v", c)
	}
	bad := []Config{
		{Scenario: "nope"},
		{SlowSubtask: 4},
		{SlowSubtask: -1},
		{Scenario: SlowSink, SinkParallelism: 1},
		{Parallelism: 200, MaxParallelism: 128},
		{MaxParallelism: 40000},
		{Parallelism: -1},
		{HotShare: 1},
		{HotShare: math.NaN()},
		{Interval: time.Millisecond},
		{Interval: 1500 * time.Microsecond},
		{Duration: time.Second},
		{Rate: -5},
		{Rate: math.Inf(1)},
		{MetricFormat: "xml"},
		{Naming: "new"},
		{JobName: "a\nb"},
		{JobName: `trailing\`},
		{KeySpace: -1},
		{SamplesPerInterval: -1},
		{Start: -1},
		{Scenario: SlowSink, Slowdown: &Slowdown{Every: time.Minute, Factor: 0.8, Steps: 2}},
		{Scenario: CheckpointTimeout, Slowdown: &Slowdown{Every: time.Minute, Factor: 1, Steps: 2}},
		{Scenario: CheckpointTimeout, Slowdown: &Slowdown{Factor: 0.8, Steps: 2}},
		{Scenario: CheckpointTimeout, Slowdown: &Slowdown{Every: time.Minute, Factor: 0.8}},
		{Scenario: CheckpointTimeout, Slowdown: &Slowdown{At: time.Minute, Every: time.Minute, Factor: 0.8, Steps: 2, RecoverAt: time.Minute}},
		{Scenario: CheckpointTimeout, Slowdown: &Slowdown{Every: time.Minute, Factor: 0.8, Steps: 2, Jitter: 0.5}},
		{Scenario: CheckpointTimeout, Slowdown: &Slowdown{At: -time.Second, Every: time.Minute, Factor: 0.8, Steps: 2}},
	}
	for _, b := range bad {
		if err := b.withDefaults().Validate(); err == nil {
			t.Errorf("accepted %+v", b)
		} else if !strings.HasPrefix(err.Error(), "simulate: ") {
			t.Errorf("error without package prefix: %v", err)
		}
		if _, err := New(b); err == nil {
			t.Errorf("New accepted %+v", b)
		}
	}
	c = Config{SinkParallelism: 2}.withDefaults()
	if err := c.Validate(); err != nil || c.SlowSubtask != 1 {
		t.Fatalf("SlowSubtask default with 2 sinks: %d, %v", c.SlowSubtask, err)
	}
}

// steady returns the intervals from the second minute on: MeterViews
// average 60 s and count from 0 at Start, so earlier rates are ramping.
func steady(ivs []*interval) []*interval { return ivs[7:] }

func TestHealthy(t *testing.T) {
	_, ivs := run(t, Config{Scenario: Healthy, SamplesPerInterval: 100})
	for _, iv := range ivs {
		for task, subs := range iv.metric {
			for i, m := range subs {
				if m["busyTimeMsPerSecond"] >= 500 || m["backPressuredTimeMsPerSecond"] > 0 {
					t.Fatalf("%s/%d at %d: busy %v bp %v", task, i, iv.from, m["busyTimeMsPerSecond"], m["backPressuredTimeMsPerSecond"])
				}
				if m["inPoolUsage"] > 0.5 || m["outPoolUsage"] > 0.5 {
					t.Fatalf("%s/%d: buffers %v %v", task, i, m["inPoolUsage"], m["outPoolUsage"])
				}
			}
		}
	}
	last := ivs[len(ivs)-1]
	if last.job["numberOfFailedCheckpoints"] != 0 || last.job["lastCheckpointDuration"] <= 0 || last.job["lastCheckpointDuration"] > 2000 {
		t.Fatalf("healthy checkpoints: %v", last.job)
	}
}

func TestHotKey(t *testing.T) {
	g, ivs := run(t, Config{Scenario: HotKey, SamplesPerInterval: 100})
	tr := g.Truth()
	r, _ := keygroup.NewRouter(8, 0)
	hot := r.Subtask(HotKeyBase)
	if tr.Cause != CauseDataSkew || tr.TaskName != KeyedTaskName || tr.Subtask != hot || len(tr.HotKeys) != 1 || tr.HotKeys[0] != HotKeyBase {
		t.Fatalf("truth %+v (hot subtask %d)", tr, hot)
	}
	for _, iv := range ivs[1:] {
		for j := range 8 {
			busy := iv.get(KeyedTaskName, j, "busyTimeMsPerSecond")
			if j == hot && busy < 900 || j != hot && busy >= 700 {
				t.Fatalf("at %d keyed %d (hot %d) busy %v", iv.from, j, hot, busy)
			}
			if bp := iv.get(KeyedTaskName, j, "backPressuredTimeMsPerSecond"); bp > 100 {
				t.Fatalf("keyed %d back-pressured %v: its output is free", j, bp)
			}
		}
		if q := iv.get(KeyedTaskName, hot, "inPoolUsage"); q < 0.99 {
			t.Fatalf("hot subtask inPoolUsage %v", q)
		}
		for i := range 4 {
			if bp := iv.get(SourceTaskName, i, "backPressuredTimeMsPerSecond"); bp < 500 {
				t.Fatalf("source %d bp %v", i, bp)
			}
		}
	}
	// The hot subtask runs at capacity; its peers at their share.
	for _, iv := range steady(ivs) {
		rate := iv.get(KeyedTaskName, hot, "numRecordsInPerSecond")
		if rate < 0.95*keyedCapacity || rate > 1.02*keyedCapacity {
			t.Fatalf("hot subtask rate %v", rate)
		}
	}
}

func TestRotatingHotKey(t *testing.T) {
	g, ivs := run(t, Config{Scenario: RotatingHotKey})
	tr := g.Truth()
	if tr.Cause != CauseRotatingHotKey || tr.Subtask != -1 || len(tr.Hot) != 2 || len(tr.HotKeys) != 2 {
		t.Fatalf("truth %+v", tr)
	}
	if tr.Hot[0].Subtask == tr.Hot[1].Subtask {
		t.Fatalf("default start: both buckets route to subtask %d; the scenario would not rotate", tr.Hot[0].Subtask)
	}
	r, _ := keygroup.NewRouter(8, 0)
	for _, sp := range tr.Hot {
		if sp.Key != HotKeyBase+"|"+strconv.FormatInt(sp.From-sp.From%BucketMillis, 10) || r.Subtask(sp.Key) != sp.Subtask {
			t.Fatalf("span %+v", sp)
		}
	}
	checked := 0
	for _, iv := range ivs {
		for _, sp := range tr.Hot {
			// Skip the interval holding the switch: busy time averages the
			// last 5 s of the interval.
			if iv.from < sp.From+10000 || iv.to > sp.To {
				continue
			}
			checked++
			for j := range 8 {
				busy := iv.get(KeyedTaskName, j, "busyTimeMsPerSecond")
				if j == sp.Subtask && busy < 900 || j != sp.Subtask && busy >= 700 {
					t.Fatalf("at %d keyed %d busy %v (hot %d)", iv.from, j, busy, sp.Subtask)
				}
			}
		}
		for _, s := range iv.samples {
			if strings.HasPrefix(s.key, HotKeyBase+"|") && s.key != HotKeyBase+"|"+strconv.FormatInt(s.ts-s.ts%BucketMillis, 10) {
				t.Fatalf("sample key %s at ts %d: wrong bucket", s.key, s.ts)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d intervals checked", checked)
	}
}

func TestSlowSink(t *testing.T) {
	g, ivs := run(t, Config{Scenario: SlowSink, SamplesPerInterval: 100})
	tr := g.Truth()
	slow := tr.Subtask
	if tr.Cause != CauseSlowSubtask || tr.TaskName != SinkTaskName || slow != 2 || tr.Host == "" || tr.TaskAttemptID == "" {
		t.Fatalf("truth %+v", tr)
	}
	for _, s := range g.Subtasks() {
		if s.TaskName == SinkTaskName && s.Index == slow && (s.Host != tr.Host || s.TaskAttemptID != tr.TaskAttemptID || s.TMID != tr.TMID) {
			t.Fatalf("truth %+v does not match subtask %+v", tr, s)
		}
	}
	for _, iv := range steady(ivs) {
		if busy := iv.get(SinkTaskName, slow, "busyTimeMsPerSecond"); busy < 900 {
			t.Fatalf("slow sink busy %v", busy)
		}
		rate := iv.get(SinkTaskName, slow, "numRecordsInPerSecond")
		for k := range 4 {
			if k == slow {
				continue
			}
			peer := iv.get(SinkTaskName, k, "numRecordsInPerSecond")
			if math.Abs(rate-peer) > 0.1*peer {
				t.Fatalf("slow sink rate %v vs peer %d %v", rate, k, peer)
			}
			if busy := iv.get(SinkTaskName, k, "busyTimeMsPerSecond"); busy > 300 {
				t.Fatalf("sink peer %d busy %v", k, busy)
			}
		}
		maxBP := 0.0
		for j := range 8 {
			busy := iv.get(KeyedTaskName, j, "busyTimeMsPerSecond")
			bp := iv.get(KeyedTaskName, j, "backPressuredTimeMsPerSecond")
			if busy > 300 {
				t.Fatalf("keyed %d busy %v", j, busy)
			}
			maxBP = max(maxBP, bp)
		}
		// Flink rates a task's back-pressure by its worst subtask. Not all
		// keyed subtasks are blocked at once: the stuck sink's input gate
		// serves every channel that has data, so only the subtasks whose
		// output to it exceeds their share of its drain rate block; the
		// others wait for input (the source is blocked on the former).
		if maxBP < 500 {
			t.Fatalf("keyed task not back-pressured at %d: max %v", iv.from, maxBP)
		}
		for i := range 4 {
			if bp := iv.get(SourceTaskName, i, "backPressuredTimeMsPerSecond"); bp < 500 {
				t.Fatalf("source %d bp %v", i, bp)
			}
		}
	}
	// A stuck sink makes checkpoints slow (barriers wait behind its full
	// buffers) without failing them at the 60 s timeout.
	last := ivs[len(ivs)-1]
	if d := last.job["lastCheckpointDuration"]; d < 10000 || last.job["numberOfFailedCheckpoints"] != 0 {
		t.Fatalf("slow sink checkpoints: %v", last.job)
	}
	if d := last.metric[SinkTaskName][slow]["checkpointStartDelayNanos"]; d < 5e9 {
		t.Fatalf("slow sink checkpoint start delay %v ns", d)
	}
}

func TestUnderProvisioned(t *testing.T) {
	g, ivs := run(t, Config{Scenario: UnderProvisioned, SamplesPerInterval: 100})
	if tr := g.Truth(); tr.Cause != CauseUnderProvisioned || tr.TaskName != KeyedTaskName || tr.Subtask != -1 {
		t.Fatalf("truth %+v", tr)
	}
	for _, iv := range steady(ivs) {
		lo, hi := math.Inf(1), 0.0
		for j := range 8 {
			if busy := iv.get(KeyedTaskName, j, "busyTimeMsPerSecond"); busy < 900 {
				t.Fatalf("at %d keyed %d busy %v", iv.from, j, busy)
			}
			r := iv.get(KeyedTaskName, j, "numRecordsInPerSecond")
			lo, hi = min(lo, r), max(hi, r)
		}
		if hi > 1.15*lo {
			t.Fatalf("keyed rates %v..%v not balanced", lo, hi)
		}
		for i := range 4 {
			if bp := iv.get(SourceTaskName, i, "backPressuredTimeMsPerSecond"); bp < 300 {
				t.Fatalf("source %d bp %v", i, bp)
			}
		}
		for k := range 4 {
			if bp := iv.get(SinkTaskName, k, "busyTimeMsPerSecond"); bp > 800 {
				t.Fatalf("sink %d busy %v", k, bp)
			}
		}
	}
}

func TestCheckpointTimeout(t *testing.T) {
	g, ivs := run(t, Config{Scenario: CheckpointTimeout, SamplesPerInterval: 100})
	tr := g.Truth()
	if tr.Cause != CauseUnderProvisioned || tr.TaskName != SinkTaskName || tr.From <= DefaultConfig().Start || tr.To-tr.From < 60000 {
		t.Fatalf("truth %+v", tr)
	}
	prevFailed := 0.0
	for _, iv := range ivs {
		f := iv.job["numberOfFailedCheckpoints"]
		if f < prevFailed {
			t.Fatal("numberOfFailedCheckpoints decreased")
		}
		if f > prevFailed && iv.to <= tr.From {
			t.Fatalf("checkpoint failed at %d, before the burst", iv.from)
		}
		prevFailed = f
		for k := range 4 {
			busy := iv.get(SinkTaskName, k, "busyTimeMsPerSecond")
			if iv.to <= tr.From && busy >= 900 {
				t.Fatalf("sink %d saturated before the burst: %v", k, busy)
			}
			if iv.from >= tr.From+10000 && iv.to <= tr.To && busy < 900 {
				t.Fatalf("sink %d not saturated during the burst: %v", k, busy)
			}
		}
	}
	if prevFailed < 2 {
		t.Fatalf("%v failed checkpoints, want at least 2", prevFailed)
	}
	if last := ivs[len(ivs)-1]; last.get(SinkTaskName, 0, "busyTimeMsPerSecond") >= 900 {
		t.Fatal("the sink never recovered from the burst")
	}
}

// TestSlowdown: a sink that slows step by step saturates once its
// capacity falls below the demand, and its checkpoints, quick before,
// grow until they time out; one that recovers drains its backlog and its
// checkpoints are quick again. The JobManager's counters agree with
// Checkpoints.
func TestSlowdown(t *testing.T) {
	slow := Slowdown{At: 2 * time.Minute, Every: time.Minute, Factor: 0.85, Steps: 6, Jitter: 0.05}
	recovers := slow
	recovers.RecoverAt = 6 * time.Minute
	tests := []struct {
		name     string
		sd       Slowdown
		timeouts bool // some, and until the end
	}{
		{"slows until timeouts", slow, true},
		{"recovers", recovers, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, ivs := run(t, Config{Scenario: CheckpointTimeout, Duration: 12 * time.Minute, NoKeySamples: true, Slowdown: &tt.sd, CheckpointDetail: true})
			tr := g.Truth()
			start := g.Config().Start
			if tr.Cause != CauseUnderProvisioned || tr.TaskName != SinkTaskName || tr.From != start+tt.sd.At.Milliseconds() ||
				tt.sd.RecoverAt > 0 && tr.To != start+tt.sd.RecoverAt.Milliseconds() || tt.sd.RecoverAt == 0 && tr.To != start+12*60000 {
				t.Fatalf("truth %+v", tr)
			}
			cks := g.Checkpoints()
			done, failed, maxMs := 0, 0, int64(0)
			var lastDone Checkpoint
			for i, c := range cks {
				if i > 0 && c.Trigger < cks[i-1].End() {
					t.Fatalf("checkpoint %d triggered at %d, before the last one ended at %d", i, c.Trigger, cks[i-1].End())
				}
				if c.Trigger < tr.From && (c.TimedOut || c.DurationMs > 2000) {
					t.Fatalf("checkpoint at %d s took %d ms before the slowdown", (c.Trigger-start)/1000, c.DurationMs)
				}
				if c.TimedOut {
					failed++
					if c.DurationMs != g.Config().CheckpointTimeout.Milliseconds() {
						t.Fatalf("timed out after %d ms", c.DurationMs)
					}
				} else {
					done++
					lastDone = c
					maxMs = max(maxMs, c.DurationMs)
				}
			}
			last := ivs[len(ivs)-1]
			if last.job["numberOfCompletedCheckpoints"] != float64(done) || last.job["numberOfFailedCheckpoints"] != float64(failed) ||
				last.job["lastCheckpointDuration"] != float64(lastDone.DurationMs) || last.job["lastCheckpointSize"] <= 0 {
				t.Fatalf("last report %v; %d completed (the last %d ms), %d failed", last.job, done, lastDone.DurationMs, failed)
			}
			if maxMs < 20000 {
				t.Fatalf("the longest checkpoint took %d ms: the slowdown did not slow them", maxMs)
			}
			switch end := cks[len(cks)-1]; {
			case tt.timeouts && (failed == 0 || !end.TimedOut):
				t.Fatalf("%d timeouts, the last checkpoint %+v: want timeouts to the end", failed, end)
			case !tt.timeouts && (end.TimedOut || end.DurationMs > 2000):
				t.Fatalf("the last checkpoint %+v: want a quick one after the recovery", end)
			}
			for _, iv := range ivs {
				busy := iv.get(SinkTaskName, 0, "busyTimeMsPerSecond")
				if iv.to <= tr.From && busy >= 900 {
					t.Fatalf("sink saturated before the slowdown at %d s: %v", (iv.from-start)/1000, busy)
				}
			}
		})
	}
}

func TestCountersMonotonic(t *testing.T) {
	for _, sc := range Scenarios() {
		_, ivs := run(t, Config{Scenario: sc, Duration: 3 * time.Minute, SamplesPerInterval: 100})
		prev := map[string]int64{}
		for _, iv := range ivs {
			for task, subs := range iv.count {
				for i, m := range subs {
					for name, c := range m {
						k := fmt.Sprintf("%s/%d/%s", task, i, name)
						if c < prev[k] {
							t.Fatalf("%s: %s went from %d to %d", sc, k, prev[k], c)
						}
						prev[k] = c
					}
					if m["numRecordsIn"] != m["numRecordsInPerSecond"] || m["numRecordsOut"] != m["numRecordsOutPerSecond"] {
						t.Fatalf("%s: %s/%d counter and meter counts differ: %v", sc, task, i, m)
					}
				}
			}
		}
		for k, c := range prev {
			if c == 0 && !strings.HasPrefix(k, SinkTaskName) {
				t.Fatalf("%s: %s never counted", sc, k)
			}
		}
	}
}

// TestSamples checks the key samples against the metrics and the routing:
// every subtask_index is where Flink routes the key, the hot key's share
// of samples is its share of the records, and weight/sample_rate adds up
// to the records the keyed task processed.
func TestSamples(t *testing.T) {
	for _, cfg := range []Config{
		{Scenario: HotKey, SamplesPerInterval: 500},
		{Scenario: HotKey, HotShare: 0.2, MaxParallelism: 720, Parallelism: 12, Seed: 5, SamplesPerInterval: 500},
		{Scenario: RotatingHotKey, OmitSubtask: true, SamplesPerInterval: 500},
		{Scenario: SlowSink, KeySpace: 300, SamplesPerInterval: 500},
	} {
		g, ivs := run(t, cfg)
		c := g.Config()
		r, _ := keygroup.NewRouter(c.Parallelism, c.MaxParallelism)
		var hot, total int
		prevIn := int64(0)
		for n, iv := range ivs {
			var in int64
			for j := range c.Parallelism {
				in += iv.count[KeyedTaskName][j]["numRecordsIn"]
			}
			processed := in - prevIn
			prevIn = in
			if len(iv.samples) != min(c.SamplesPerInterval, int(processed)) && math.Abs(float64(len(iv.samples)-c.SamplesPerInterval)) > 1 {
				t.Fatalf("%d samples for %d processed records", len(iv.samples), processed)
			}
			var est float64
			for _, s := range iv.samples {
				est += 1 / s.sampleRate
				if s.par != c.Parallelism || s.maxPar != c.MaxParallelism {
					t.Fatalf("sample parallelism %d/%d", s.par, s.maxPar)
				}
				if c.OmitSubtask != (s.subtask < 0) {
					t.Fatalf("subtask_index presence wrong: %+v", s)
				}
				if s.subtask >= 0 && s.subtask != r.Subtask(s.key) {
					t.Fatalf("key %q sampled on subtask %d, Flink routes it to %d", s.key, s.subtask, r.Subtask(s.key))
				}
				if strings.HasPrefix(s.key, HotKeyBase) {
					hot++
				}
				total++
			}
			if n > 0 && math.Abs(est-float64(processed)) > 0.01*float64(processed)+2 {
				t.Fatalf("samples estimate %v records, keyed task processed %d", est, processed)
			}
		}
		share := float64(hot) / float64(total)
		want := 0.0
		if c.Scenario != SlowSink {
			want = c.HotShare
		}
		if math.Abs(share-want) > 0.02 {
			t.Fatalf("%s: hot key share of samples %v, want %v", c.Scenario, share, want)
		}
	}
}

func TestSampleCapAndLargeParallelism(t *testing.T) {
	// 480 keyed subtasks with max parallelism 720 (the example job), few
	// samples, many TaskManagers.
	g, ivs := run(t, Config{Scenario: HotKey, Parallelism: 480, MaxParallelism: 720, SourceParallelism: 32, SinkParallelism: 64,
		SlotsPerTM: 8, Duration: time.Minute, SamplesPerInterval: 500})
	tr := g.Truth()
	for _, iv := range ivs[1:] {
		if busy := iv.get(KeyedTaskName, tr.Subtask, "busyTimeMsPerSecond"); busy < 900 {
			t.Fatalf("hot subtask %d busy %v", tr.Subtask, busy)
		}
		if len(iv.samples) != 500 {
			t.Fatalf("%d samples", len(iv.samples))
		}
	}
	// checkpoint_timeout's sink processes 2100 records/s: more samples than
	// records are capped.
	_, ivs = run(t, Config{Scenario: CheckpointTimeout, Duration: time.Minute, SamplesPerInterval: 1_000_000})
	for _, iv := range ivs {
		if n := len(iv.samples); n == 0 || n >= 1_000_000 || iv.samples[0].sampleRate < 0.999 || iv.samples[0].sampleRate > 1 {
			t.Fatalf("%d samples, rate %v", n, iv.samples[0].sampleRate)
		}
	}
}

// TestOddConfigs runs configurations far from the defaults: every line
// must still decode and keep its timestamp inside its interval.
func TestOddConfigs(t *testing.T) {
	for _, cfg := range []Config{
		{Interval: 100 * time.Millisecond, Duration: 5 * time.Second, Scenario: SlowSink, SamplesPerInterval: 20},
		{Interval: time.Minute, Scenario: RotatingHotKey, Start: 1593004123457, SamplesPerInterval: 100},
		{Interval: 45 * time.Second, Scenario: CheckpointTimeout, SamplesPerInterval: 100},
		{Scenario: HotKey, Parallelism: 1, SourceParallelism: 1, SinkParallelism: 1, SlotsPerTM: 1, Duration: time.Minute},
		{Scenario: UnderProvisioned, KeySpace: 1, Duration: time.Minute},
		{Scenario: HotKey, KeySpace: 3, HotShare: 0.9, Parallelism: 16, Duration: time.Minute},
		{Scenario: Healthy, Rate: 1, Duration: time.Minute},
		{Scenario: SlowSink, SinkParallelism: 2, Duration: 90 * time.Second, Interval: 7 * time.Second},
	} {
		_, ivs := run(t, cfg)
		if len(ivs) == 0 {
			t.Fatalf("%+v: no intervals", cfg)
		}
	}
}

func TestSubtasksAndTruth(t *testing.T) {
	g, err := New(Config{Parallelism: 10, SlotsPerTM: 3, MetricFormat: FormatMixed, Naming: NamingMixed})
	if err != nil {
		t.Fatal(err)
	}
	subs := g.Subtasks()
	if len(subs) != 4+10+4 {
		t.Fatalf("%d subtasks", len(subs))
	}
	hosts := map[string]bool{}
	ids := map[string]bool{}
	for _, s := range subs {
		hosts[s.Host] = true
		if len(s.TaskAttemptID) != 32 || len(s.TaskID) != 32 || len(s.TMID) != 32 || ids[s.TaskAttemptID] {
			t.Fatalf("bad ids %+v", s)
		}
		ids[s.TaskAttemptID] = true
	}
	if len(hosts) != 4 { // 10 slots / 3 per TM
		t.Fatalf("%d hosts", len(hosts))
	}
	if tr := g.Truth(); len(tr.JobID) != 32 || tr.Cause != CauseNone || tr.Subtask != -1 || tr.MaxParallelism != 128 {
		t.Fatalf("truth %+v", tr)
	}
}

func TestNextAfterEnd(t *testing.T) {
	g, _ := New(Config{Duration: 20 * time.Second})
	var n int
	for {
		b, ok := g.Next(nil)
		if !ok {
			if b != nil {
				t.Fatal("Next returned bytes after the end")
			}
			break
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d intervals", n)
	}
	if w, err := g.WriteTo(io.Discard); w != 0 || err != nil {
		t.Fatalf("WriteTo after end: %d %v", w, err)
	}
}

func BenchmarkGenerate(b *testing.B) {
	cfg := Config{Scenario: HotKey, SamplesPerInterval: 200000, Duration: time.Minute}
	g, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for {
		buf, ok := g.Next(nil)
		if !ok {
			break
		}
		size += int64(len(buf))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		g, _ := New(cfg)
		if _, err := g.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
