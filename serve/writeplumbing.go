package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew/plans"
)

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

// lockWrites waits for the write lock or ctx.
func (s *Server) lockWrites(ctx context.Context) (func(), error) {
	select {
	case s.writes <- struct{}{}:
		return func() { <-s.writes }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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

// writeTarget authorizes a write to a task's overrides and reads the
// task from the path: who writes, and which task. ok is false once an
// answer (401, 403 or 400) is written.
func (s *Server) writeTarget(w http.ResponseWriter, r *http.Request) (who string, t planTask, ok bool) {
	if who, ok = s.authorize(w, r, forbiddenWrite); !ok {
		return "", planTask{}, false
	}
	if t, ok = pathTask(w, r); !ok {
		return "", planTask{}, false
	}
	return who, t, true
}
