package main

import (
	"fmt"
	"io"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// writeText prints one finding as a line for people: window time (UTC),
// kind, where, and the summary or the numbers.
func writeText(w io.Writer, f *skew.Finding) error {
	at := time.UnixMilli(f.WindowStart).UTC().Format("2006-01-02 15:04:05")
	where := f.TaskName
	if f.JobName != "" {
		where = f.JobName + "/" + where
	}
	if f.SubtaskIndex != nil {
		where = fmt.Sprintf("%s #%d", where, *f.SubtaskIndex)
	}
	var err error
	switch {
	case f.HotKey != nil:
		label := ""
		if f.Saturated != nil && !*f.Saturated {
			label = "; task not saturated"
			if !f.SkewsSubtask {
				label += ", no alert"
			}
		}
		_, err = fmt.Fprintf(w, "%s  hot_key            %-36s key %q carries %.1f%% (~%.0f records)%s\n",
			at, where, f.Key, f.Share*100, f.EstimatedRecords, label)
	case f.Stats != nil:
		st := f.Stats
		_, err = fmt.Fprintf(w, "%s  subtask_stats      %-36s busy %4.0f  bp %4.0f  idle %4.0f ms/s  in %9.1f/s  share %5.1f%%  inPool %.2f  outPool %.2f\n",
			at, where, st.BusyMsPerSecond, st.BackPressuredMsPerSecond, st.IdleMsPerSecond, st.RecordsInPerSecond, st.InputShare*100, st.InPoolUsage, st.OutPoolUsage)
	case f.Saturation != nil:
		_, err = fmt.Fprintf(w, "%s  %-18s %-36s %s\n", at, f.Cause, where, f.Summary)
	default:
		_, err = fmt.Fprintf(w, "%s  %-18s %-36s %s\n", at, f.Kind, where, f.Summary)
	}
	return err
}
