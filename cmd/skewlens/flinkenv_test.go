package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/flinktest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
)

// The standalone Flink clusters the tests of this package share: one per
// Flink version, started by the first test that asks for it and stopped
// after the tests (TestMain), with the broker their reporters send to
// and the one topic they send on. Each test runs its own jobs on them,
// and its own `skewlens run` on that topic (starting at its end,
// startGroupAt) in its own database: run keys everything by job id, so
// another test's jobs are other jobs to it, and a test asserts on its
// own jobs' ids. The tests of the package run one after another (none
// calls t.Parallel), so a cluster runs one test's jobs at a time; a test
// that damages a cluster (kills a TaskManager) leaves it as healthy as
// it found it (replaceTaskManager), and one that needs a cluster set up
// otherwise (the adaptive scheduler, a cluster-wide setting) starts a
// cluster of its own.

// flinkEnvTopic is the reporters' topic on the shared clusters.
const flinkEnvTopic = "flinkenv-metrics"

// flinkEnvTaskManagers and flinkEnvSlots size each shared cluster: the
// job matrix runs three jobs of parallelism 4 on one (slot sharing: four
// slots a job).
const (
	flinkEnvTaskManagers = 2
	flinkEnvSlots        = 6
)

// flinkEnvConfig is the shared clusters' config.yaml beyond the reporter.
var flinkEnvConfig = map[string]string{
	// A job restarts in place (same id) when a task fails, checkpointing
	// on or off: Flink's default is no restart without checkpointing.
	"restart-strategy.type":                 "fixed-delay",
	"restart-strategy.fixed-delay.attempts": "1000",
	"restart-strategy.fixed-delay.delay":    "1 s",
	// Each job's slots spread over the TaskManagers, so that killing one
	// hits every job.
	"taskmanager.load-balance.mode": "SLOTS",
}

// flinkEnv is what the shared clusters need: the broker their reporters
// send to (a broker of its own, as the job matrix takes it down for a
// while), the reporter plugin and the example job jar, and the clusters.
type flinkEnv struct {
	life    *lifetime
	broker  *testenv.Process
	brokers []string
	topic   string
	plugin  string
	jobJar  string

	mu       sync.Mutex
	clusters map[string]*envCluster // by Flink version
}

// envCluster is a shared cluster and the example job jar uploaded to it.
type envCluster struct {
	*flinktest.Cluster
	version string
	jarID   string
	life    *lifetime
	tms     []string // its live TaskManagers, oldest first
}

var sharedFlinkEnv testenv.Shared[*flinkEnv]

// flinkEnvGet returns the shared environment, starting its broker and
// building the jars on the first call; it skips t under -short.
func flinkEnvGet(t testing.TB) *flinkEnv {
	t.Helper()
	return sharedFlinkEnv.Get(t, "Flink clusters, a Kafka broker and Maven", func() (*flinkEnv, error) {
		e := &flinkEnv{life: newLifetime("flinkenv"), topic: flinkEnvTopic, clusters: map[string]*envCluster{}}
		err := e.life.do(func(lt testing.TB) {
			e.broker = kafkatest.StartPrivate(lt)
			e.brokers = []string{e.broker.Addr}
			// The partitions `skewlens run --create-topics` would create.
			kafkatest.CreateTopicConfigs(lt, e.brokers, kafka.TopicConfig{Topic: e.topic, NumPartitions: 4, ReplicationFactor: 1})
			e.plugin, e.jobJar = flinktest.Jars(lt)
		})
		if err != nil {
			return nil, errors.Join(err, e.life.stop())
		}
		return e, nil
	})
}

// stopFlinkEnv stops the shared clusters and broker; TestMain calls it.
func stopFlinkEnv() error {
	return sharedFlinkEnv.Stop(func(e *flinkEnv) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		begin := time.Now()
		var errs []error
		for _, v := range slices.Sorted(maps.Keys(e.clusters)) {
			errs = append(errs, e.clusters[v].life.stop())
		}
		clear(e.clusters)
		errs = append(errs, e.life.stop())
		fmt.Fprintf(os.Stderr, "flinkenv: the shared Flink clusters and their broker stopped in %s\n", time.Since(begin).Round(100*time.Millisecond))
		return errors.Join(errs...)
	})
}

