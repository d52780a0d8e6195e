package zktest

import (
	"os"
	"strconv"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv"
)

// launcher starts servers with deploy/zookeeper's scripts.
func launcher() *testenv.Launcher {
	return &testenv.Launcher{
		Name:    "zookeeper",
		Scripts: testenv.DeployDir("zookeeper"),
		Env:     []string{"SKEWLENS_ZK_WATCH_PID=" + strconv.Itoa(os.Getpid())},
		Logs:    []string{"log/stderr.log"},
	}
}

// StartPrivate starts a ZooKeeper server of t's own and stops it and
// removes its folder when t ends. It skips t under -short and fails t
// when the server cannot be started. The server's client address is the
// returned Process's Addr.
func StartPrivate(t testing.TB) *testenv.Process {
	t.Helper()
	testenv.SkipShort(t, "a ZooKeeper server")
	p, err := launcher().Start()
	if err != nil {
		t.Fatalf("zktest: cannot start ZooKeeper: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("zktest: %v", err)
		}
	})
	return p
}
