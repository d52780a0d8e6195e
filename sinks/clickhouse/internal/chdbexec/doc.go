// Command chdbexec runs SQL statements in an in-process chDB (embedded
// ClickHouse) session and reports each statement's result as one JSON line.
// It exists for the tests of package clickhouse, which check the modern
// schema dialect and the documented queries against a current ClickHouse.
//
// The chDB Go binding loads libchdb.so when the program starts and panics
// if it is missing, so this is a separate program: the tests build it, set
// CHDB_LIB_PATH and run it, and their own binary never links chDB.
//
// Usage:
//
//	CHDB_LIB_PATH=/path/libchdb.so chdbexec -path DIR -requests FILE </dev/null
//
// Requests come from a file, not stdin, because chDB reads an INSERT's
// data from the process's stdin when there is any: run it with stdin at
// /dev/null. Each request line is {"name":"…","sql":"…"}; each output line is
// {"name":"…","ok":true,"output":"…"} or {"name":"…","ok":false,"error":"…"}
// with the result in TabSeparated format. It exits non-zero only when
// chDB cannot be started or the requests cannot be read.
package main