// cluster returns the shared cluster of the Flink version, starting it
// when there is none or it is unhealthy (fewer TaskManagers than it
// started with, its REST API silent), once it runs no job and has all
// its slots free: the previous test's jobs are gone.
func (e *flinkEnv) cluster(t testing.TB, version string) *envCluster {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.clusters[version]; c != nil {
		why := c.unhealthy()
		if why == "" {
			testenv.Eventually(t, time.Minute, "the shared Flink "+version+" cluster free of the previous test's jobs", c.idle)
			return c
		}
		t.Logf("the shared Flink %s cluster is unhealthy (%s): starting another", version, why)
		delete(e.clusters, version)
		if err := c.life.stop(); err != nil {
			t.Logf("stopping it: %v", err)
		}
	}
	begin := time.Now()
	c := &envCluster{version: version, life: newLifetime("flinkenv-" + version)}
	err := c.life.do(func(lt testing.TB) {
		conf := map[string]string{
			"metrics.reporter.skewlens.factory.class":     "io.github.skewlens.flink.reporter.SkewlensReporterFactory",
			"metrics.reporter.skewlens.bootstrap.servers": e.brokers[0],
			"metrics.reporter.skewlens.topic":             e.topic,
			"metrics.reporter.skewlens.interval":          "5 s",
		}
		maps.Copy(conf, flinkEnvConfig)
		c.Cluster = flinktest.StartCluster(lt, flinktest.ClusterConfig{Version: version, TaskManagers: flinkEnvTaskManagers,
			Slots: flinkEnvSlots, Plugins: map[string]string{"skewlens": e.plugin}, Config: conf})
		c.jarID = c.Upload(lt, e.jobJar)
	})
	if err != nil {
		if serr := c.life.stop(); serr != nil {
			t.Logf("stopping it: %v", serr)
		}
		t.Fatalf("the shared Flink %s cluster: %v", version, err)
	}
	for i := range flinkEnvTaskManagers {
		c.tms = append(c.tms, fmt.Sprintf("taskmanager-%d", i))
	}
	e.clusters[version] = c
	t.Logf("the shared Flink %s cluster started in %s (%s)", version, time.Since(begin).Round(100*time.Millisecond), c.Dir)
	return c
}

// stopCluster stops the shared cluster of the version, if one runs, to
// free the cores; a later cluster call starts another.
func (e *flinkEnv) stopCluster(version string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[version]
	if c == nil {
		return nil
	}
	delete(e.clusters, version)
	return c.life.stop()
}

// overview is the part of GET /overview the health checks read.
type overview struct {
	TaskManagers   int `json:"taskmanagers"`
	SlotsTotal     int `json:"slots-total"`
	SlotsAvailable int `json:"slots-available"`
	JobsRunning    int `json:"jobs-running"`
}

func (c *envCluster) overview() (overview, error) {
	var o overview
	err := c.JSON(http.MethodGet, "/overview", nil, &o)
	return o, err
}

// unhealthy says what is wrong with the cluster, "" when nothing is.
func (c *envCluster) unhealthy() string {
	o, err := c.overview()
	switch {
	case err != nil:
		return err.Error()
	case o.TaskManagers < flinkEnvTaskManagers:
		return fmt.Sprintf("%d TaskManagers", o.TaskManagers)
	}
	return ""
}

// idle reports whether the cluster runs no job and has every slot free.
func (c *envCluster) idle() bool {
	o, err := c.overview()
	return err == nil && o.JobsRunning == 0 && o.SlotsAvailable == o.SlotsTotal && o.SlotsTotal >= flinkEnvTaskManagers*flinkEnvSlots
}

// replaceTaskManager starts a TaskManager and then kills the oldest live
// one (SIGKILL, as a crashed host): the jobs with tasks on it restart in
// the new one's slots, and the cluster has as many TaskManagers as
// before. It returns the killed one's name.
func (c *envCluster) replaceTaskManager(t testing.TB) string {
	t.Helper()
	added := c.AddTaskManager(t)
	killed := c.tms[0]
	c.KillTaskManager(t, killed)
	c.tms = append(c.tms[1:], added)
	return killed
}

// startGroupAt commits offsets of topic (partition -> offset) for a
// consumer group that has not read it, so that the group starts there:
// a reader of the shared metrics topic skips what earlier tests' jobs
// reported. A group with committed offsets keeps them.
func startGroupAt(t testing.TB, brokers []string, group, topic string, offsets map[int]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	var commits []kafka.OffsetCommit
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		commits = append(commits, kafka.OffsetCommit{Partition: p, Offset: offsets[p]})
	}
	// The broker answers that it is not (yet) the group's coordinator
	// until its offsets topic is ready, the first time a group asks.
	retry := func(err error) bool {
		return errors.Is(err, kafka.NotCoordinatorForGroup) || errors.Is(err, kafka.GroupCoordinatorNotAvailable) ||
			errors.Is(err, kafka.GroupLoadInProgress)
	}
	testenv.Eventually(t, 30*time.Second, "the group coordinator taking group "+group+"'s offsets", func() bool {
		// A group that committed offsets (a restarted run) keeps them.
		fetched, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group,
			Topics: map[string][]int{topic: slices.Sorted(maps.Keys(offsets))}})
		if err == nil {
			err = fetched.Error
			for _, p := range fetched.Topics[topic] {
				err = errors.Join(err, p.Error)
			}
		}
		if err == nil && slices.ContainsFunc(fetched.Topics[topic], func(p kafka.OffsetFetchPartition) bool { return p.CommittedOffset >= 0 }) {
			return true
		}
		if err == nil {
			var resp *kafka.OffsetCommitResponse
			resp, err = client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1,
				Topics: map[string][]kafka.OffsetCommit{topic: commits}})
			if err == nil {
				for _, p := range resp.Topics[topic] {
					err = errors.Join(err, p.Error)
				}
			}
		}
		if err != nil && !retry(err) {
			t.Fatalf("start group %s at %v of %s: %v", group, offsets, topic, err)
		}
		return err == nil
	})
}

