package flinktest

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Job is a running Flink job, either kind: a ScenarioJob process, a
// MiniCluster of its own (StartScenario), or a job on a standalone
// Cluster (Cluster.Run, Cluster.Start). The accessors serve both; what
// differs (where the job's output is, how it stops) is its runner.
type Job struct {
	// ID is the Flink job id. Started is when the job was ready: when a
	// ScenarioJob printed SCENARIO_READY, when all of a cluster job's
	// tasks ran.
	ID      string
	Started time.Time
	// JarID is the uploaded jar a cluster's job runs, Request how it was
	// run: what an operator resubmits it with. Empty for a ScenarioJob.
	JarID   string
	Request RunRequest

	c    *Cluster // nil for a ScenarioJob
	run  runner
	done chan struct{}
	stop sync.Once
}

// runner is what differs between the kinds of Job.
type runner interface {
	// output returns everything the job's code logged so far.
	output() string
	// tail returns the last n lines of it.
	tail(n int) string
	// stop stops the job, and waits (within limits) until done is closed.
	stop(j *Job)
}

// JobID returns the Flink job id.
func (j *Job) JobID() string { return j.ID }

// StartedAt returns when the job was ready (Started).
func (j *Job) StartedAt() time.Time { return j.Started }

// Done is closed once the job has ended: a ScenarioJob's process exited;
// a cluster's job left RUNNING (see Cluster.Start), or the cluster is gone.
func (j *Job) Done() <-chan struct{} { return j.done }

// Output returns what the job's code printed or logged so far: a
// ScenarioJob's output, or the logs of the cluster's processes (the
// JobManager's, then each TaskManager's).
func (j *Job) Output() string { return j.run.output() }

// Tail returns the last n lines of Output (of each process's log, for a
// cluster's job).
func (j *Job) Tail(n int) string { return j.run.tail(n) }

// Stop stops the job and waits for its end: a ScenarioJob gets SIGTERM
// (SIGKILL after 30 s), a cluster's job still running is cancelled (a
// minute at most). It is safe to call more than once.
func (j *Job) Stop() { j.stop.Do(func() { j.run.stop(j) }) }

// Cluster returns the cluster the job runs on, nil for a ScenarioJob.
func (j *Job) Cluster() *Cluster { return j.c }

// clusterRun is the runner of a cluster's job.
type clusterRun struct{ c *Cluster }

func (r clusterRun) output() string {
	var b strings.Builder
	for _, l := range r.c.logPaths() {
		s, _ := os.ReadFile(l)
		b.Write(s)
	}
	return b.String()
}

func (r clusterRun) tail(n int) string { return r.c.LogTail(n) }

func (r clusterRun) stop(j *Job) {
	select {
	case <-j.done:
		return
	default:
	}
	_ = r.c.do(http.MethodPatch, "/jobs/"+j.ID+"?mode=cancel", "", nil, nil)
	select {
	case <-j.done:
	case <-time.After(time.Minute):
	}
}

// Run uploads a job jar and runs it (Start).
func (c *Cluster) Run(t testing.TB, jar, entryClass string, args ...string) *Job {
	t.Helper()
	return c.Start(t, c.Upload(t, jar), RunRequest{EntryClass: entryClass, ProgramArgsList: args})
}

// Start runs an uploaded jar (RunJar), waits until all its tasks run (at
// most two minutes) and returns the job; it is cancelled when the test
// ends. Done is closed once the job has ended (FINISHED, CANCELED,
// FAILED, SUSPENDED), or has not been RUNNING for restartGrace (a job
// failing over and over), or the REST API stopped answering. A rescale
// in place (the adaptive scheduler restarts the job's tasks) is not an
// end.
func (c *Cluster) Start(t testing.TB, jarID string, req RunRequest) *Job {
	t.Helper()
	j := &Job{ID: c.RunJar(t, jarID, req), JarID: jarID, Request: req, c: c, run: clusterRun{c}, done: make(chan struct{})}
	c.WaitRunning(t, j.ID, 2*time.Minute)
	j.Started = time.Now()
	go func() {
		defer close(j.done)
		running, failures := time.Now(), 0
		for {
			time.Sleep(time.Second)
			var s struct {
				State string `json:"state"`
			}
			if err := c.get("/jobs/"+j.ID, &s); err != nil {
				if failures++; failures >= 5 {
					return
				}
				continue
			}
			failures = 0
			switch s.State {
			case "RUNNING":
				running = time.Now()
			case "FINISHED", "CANCELED", "FAILED", "SUSPENDED":
				return
			default:
				if time.Since(running) > restartGrace {
					return
				}
			}
		}
	}()
	t.Cleanup(j.Stop)
	return j
}

// restartGrace is how long a job may be out of RUNNING (restarting,
// rescaling) before a cluster Job's Done calls it ended.
const restartGrace = 90 * time.Second

// StopWithSavepoint stops a cluster's job with a savepoint in dir (POST
// /jobs/:jobid/stop, drain false: the job is suspended, not drained),
// polls the savepoint (GET /jobs/:jobid/savepoints/:triggerid) until it
// completes (at most two minutes), waits for the job's end (at most a
// minute), and returns the savepoint's path.
func (j *Job) StopWithSavepoint(t testing.TB, dir string) string {
	t.Helper()
	if j.c == nil {
		t.Fatalf("flinktest: job %s is no cluster's job: a ScenarioJob stops with Stop", j.ID)
	}
	var trig struct {
		RequestID string `json:"request-id"`
	}
	if err := j.c.JSON(http.MethodPost, "/jobs/"+j.ID+"/stop", map[string]any{"targetDirectory": dir, "drain": false}, &trig); err != nil || trig.RequestID == "" {
		t.Fatalf("flinktest: stop %s with a savepoint: %v", j.ID, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var location string
	for location == "" {
		var st struct {
			Status struct {
				ID string `json:"id"`
			} `json:"status"`
			Operation struct {
				Location     string          `json:"location"`
				FailureCause json.RawMessage `json:"failure-cause"`
			} `json:"operation"`
		}
		err := j.c.get("/jobs/"+j.ID+"/savepoints/"+trig.RequestID, &st)
		switch {
		case err == nil && st.Status.ID == "COMPLETED" && st.Operation.Location != "":
			location = st.Operation.Location
		case err == nil && st.Status.ID == "COMPLETED":
			t.Fatalf("flinktest: savepoint of %s failed: %s\n%s", j.ID, st.Operation.FailureCause, j.c.LogTail(30))
		case time.Now().After(deadline):
			t.Fatalf("flinktest: savepoint of %s not complete after 2 minutes (%v, %s):\n%s", j.ID, err, st.Status.ID, j.c.LogTail(30))
		default:
			time.Sleep(300 * time.Millisecond)
		}
	}
	select {
	case <-j.done:
	case <-time.After(time.Minute):
		t.Fatalf("flinktest: job %s still runs a minute after its savepoint", j.ID)
	}
	return location
}
