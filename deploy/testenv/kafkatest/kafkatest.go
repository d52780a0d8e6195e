package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// EnvBrokers names the environment variable with the addresses of an
// already running broker; when it is set, nothing is installed or started.
const EnvBrokers = "SKEWLENS_KAFKA_BROKERS"

// EnvHome names the environment variable with the directory the broker's
// jars are installed to (default: the user cache dir + skewlens/kafka).
const EnvHome = "SKEWLENS_KAFKA_HOME"

// broker is the test process's own broker.
type broker struct {
	dir     string // the broker's directory: libs link, data, server.log
	scripts string // deploy/kafka
	port    int
	addr    string
}

// shared is the broker of this test process: started by the first Start
// (once), stopped by Main. mu serialises Restart and stop with each other.
var shared struct {
	once sync.Once
	mu   sync.Mutex
	b    *broker
	err  error
	env  []string // brokers from EnvBrokers
}

// Start returns the addresses of a running broker, starting one on the
// first call (see the package documentation). It fails t if there is none.
func Start(t testing.TB) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a Kafka broker; skipped under -short")
	}
	shared.once.Do(func() {
		if v := os.Getenv(EnvBrokers); v != "" {
			for _, a := range strings.Split(v, ",") {
				if a = strings.TrimSpace(a); a != "" {
					shared.env = append(shared.env, a)
				}
			}
			return
		}
		start := time.Now()
		shared.b, shared.err = startBroker()
		if shared.err == nil {
			fmt.Fprintf(os.Stderr, "kafkatest: broker %s ready in %s (dir %s)\n",
				shared.b.addr, time.Since(start).Round(100*time.Millisecond), shared.b.dir)
		}
	})
	if shared.err != nil {
		t.Fatalf("kafkatest: no broker: %v", shared.err)
	}
	if shared.env != nil {
		return append([]string(nil), shared.env...)
	}
	return []string{shared.b.addr}
}

// Main runs the tests of a package that uses Start and then stops the
// broker Start started. Call it from TestMain: func TestMain(m *testing.M)
// { kafkatest.Main(m) }; the testing package exits with m.Run's code.
func Main(m *testing.M) {
	m.Run()
	if err := Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: %v\n", err)
	}
}

// Stop stops the broker Start started, if any, and removes its data. For a
// TestMain that also stops other servers; Main calls it.
func Stop() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.b == nil {
		return nil
	}
	err := shared.b.stop()
	_ = os.RemoveAll(shared.b.dir)
	shared.b = nil
	return err
}

// Restart stops the broker and starts it again on the same port with the
// same data, returning once it answers again. It fails t when the broker
// was not started by Start (SKEWLENS_KAFKA_BROKERS is set) or does not
// come back.
func Restart(t testing.TB) {
	t.Helper()
	Start(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.b == nil {
		t.Fatalf("kafkatest: Restart needs the broker kafkatest starts itself; unset %s", EnvBrokers)
	}
	b := shared.b
	if err := b.stop(); err != nil {
		t.Fatalf("kafkatest: restart: %v", err)
	}
	start := time.Now()
	if err := b.start(); err != nil {
		t.Fatalf("kafkatest: restart: %v", err)
	}
	t.Logf("kafkatest: broker restarted in %s", time.Since(start).Round(100*time.Millisecond))
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

func createTopics(ctx context.Context, brokers []string, topics []kafka.TopicConfig) error {
	tr := &kafka.Transport{DialTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}
	names := make([]string, len(topics))
	for i, tc := range topics {
		names[i] = tc.Topic
	}
	var last error
	for {
		last = tryCreate(ctx, cl, topics, names)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%v: %w", names, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func tryCreate(ctx context.Context, cl *kafka.Client, topics []kafka.TopicConfig, names []string) error {
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: topics})
	if err != nil {
		return err
	}
	for n, e := range res.Errors {
		if e != nil && !errors.Is(e, kafka.TopicAlreadyExists) {
			return fmt.Errorf("%s: %w", n, e)
		}
	}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return err
	}
	ready := 0
	for _, tp := range md.Topics {
		if tp.Error != nil || len(tp.Partitions) == 0 {
			continue
		}
		ok := true
		for _, p := range tp.Partitions {
			ok = ok && p.Error == nil && p.Leader.Host != ""
		}
		if ok {
			ready++
		}
	}
	if ready != len(names) {
		return fmt.Errorf("%d of %d topics ready", ready, len(names))
	}
	return nil
}

// scriptsDir finds deploy/kafka from this source file's location.
func scriptsDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the kafkatest source file")
	}
	d := filepath.Join(filepath.Dir(file), "..", "..", "kafka")
	if _, err := os.Stat(filepath.Join(d, "start.sh")); err != nil {
		return "", fmt.Errorf("deploy/kafka scripts: %w", err)
	}
	return d, nil
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

func startBroker() (*broker, error) {
	scripts, err := scriptsDir()
	if err != nil {
		return nil, err
	}
	home, err := homeDir()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if out, err := exec.Command("bash", filepath.Join(scripts, "install.sh"), home).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("install.sh %s: %w\n%s", home, err, out)
	}
	if d := time.Since(start); d > time.Second {
		fmt.Fprintf(os.Stderr, "kafkatest: installed the broker into %s in %s\n", home, d.Round(100*time.Millisecond))
	}
	dir, err := os.MkdirTemp("", "skewlens-kafka-")
	if err != nil {
		return nil, fmt.Errorf("broker dir: %w", err)
	}
	if err := os.Symlink(filepath.Join(home, "libs"), filepath.Join(dir, "libs")); err != nil {
		return nil, fmt.Errorf("broker dir: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	b := &broker{dir: dir, scripts: scripts, port: port, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if err := b.start(); err != nil {
		_ = b.stop()
		return nil, err
	}
	return b, nil
}

func (b *broker) start() error {
	cport := ""
	if _, err := os.Stat(filepath.Join(b.dir, "controller.port")); err != nil {
		p, err := freePort()
		if err != nil {
			return err
		}
		cport = strconv.Itoa(p)
	}
	args := []string{filepath.Join(b.scripts, "start.sh"), b.dir, strconv.Itoa(b.port)}
	if cport != "" {
		args = append(args, cport)
	}
	cmd := exec.Command("bash", args...)
	cmd.Env = append(os.Environ(), "KAFKA_WATCH_PID="+strconv.Itoa(os.Getpid()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("start.sh %s %d: %w\n%s\n--- tail of %s:\n%s", b.dir, b.port, err, out,
			filepath.Join(b.dir, "server.log"), tail(filepath.Join(b.dir, "server.log"), 40))
	}
	return nil
}

func (b *broker) stop() error {
	out, err := exec.Command("bash", filepath.Join(b.scripts, "stop.sh"), b.dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop.sh %s: %w\n%s", b.dir, err, out)
	}
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ServerLogTail returns the last n lines of the broker's server.log, for
// test failure messages; "" when the broker is not kafkatest's own.
func ServerLogTail(n int) string {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.b == nil {
		return ""
	}
	return tail(filepath.Join(shared.b.dir, "server.log"), n)
}
