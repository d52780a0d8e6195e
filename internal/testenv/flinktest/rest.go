package flinktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

// The REST client of a Cluster: the JobManager's REST API (c.REST), as an
// operator and Flink's CLI use it.

// Submit uploads a job jar (REST /jars/upload) and runs its entry class
// with args (/jars/:id/run), as an operator submits a job to a session
// cluster, and returns the job id.
func (c *Cluster) Submit(t testing.TB, jar, entryClass string, args ...string) string {
	t.Helper()
	return c.RunJar(t, c.Upload(t, jar), RunRequest{EntryClass: entryClass, ProgramArgsList: args})
}

// RunRequest is the body of POST /jars/:jarid/run, as both Flink lines
// take it (2.x has no string programArgs). Empty fields are left out.
type RunRequest struct {
	EntryClass      string   `json:"entryClass,omitempty"`
	ProgramArgsList []string `json:"programArgsList,omitempty"`
	// SavepointPath resumes the job from a savepoint (or a retained
	// checkpoint), as `flink run -s` does.
	SavepointPath string `json:"savepointPath,omitempty"`
	// FlinkConfiguration is added to the job's configuration, as `flink
	// run -D` does (e.g. pipeline.jobvertex-parallelism-overrides).
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty"`
}

// Upload uploads a job jar (REST /jars/upload) and returns its jar id,
// for RunJar.
func (c *Cluster) Upload(t testing.TB, jar string) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("jarfile", filepath.Base(jar))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(jar)
	if err != nil {
		t.Fatalf("flinktest: job jar: %v", err)
	}
	if _, err := fw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	var up struct {
		Filename string `json:"filename"`
		Status   string `json:"status"`
	}
	if err := c.do(http.MethodPost, "/jars/upload", mw.FormDataContentType(), &body, &up); err != nil || up.Status != "success" {
		t.Fatalf("flinktest: upload %s: %v (%+v)", jar, err, up)
	}
	return filepath.Base(up.Filename)
}

// RunJar runs an uploaded jar (POST /jars/:jarid/run) and returns the
// job id.
func (c *Cluster) RunJar(t testing.TB, jarID string, req RunRequest) string {
	t.Helper()
	var out struct {
		JobID string `json:"jobid"`
	}
	if err := c.JSON(http.MethodPost, "/jars/"+url.PathEscape(jarID)+"/run", req, &out); err != nil || out.JobID == "" {
		t.Fatalf("flinktest: run %s: %v\n%s", req.EntryClass, err, c.LogTail(30))
	}
	return out.JobID
}

// JSON sends one REST request with in as its JSON body (nil: none) and
// decodes a 2xx answer into out (nil: dropped); any other status is an
// error with the answer's tail.
func (c *Cluster) JSON(method, path string, in, out any) error {
	if in == nil {
		return c.do(method, path, "", nil, out)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(method, path, "application/json", bytes.NewReader(b), out)
}

// Vertex is one job vertex as GET /jobs/:jobid shows it.
type Vertex struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
	Status      string `json:"status"`
}

// Vertices returns the job's vertices (GET /jobs/:jobid).
func (c *Cluster) Vertices(jobID string) ([]Vertex, error) {
	var j struct {
		Vertices []Vertex `json:"vertices"`
	}
	if err := c.get("/jobs/"+jobID, &j); err != nil {
		return nil, err
	}
	return j.Vertices, nil
}

// WaitRunning waits (at most timeout) until every task of the job runs.
func (c *Cluster) WaitRunning(t testing.TB, jobID string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var j struct {
			State    string `json:"state"`
			Vertices []struct {
				Status string `json:"status"`
			} `json:"vertices"`
		}
		err := c.get("/jobs/"+jobID, &j)
		if err == nil && j.State == "RUNNING" && len(j.Vertices) > 0 &&
			!slices.ContainsFunc(j.Vertices, func(v struct {
				Status string `json:"status"`
			}) bool {
				return v.Status != "RUNNING"
			}) {
			return
		}
		if err == nil && (j.State == "FAILED" || j.State == "CANCELED" || j.State == "FINISHED") {
			t.Fatalf("flinktest: job %s is %s:\n%s", jobID, j.State, c.LogTail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("flinktest: job %s not running after %s (%v, state %q):\n%s", jobID, timeout, err, j.State, c.LogTail(40))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Cancel cancels a job and waits (at most a minute) until it is.
func (c *Cluster) Cancel(t testing.TB, jobID string) {
	t.Helper()
	if err := c.do(http.MethodPatch, "/jobs/"+jobID+"?mode=cancel", "", nil, nil); err != nil {
		t.Fatalf("flinktest: cancel %s: %v", jobID, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var j struct {
			State string `json:"state"`
		}
		if err := c.get("/jobs/"+jobID, &j); err == nil && j.State == "CANCELED" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("flinktest: job %s not cancelled after a minute", jobID)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (c *Cluster) get(path string, out any) error {
	return c.do(http.MethodGet, path, "", nil, out)
}

// do sends one REST request and decodes a 2xx answer into out (nil: the
// body is dropped).
func (c *Cluster) do(method, path, contentType string, body io.Reader, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.REST+path, body)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, testenv.Tail(string(b), 20))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// VertexMetric returns the value of the job's metric whose id ends with
// suffix, in the first vertex whose name contains vertex, as Flink's REST
// API shows it (/jobs/:id/vertices/:vid/metrics: ids are
// "<subtask>.<operator>.<name>"); ok is false while there is none.
func (c *Cluster) VertexMetric(jobID, vertex, suffix string) (value string, ok bool) {
	var job struct {
		Vertices []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"vertices"`
	}
	if err := c.get("/jobs/"+jobID, &job); err != nil {
		return "", false
	}
	for _, v := range job.Vertices {
		if !strings.Contains(v.Name, vertex) {
			continue
		}
		var ids []struct {
			ID string `json:"id"`
		}
		path := "/jobs/" + jobID + "/vertices/" + v.ID + "/metrics"
		if err := c.get(path, &ids); err != nil {
			return "", false
		}
		for _, m := range ids {
			if !strings.HasSuffix(m.ID, suffix) {
				continue
			}
			var vals []struct {
				ID    string `json:"id"`
				Value string `json:"value"`
			}
			if err := c.get(path+"?get="+url.QueryEscape(m.ID), &vals); err != nil || len(vals) == 0 {
				return "", false
			}
			return vals[0].Value, true
		}
		return "", false
	}
	return "", false
}
