package incident

import (
	"cmp"
	"slices"

	"github.com/skewlens/skewlens/skew"
)

// RefusedJob is a job whose saved state a Restore refused (it does not
// decode or validate: another version, corruption): that job restarts
// without its history, the other jobs are restored. It is the one type
// every owner of per-job state refuses with (skew.RefusedJob); the stage
// that restores logs it and counts it
// (skewlens_<part>_state_refused_jobs_total).
type RefusedJob = skew.RefusedJob

// refusedJobs returns the refused jobs of a map, in job order.
func refusedJobs(m map[string]error) []RefusedJob {
	out := make([]RefusedJob, 0, len(m))
	for j, err := range m {
		out = append(out, RefusedJob{JobID: j, Err: err})
	}
	slices.SortFunc(out, func(a, b RefusedJob) int { return cmp.Compare(a.JobID, b.JobID) })
	return out
}
