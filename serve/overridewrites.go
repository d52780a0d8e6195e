package serve

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/plans"
)

// Results recorded in the audit log.
const (
	resultCreated  = "created"
	resultReplaced = "replaced"
	resultDeleted  = "deleted"
)

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
		who, t, ok := s.writeTarget(w, r)
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
	who, t, ok := s.writeTarget(w, r)
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
