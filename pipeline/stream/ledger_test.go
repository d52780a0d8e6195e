package stream

import (
	"reflect"
	"testing"
)

func TestLedger(t *testing.T) {
	a := partKey{"metrics", 0}
	b := partKey{"samples", 1}
	l := newLedger()
	// Offsets 10..12 of a: 10 and 12 in window 0, 11 in window 10000.
	for _, e := range []struct {
		k      partKey
		off    int64
		ws     int64
		holdIt bool
	}{{a, 10, 0, true}, {a, 11, 10000, true}, {a, 12, 0, true}, {b, 5, 10000, true}, {a, 13, 0, false}} {
		l.consumed(e.k, e.off)
		if e.holdIt {
			l.hold(e.k, e.ws, e.off)
		}
	}
	if got := l.pending(); len(got) != 0 {
		t.Fatalf("nothing is safe while window 0 is open, got %v", got)
	}
	l.release(10000) // window 0 written
	want := []commitPoint{{a, 11}}
	if got := l.pending(); !reflect.DeepEqual(got, want) {
		t.Fatalf("pending %v, want %v", got, want)
	}
	l.committed(want)
	if got := l.pending(); len(got) != 0 {
		t.Fatalf("already committed, got %v", got)
	}
	l.release(20000)
	want = []commitPoint{{a, 14}, {b, 6}}
	if got := l.pending(); !reflect.DeepEqual(got, want) {
		t.Fatalf("pending %v, want %v", got, want)
	}
}
