package chtest

import (
	"net"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// TestStart checks that Start gives a server that accepts native protocol
// connections and that a second Start returns the same one.
func TestStart(t *testing.T) {
	addr := Start(t)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c.Close()
	if again := Start(t); again != addr {
		t.Errorf("second Start = %s, want %s", again, addr)
	}
}
