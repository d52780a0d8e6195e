// Command skewlens finds the subtask that makes a Flink checkpoint time
// out, names the cause, and says what to change.
//
// This package only wires components together: flags become the Config
// structs of the packages that do the work. Run `skewlens help` for the
// commands.
package main
