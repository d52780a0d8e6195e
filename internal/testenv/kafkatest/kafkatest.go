package kafkatest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/testenv"
)

// EnvBrokers names the environment variable with the addresses of an
// already running broker; when it is set, nothing is installed or started.
const EnvBrokers = "SKEWLENS_KAFKA_BROKERS"

// EnvHome names the environment variable with the directory the broker's
// jars are installed to (default: the user cache dir + skewlens/kafka).
const EnvHome = "SKEWLENS_KAFKA_HOME"

// broker is the broker of the tests: p is nil for the one named by
// EnvBrokers, which the tests did not start.
type broker struct {
	addrs []string
	p     *testenv.Process
}

// shared is the broker of this test process: started by the first Start,
// stopped by Main; Restart and stop are serialised with each other.
var shared testenv.Shared[broker]

// Start returns the addresses of a running broker, starting one on the
// first call (see the package documentation). It skips t under -short and
// fails t if there is none.
func Start(t testing.TB) []string {
	t.Helper()
	b := shared.Get(t, "a Kafka broker", func() (broker, error) {
		if v := os.Getenv(EnvBrokers); v != "" {
			var addrs []string
			for _, a := range strings.Split(v, ",") {
				if a = strings.TrimSpace(a); a != "" {
					addrs = append(addrs, a)
				}
			}
			return broker{addrs: addrs}, nil
		}
		l, err := launcher()
		if err != nil {
			return broker{}, err
		}
		p, err := l.Start()
		if err != nil {
			return broker{}, err
		}
		return broker{addrs: []string{p.Addr}, p: p}, nil
	})
	return append([]string(nil), b.addrs...)
}

// StartPrivate starts a broker of t's own, even when EnvBrokers is set,
// and stops it and removes its folder when t ends; for tests that stop
// and start the broker (Process.Halt, Process.Resume), such as a broker
// that comes up after skewlens. It skips t under -short and fails t when
// the broker cannot be started.
func StartPrivate(t testing.TB) *testenv.Process {
	t.Helper()
	testenv.SkipShort(t, "a Kafka broker")
	l, err := launcher()
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	p, err := l.Start()
	if err != nil {
		t.Fatalf("kafkatest: cannot start a broker: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("kafkatest: %v", err)
		}
	})
	return p
}

// Main runs the tests of a package that uses Start, then stops the broker
// Start started and exits with the tests' exit code. Call it from
// TestMain: func TestMain(m *testing.M) { kafkatest.Main(m) }.
func Main(m *testing.M) { testenv.Main(m, Stop) }

// Stop stops the broker Start started, if any, and removes its data. For a
// TestMain that also stops other servers; Main calls it.
func Stop() error {
	return shared.Stop(func(b broker) error {
		if b.p == nil {
			return nil
		}
		return b.p.Stop()
	})
}

// Restart stops the broker and starts it again on the same port with the
// same data, returning once it answers again and every partition has a
// leader (a producer that asks sooner is told "no leader" and caches
// it). It fails t when the broker was not started by Start
// (SKEWLENS_KAFKA_BROKERS is set) or does not come back.
func Restart(t testing.TB) {
	t.Helper()
	Start(t)
	var err error
	shared.Do(func(b broker, running bool) {
		if !running || b.p == nil {
			err = fmt.Errorf("Restart needs the broker kafkatest starts itself; unset %s", EnvBrokers)
			return
		}
		// The topics, asked before the restart (the broker answers), are
		// those whose partitions need a leader again after it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var names []string
		if names, err = topicNames(ctx, b.p.Addr); err != nil {
			return
		}
		begin := time.Now()
		if err = b.p.Restart(); err != nil {
			return
		}
		if err = kafkaclient.WaitTopics(ctx, kafkaclient.AdminConfig{Brokers: []string{b.p.Addr}}, names...); err == nil {
			t.Logf("kafkatest: broker restarted in %s", time.Since(begin).Round(100*time.Millisecond))
		}
	})
	if err != nil {
		t.Fatalf("kafkatest: restart: %v", err)
	}
}

// topicNames lists the topics of the broker at addr.
func topicNames(ctx context.Context, addr string) ([]string, error) {
	c := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 5 * time.Second}
	md, err := c.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	names := make([]string, 0, len(md.Topics))
	for _, tp := range md.Topics {
		names = append(names, tp.Name)
	}
	return names, nil
}

// CreateTopics creates topics with one partition each (already existing
// ones are fine) and waits until they have leaders. It fails t otherwise.
func CreateTopics(t testing.TB, brokers []string, topics ...string) {
	t.Helper()
	cfgs := make([]kafka.TopicConfig, len(topics))
	for i, n := range topics {
		cfgs[i] = kafka.TopicConfig{Topic: n, NumPartitions: 1, ReplicationFactor: 1}
	}
	CreateTopicConfigs(t, brokers, cfgs...)
}

// CreateTopicConfigs is CreateTopics with explicit configurations.
func CreateTopicConfigs(t testing.TB, brokers []string, topics ...kafka.TopicConfig) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := createTopics(ctx, brokers, topics); err != nil {
		t.Fatalf("kafkatest: create topics: %v", err)
	}
}

// createTopics creates the topics with the shared helper, retrying (a
// broker still starting) until ctx ends.
func createTopics(ctx context.Context, brokers []string, topics []kafka.TopicConfig) error {
	_, err := kafkaclient.EnsureTopics(ctx, kafkaclient.AdminConfig{Brokers: brokers}, topics...)
	return err
}

// launcher starts brokers with deploy/kafka's scripts, each in a folder
// that links the jars installed once into homeDir.
func launcher() (*testenv.Launcher, error) {
	home, err := homeDir()
	if err != nil {
		return nil, err
	}
	return &testenv.Launcher{
		Name:        "kafka",
		Scripts:     testenv.DeployDir("kafka"),
		InstallArgs: []string{home},
		Env:         []string{"KAFKA_WATCH_PID=" + strconv.Itoa(os.Getpid())},
		Prepare: func(dir string) error {
			return os.Symlink(filepath.Join(home, "libs"), filepath.Join(dir, "libs"))
		},
		StartArgs: controllerPort,
		Logs:      []string{"server.log"},
		// start.sh waits up to 60 s for the broker itself.
		Timeout: 2 * time.Minute,
	}, nil
}

// controllerPort picks the KRaft controller's port on a folder's first
// start; later starts reuse the one start.sh kept in controller.port.
func controllerPort(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "controller.port")); err == nil {
		return nil, nil
	}
	p, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	return []string{strconv.Itoa(p)}, nil
}

func homeDir() (string, error) {
	if v := os.Getenv(EnvHome); v != "" {
		return v, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no %s and no user cache dir: %w", EnvHome, err)
	}
	return filepath.Join(c, "skewlens", "kafka"), nil
}

// ServerLogTail returns the last n lines of the broker's server.log, for
// test failure messages; "" when the broker is not kafkatest's own.
func ServerLogTail(n int) string {
	var s string
	shared.Do(func(b broker, running bool) {
		if running && b.p != nil {
			s = b.p.LogTail(n)
		}
	})
	return s
}
