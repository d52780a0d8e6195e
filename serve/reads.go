package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/plans"
)

// cacheControl is the Cache-Control of the plan answers: as long as the
// server itself reuses them.
func (s *Server) cacheControl() string {
	if secs := int(s.cfg.CacheTTL / time.Second); secs > 0 {
		return fmt.Sprintf("max-age=%d", secs)
	}
	return "no-cache"
}

// GET /v1/salting
func (s *Server) getPlans(w http.ResponseWriter, r *http.Request) {
	snap, err := s.snaps.get(r.Context())
	if err != nil {
		s.storeError(w, "snapshot", err)
		return
	}
	writeBody(w, r, snap.all, s.planHeaders(w, snap))
}

// planHeaders marks the answer of a stale snapshot as stale (see
// markStale) and returns the Cache-Control of a plan answer: that of a
// fresh one, or no-cache for a stale one, so that caches ask again.
func (s *Server) planHeaders(w http.ResponseWriter, snap *snapshot) string {
	if snap.staleSince.IsZero() {
		return s.cacheControl()
	}
	markStale(w.Header(), snap.staleSince)
	return "no-cache"
}

// Headers of an answer from the last good snapshot while the store is
// unavailable.
const (
	// HeaderStaleSince is when the store became unavailable, RFC 3339
	// in UTC, on answers served from the last good snapshot.
	HeaderStaleSince = "X-Skewlens-Stale-Since"
)

// markStale sets the headers of an answer served from the last good
// snapshot: Warning 110 ("Response is Stale", RFC 7234; clients that
// know it need no skewlens-specific code) and HeaderStaleSince, both
// saying since when the store has been unavailable.
func markStale(h http.Header, since time.Time) {
	at := since.UTC().Format(time.RFC3339)
	h.Set("Warning", `110 - "stale: the store (ClickHouse) is unavailable since `+at+`"`)
	h.Set(HeaderStaleSince, at)
}

// GET /v1/salting/{job_id}/{task_name}[?job_name=&parallelism=&max_parallelism=]
//
// A run without a plan of its own for the task is answered with its job's
// lineage plan (plans.Lineage), marked with HeaderLineage.
func (s *Server) getPlan(w http.ResponseWriter, r *http.Request) {
	t, ok := pathTask(w, r)
	if !ok {
		return
	}
	run, err := planQuery(r.URL.RawQuery, t.job)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	snap, err := s.snaps.get(r.Context())
	if err != nil {
		s.storeError(w, "snapshot", err)
		return
	}
	cacheControl := s.planHeaders(w, snap)
	body, ok := snap.tasks[t]
	if !ok {
		if p := plans.Lineage(snap.named, run, t.task); p != nil {
			body, ok = snap.tasks[planTask{p.JobID, p.TaskName}]
			w.Header().Set(HeaderLineage, p.JobID)
		}
	}
	if !ok {
		writeError(w, http.StatusNotFound, "no current plan for this job and task")
		return
	}
	writeBody(w, r, body, cacheControl)
}

// pathTask reads and checks {job_id} and {task_name}; on failure it
// answers 400.
func pathTask(w http.ResponseWriter, r *http.Request) (planTask, bool) {
	t := planTask{job: r.PathValue("job_id"), task: r.PathValue("task_name")}
	if err := errors.Join(checkJobID(t.job), checkTaskName(t.task)); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return planTask{}, false
	}
	return t, true
}

// listQuery is the query of a list endpoint (findings, stats, incidents):
// its parameters, and the since (default DefaultFindingsWindow ago) and
// limit every list takes.
type listQuery struct {
	params map[string]string
	since  time.Time
	limit  int
}

