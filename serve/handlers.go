package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/plans"
)

// Results recorded in the audit log.
const (
	resultCreated  = "created"
	resultReplaced = "replaced"
	resultDeleted  = "deleted"
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

// readList makes the store read of a list endpoint (op names it in
// metrics and logs) within a store slot and StoreTimeout, retried by
// call. A failure is answered here, and ok is false once it is written.
func (s *Server) readList(w http.ResponseWriter, r *http.Request, op string, read func(ctx context.Context) ([]json.RawMessage, error)) (rows []json.RawMessage, ok bool) {
	release, ok := s.acquire(w)
	if !ok {
		return nil, false
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	err := s.call(ctx, op, func(ctx context.Context) (err error) {
		rows, err = read(ctx)
		return err
	})
	if err != nil {
		s.storeError(w, op, err)
		return nil, false
	}
	return rows, true
}

// GET /v1/findings?job_id=&kind=&since=&limit=
func (s *Server) getFindings(w http.ResponseWriter, r *http.Request) {
	lq, ok := parseList(w, r, func(q map[string]string) error {
		if v, ok := q["kind"]; ok {
			return checkKind(v)
		}
		return nil
	}, "job_id", "kind", "since", "limit")
	if !ok {
		return
	}
	fq := servestore.FindingsQuery{JobID: lq.params["job_id"], Kind: lq.params["kind"], Since: lq.since, Limit: lq.limit}
	fs, ok := s.readList(w, r, "findings", func(ctx context.Context) ([]json.RawMessage, error) {
		return s.store.Findings.Findings(ctx, fq)
	})
	if ok {
		writeBody(w, r, jsonList("findings", fs), "no-cache")
	}
}

// GET /v1/stats?job_id=&task_name=&since=&limit=
func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	lq, ok := parseList(w, r, func(q map[string]string) error {
		if v, ok := q["task_name"]; ok {
			return checkTaskName(v)
		}
		return nil
	}, "job_id", "task_name", "since", "limit")
	if !ok {
		return
	}
	sq := servestore.StatsQuery{JobID: lq.params["job_id"], TaskName: lq.params["task_name"], Since: lq.since, Limit: lq.limit}
	rows, ok := s.readList(w, r, "stats", func(ctx context.Context) ([]json.RawMessage, error) {
		return s.store.Stats.Stats(ctx, sq)
	})
	if ok {
		writeBody(w, r, jsonList("stats", rows), "no-cache")
	}
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
	release, ok := s.acquire(w)
	if !ok {
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	var entries []servestore.AuditEntry
	err = s.call(ctx, "audit", func(ctx context.Context) (err error) {
		entries, err = s.store.Audit.Audit(ctx, q["job_id"], limit)
		return err
	})
	if err != nil {
		s.storeError(w, "audit", err)
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

// Request bodies of the POST endpoints. Unknown fields are refused.
type (
	pinRequest struct {
		Reason string `json:"reason"`
	}
	overrideRequest struct {
		Plan   *plans.Plan `json:"plan"`
		Reason string      `json:"reason"`
	}
	excludeRequest struct {
		Key    string `json:"key"`
		Reason string `json:"reason"`
	}
)

// POST /v1/salting/{job_id}/{task_name}/{pin|override|exclude}
func (s *Server) postOverride(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		who, ok := s.authorize(w, r, forbiddenWrite)
		if !ok {
			return
		}
		t, ok := pathTask(w, r)
		if !ok {
			return
		}
		o := plans.Override{JobID: t.job, TaskName: t.task, Action: action, By: who}
		switch action {
		case plans.ActionPin:
			var req pinRequest
			if !s.decodeBody(w, r, &req, true) {
				return
			}
			o.Reason = req.Reason
		case plans.ActionOverride:
			var req overrideRequest
			if !s.decodeBody(w, r, &req, false) {
				return
			}
			if req.Plan == nil {
				writeError(w, http.StatusBadRequest, "override: plan required")
				return
			}
			// The plan belongs to the task of the path; it may leave
			// job_id and task_name out.
			if req.Plan.JobID == "" {
				req.Plan.JobID = t.job
			}
			if req.Plan.TaskName == "" {
				req.Plan.TaskName = t.task
			}
			o.Plan, o.Reason = req.Plan, req.Reason
		case plans.ActionExclude:
			var req excludeRequest
			if !s.decodeBody(w, r, &req, false) {
				return
			}
			if err := checkKey(req.Key); err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
			o.Key, o.Reason = req.Key, req.Reason
		}
		o.At = time.Now().UTC()
		if err := o.Validate(); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		ctx, ovs, done, ok := s.beginWrite(w, r)
		if !ok {
			return
		}
		defer done()
		existing, taskOvs := findOverride(ovs, t, action, o.Key)
		if existing == nil && len(taskOvs) >= s.cfg.MaxOverridesPerTask {
			writeError(w, http.StatusConflict, fmt.Sprintf("the task has %d overrides, the most allowed; delete some first", len(taskOvs)))
			return
		}
		if action == plans.ActionPin && existing == nil {
			// A pin freezes the plan served now; without one there is
			// nothing to freeze.
			var stored *plans.Plan
			err := s.call(ctx, "plan", func(ctx context.Context) (err error) {
				stored, err = s.store.Plans.Plan(ctx, t.job, t.task, time.Now())
				return err
			})
			if err != nil {
				s.storeError(w, "plan", err)
				return
			}
			if servedPlan(stored, taskOvs) == nil {
				writeError(w, http.StatusNotFound, "no current plan for this job and task to pin")
				return
			}
		}
		result := resultCreated
		var after time.Time
		if existing != nil {
			result, after = resultReplaced, existing.At
		}
		o.At = s.clock.next(after)
		what, err := encodeJSON(o)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal error: encoding the override failed")
			return
		}
		audit := servestore.AuditEntry{
			At: o.At, By: who, Method: r.Method, Action: action, JobID: t.job, TaskName: t.task,
			Key: o.Key, What: bytes.TrimSuffix(what, []byte("\n")), RemoteAddr: r.RemoteAddr, Result: result,
		}
		if err := s.call(ctx, "put override", func(ctx context.Context) error {
			return s.store.Overrides.PutOverride(ctx, o, audit)
		}); err != nil {
			s.storeError(w, "put override", err)
			return
		}
		s.snaps.invalidate()
		s.m.changes.WithLabelValues(r.Method, action).Inc()
		s.log.Info("skewlens API: override stored", "by", who, "action", action, "job_id", t.job,
			"task_name", t.task, "key_bytes", len(o.Key), "result", result, "remote_addr", r.RemoteAddr)
		status := http.StatusCreated
		if result == resultReplaced {
			status = http.StatusOK
		}
		writeJSON(w, status, o)
	}
}

// DELETE /v1/salting/{job_id}/{task_name}/overrides/{action}[?key=]
func (s *Server) deleteOverride(w http.ResponseWriter, r *http.Request) {
	who, ok := s.authorize(w, r, forbiddenWrite)
	if !ok {
		return
	}
	t, ok := pathTask(w, r)
	if !ok {
		return
	}
	action := r.PathValue("action")
	switch action {
	case plans.ActionPin, plans.ActionOverride, plans.ActionExclude:
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("action %.64q: must be pin, override or exclude", action))
		return
	}
	q, err := queryParams(r.URL.RawQuery, "key")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	key, hasKey := q["key"]
	switch {
	case action == plans.ActionExclude:
		if err := checkKey(key); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	case hasKey:
		writeError(w, http.StatusBadRequest, "key: only for exclude")
		return
	}
	ctx, ovs, done, ok := s.beginWrite(w, r)
	if !ok {
		return
	}
	defer done()
	existing, _ := findOverride(ovs, t, action, key)
	if existing == nil {
		writeError(w, http.StatusNotFound, "no such override")
		return
	}
	what, err := encodeJSON(struct {
		JobID    string `json:"job_id"`
		TaskName string `json:"task_name"`
		Action   string `json:"action"`
		Key      string `json:"key,omitempty"`
	}{t.job, t.task, action, key})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal error: encoding the audit entry failed")
		return
	}
	audit := servestore.AuditEntry{
		At: s.clock.next(existing.At), By: who, Method: r.Method, Action: action, JobID: t.job,
		TaskName: t.task, Key: key, What: bytes.TrimSuffix(what, []byte("\n")),
		RemoteAddr: r.RemoteAddr, Result: resultDeleted,
	}
	if err := s.call(ctx, "delete override", func(ctx context.Context) error {
		return s.store.Overrides.DeleteOverride(ctx, t.job, t.task, action, key, audit)
	}); err != nil {
		s.storeError(w, "delete override", err)
		return
	}
	s.snaps.invalidate()
	s.m.changes.WithLabelValues(r.Method, action).Inc()
	s.log.Info("skewlens API: override deleted", "by", who, "action", action, "job_id", t.job,
		"task_name", t.task, "key_bytes", len(key), "remote_addr", r.RemoteAddr)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// storeReady is the readiness check of GET /readyz: the store answers.
// Its error is the store's NotReadyError reason, or that it does not
// answer: never the store's own message, which may name addresses.
func (s *Server) storeReady(ctx context.Context) error {
	err := s.store.Ready.Ping(ctx)
	if err == nil {
		return nil
	}
	s.m.storeErrors.WithLabelValues("ping").Inc()
	s.log.Warn("skewlens API: store not ready", "err", err)
	var nr servestore.NotReadyError
	if errors.As(err, &nr) {
		return errors.New(nr.NotReadyReason())
	}
	return errors.New("the store does not answer")
}

// beginWrite starts a change of the overrides: it takes a store slot and
// the write lock (writes through one Server are serialised, so the
// overrides read here are still current when the change is stored) and
// reads the active overrides. When ok is false the answer has been
// written; otherwise call done when the change is over.
func (s *Server) beginWrite(w http.ResponseWriter, r *http.Request) (ctx context.Context, ovs []plans.Override, done func(), ok bool) {
	release, ok := s.acquire(w)
	if !ok {
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	unlock, err := s.lockWrites(ctx)
	if err != nil {
		cancel()
		release()
		s.storeError(w, "lock writes", err)
		return nil, nil, nil, false
	}
	done = func() { unlock(); cancel(); release() }
	err = s.call(ctx, "overrides", func(ctx context.Context) (err error) {
		ovs, err = s.store.Plans.Overrides(ctx)
		return err
	})
	if err != nil {
		done()
		s.storeError(w, "overrides", err)
		return nil, nil, nil, false
	}
	return ctx, ovs, done, true
}

// findOverride returns the active override of task t with action and key
// (nil when there is none) and all overrides of t.
func findOverride(ovs []plans.Override, t planTask, action, key string) (*plans.Override, []plans.Override) {
	var (
		found   *plans.Override
		taskOvs []plans.Override
	)
	for i := range ovs {
		o := &ovs[i]
		if o.JobID != t.job || o.TaskName != t.task {
			continue
		}
		taskOvs = append(taskOvs, *o)
		if o.Action == action && o.Key == key {
			found = o
		}
	}
	return found, taskOvs
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

// decodeBody reads the request body, at most MaxBodyBytes of valid UTF-8
// holding one JSON object without unknown fields, into v. An empty body
// leaves v as it is when optional. On failure it answers 400 or 413.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", s.cfg.MaxBodyBytes))
		} else {
			writeError(w, http.StatusBadRequest, "reading the request body failed")
		}
		return false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if optional {
			return true
		}
		writeError(w, http.StatusBadRequest, "request body required (JSON)")
		return false
	}
	// JSON decoding would replace invalid UTF-8 silently, storing another
	// key than the one sent.
	if !utf8.Valid(b) {
		writeError(w, http.StatusBadRequest, "request body: not valid UTF-8")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "request body: "+err.Error())
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, http.StatusBadRequest, "request body: more than one JSON value")
		return false
	}
	return true
}

