package servestore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skewlens/skewlens/skew/plans"
)

// Pinger checks that the store answers (GET /readyz).
type Pinger interface {
	Ping(ctx context.Context) error
}

// PlanReader reads the plans skewlens run stored and the operators'
// overrides.
type PlanReader interface {
	// CurrentPlans returns the plans not retired or expired at now.
	CurrentPlans(ctx context.Context, now time.Time) ([]plans.Plan, error)
	// Plan returns one task's current plan, or nil when it has none.
	Plan(ctx context.Context, jobID, taskName string, now time.Time) (*plans.Plan, error)
	// Overrides returns the active overrides.
	Overrides(ctx context.Context) ([]plans.Override, error)
}

// OverrideWriter stores the operators' changes, each with its audit entry.
type OverrideWriter interface {
	// PutOverride stores an override (replacing the one with the same
	// job, task, action and key) and records audit.
	PutOverride(ctx context.Context, o plans.Override, audit AuditEntry) error
	// DeleteOverride deactivates an override and records audit.
	DeleteOverride(ctx context.Context, jobID, taskName, action, key string, audit AuditEntry) error
}

// AuditReader reads the audit log.
type AuditReader interface {
	// Audit returns the newest audit entries, of one job or all (""),
	// newest first.
	Audit(ctx context.Context, jobID string, limit int) ([]AuditEntry, error)
}

// FindingReader reads findings.
type FindingReader interface {
	// Findings returns findings as JSON (the skew.Finding contract),
	// newest window first, never of kind subtask_stats (StatsReader
	// reads those).
	Findings(ctx context.Context, q FindingsQuery) ([]json.RawMessage, error)
}

// StatsReader reads the per-subtask statistics (findings of kind
// subtask_stats), which are kept apart from the findings.
type StatsReader interface {
	// Stats returns statistics rows as JSON (the skew.Finding contract,
	// kind subtask_stats), newest window first, then by job, task and
	// subtask.
	Stats(ctx context.Context, q StatsQuery) ([]json.RawMessage, error)
}

// Store is what serve's Server reads and writes (serve.New takes it).
// Every field is required but Incidents; in production each is a part of
// the ClickHouse store, in tests one fake may fill them all.
type Store struct {
	Ready     Pinger
	Plans     PlanReader
	Overrides OverrideWriter
	Audit     AuditReader
	Findings  FindingReader
	// Incidents serves GET /v1/incidents; optional: nil answers 404.
	Incidents IncidentReader
	Stats     StatsReader
}

// AuditEntry is one change made through the HTTP API, as the audit log
// stores it and GET /v1/audit returns it (its JSON is part of the API).
type AuditEntry struct {
	// At is when the change was made (stored in milliseconds).
	At time.Time `json:"at"`
	// By is the name of the token that authorised the change.
	By string `json:"by"`
	// Method is the HTTP method: POST or DELETE.
	Method string `json:"method"`
	// Action is the override action: pin, override or exclude.
	Action   string `json:"action"`
	JobID    string `json:"job_id"`
	TaskName string `json:"task_name"`
	// Key is the excluded key (exclude only).
	Key string `json:"key,omitempty"`
	// What is the change as sent, as JSON (the override for POST).
	What json.RawMessage `json:"what,omitempty"`
	// RemoteAddr is the client's address as the server saw it.
	RemoteAddr string `json:"remote_addr"`
	// Result says what the change did: created, replaced or deleted.
	Result string `json:"result"`
}

// FindingsQuery selects findings for FindingReader.Findings. Empty fields
// do not filter.
type FindingsQuery struct {
	// JobID and Kind select one job and one finding kind.
	JobID string
	Kind  string
	// Since is the earliest window start; zero means no lower bound.
	Since time.Time
	// Limit caps the number of findings; 0 means the store's default
	// (serve's Server always sets it, at most serve.MaxLimit).
	Limit int
}

// IncidentReader reads incidents (package incident) for GET /v1/incidents.
// Incidents returns their JSON bodies, latest start first. It makes one
// attempt; its errors are classified like FindingReader's.
type IncidentReader interface {
	Incidents(ctx context.Context, q IncidentsQuery) ([]json.RawMessage, error)
}

// IncidentsQuery selects incidents: of one job ("" all), in one state
// ("open", "closed" or "" both), whose latest window ended at or after
// Since (zero: any), at most Limit (0: the reader's default).
type IncidentsQuery struct {
	JobID string
	State string
	Since time.Time
	Limit int
}

// StatsQuery selects statistics rows for StatsReader.Stats. Empty fields
// do not filter.
type StatsQuery struct {
	// JobID and TaskName select one job and one task (by name, in any
	// job unless JobID is given too).
	JobID    string
	TaskName string
	// Since is the earliest window start; zero means no lower bound.
	Since time.Time
	// Limit caps the number of rows; 0 means the store's default (serve's
	// Server always sets it, at most serve.MaxLimit).
	Limit int
}

// NotReadyError is an error of Pinger.Ping that says why the store is
// not ready in words fit for any client of GET /readyz, without
// addresses or server messages: "not connected to ClickHouse yet (3
// attempts since 2026-12-03T10:00:00Z)". GET /readyz answers 503 with
// that reason; for any other Ping error it says "the store does not
// answer".
type NotReadyError interface {
	error
	NotReadyReason() string
}
