package alert

import (
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// Alert is one alert's state as delivered to notifiers. Its JSON form is
// the body element of the webhook and the value on the alerts Kafka topic
// (docs/alerts.md); field order is fixed. All times are event time, in
// UTC.
type Alert struct {
	// ID is Identity.String(): "job_id/task_name/subtask/cause".
	ID string `json:"id"`
	// IncidentID names the incident of the alert's latest finding (package
	// incident; for hot_key alerts, the hottest key's incident). The
	// incidents table and GET /v1/incidents know it by this id.
	IncidentID string `json:"incident_id"`
	// Status is StatusFiring or StatusResolved.
	Status string `json:"status"`
	// Labels identify the alert to Alertmanager and routing rules. They
	// are fixed when the alert fires and do not change until it resolves,
	// because Alertmanager tells alerts apart by their whole label set.
	Labels map[string]string `json:"labels"`
	// Annotations describe the latest finding: summary, evidence, runbook
	// and more (docs/alerts.md).
	Annotations map[string]string `json:"annotations"`
	// StartsAt is the start of the first window of the condition.
	StartsAt time.Time `json:"starts_at"`
	// EndsAt is the end of the last window with a finding; set when the
	// alert is resolved only.
	EndsAt time.Time `json:"ends_at,omitzero"`
	// LastSeenAt is the end of the latest window with a finding.
	LastSeenAt time.Time `json:"last_seen_at"`
	// UpdatedAt is the event time of this notification (the window end or
	// watermark that caused it).
	UpdatedAt time.Time `json:"updated_at"`
	// Reason says why a resolved alert resolved: why its last incident
	// closed (incident.ReasonAbsent, ReasonJobRestarted, ReasonJobStopped,
	// ReasonResolvedByPlan, ReasonResolvedByRescale).
	Reason string `json:"reason,omitempty"`
	// Finding is the latest finding of the condition (for hot keys, the
	// hottest key's), in the findings contract.
	Finding *skew.Finding `json:"finding,omitempty"`

	id incident.Identity
}

// Identity returns the alert's identity (the zero Identity for an Alert
// decoded from JSON).
func (a *Alert) Identity() incident.Identity { return a.id }

// Alert statuses (Alert.Status).
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// EventKind names a transition of the state machine.
type EventKind string

// Event kinds. Only Firing, Renotify and Resolved are delivered to
// notifiers; Pending and Discarded are for metrics and tests.
const (
	// EventPending: the condition's first incident opened.
	EventPending EventKind = "pending"
	// EventFiring: an incident of the condition has lasted
	// (incident.Hysteresis.For).
	EventFiring EventKind = "firing"
	// EventRenotify: the alert is still firing, Config.
	// RenotifyInterval after its last notification.
	EventRenotify EventKind = "renotify"
	// EventResolved: the last incident of a firing alert closed.
	EventResolved EventKind = "resolved"
	// EventDiscarded: the last incident of a pending alert closed before
	// it fired.
	EventDiscarded EventKind = "discarded"
)

// Event is one transition of one alert.
type Event struct {
	Kind  EventKind
	Alert Alert
}

// Notify reports whether the event is delivered to notifiers.
func (e *Event) Notify() bool {
	return e.Kind == EventFiring || e.Kind == EventRenotify || e.Kind == EventResolved
}

// msTime converts epoch milliseconds to a UTC time.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
