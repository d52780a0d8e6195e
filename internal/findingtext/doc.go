// Package findingtext writes findings and incidents as lines of text for
// people: analyze -o text and run's terminal. Every string from the data
// is escaped and cut by display width through internal/termtext, so a hostile
// job name or key cannot reach a terminal raw. The functions are pure
// apart from writing to the given io.Writer, and safe for concurrent use
// on different writers.
package findingtext
