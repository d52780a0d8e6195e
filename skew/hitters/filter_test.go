package hitters

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"testing"
	"unsafe"
)

// legacySketch has the fields of Sketch before the filter (commit
// d4cae96): a 64-bit hash per counter where the filter cells are now, and
// no floor. legacyNew allocates what New allocated then; it is the memory
// budget the filtered sketch must stay within.
type legacySketch struct {
	k, n      int
	total     float64
	errs      []float64
	tags      []int32
	hashes    []uint64
	keys      [][]byte
	hc        []uint64
	heap, pos []int32
	table     []uint64
	shift     uint
	mask      uint64
}

func legacyNew(k int) *legacySketch {
	logSize := max(2, bits.Len64(2*uint64(k)-1))
	return &legacySketch{
		k:      k,
		errs:   make([]float64, k),
		tags:   make([]int32, k),
		hashes: make([]uint64, k),
		keys:   make([][]byte, k),
		hc:     make([]uint64, k),
		heap:   make([]int32, k),
		pos:    make([]int32, k),
		table:  make([]uint64, 1<<logSize),
		// The scalars as New set them then: they are part of the
		// struct's size, which heapBytes counts.
		n:     0,
		total: 0,
		shift: uint(64 - logSize),
		mask:  1<<logSize - 1,
	}
}

// arrayBytes is the size of the arrays behind the sketch's slices, the
// bookkeeping New allocates (key buffers, which grow to the keys' length
// per counter, come on top, for both designs alike).
func arrayBytes(s *Sketch) int {
	return cap(s.errs)*8 + cap(s.tags)*4 + cap(s.keys)*int(unsafe.Sizeof([]byte(nil))) +
		cap(s.cells)*4 + cap(s.hc)*8 + cap(s.heap)*4 + cap(s.pos)*4 + cap(s.table)*8
}

func legacyArrayBytes(s *legacySketch) int {
	return cap(s.errs)*8 + cap(s.tags)*4 + cap(s.hashes)*8 + cap(s.keys)*int(unsafe.Sizeof([]byte(nil))) +
		cap(s.hc)*8 + cap(s.heap)*4 + cap(s.pos)*4 + cap(s.table)*8
}

// heapBytes returns the bytes f allocates on the heap, as the runtime
// counts them (each object rounded up to its size class).
func heapBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

var (
	sinkSketch *Sketch
	sinkLegacy *legacySketch
)

// minHeapBytes is the least of heapBytes(f) over 20 runs: other
// goroutines' allocations only add to the count, and for tiny k arrays
// under 16 bytes share the allocator's 16-byte blocks, so that a single
// run's count depends on what was allocated before it.
func minHeapBytes(f func()) uint64 {
	m := uint64(math.MaxUint64)
	for range 20 {
		m = min(m, heapBytes(f))
	}
	return m
}

// TestEqualMemory: the filtered sketch takes exactly the bytes the plain
// one took, by the arrays it allocates and by what the runtime counts for
// New (the struct's 8 more bytes, floor, fall in the same size class).
func TestEqualMemory(t *testing.T) {
	for _, k := range []int{1, 2, 3, 100, 1000, 1024, 4096, 10000} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			if got, want := arrayBytes(New(k)), legacyArrayBytes(legacyNew(k)); got != want {
				t.Fatalf("arrays: %d bytes, before the filter %d", got, want)
			}
			got := minHeapBytes(func() { sinkSketch = New(k) })
			want := minHeapBytes(func() { sinkLegacy = legacyNew(k) })
			if got != want {
				t.Fatalf("New(%d) allocates %d bytes, before the filter %d", k, got, want)
			}
			if k == 1024 {
				t.Logf("k=%d: %d bytes of arrays, %d bytes allocated by New (before the filter: %d, %d)",
					k, arrayBytes(New(k)), got, legacyArrayBytes(legacyNew(k)), want)
			}
		})
	}
	sinkSketch, sinkLegacy = nil, nil
}

// TestRecallZipf11 is BenchmarkRecallZipf11's recall as a test: with
// 1024 counters, TopGuaranteed(200) must hold at least 99% of the 200
// heaviest keys of the Zipf(1.1) stream (the whole 2^20-update stream;
// plain Space-Saving at equal memory got 0.89).
func TestRecallZipf11(t *testing.T) {
	keys, ws := benchStream11()
	want := exactTop(keys, ws, recallAt)
	s := New(1024)
	for i, k := range keys {
		s.AddTagged(k, ws[i], int32(i&63))
	}
	got := recall(counterKeys(s.TopGuaranteed(recallAt)), want)
	t.Logf("recall@200 by Count-Err: %v, by Count: %v", got, recall(counterKeys(s.Top(recallAt)), want))
	if got < 0.99 {
		t.Fatalf("recall@200 = %v, want >= 0.99", got)
	}
}
