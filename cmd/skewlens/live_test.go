package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

// This file holds what the tests need to watch a running command and
// wait on its events (testenv.Eventually): its log as it grows, its
// /metrics, its HTTP answers, and its end, which fails a wait at once.

// cliRun is a command line running in-process (startCLI), whose output
// the test reads while it runs.
type cliRun struct {
	done           chan struct{}
	code           int // once done is closed
	stdout, stderr testenv.Buffer
}

// startCLI runs the command line in-process in a goroutine of its own;
// the test's cleanup waits for it to end.
func startCLI(t *testing.T, args ...string) *cliRun {
	t.Helper()
	r := &cliRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.code = run(args, &env{stdin: strings.NewReader(""), stdout: &r.stdout, stderr: &r.stderr})
	}()
	t.Cleanup(func() { <-r.done })
	return r
}

// wait waits for the command to end and returns its exit code and
// output, as runCLI does.
func (r *cliRun) wait() (code int, stdout, stderr string) {
	<-r.done
	return r.code, r.stdout.String(), r.stderr.String()
}

// end fails a wait when the command ends first.
func (r *cliRun) end() testenv.End {
	return testenv.End{Done: r.done, Why: func() string {
		return fmt.Sprintf("the command ended (exit %d):\n%s", r.code, tail([]byte(r.stderr.String())))
	}}
}

// logged counts the lines of the command's JSON log whose message is
// msg.
func (r *cliRun) logged(msg string) int {
	return strings.Count(r.stderr.String(), `"msg":`+strconv.Quote(msg))
}

// opsAddr waits until the command (run or demo, logging JSON) serves
// /metrics and returns the address it logged.
func (r *cliRun) opsAddr(t *testing.T) string {
	t.Helper()
	var addr string
	testenv.Eventually(t, time.Minute, "the address of /metrics in the log", func() bool {
		for _, line := range strings.Split(r.stderr.String(), "\n") {
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving /metrics, /healthz, /readyz" {
				addr = l.Addr
				return true
			}
		}
		return false
	}, r.end())
	return addr
}

// waitCommits waits until the run (logging JSON) has committed the
// offsets of n writes, windows written to ClickHouse, and returns the
// address of its /metrics.
func (r *cliRun) waitCommits(t *testing.T, n float64) (ops string) {
	t.Helper()
	ops = r.opsAddr(t)
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("run committing the offsets of %g writes", n), func() bool {
		v, _ := scrapeSum(ops, "skewlens_offset_commits_total")
		return v >= n
	}, r.end())
	return ops
}

// end fails a wait when the process exits first.
func (r *runProc) end() testenv.End {
	return testenv.End{Done: r.done, Why: func() string { return r.name + " exited:\n" + r.logTail() }}
}

// left is the time until ctx's deadline, a wait's timeout (ten minutes
// when ctx has none).
func left(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return 10 * time.Minute
}

// scrapeSum sums the samples of metric in the /metrics of the process
// listening on listen; ok is false when it does not answer.
func scrapeSum(listen, metric string) (sum float64, ok bool) {
	resp, err := http.Get("http://" + listen + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, metric+"{") || strings.HasPrefix(line, metric+" ") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum, sc.Err() == nil
}

// scrape is scrapeSum, failing t when the process does not answer.
func scrape(t testing.TB, listen, metric string) float64 {
	t.Helper()
	v, ok := scrapeSum(listen, metric)
	if !ok {
		t.Fatalf("no /metrics at %s", listen)
	}
	return v
}

// httpAnswer is one answer of a server.
type httpAnswer struct {
	code   int
	header http.Header
	body   string
}

// answerUntil sends the request req makes until the server answers and
// ok accepts the answer, for up to wait, and returns that answer. A
// request the server does not take (it does not listen yet) is sent
// again.
func answerUntil(t *testing.T, wait time.Duration, what string, req func() (*http.Response, error), ok func(httpAnswer) bool, ends ...testenv.End) httpAnswer {
	t.Helper()
	var a httpAnswer
	answered := false
	defer func() {
		if t.Failed() && answered {
			t.Logf("the last answer: %d %v %s", a.code, a.header, a.body)
		}
	}()
	testenv.Eventually(t, wait, what, func() bool {
		resp, err := req()
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a, answered = httpAnswer{resp.StatusCode, resp.Header, string(b)}, true
		return ok(a)
	}, ends...)
	return a
}

// getUntil GETs url until ok accepts the answer, for up to wait.
func getUntil(t *testing.T, url string, wait time.Duration, what string, ok func(httpAnswer) bool, ends ...testenv.End) httpAnswer {
	t.Helper()
	return answerUntil(t, wait, what, func() (*http.Response, error) { return http.Get(url) }, ok, ends...)
}

// anyAnswer accepts every answer.
func anyAnswer(httpAnswer) bool { return true }
