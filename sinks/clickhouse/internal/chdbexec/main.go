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