// acquire takes one of the MaxConcurrentQueries slots, or answers 503
// with Retry-After and returns false when all are taken.
func (s *Server) acquire(w http.ResponseWriter) (func(), bool) {
	select {
	case s.queries <- struct{}{}:
		s.m.queriesActive.Inc()
		return func() {
			<-s.queries
			s.m.queriesActive.Dec()
		}, true
	default:
		s.m.rejected.WithLabelValues("busy").Inc()
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "too many requests in flight; retry later")
		return nil, false
	}
}

// lockWrites waits for the write lock or ctx.
func (s *Server) lockWrites(ctx context.Context) (func(), error) {
	select {
	case s.writes <- struct{}{}:
		return func() { <-s.writes }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// call runs one store operation, retrying retryable errors with
// Config.Retry until the policy or ctx (the request's StoreTimeout) ends:
// the Server is the one layer that retries store calls. When ctx ends
// while it waits to retry, the store's last error is returned, so the
// answer says what the store said (unavailable: 503) rather than that it
// did not answer in time (504, for a call the deadline cut short).
func (s *Server) call(ctx context.Context, op string, fn func(context.Context) error) error {
	var last error
	notify := func(attempt int, wait time.Duration, err error) {
		s.m.storeRetries.WithLabelValues(op).Inc()
		s.log.Debug("skewlens API: retrying a store call", "op", op, "attempt", attempt, "wait", wait, "err", err)
	}
	err := retry.Do(ctx, s.cfg.Retry, notify, func(ctx context.Context) error {
		last = fn(ctx)
		return last
	})
	if err != nil && last != nil && ctx.Err() != nil && !errors.Is(last, ctx.Err()) {
		return last
	}
	return err
}

// storeError answers a failed store call: 504 when it timed out, 500 when
// retrying cannot help (retry.IsPermanent: schema mismatch, bad data),
// else 503 with Retry-After. Details go to the log, not the client.
func (s *Server) storeError(w http.ResponseWriter, op string, err error) {
	s.m.storeErrors.WithLabelValues(op).Inc()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		s.log.Warn("skewlens API: store call timed out", "op", op, "err", err)
		writeError(w, http.StatusGatewayTimeout, "the store did not answer in time")
	case retry.IsPermanent(err):
		s.log.Error("skewlens API: store call failed", "op", op, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error (see the server log)")
	default:
		s.log.Warn("skewlens API: store call failed", "op", op, "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "the store is unavailable; retry later")
	}
}
