package hitters

import (
	"cmp"
	"maps"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// recallAt is the number of true heaviest keys the recall benchmark asks
// for.
const recallAt = 200

// exactTop returns the n heaviest keys of the stream, by exact weight (ties
// by key).
func exactTop(keys []string, ws []float64, n int) []string {
	m := map[string]float64{}
	for i, k := range keys {
		m[k] += ws[i]
	}
	all := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b))
	})
	return all[:min(n, len(all))]
}

// recall is the fraction of want found in got.
func recall(got, want []string) float64 {
	in := make(map[string]bool, len(got))
	for _, k := range got {
		in[k] = true
	}
	hits := 0
	for _, k := range want {
		if in[k] {
			hits++
		}
	}
	return float64(hits) / float64(len(want))
}

func counterKeys(cs []Counter) []string {
	keys := make([]string, len(cs))
	for i, c := range cs {
		keys[i] = c.Key
	}
	return keys
}

// BenchmarkRecallZipf11 feeds the Zipf(1.1) stream to a sketch with 1024
// counters (and its 2048 float32 filter cells) and to the plain filtered
// Space-Saving below with as many counters and 4096 float64 cells (32 KiB
// more), one whole stream per op, and reports the update rate and
// recall@200: the share of the 200 heaviest keys (by exact weight) among
// the 200 each reports. The sketch reports its top two ways: by Count
// (Top, an upper bound of each key's weight) and by the guaranteed weight
// Count-Err (TopGuaranteed). TestRecallZipf11 checks the latter.
func BenchmarkRecallZipf11(b *testing.B) {
	keys, ws := benchStream11()
	want := exactTop(keys, ws, recallAt)
	b.Run("space-saving", func(b *testing.B) {
		s := New(1024)
		for b.Loop() {
			s.Reset()
			for i, k := range keys {
				s.Add(k, ws[i])
			}
		}
		reportRate(b, b.N*len(keys))
		b.ReportMetric(recall(counterKeys(s.Top(recallAt)), want), "recall@200-by-count")
		b.ReportMetric(recall(counterKeys(s.TopGuaranteed(recallAt)), want), "recall@200")
	})
	b.Run("filtered-space-saving", func(b *testing.B) {
		var f *filteredSS
		for b.Loop() {
			f = newFilteredSS(1024, 4096)
			for i, k := range keys {
				f.add(k, ws[i])
			}
		}
		reportRate(b, b.N*len(keys))
		b.ReportMetric(recall(f.top(recallAt), want), "recall@200")
	})
}

// filteredSS is filtered Space-Saving (Homem and Carvalho, 2010) for
// weighted updates, the baseline of BenchmarkRecallZipf11, written
// plainly (a map and a binary heap). A key without a counter first
// raises the alpha of its filter bucket, an upper bound of what any key
// of the bucket without a counter weighs; it takes the smallest counter
// only once alpha plus its weight exceeds that counter's count, with its
// bucket's alpha as its error. Evictions, and the error they bring, are
// therefore far rarer than in plain Space-Saving. It keeps the stream's
// key strings instead of copying them, which only flatters its speed.
type filteredSS struct {
	k      int
	alpha  []float64
	mask   uint64
	index  map[string]int32
	keys   []string
	counts []float64
	heap   []int32 // counter indices, a min-heap by count
	pos    []int32 // heap position of each counter
}

// newFilteredSS returns a baseline with k counters and a filter of
// buckets buckets (a power of two).
func newFilteredSS(k, buckets int) *filteredSS {
	return &filteredSS{k: k, alpha: make([]float64, buckets), mask: uint64(buckets - 1), index: make(map[string]int32, k)}
}

func (f *filteredSS) add(key string, w float64) {
	if i, ok := f.index[key]; ok {
		f.counts[i] += w
		f.down(int(f.pos[i]))
		return
	}
	a := &f.alpha[xxhash.Sum64String(key)&f.mask]
	if len(f.keys) < f.k {
		i := int32(len(f.keys))
		f.keys = append(f.keys, key)
		f.counts = append(f.counts, *a+w)
		f.index[key] = i
		f.heap = append(f.heap, i)
		f.pos = append(f.pos, i)
		f.up(len(f.heap) - 1)
		return
	}
	i := f.heap[0]
	if *a+w <= f.counts[i] {
		*a += w
		return
	}
	// The evicted key may weigh up to its count: its bucket's bound rises
	// to that.
	old := &f.alpha[xxhash.Sum64String(f.keys[i])&f.mask]
	*old = max(*old, f.counts[i])
	delete(f.index, f.keys[i])
	f.keys[i] = key
	f.counts[i] = *a + w
	f.index[key] = i
	f.down(0)
}

func (f *filteredSS) up(p int) {
	for p > 0 {
		q := (p - 1) / 2
		if f.counts[f.heap[q]] <= f.counts[f.heap[p]] {
			return
		}
		f.swap(p, q)
		p = q
	}
}

func (f *filteredSS) down(p int) {
	for {
		c := 2*p + 1
		if c >= len(f.heap) {
			return
		}
		if c+1 < len(f.heap) && f.counts[f.heap[c+1]] < f.counts[f.heap[c]] {
			c++
		}
		if f.counts[f.heap[p]] <= f.counts[f.heap[c]] {
			return
		}
		f.swap(p, c)
		p = c
	}
}

func (f *filteredSS) swap(p, q int) {
	f.heap[p], f.heap[q] = f.heap[q], f.heap[p]
	f.pos[f.heap[p]], f.pos[f.heap[q]] = int32(p), int32(q)
}

// top returns the keys of the n largest counts (ties by key).
func (f *filteredSS) top(n int) []string {
	idx := make([]int, len(f.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(f.counts[b], f.counts[a]), cmp.Compare(f.keys[a], f.keys[b]))
	})
	out := make([]string, 0, n)
	for _, i := range idx[:min(n, len(idx))] {
		out = append(out, f.keys[i])
	}
	return out
}
