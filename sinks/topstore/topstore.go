package topstore

import (
	"context"
	"fmt"
	"time"
)

// Reader is where the view reads its snapshots.
type Reader interface {
	// View returns the newest windows of each job and what was wrong in
	// them; it fills in q's defaults with Query.WithDefaults and returns
	// the result as Snapshot.Query. It must return promptly when ctx
	// ends. The view retries nothing: each refresh is the next attempt.
	View(ctx context.Context, q Query) (Snapshot, error)
}

// The defaults of Query's zero fields, and the bounds of what one read
// may ask the store for.
const (
	DefaultLookback       = time.Hour
	DefaultWindows        = 3
	DefaultLimit          = 10
	DefaultMaxStringBytes = 256
	MaxWindows            = 1000
	MaxLimit              = 10000
	MaxStringBytes        = 1 << 20
)

// Query selects what a Reader reads. The zero value of every field means
// its default, named in the field's comment.
type Query struct {
	// Jobs restricts the view to these job ids. Default: every job.
	Jobs []string
	// Since is the oldest window start looked at. Default: DefaultLookback
	// before the read.
	Since time.Time
	// Windows is how many of each job's newest windows (with any finding)
	// the view covers. Default: DefaultWindows.
	Windows int
	// Limit is the most rows of each section (tasks, hot keys, saturated
	// subtasks) per job. Default: DefaultLimit.
	Limit int
	// MaxStringBytes is how many bytes of each key and summary are read;
	// longer ones are cut (keys may be 64 KB). Default:
	// DefaultMaxStringBytes.
	MaxStringBytes int
}

// WithDefaults returns q with the defaults filled in (Since relative to
// now), or an error when a field is out of range. A Reader calls it
// before it reads, and returns the result as Snapshot.Query.
func (q Query) WithDefaults(now time.Time) (Query, error) {
	if q.Since.IsZero() {
		q.Since = now.Add(-DefaultLookback)
	}
	q.Since = q.Since.UTC()
	if q.Since.UnixMilli() < 0 {
		q.Since = time.UnixMilli(0).UTC()
	}
	for _, set := range []struct {
		name     string
		v        *int
		def, max int
	}{
		{"windows", &q.Windows, DefaultWindows, MaxWindows},
		{"limit", &q.Limit, DefaultLimit, MaxLimit},
		{"max string bytes", &q.MaxStringBytes, DefaultMaxStringBytes, MaxStringBytes},
	} {
		switch {
		case *set.v == 0:
			*set.v = set.def
		case *set.v < 0 || *set.v > set.max:
			return q, fmt.Errorf("top query: %s %d outside 1..%d", set.name, *set.v, set.max)
		}
	}
	q.Jobs = append([]string(nil), q.Jobs...)
	return q, nil
}

// Snapshot is what a Reader read: per job, its newest windows and what
// was wrong in them.
type Snapshot struct {
	// Query is the query as run, with the defaults filled in.
	Query Query
	// Jobs are sorted by job name, then job id. A job appears when it has
	// any finding since Query.Since.
	Jobs []Job
}

// Job is one job's part of a Snapshot. Each section holds at most
// Query.Limit rows; the Total fields count the rows there would be without
// the limit.
type Job struct {
	JobID   string
	JobName string
	// Windows are the windows covered, newest first (at most
	// Query.Windows).
	Windows []Window
	// Tasks holds the latest skew score of each task, highest first.
	Tasks      []Task
	TasksTotal int
	// HotKeys are the job's hot keys in those windows, by their latest
	// share, highest first.
	HotKeys      []HotKey
	HotKeysTotal int
	// Saturated are the saturation findings in those windows, per task,
	// subtask and cause; the most recent first, then the busiest.
	Saturated      []Saturated
	SaturatedTotal int
}

// Window is one window, in epoch milliseconds as in the findings
// contract.
type Window struct {
	Start, End int64
}

// Task is the latest skew score of one task (Flink's data-skew score of
// the whole task, from subtask_stats and saturation findings).
type Task struct {
	TaskName       string
	SkewScore      float64
	MaxMedianRatio float64
	// Window is the newest window the score is from.
	Window Window
}

// HotKey is one hot key of one subtask, over the covered windows.
type HotKey struct {
	TaskName string
	// SubtaskIndex is -1 when the finding named no subtask.
	SubtaskIndex int
	// Key holds at most Query.MaxStringBytes bytes of the key (possibly
	// cut inside a UTF-8 sequence); KeyBytes is the key's full length.
	Key      string
	KeyBytes int
	// Share and EstimatedRecords are those of the newest window the key
	// was hot in, which is Window.
	Share            float64
	EstimatedRecords float64
	// ShareMargin is half the width of Share's 95 % interval (the share
	// is Share ± ShareMargin); 0 when the finding gave none (written
	// before the engine did). SubtaskShare ± SubtaskShareMargin is the
	// key's share of its saturated, skewed subtask's sampled records; 0
	// when the key is not on one.
	ShareMargin        float64
	SubtaskShare       float64
	SubtaskShareMargin float64
	Window             Window
	// Windows is in how many of the covered windows the key was hot.
	Windows int
}

// Saturated is one saturation cause of one subtask (SubtaskIndex -1: the
// whole task) over the covered windows. The numbers and texts are those
// of Window, the newest window it was found in.
type Saturated struct {
	TaskName                 string
	SubtaskIndex             int
	Cause                    string
	BusyMsPerSecond          float64
	BackPressuredMsPerSecond float64
	Host                     string
	// Summary holds at most Query.MaxStringBytes bytes of the summary;
	// SummaryBytes is its full length.
	Summary      string
	SummaryBytes int
	Window       Window
	// Windows is in how many of the covered windows it was found.
	Windows int
}
