package stream

import "log/slog"

// WarnRefusedState logs at WARN that the saved state of part (engine,
// plans, incidents, alerts) for job could not be restored, and that the
// job restarts without it: the one wording of that event, which
// operators search for, whichever owner of a job's state refused it.
// attrs (key, value pairs) come after the job, err last.
func WarnRefusedState(log *slog.Logger, part, job string, err error, attrs ...any) {
	args := append([]any{"part", part, "job", job}, attrs...)
	log.Warn("saved state of a job refused; it restarts without it", append(args, "err", err)...)
}
