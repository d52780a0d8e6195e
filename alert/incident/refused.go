package incident

import (
	"cmp"
	"fmt"
	"slices"
)

// RefusedJob is a job whose saved state a Restore refused (it does not
// decode or validate: another version, corruption): that job restarts
// without its history, the other jobs are restored. The package alert
// returns it too; the stage that restores logs it and counts it
// (skewlens_<part>_state_refused_jobs_total).
type RefusedJob struct {
	JobID string
	Err   error
}

// Error says which job was refused and why.
func (r RefusedJob) Error() string { return fmt.Sprintf("job %.64q: %v", r.JobID, r.Err) }

// refusedJobs returns the refused jobs of a map, in job order.
func refusedJobs(m map[string]error) []RefusedJob {
	out := make([]RefusedJob, 0, len(m))
	for j, err := range m {
		out = append(out, RefusedJob{JobID: j, Err: err})
	}
	slices.SortFunc(out, func(a, b RefusedJob) int { return cmp.Compare(a.JobID, b.JobID) })
	return out
}
