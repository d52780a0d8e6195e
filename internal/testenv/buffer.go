package testenv

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a goroutine (a logger, a command the test
// runs) writes while the test reads it, as a condition of Eventually
// does. The zero value is empty and ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
