// Package top is the terminal view of `skewlens top`: per Flink job, the
// hot keys, the saturated subtasks and the skew score of each task in the
// job's newest windows, read through a topstore.Reader (the ClickHouse
// store's TopReader in production) and redrawn every few seconds. The
// view owns what it reads: its subpackage topstore declares the Reader,
// the Query and the Snapshot with its row types, so the view compiles
// without any store and a store without the view.
//
// Render draws one frame as text; it is pure (the same arguments give the
// same bytes), so golden files test it. Every string that comes from the
// data (keys of up to 64 KB, job, task and host names, summaries, errors)
// is escaped Go-style and cut to its column with an ellipsis by
// termtext, so it cannot inject terminal escape sequences, break lines or
// misalign the table. Style.Width fits every line to a terminal's width:
// the key, name and summary columns narrow first. Times are shown in the
// clock's zone, which the header names.
//
// Run refreshes until its context ends. On a terminal it clears the screen
// and redraws each frame in place, fitted to the terminal's width; on
// anything else (a pipe, a file) it prints the frames one after the other,
// separated by a line. A failed refresh shows its error in the footer
// under the last good data, and the next refresh simply tries again.
// Config.Once draws one frame and returns.
//
// WatchKeys reads q from a terminal to quit (its context ends), and
// WaitNotice prints the line the caller shows while it waits for the
// source at start.
//
// # Blocking and safety
//
// Run blocks until its context ends (or, with Once, until the frame is
// drawn); each refresh is bounded by Config.Timeout, and waiting between
// refreshes returns as soon as the context ends. A Top holds no state
// between Run calls; do not call Run concurrently on one Top, because the
// frames would interleave on the output. Render is safe for concurrent use.
// Each frame is written with one Write call. WatchKeys starts one goroutine
// that reads the terminal; Keys.Stop (safe twice) ends it within 100 ms
// and restores the terminal's mode, which the caller must do before it
// exits.
package top
