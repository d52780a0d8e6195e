package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/keygroup"
	"github.com/skewlens/skewlens/skew/plans"
)

// soakRun is one run of a job in the soak: a job id from start to end.
type soakRun struct {
	id, name   string
	start, end int64
	skewed     bool
	hotSub     int
}

// BenchmarkSoakJobRuns plays a day of event time in which 105 jobs are
// run again and again, about 10,000 runs in all: each run lasts 9 to 19
// minutes, then is restarted under a new job id (three in four, after 15
// to 45 s) or cancelled for good (its name is not seen again). One run in
// ten has a hot key that saturates its subtask, so incidents, alerts and
// salting plans open and end with the runs. The engine, incident tracker,
// alert state machine and plan manager fold every window as run does. Every
// simulated hour it takes the live heap (after a collection), the RSS and the
// state each keeps; it reports the heap of the last third of the day over
// the first, and the largest counts. Memory is bounded by the jobs alive
// now, not by every run seen: the ratio stays near 1.
func BenchmarkSoakJobRuns(b *testing.B) {
	const (
		slots    = 105
		par      = 4
		maxPar   = 128
		interval = 10_000 // ms between reports
		day      = 24 * 3600 * 1000
		start    = int64(1_700_000_000_000)
	)
	router, err := keygroup.NewRouter(par, maxPar)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		rng := rand.New(rand.NewPCG(7, 11))
		cfg := skew.DefaultConfig()
		cfg.EmitStats = true
		eng, err := skew.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		icfg := incident.DefaultConfig()
		icfg.RequireReports = true
		inc, err := incident.New(icfg)
		if err != nil {
			b.Fatal(err)
		}
		alerts, err := alert.NewStateMachine(alert.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		mgr, err := plans.NewManager(plans.Config{})
		if err != nil {
			b.Fatal(err)
		}
		newRun := func(name string, at int64, n int) soakRun {
			r := soakRun{id: fmt.Sprintf("%032x", uint64(n)*0x9e3779b97f4a7c15), name: name, start: at,
				end: at + int64(9*60_000+rng.IntN(10*60_000)), skewed: rng.IntN(10) == 0}
			r.hotSub = router.Subtask("hot-" + r.id)
			return r
		}
		runs := make([]soakRun, slots)
		gen := make([]int, slots)
		total := 0
		for i := range runs {
			runs[i] = newRun("job-"+strconv.Itoa(i), start+int64(rng.IntN(60_000)), total)
			total++
		}
		var (
			heap, rss                  []float64
			maxJobs, maxOpen, maxAlert int
			maxPlans, ends, resolved   int
			fs                         []skew.Finding
			m                          skew.Metric
			ks                         skew.KeySample
		)
		fold := func(fs []skew.Finding, we int64) {
			cs := inc.Observe(fs)
			for _, c := range cs {
				if c.Kind == incident.Closed && c.Incident.Resolution != "" {
					resolved++
				}
			}
			alerts.Apply(cs)
			alerts.Apply(inc.Advance(we))
			for i := range fs {
				if fs[i].Kind == skew.KindJobEnd {
					ends++
				}
				mgr.Observe(&fs[i])
			}
			mgr.Advance(time.UnixMilli(we))
		}
		b.ResetTimer()
		for ts := start; ts < start+day; ts += interval {
			for i := range runs {
				r := &runs[i]
				if ts >= r.end {
					if ts < r.end+int64(15_000+rng.IntN(30_000)) {
						continue // between two runs
					}
					name := r.name
					if rng.IntN(4) == 0 { // cancelled for good: the slot takes a new job
						gen[i]++
						name = "job-" + strconv.Itoa(i) + "-" + strconv.Itoa(gen[i])
					}
					*r = newRun(name, ts, total)
					total++
				}
				if ts < r.start {
					continue
				}
				for sub := range par {
					busy, in := 300.0, 1000.0
					if r.skewed && sub == r.hotSub {
						busy, in = 990, 3000
					}
					m = skew.Metric{TS: ts, JobID: r.id, JobName: r.name, TaskName: "Aggregate", Subtask: int32(sub),
						Name: skew.BusyTimeMsPerSecond, Value: busy}
					eng.AddMetric(&m)
					m.Name, m.Value = skew.NumRecordsInPerSecond, in
					eng.AddMetric(&m)
				}
				if r.skewed {
					for k := range 200 {
						key := "hot-" + r.id
						if k%2 == 1 {
							key = "k" + strconv.Itoa(rng.IntN(1000))
						}
						ks = skew.KeySample{TS: ts, JobID: r.id, JobName: r.name, TaskName: "Aggregate", Key: key,
							Weight: 1, SampleRate: 0.01, Parallelism: par, MaxParallelism: maxPar, Subtask: -1}
						eng.AddSample(&ks)
					}
				}
			}
			fs = eng.Advance(ts-5_000, fs[:0])
			if len(fs) > 0 {
				fold(fs, fs[len(fs)-1].WindowEnd)
			}
			maxJobs = max(maxJobs, eng.Jobs())
			maxOpen = max(maxOpen, inc.OpenCount())
			maxAlert = max(maxAlert, alerts.Pending()+alerts.Firing())
			maxPlans = max(maxPlans, mgr.Stats().Tasks)
			if (ts-start)%3_600_000 == 0 {
				b.StopTimer()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = append(heap, float64(ms.HeapInuse)/1e6)
				rss = append(rss, float64(vmRSS(b, os.Getpid()))/1e3)
				b.StartTimer()
			}
		}
		b.StopTimer()
		third := len(heap) / 3
		mean := func(xs []float64) float64 {
			s := 0.0
			for _, x := range xs {
				s += x
			}
			return s / float64(len(xs))
		}
		// The first hour is the ramp-up: every slot's first run starts.
		first, last := mean(heap[1:third+1]), mean(heap[len(heap)-third:])
		rssFirst, rssLast := mean(rss[1:third+1]), mean(rss[len(rss)-third:])
		b.ReportMetric(float64(total), "runs")
		b.ReportMetric(float64(ends), "job-ends")
		b.ReportMetric(last/first, "heap-last/first-third")
		b.ReportMetric(slices.Max(heap), "max-heap-MB")
		b.ReportMetric(rssLast/rssFirst, "rss-last/first-third")
		b.ReportMetric(slices.Max(rss), "max-rss-MB")
		b.ReportMetric(float64(maxJobs), "max-engine-jobs")
		b.ReportMetric(float64(maxOpen), "max-open-incidents")
		b.ReportMetric(float64(maxAlert), "max-tracked-alerts")
		b.ReportMetric(float64(maxPlans), "max-plan-tasks")
		hs, rs := make([]string, len(heap)), make([]string, len(rss))
		for i := range heap {
			hs[i], rs[i] = fmt.Sprintf("%.1f", heap[i]), fmt.Sprintf("%.0f", rss[i])
		}
		// Stderr: the testing package cuts a benchmark's log.
		fmt.Fprintf(os.Stderr, "soak: %d runs, %d ended (%d incidents closed by a run's end), heap MB per hour: %s; RSS MB per hour: %s\n",
			total, ends, resolved, strings.Join(hs, " "), strings.Join(rs, " "))
		if last > 1.5*first || rssLast > 1.5*rssFirst {
			b.Fatalf("memory grows with the runs: heap %.1f MB in the last third against %.1f MB in the first, RSS %.0f against %.0f MB",
				last, first, rssLast, rssFirst)
		}
	}
}
