package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/skewlens/skewlens/sinks/servestore"
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
	s.serveList(w, r, "incidents", "state", func(v string) error {
		if !slices.Contains(incidentStates(), v) {
			return badRequestf("state %q: must be open or closed", v)
		}
		return nil
	}, func(ctx context.Context, lq listQuery) ([]json.RawMessage, error) {
		return s.store.Incidents.Incidents(ctx, servestore.IncidentsQuery{JobID: lq.params["job_id"], State: lq.params["state"], Since: lq.since, Limit: lq.limit})
	})
}
