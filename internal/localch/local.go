package localch

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// scripts are this folder's scripts. An embed.FS has to be a package-level
// variable; it is read-only.
//
//go:embed install.sh start.sh stop.sh
var scripts embed.FS

// Server is a running local clickhouse-server.
type Server struct {
	// Addr is its native-protocol address, 127.0.0.1:PORT.
	Addr string
	// Dir holds its configuration, data and logs.
	Dir string

	bin      string // the folder the scripts were written to
	log      *slog.Logger
	stopOnce sync.Once
	stopErr  error
}

// Start installs clickhouse-server when it is missing (Debian's package,
// through install.sh: needs root and apt), and starts a server with its
// data in dir, on a free loopback port. ctx bounds the installation and
// the start.
func Start(ctx context.Context, dir string, log *slog.Logger) (*Server, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("local clickhouse: %w", err)
	}
	bin, err := os.MkdirTemp("", "skewlens-ch-scripts-")
	if err != nil {
		return nil, fmt.Errorf("local clickhouse: %w", err)
	}
	s := &Server{Dir: dir, bin: bin, log: log}
	for _, name := range []string{"install.sh", "start.sh", "stop.sh"} {
		b, err := scripts.ReadFile(name)
		if err == nil {
			err = os.WriteFile(filepath.Join(bin, name), b, 0o755)
		}
		if err != nil {
			_ = os.RemoveAll(bin)
			return nil, fmt.Errorf("local clickhouse: write %s: %w", name, err)
		}
	}
	if err := s.script(ctx, "install.sh"); err != nil {
		_ = os.RemoveAll(bin)
		return nil, fmt.Errorf("install clickhouse-server: %w", err)
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(bin)
		return nil, fmt.Errorf("local clickhouse: %w", err)
	}
	if err := s.script(ctx, "start.sh", dir, strconv.Itoa(port)); err != nil {
		_ = os.RemoveAll(bin)
		return nil, fmt.Errorf("start local clickhouse-server: %w", err)
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	log.Info("started local ClickHouse", "addr", s.Addr, "data", dir)
	return s, nil
}

// Stop stops the server and waits until it has exited; its data stays in
// Dir for the next Start.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopErr = s.script(context.Background(), "stop.sh", s.Dir)
		if err := os.RemoveAll(s.bin); err != nil {
			s.stopErr = errors.Join(s.stopErr, err)
		}
		if s.stopErr != nil {
			s.stopErr = fmt.Errorf("stop local clickhouse-server: %w", s.stopErr)
		}
	})
	return s.stopErr
}

// script runs one of the scripts; the server it starts watches this
// process and stops when it exits.
func (s *Server) script(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(s.bin, name)}, args...)...)
	cmd.Env = append(os.Environ(), "SKEWLENS_CH_WATCH_PID="+strconv.Itoa(os.Getpid()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, tail(out))
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
