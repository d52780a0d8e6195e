package localch

import (
	"context"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"
)

// TestStartStop starts a server from the embedded scripts in a temporary
// folder (not the checkout), checks that it listens, and stops it, twice.
func TestStartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("needs clickhouse-server (root and apt to install it); skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(t.TempDir()); err != nil { // scripts must not come from the checkout
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	s, err := Start(ctx, dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", s.Addr, 2*time.Second)
	if err != nil {
		t.Fatalf("server at %s does not listen: %v", s.Addr, err)
	}
	conn.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		t.Fatal("server still listens after Stop")
	}
	if _, err := os.Stat(s.bin); !os.IsNotExist(err) {
		t.Errorf("scripts folder %s left behind", s.bin)
	}
}
