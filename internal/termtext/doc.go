// Package termtext makes text from the data safe for a terminal and fits
// it to a width: `skewlens top` and the `-o text` lines of analyze and
// run draw keys, job, task and host names, summaries and errors through
// it, so that there is one way to escape them.
//
// Quote and Clean escape a string Go-style (control characters, invalid
// UTF-8, bidi overrides and other non-printable runes become \n, \x1b,
// \u202e, ...), so that a key cannot move the cursor, change colors,
// break a line or reorder the text around it, and cut it to a number of
// columns by display width (go-runewidth's tables: wide CJK and emoji
// take two columns), never inside a rune or an escape, marking the cut
// with an ellipsis. Fit cuts a whole line built from such pieces (and the
// caller's own color sequences) to the terminal's width. Columns reads
// that width.
//
// # Blocking and safety
//
// Every function is pure except Columns and IsTerminal, which ask the
// operating system about a file; all are safe for concurrent use and
// never block.
package termtext