// topicEnd returns the end offset of each partition of topic.
func topicEnd(t testing.TB, brokers []string, topic string) map[int]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil {
		t.Fatalf("partitions of %s: %v %+v", topic, err, md)
	}
	var req []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		req = append(req, kafka.LastOffsetOf(p.ID))
	}
	lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: req}})
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	end := map[int]int64{}
	for _, p := range lo.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("end offset of %s/%d: %v", topic, p.Partition, p.Error)
		}
		end[p.Partition] = p.LastOffset
	}
	return end
}

// lifetime is a testing.TB for what outlives the test that starts it
// (the shared clusters, their broker): its Cleanup functions run at
// stop, not at a test's end; TempDir makes folders that stop removes;
// Fatal ends the function do runs and do returns the failure; Log goes
// to stderr. The helpers that start servers take a testing.TB, as a
// server's life is a test's as a rule.
type lifetime struct {
	testing.TB // nil: the helpers call only the methods below
	name       string

	mu       sync.Mutex
	cleanups []func()
	failures []string
}

func newLifetime(name string) *lifetime { return &lifetime{name: name} }

// do runs f with l as its testing.TB, on a goroutine of its own so that
// a Fatal ends f alone, and returns what failed.
func (l *lifetime) do(f func(testing.TB)) error {
	l.mu.Lock()
	n := len(l.failures)
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(l)
	}()
	<-done
	return l.failuresSince(n)
}

// stop runs the cleanups, the last registered first, and returns what
// failed in them. It is safe to call more than once.
func (l *lifetime) stop() error {
	l.mu.Lock()
	n := len(l.failures)
	fs := l.cleanups
	l.cleanups = nil
	l.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		_ = l.do(func(testing.TB) { f() })
	}
	return l.failuresSince(n)
}

func (l *lifetime) failuresSince(n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) == n {
		return nil
	}
	return fmt.Errorf("%s: %s", l.name, strings.Join(l.failures[n:], "; "))
}

func (l *lifetime) Helper()      {}
func (l *lifetime) Name() string { return l.name }
func (l *lifetime) Log(args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", l.name, strings.TrimSuffix(fmt.Sprintln(args...), "\n"))
}
func (l *lifetime) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", l.name, fmt.Sprintf(format, args...))
}
func (l *lifetime) Error(args ...any) { l.fail(strings.TrimSuffix(fmt.Sprintln(args...), "\n")) }
func (l *lifetime) Errorf(format string, args ...any) {
	l.fail(fmt.Sprintf(format, args...))
}
func (l *lifetime) Fail()                             { l.fail("failed") }
func (l *lifetime) FailNow()                          { l.Fail(); runtime.Goexit() }
func (l *lifetime) Fatal(args ...any)                 { l.Error(args...); runtime.Goexit() }
func (l *lifetime) Fatalf(format string, args ...any) { l.Errorf(format, args...); runtime.Goexit() }
func (l *lifetime) Skip(args ...any)                  { l.Fatal(append([]any{"skipped:"}, args...)...) }
func (l *lifetime) Skipf(format string, args ...any)  { l.Fatalf("skipped: "+format, args...) }
func (l *lifetime) SkipNow()                          { l.Fatal("skipped") }
func (l *lifetime) Skipped() bool                     { return false }
func (l *lifetime) Context() context.Context          { return context.Background() }

func (l *lifetime) Failed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.failures) > 0
}

func (l *lifetime) fail(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, msg)
}

func (l *lifetime) Cleanup(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cleanups = append(l.cleanups, f)
}

func (l *lifetime) TempDir() string {
	dir, err := os.MkdirTemp("", "skewlens-"+l.name+"-")
	if err != nil {
		l.Fatalf("TempDir: %v", err)
	}
	l.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			l.Errorf("TempDir: %v", err)
		}
	})
	return dir
}

// exited reports whether done is closed: a process or job has ended.
func exited(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
