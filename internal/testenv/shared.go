package testenv

import (
	"errors"
	"sync"
	"testing"
)

// Shared is the one server of type T of a test process: the first Get
// starts it and later ones return it, so every test of a package shares
// it; Stop, called from TestMain after the tests, stops it. The zero value
// is ready to use. Get, Stop and Do are serialised with one another.
type Shared[T any] struct {
	mu      sync.Mutex
	started bool // a start was attempted
	running bool // v is a running server
	v       T
	err     error // the start error, reported to every later Get
}

// Get skips t under go test -short, saying it needs what (e.g. "a
// ClickHouse server"). Otherwise it returns the server, starting it with
// start on the first call, and fails t when the start failed, this time or
// an earlier one, or when the server was stopped.
func (s *Shared[T]) Get(t testing.TB, what string, start func() (T, error)) T {
	t.Helper()
	SkipShort(t, what)
	return s.get(t, what, start)
}

// get is Get without the skip, so that Shared's own tests run under -short.
func (s *Shared[T]) get(t testing.TB, what string, start func() (T, error)) T {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.started = true
		s.v, s.err = start()
		s.running = s.err == nil
	}
	if s.err != nil {
		t.Fatalf("cannot start %s: %v", what, s.err)
	}
	return s.v
}

// Stop stops the server with stop, if one was started and still runs;
// later calls to Get then fail. It is safe to call more than once.
func (s *Shared[T]) Stop(stop func(T) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	s.running = false
	s.err = errors.New("the server was stopped")
	return stop(s.v)
}

// Do calls f with the server and whether one runs, serialised with Get
// and Stop; for operations on a running server such as a restart.
func (s *Shared[T]) Do(f func(v T, running bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.v, s.running)
}
