// Package replay streams recorded input files through the decoders, the
// window feeder and the engine, the way `skewlens analyze` does. Files are
// read line by line and never held in memory whole; several files are
// merged by event time so that, say, a metrics file and a key-sample file
// of the same incident interleave as they happened. Each file has its
// own decoder, so a "# skewlens-scrape-time" comment in a file of raw
// Prometheus scrapes times that file's lines only.
//
// Bad lines are counted by reason and reported through a callback; they
// never stop the replay. An input whose stream ends in the middle (a
// truncated gzip file) ends there: its records so far count, the other
// inputs play on, and Run reports it (Stats.Truncated, ErrTruncated). Run is not safe for concurrent use of the same
// Feeder.
package replay
