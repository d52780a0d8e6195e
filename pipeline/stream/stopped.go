package stream

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/skew"
)

// Bounds of skewlens_job_stopped_last_event_seconds: a stopped run's
// series stays for stoppedKeep of wall time (time for its alert,
// SkewlensJobSilent, to fire and be seen; then it resolves by itself, so
// a job cancelled on purpose stops alerting), and at most stoppedMax
// series exist (the oldest goes first).
const (
	stoppedKeep = time.Hour
	stoppedMax  = 1000
)

// stoppedJobs exports the runs that ended as stopped (job_end findings,
// skew.EndStopped): the last-seen gauge goes with the run's state, so it
// cannot tell that a job stopped. The writer sets series, the actor's
// tick expires them too (nothing may be written for hours): it has a
// lock.
type stoppedJobs struct {
	gauge *prometheus.GaugeVec
	mu    sync.Mutex
	// series in the order they were set: labels and when.
	series []stoppedSeries
}

type stoppedSeries struct {
	jobID, jobName string
	at             time.Time
}

func newStoppedJobs() *stoppedJobs {
	return &stoppedJobs{gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "skewlens_job_stopped_last_event_seconds",
		Help: "Event time (epoch seconds) of the last report of a run that ended because it sent nothing for --job-end-after (a job_end finding, reason stopped); the series stays an hour."},
		[]string{"job_id", "job_name"})}
}

// written notes the stopped runs among findings just written at now, and
// removes the series past their time or over the bound.
func (s *stoppedJobs) written(fs []skew.Finding, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range fs {
		f := &fs[i]
		if f.Kind != skew.KindJobEnd || f.JobEnd == nil || f.JobEnd.Reason != skew.EndStopped {
			continue
		}
		s.gauge.WithLabelValues(f.JobID, f.JobName).Set(float64(f.JobEnd.LastEventAt) / 1000)
		s.series = append(s.series, stoppedSeries{f.JobID, f.JobName, now})
	}
	drop := 0
	for drop < len(s.series) && (len(s.series)-drop > stoppedMax || now.Sub(s.series[drop].at) >= stoppedKeep) {
		x := s.series[drop]
		// A later end of the same run (written again after a replay) keeps its series.
		if !s.setLater(x, drop) {
			s.gauge.DeleteLabelValues(x.jobID, x.jobName)
		}
		drop++
	}
	s.series = s.series[drop:]
}

// setLater reports whether the series of s.series[i] was set again after i.
func (s *stoppedJobs) setLater(x stoppedSeries, i int) bool {
	for _, y := range s.series[i+1:] {
		if y.jobID == x.jobID && y.jobName == x.jobName {
			return true
		}
	}
	return false
}