// parseList parses the query of a list endpoint that allows the
// parameters named (job_id, since and limit among them): job_id, since and
// limit are checked here, the others by check (nil: none). Every problem
// is reported in one 400 answer, and ok is false once it is written.
func parseList(w http.ResponseWriter, r *http.Request, check func(params map[string]string) error, allowed ...string) (lq listQuery, ok bool) {
	q, err := queryParams(r.URL.RawQuery, allowed...)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return listQuery{}, false
	}
	lq = listQuery{params: q, since: time.Now().Add(-DefaultFindingsWindow)}
	if v, ok := q["job_id"]; ok {
		err = errors.Join(err, checkJobID(v))
	}
	if check != nil {
		err = errors.Join(err, check(q))
	}
	if v, ok := q["since"]; ok {
		since, e := parseSince(v)
		err = errors.Join(err, e)
		lq.since = since
	}
	limit, e := parseLimit(q["limit"])
	lq.limit = limit
	if err = errors.Join(err, e); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return listQuery{}, false
	}
	return lq, true
}

// storeRead runs read under one of the store's slots and the store
// timeout, with the store calls' retries (call), and answers the error
// itself; ok is false once an answer is written.
func (s *Server) storeRead(w http.ResponseWriter, r *http.Request, op string, read func(ctx context.Context) error) (ok bool) {
	release, ok := s.acquire(w)
	if !ok {
		return false
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	if err := s.call(ctx, op, read); err != nil {
		s.storeError(w, op, err)
		return false
	}
	return true
}

// serveList answers GET of a list endpoint: its parameters job_id,
// since, limit and filter (checked by check when given), and the rows
// read for them (storeRead) as {"name": [...]}.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, name, filter string, check func(string) error, read func(context.Context, listQuery) ([]json.RawMessage, error)) {
	lq, ok := parseList(w, r, func(q map[string]string) error {
		if v, ok := q[filter]; ok {
			return check(v)
		}
		return nil
	}, "job_id", filter, "since", "limit")
	if !ok {
		return
	}
	var rows []json.RawMessage
	if s.storeRead(w, r, name, func(ctx context.Context) (err error) {
		rows, err = read(ctx, lq)
		return err
	}) {
		writeBody(w, r, jsonList(name, rows), "no-cache")
	}
}

// GET /v1/findings?job_id=&kind=&since=&limit=
func (s *Server) getFindings(w http.ResponseWriter, r *http.Request) {
	s.serveList(w, r, "findings", "kind", checkKind, func(ctx context.Context, lq listQuery) ([]json.RawMessage, error) {
		return s.store.Findings.Findings(ctx, servestore.FindingsQuery{JobID: lq.params["job_id"], Kind: lq.params["kind"], Since: lq.since, Limit: lq.limit})
	})
}

// GET /v1/stats?job_id=&task_name=&since=&limit=
func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	s.serveList(w, r, "stats", "task_name", checkTaskName, func(ctx context.Context, lq listQuery) ([]json.RawMessage, error) {
		return s.store.Stats.Stats(ctx, servestore.StatsQuery{JobID: lq.params["job_id"], TaskName: lq.params["task_name"], Since: lq.since, Limit: lq.limit})
	})
}

// jsonList returns {"name":[items...]} and a newline; the items are JSON
// the store produced.
func jsonList(name string, items []json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"` + name + `":[`)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// GET /v1/audit?job_id=&limit= (authenticated)
func (s *Server) getAudit(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.authorize(w, r, forbiddenAudit); !ok {
		return
	}
	q, err := queryParams(r.URL.RawQuery, "job_id", "limit")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if v, ok := q["job_id"]; ok {
		err = checkJobID(v)
	}
	limit, e := parseLimit(q["limit"])
	if err = errors.Join(err, e); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var entries []servestore.AuditEntry
	if !s.storeRead(w, r, "audit", func(ctx context.Context) (err error) {
		entries, err = s.store.Audit.Audit(ctx, q["job_id"], limit)
		return err
	}) {
		return
	}
	if entries == nil {
		entries = []servestore.AuditEntry{}
	}
	body, err := encodeJSON(struct {
		Entries []servestore.AuditEntry `json:"entries"`
	}{entries})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal error: encoding the answer failed")
		return
	}
	writeBody(w, r, body, "no-store")
}
