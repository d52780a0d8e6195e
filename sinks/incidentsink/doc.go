// Package incidentsink wires an incident.Tracker into the pipeline:
// IncidentObserver is a stage (a stream.Observer) that folds stored
// findings into incidents and stores the incident changes (the ClickHouse
// incidents table) before Observe returns, so before the runner saves the
// engine state and commits offsets.
//
// Crash safety: the stored incidents are the tracker's state. Resume
// loads the open incidents and each job's latest window at each
// assignment of partitions; a
// restarted pipeline replays the windows after its saved engine state,
// and the tracker ignores the findings of windows it already folded in,
// so the incidents table ends up as an uninterrupted run leaves it.
//
// Blocking and safety: IncidentObserver's methods serialise and block like the
// store's WriteIncidents; OnChange callbacks run on the caller's
// goroutine, under the IncidentObserver's lock, and must not block.
package incidentsink
