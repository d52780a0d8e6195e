package zktest

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestStartPrivateAnswers starts a server and asks it the four-letter
// word ruok, which a running ZooKeeper answers with imok.
func TestStartPrivateAnswers(t *testing.T) {
	p := StartPrivate(t)
	conn, err := net.DialTimeout("tcp", p.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("ruok")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "imok" {
		t.Errorf("ruok answered %q, want imok", got)
	}
}
