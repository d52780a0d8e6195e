package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"
)

// incidentStates are the states GET /v1/incidents filters on (the
// incident package's StateOpen and StateClosed).
func incidentStates() []string { return []string{"open", "closed"} }

// GET /v1/incidents?job_id=&state=&since=&limit=
//
// since bounds the end of an incident's latest window (default
// DefaultFindingsWindow ago), so an incident that is still going is always
// listed. Without an incident reader in the Store it answers 404.
func (s *Server) getIncidents(w http.ResponseWriter, r *http.Request) {
	if s.store.Incidents == nil {
		writeError(w, http.StatusNotFound, "this server keeps no incidents")
		return
	}
	q, err := queryParams(r.URL.RawQuery, "job_id", "state", "since", "limit")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	iq := IncidentsQuery{JobID: q["job_id"], State: q["state"], Since: time.Now().Add(-DefaultFindingsWindow)}
	if v, ok := q["job_id"]; ok {
		err = errors.Join(err, checkJobID(v))
	}
	if v, ok := q["state"]; ok && !slices.Contains(incidentStates(), v) {
		err = errors.Join(err, badRequestf("state %q: must be open or closed", v))
	}
	if v, ok := q["since"]; ok {
		since, e := parseSince(v)
		err = errors.Join(err, e)
		iq.Since = since
	}
	limit, e := parseLimit(q["limit"])
	iq.Limit = limit
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
	var ins []json.RawMessage
	err = s.call(ctx, "incidents", func(ctx context.Context) (err error) {
		ins, err = s.store.Incidents.Incidents(ctx, iq)
		return err
	})
	if err != nil {
		s.storeError(w, "incidents", err)
		return
	}
	var b bytes.Buffer
	b.WriteString(`{"incidents":[`)
	for i, in := range ins {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(in)
	}
	b.WriteString("]}\n")
	writeBody(w, r, b.Bytes(), "no-cache")
}
