package serve

import (
	"errors"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew/plans"
)

// HeaderLineage names, on a plan answer for a run that has no plan of its
// own for the task, the job id of the run whose plan it is (plans.Lineage).
const HeaderLineage = "X-Skewlens-Plan-Lineage"

// planQuery parses the query of GET /v1/salting/{job_id}/{task_name}: the
// asking run's job_name with the parallelism and max_parallelism of its
// keyed task, all three or none (then the run is anonymous and is served
// only its own plans). Unknown parameters are refused.
func planQuery(raw, jobID string) (plans.Run, error) {
	q, err := queryParams(raw, "job_name", "parallelism", "max_parallelism")
	if err != nil || len(q) == 0 {
		return plans.Run{}, err
	}
	name, hasName := q["job_name"]
	ps, hasP := q["parallelism"]
	ms, hasM := q["max_parallelism"]
	if !hasName || !hasP || !hasM {
		return plans.Run{}, badRequestf("job_name, parallelism and max_parallelism go together: give all three or none")
	}
	run := plans.Run{JobID: jobID, JobName: name}
	err = checkJobName(name)
	p, e := strconv.Atoi(ps)
	if e != nil || p < 1 {
		err = errors.Join(err, badRequestf("parallelism %q: must be an integer >= 1", ps))
	}
	m, e := strconv.Atoi(ms)
	if e != nil || m < 1 || m > maxMaxParallelism || (p >= 1 && m < p) {
		err = errors.Join(err, badRequestf("max_parallelism %q: must be an integer from parallelism to %d", ms, maxMaxParallelism))
	}
	run.Parallelism, run.MaxParallelism = p, m
	return run, err
}

// maxMaxParallelism is Flink's upper bound of max parallelism.
const maxMaxParallelism = 1 << 15

// checkJobName checks a job name as checkTaskName checks a task name:
// 1 to 256 bytes of valid UTF-8 without control characters.
func checkJobName(s string) error {
	switch {
	case s == "" || len(s) > MaxIDBytes:
		return badRequestf("job_name: must be 1 to %d bytes", MaxIDBytes)
	case !utf8.ValidString(s):
		return badRequestf("job_name %q: not valid UTF-8", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return badRequestf("job_name %q: contains control character %U", s, r)
		}
	}
	return nil
}
