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

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	chdbpurego "github.com/chdb-io/chdb-go/chdb-purego"
)

type request struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

type response struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

func main() {
	path := flag.String("path", "", "data folder of the chDB session (required)")
	requests := flag.String("requests", "", "file of JSON request lines (required)")
	flag.Parse()
	if err := run(*path, *requests); err != nil {
		fmt.Fprintln(os.Stderr, "chdbexec:", err)
		os.Exit(1)
	}
}

func run(path, requests string) error {
	if path == "" || requests == "" {
		return fmt.Errorf("-path and -requests are required")
	}
	f, err := os.Open(requests)
	if err != nil {
		return fmt.Errorf("open requests: %w", err)
	}
	defer f.Close()
	conn, err := chdbpurego.NewConnectionFromConnString(path)
	if err != nil {
		return fmt.Errorf("open chDB session in %s: %w", path, err)
	}
	defer conn.Close()

	in := bufio.NewScanner(f)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return fmt.Errorf("decode request: %w", err)
		}
		resp := response{Name: req.Name}
		res, err := conn.Query(req.SQL, "TabSeparated")
		switch {
		case err != nil:
			resp.Error = err.Error()
		case res == nil:
			resp.OK = true
		case res.Error() != nil:
			resp.Error = res.Error().Error()
			res.Free()
		default:
			resp.OK = true
			resp.Output = res.String()
			res.Free()
		}
		if err := out.Encode(resp); err != nil {
			return fmt.Errorf("write response: %w", err)
		}
	}
	if err := in.Err(); err != nil {
		return fmt.Errorf("read requests: %w", err)
	}
	return nil
}
