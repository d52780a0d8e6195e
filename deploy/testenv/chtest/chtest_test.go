package chtest

import (
	"net"
	"os"
	"path/filepath"
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

func TestScriptsExist(t *testing.T) {
	for _, name := range []string{"install.sh", "start.sh", "stop.sh", "install-chdb.sh"} {
		st, err := os.Stat(filepath.Join(RepoRoot(), "deploy", "clickhouse", name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if st.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", name)
		}
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		in    string
		lines int
		want  string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb", 5, "a\nb"},
		{"", 3, ""},
	}
	for _, tt := range tests {
		if got := tail([]byte(tt.in), tt.lines); got != tt.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tt.in, tt.lines, got, tt.want)
		}
	}
}
