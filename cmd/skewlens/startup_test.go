package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/deploy/testenv/chtest"
	"github.com/skewlens/skewlens/deploy/testenv/kafkatest"
)

// TestRunBrokerNeverComes: with no broker at --brokers, run warns at each
// retry and, once --broker-wait is over, fails with an error that names
// the address, the wait and what to check, not kafka-go's "[8] Broker
// Not Available". No server is needed.
func TestRunBrokerNeverComes(t *testing.T) {
	clearEnv(t)
	kafkaPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	chPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	broker := "127.0.0.1:" + strconv.Itoa(kafkaPort)
	begin := time.Now()
	code, out, errOut := runCLI(t, "", "run", "--brokers", broker, "--broker-wait", "2s",
		"--clickhouse-addr", "127.0.0.1:"+strconv.Itoa(chPort), "--listen", "127.0.0.1:0", "--quiet")
	took := time.Since(begin)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if took < 2*time.Second || took > 10*time.Second {
		t.Errorf("gave up after %s, want about the 2s --broker-wait", took)
	}
	if n := strings.Count(errOut, `msg="waiting for Kafka brokers"`); n < 2 || !strings.Contains(errOut, "next_in=") {
		t.Errorf("%d retries logged with the next wait, want several:\n%s", n, errOut)
	}
	last := errOut[strings.LastIndex(strings.TrimSuffix(errOut, "\n"), "\n")+1:]
	for _, want := range []string{"skewlens run: ", "no Kafka broker answered at " + broker + " in 2s",
		"check that the brokers run", "advertised.listeners", "--broker-wait 2s"} {
		if !strings.Contains(last, want) {
			t.Errorf("error line lacks %q:\n%s", want, last)
		}
	}
	if strings.Contains(errOut, "not a client facing error") {
		t.Errorf("kafka-go's cryptic error reached the user:\n%s", errOut)
	}
}

// TestRunWaitsForLateBroker starts run while its broker is down and
// starts the broker (the real one) five seconds later: run waits, says
// so, and then runs as usual.
func TestRunWaitsForLateBroker(t *testing.T) {
	broker := kafkatest.StartPrivate(t)
	chAddr := chtest.Start(t)
	if err := broker.Halt(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var code int
	var out, errOut string
	go func() {
		defer close(done)
		code, out, errOut = runCLI(t, "", "run", "--brokers", broker.Addr, "--broker-wait", "2m",
			"--clickhouse-addr", chAddr, "--database", "e2e_late_broker", "--group", "e2e-late-broker",
			"--topics", "late-metrics,late-samples", "--dead-letter-topic", "late-dead",
			"--listen", "127.0.0.1:0", "--simulate", "hot_key", "--speed", "50", "--duration", "12s",
			"--quiet", "--log-format", "json")
	}()
	time.Sleep(5 * time.Second)
	select {
	case <-done:
		t.Fatalf("run ended (exit %d) while the broker was down:\n%s", code, tail([]byte(errOut)))
	default:
	}
	if err := broker.Resume(); err != nil {
		t.Fatal(err)
	}
	<-done
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, tail([]byte(errOut)))
	}
	if !strings.Contains(errOut, `"msg":"waiting for Kafka brokers"`) || !strings.Contains(errOut, `"msg":"Kafka brokers answer"`) {
		t.Errorf("the wait left no trace in the log:\n%s", tail([]byte(errOut)))
	}
	m := regexp.MustCompile(`"msg":"stopped".*"samples":(\d+)`).FindStringSubmatch(errOut)
	if m == nil || m[1] == "0" {
		t.Errorf("no samples read after the broker came up (%v):\n%s", m, tail([]byte(errOut)))
	}
}

// TestRunTwiceEmbeddedBroker runs the demo twice on the same state
// folder and database, as two `make run`s do: the embedded broker starts
// empty each time, so the second run must not resume the first's engine
// state (its events would all be replays and it would print nothing);
// it says it starts afresh, and prints its incidents as the first did.
func TestRunTwiceEmbeddedBroker(t *testing.T) {
	chAddr := chtest.Start(t)
	state := t.TempDir()
	opened := regexp.MustCompile(`(?m)^\S+ \S+ UTC  opened  data_skew +hot_key/`)
	for i := 1; i <= 2; i++ {
		code, out, errOut := runCLI(t, "", "run", "--state-dir", state, "--clickhouse-addr", chAddr,
			"--database", "e2e_twice", "--group", "e2e-twice", "--listen", "127.0.0.1:0",
			"--simulate", "hot_key", "--speed", "50", "--duration", "15s")
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, code, out, tail([]byte(errOut)))
		}
		if !strings.Contains(errOut, "embedded broker: starting afresh; not resuming the engine state and open incidents") {
			t.Errorf("run %d does not say it starts afresh:\n%s", i, tail([]byte(errOut)))
		}
		if n := len(opened.FindAllString(out, -1)); n == 0 {
			t.Errorf("run %d printed no data_skew incident:\n%s\n%s", i, out, tail([]byte(errOut)))
		} else {
			t.Log(fmt.Sprintf("run %d: %d data_skew incidents opened", i, n))
		}
	}
}
