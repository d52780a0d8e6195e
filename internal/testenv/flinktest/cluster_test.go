package flinktest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/flinktest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// TestClusterLoadsPlugin runs the example job, packaged as a user would,
// on a standalone cluster of each Flink line (a JobManager and a
// TaskManager, each its own JVM) whose reporter is the skewlens plugin in
// plugins/: the TaskManager reports the job's tasks, and the job's key
// sampler sends its hot key. Cancelling it ends it.
func TestClusterLoadsPlugin(t *testing.T) {
	for _, v := range []string{flinktest.Flink2, flinktest.Flink1} {
		t.Run(v, func(t *testing.T) { clusterLoadsPlugin(t, v) })
	}
}

func clusterLoadsPlugin(t *testing.T, version string) {
	plugin, job := flinktest.Jars(t)
	brokers := kafkatest.Start(t)
	metricsTopic, samplesTopic := "cluster-metrics-"+version, "cluster-samples-"+version
	kafkatest.CreateTopics(t, brokers, metricsTopic, samplesTopic)
	plans := httptest.NewServer(http.NotFoundHandler()) // no plan: keys pass through
	defer plans.Close()

	c := flinktest.StartCluster(t, flinktest.ClusterConfig{
		Version: version,
		Plugins: map[string]string{"skewlens": plugin},
		Config: map[string]string{
			"metrics.reporter.skewlens.factory.class":     "io.github.skewlens.flink.reporter.SkewlensReporterFactory",
			"metrics.reporter.skewlens.bootstrap.servers": brokers[0],
			"metrics.reporter.skewlens.topic":             metricsTopic,
			"metrics.reporter.skewlens.interval":          "2 s",
		},
	})
	id := c.Submit(t, job, flinktest.HotKeyJob, "--brokers", brokers[0], "--salting-url", plans.URL,
		"--parallelism", "2", "--rate", "400", "--samples-topic", samplesTopic, "--job-name", "cluster-hotkey")
	c.WaitRunning(t, id, 2*time.Minute)

	wantLine(t, brokers, metricsTopic, func(l string) bool {
		return strings.Contains(l, `"job_id":"`+id+`"`) && strings.Contains(l, `"task_name":"Partial sums"`) &&
			strings.Contains(l, "accumulateBusyTimeMs")
	}, c)
	wantLine(t, brokers, samplesTopic, func(l string) bool {
		return strings.Contains(l, `"job_id":"`+id+`"`) && strings.Contains(l, `"key":"customer-42"`)
	}, c)
	if log := c.Log("taskmanager-0"); !strings.Contains(log, "skewlens reporter: sending") {
		t.Errorf("the TaskManager did not start the reporter from plugins/:\n%s", c.LogTail(30))
	}
	c.Cancel(t, id)
}

// wantLine reads topic from the start until a record satisfies ok (at
// most two minutes).
func wantLine(t *testing.T, brokers []string, topic string, ok func(string) bool, c *flinktest.Cluster) {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, MaxWait: 500 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := 0
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("topic %s: no matching record in %d read (%v):\n%s", topic, n, err, c.LogTail(30))
		}
		n++
		if ok(string(m.Value)) {
			return
		}
	}
}

// TestLocalModeReports runs the example job from main(), as a developer
// runs it from an IDE, with the reporter configured in the job's
// Configuration (docs/flink.md, "Local mode"): its metrics arrive, with
// nothing in plugins/. The job jar holds no reporter: the reporter's jar
// is on the classpath beside it, as the example's `provided` dependency on
// skewlens-flink-reporter puts it on an IDE's.
func TestLocalModeReports(t *testing.T) {
	plugin, job := flinktest.Jars(t)
	brokers := kafkatest.Start(t)
	metricsTopic, samplesTopic := "local-metrics", "local-samples"
	kafkatest.CreateTopics(t, brokers, metricsTopic, samplesTopic)
	plans := httptest.NewServer(http.NotFoundHandler())
	defer plans.Close()
	_, log := flinktest.RunLocal(t, flinktest.Flink2, []string{job, plugin}, flinktest.HotKeyJob, "--brokers", brokers[0], "--salting-url", plans.URL,
		"--parallelism", "2", "--rate", "400", "--samples-topic", samplesTopic, "--job-name", "local-hotkey",
		"--report-to", brokers[0], "--report-topic", metricsTopic)
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: metricsTopic, Partition: 0, MaxWait: 500 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("no busy time of the local job's \"Partial sums\" task (%v):\n%s", err, testenv.FileTail(log, 40))
		}
		if l := string(m.Value); strings.Contains(l, `"job_name":"local-hotkey"`) && strings.Contains(l, `"task_name":"Partial sums"`) &&
			strings.Contains(l, "accumulateBusyTimeMs") {
			return
		}
	}
}
