package hitters

import (
	"bytes"
	"math"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// NoTag is the tag of a counter that no AddTagged call has tagged since
// the counter last changed hands.
const NoTag int32 = -1

// MaxK is the largest number of counters a Sketch can have. Counter indices
// are stored in 32 bits inside the hash table.
const MaxK = math.MaxInt32 - 1

// Counter is one key's entry in a Sketch.
type Counter struct {
	Key   string
	Count float64 // Upper bound on the key's true weight.
	Err   float64 // Overestimation bound: Count-Err is a lower bound on the true weight.
	Tag   int32   // Tag of the most recent AddTagged for the key, or NoTag.
}

// Sketch is a weighted filtered Space-Saving summary that keeps at most k
// counters behind a filter of 2k cells. See the package documentation for
// its guarantees. Not safe for concurrent use.
//
// Counters live in parallel arrays indexed by counter index; a counter
// never moves once assigned, only its contents change when it is taken
// over by a new key. A min-heap ordered by count finds the counter to
// evict, and an open-addressing hash table maps keys to counter indices.
type Sketch struct {
	k     int
	n     int     // Counters in use; indices [0, n) are live.
	total float64 // Sum of all accepted weights, including merged totals.

	errs []float64
	tags []int32
	keys [][]byte // Per-counter key storage, reused across evictions.

	// cells is the filter: cell c bounds the true weight of every key
	// without a counter whose hash maps to c (see cell), once capped by
	// limit. Its 2k float32 take the bytes a per-counter 64-bit hash took
	// before, so the filter costs no memory: a key's hash is recomputed
	// when its counter is taken over, which the filter makes rare. Values
	// are rounded up to float32, so they stay upper bounds.
	cells []float32
	// floor bounds the weight of keys without a counter on top of the
	// counts: 0, except after merging a sketch with fewer counters, whose
	// absent keys may weigh more than this sketch's smallest count.
	floor float64

	// The heap is a 4-ary min-heap: its position p holds counter heap[p]
	// whose count is hc[p], and pos is the inverse of heap. Counts live in
	// heap order rather than counter order because sifting is the hot part
	// of an eviction: a node's four children's counts are then adjacent in
	// one cache line, and four children halve the depth of a binary heap.
	//
	// Counts are stored as their IEEE 754 bit patterns. They are never
	// negative or NaN, and for such values the bit patterns order exactly
	// like the numbers, so the heap can compare them as integers, which
	// the compiler turns into conditional moves instead of hard-to-predict
	// float branches.
	hc   []uint64
	heap []int32
	pos  []int32

	// table is a linear-probing hash table of size a power of two, at least
	// 2k, so it is at most half full and probe sequences stay short. Each
	// entry holds the high 32 bits of the key's hash in its high half and
	// counter index + 1 in its low half; 0 means empty, so clearing the
	// table is a memclr. A key's home slot is taken from the top bits of
	// its hash, so it can be recomputed from the entry alone when deletion
	// shifts entries, and the stored bits reject almost all mismatches
	// without touching key bytes.
	table []uint64
	shift uint // 64 - log2(len(table)): home slot = hash >> shift.
	mask  uint64
}

// arity is the fan-out of the heap.
const arity = 4

// cellsPerCounter is the filter's size relative to k: two float32 cells
// take the 8 bytes per counter that the stored key hash took before the
// filter, and they lift recall@200 on Zipf 1.1 at k = 1024 from 0.89 to 1
// (one cell per counter, as float64, reaches only 0.995).
const cellsPerCounter = 2

// New returns an empty Sketch with k counters. It panics if k < 1 or
// k > MaxK: a sketch without counters cannot answer anything, so that is a
// programming error rather than a runtime condition.
func New(k int) *Sketch {
	if k < 1 || k > MaxK {
		panic("hitters: New: k must be in [1, MaxK]")
	}
	// At least 4 slots, so even k = 1 leaves the table with empty slots,
	// which terminate every probe sequence. k <= MaxK keeps the size at
	// most 2^32, so the home slot fits in the 32 hash bits kept per entry.
	logSize := max(2, bits.Len64(2*uint64(k)-1))
	return &Sketch{
		k:     k,
		errs:  make([]float64, k),
		tags:  make([]int32, k),
		keys:  make([][]byte, k),
		cells: make([]float32, cellsPerCounter*k),
		hc:    make([]uint64, k),
		heap:  make([]int32, k),
		pos:   make([]int32, k),
		table: make([]uint64, 1<<logSize),
		shift: uint(64 - logSize),
		mask:  1<<logSize - 1,
	}
}

// cell returns the filter cell of a key with hash h. It uses the low 32
// bits, which the hash table does not, so that keys sharing a cell do not
// also crowd the same probe sequence; the multiply maps them onto any
// number of cells without a division.
func (s *Sketch) cell(h uint64) int {
	return int(uint64(uint32(h)) * uint64(len(s.cells)) >> 32)
}

// limit bounds the true weight of any key without a counter: the smallest
// count once the sketch is full (0 before, when every key seen has a
// counter), and at least floor.
func (s *Sketch) limit() float64 {
	if s.n < s.k {
		return s.floor
	}
	return max(s.floor, math.Float64frombits(s.hc[0]))
}

// absent returns the bound the sketch has on the true weight of a key
// without a counter whose hash is h: its cell, capped by limit.
func (s *Sketch) absent(h uint64) float64 {
	return min(float64(s.cells[s.cell(h)]), s.limit())
}

// roundUp32 returns the smallest float32 at or above x >= 0 (+Inf beyond
// the float32 range, which absent caps), so a cell never understates.
func roundUp32(x float64) float32 {
	if x > math.MaxFloat32 {
		return float32(math.Inf(1))
	}
	r := float32(x)
	if float64(r) < x {
		r = math.Float32frombits(math.Float32bits(r) + 1)
	}
	return r
}

// The engine uses New, AddTagged, TopGuaranteed and Reset. Top, K, Len, Total, MinCount,
// Estimate, Add and Merge are used only by this package's tests, fuzz
// target and benchmarks (deadcode lists them): they are kept as the
// sketch's complete, tested API, because the tests check the Space-Saving
// guarantees through them.

// K returns the number of counters the sketch may use.
func (s *Sketch) K() int { return s.k }

// Len returns the number of counters in use.
func (s *Sketch) Len() int { return s.n }

// Total returns N, the sum of all weights accepted by Add and AddTagged,
// plus the totals of all sketches merged in.
func (s *Sketch) Total() float64 { return s.total }

// MinCount returns the smallest count in a full sketch, or 0 if the sketch
// still has free counters. Any key without a counter has a true weight of
// at most MinCount, and MinCount <= Total()/K(). (After merging a sketch
// with fewer counters, MinCount may be larger: see Merge.)
func (s *Sketch) MinCount() float64 { return s.limit() }

// count returns the count of counter i.
func (s *Sketch) count(i int) float64 { return math.Float64frombits(s.hc[s.pos[i]]) }

// Estimate returns the bounds the sketch has for key's true weight:
// count-err <= true <= count. For a key without a counter, ok is false and
// count = err = the key's filter cell capped by MinCount(), since the
// sketch only knows that the key's weight is somewhere between 0 and that
// bound. It does not allocate.
func (s *Sketch) Estimate(key string) (count, err float64, ok bool) {
	h := xxhash.Sum64String(key)
	if i := s.find(key, h); i >= 0 {
		return s.count(i), s.errs[i], true
	}
	a := s.absent(h)
	return a, a, false
}

// Add adds weight w to key. Weights must be positive and finite; the caller
// is expected to validate them, but a weight that is not (zero, negative,
// NaN or ±Inf) is ignored so that a bad value cannot corrupt the sketch.
// Totals beyond math.MaxFloat64 are not supported.
//
// key may alias a buffer that the caller reuses after the call: the sketch
// copies the bytes it keeps. A key that gets a new counter through Add has
// tag NoTag; adding to an existing counter leaves its tag unchanged.
func (s *Sketch) Add(key string, w float64) {
	s.add(key, w, NoTag, false)
}

// AddTagged is Add that also records tag on the key's counter, for example
// the index of the subtask that received the record. The counter keeps the
// most recent tag.
func (s *Sketch) AddTagged(key string, w float64, tag int32) {
	s.add(key, w, tag, true)
}

func (s *Sketch) add(key string, w float64, tag int32, setTag bool) {
	// The negated comparison also rejects NaN; the upper bound rejects +Inf.
	if !(w > 0 && w <= math.MaxFloat64) {
		return
	}
	s.total += w
	h := xxhash.Sum64String(key)

	// Inline probe: on a hit this is the whole update apart from the sift.
	frag := h &^ 0xFFFFFFFF
	table, mask := s.table, s.mask
	for p := h >> s.shift; ; p = (p + 1) & mask {
		e := table[p]
		if e == 0 {
			break
		}
		if e&^0xFFFFFFFF != frag {
			continue
		}
		i := int(uint32(e)) - 1
		if string(s.keys[i]) != key {
			continue
		}
		if setTag {
			s.tags[i] = tag
		}
		// A count only grows, so the counter can only move down the heap.
		hp := int(s.pos[i])
		s.siftDown(hp, math.Float64bits(math.Float64frombits(s.hc[hp])+w))
		return
	}

	c := &s.cells[s.cell(h)]
	if s.n < s.k {
		// A free counter. The key's weight before this update is at most
		// its cell capped by floor: 0 unless a merge left bounds behind,
		// so until the sketch first fills up every count is exact.
		a := min(float64(*c), s.floor)
		i := s.n
		s.n++
		s.keys[i] = append(s.keys[i][:0], key...)
		s.errs[i] = a
		s.tags[i] = tag
		s.insert(h, i)
		s.heap[i] = int32(i)
		s.siftUp(i, math.Float64bits(a+w))
		return
	}

	// Full. The key's weight so far is at most a, its cell capped by the
	// smallest count m (any key without a counter weighs at most m).
	m := math.Float64frombits(s.hc[0])
	lim := max(s.floor, m)
	a := min(float64(*c), lim)
	if a+w <= lim {
		// The key stays in the filter: its cell still bounds every key
		// of the cell without a counter, and no more than lim, so a key
		// too light to matter costs no counter and no error elsewhere.
		*c = roundUp32(a + w)
		return
	}

	// The key takes over the counter with the smallest count m: count
	// a+w is an upper bound of its weight and err = a bounds the
	// overestimate. a+w > lim >= m, so the minimum only grows. The
	// evicted key weighs at most m, which its cell must now cover.
	i := int(s.heap[0])
	hy := xxhash.Sum64(s.keys[i])
	s.remove(hy, i)
	if cy := &s.cells[s.cell(hy)]; float64(*cy) < m {
		*cy = roundUp32(m)
	}
	s.keys[i] = append(s.keys[i][:0], key...)
	s.errs[i] = a
	s.tags[i] = tag
	s.insert(h, i)
	s.siftDown(0, math.Float64bits(a+w))
}

// find returns the counter index of key, whose hash is h, or -1.
func (s *Sketch) find(key string, h uint64) int {
	frag := h &^ 0xFFFFFFFF
	for p := h >> s.shift; ; p = (p + 1) & s.mask {
		e := s.table[p]
		if e == 0 {
			return -1
		}
		if e&^0xFFFFFFFF == frag {
			if i := int(uint32(e)) - 1; string(s.keys[i]) == key {
				return i
			}
		}
	}
}

// insert adds counter i with hash h to the table. The key must be absent.
func (s *Sketch) insert(h uint64, i int) {
	p := h >> s.shift
	for s.table[p] != 0 {
		p = (p + 1) & s.mask
	}
	s.table[p] = h&^0xFFFFFFFF | uint64(i+1)
}

// remove deletes counter i, whose key hashes to h, from the table.
//
// It uses backward-shift deletion instead of tombstones: entries after the
// hole that could legally sit in it are moved back, so every probe sequence
// stays unbroken and the table never fills up with tombstones under the
// constant churn of evictions.
func (s *Sketch) remove(h uint64, i int) {
	mask, shift := s.mask, s.shift
	want := uint32(i + 1)
	p := h >> shift
	for uint32(s.table[p]) != want {
		p = (p + 1) & mask
	}
	for {
		s.table[p] = 0
		q := p
		for {
			q = (q + 1) & mask
			e := s.table[q]
			if e == 0 {
				return
			}
			home := e >> shift
			// The entry at q may move to the hole at p only if p lies on
			// its probe path, that is, its home is no further along than p
			// (cyclically, as seen from q).
			if (q-home)&mask >= (q-p)&mask {
				s.table[p] = e
				p = q
				break
			}
		}
	}
}

// siftDown sets the count bits at heap position p to c, which must not be
// smaller than before, and restores the heap below p.
func (s *Sketch) siftDown(p int, c uint64) {
	hc, heap, pos := s.hc[:s.n], s.heap[:s.n], s.pos
	n := len(hc)
	i := heap[p]
	for {
		first := arity*p + 1
		if first >= n {
			break
		}
		// Find the smallest child; the first one wins ties, which keeps
		// the choice deterministic.
		var j int
		var cj uint64
		if first+arity <= n {
			// All four children exist. Which one is smallest is
			// unpredictable, so pick it with a branch-free tournament.
			ch := hc[first : first+arity : first+arity]
			m01, j01 := minOf(ch[0], ch[1], 0, 1)
			m23, j23 := minOf(ch[2], ch[3], 2, 3)
			cj, j = minOf(m01, m23, j01, j23)
			j += first
		} else {
			j, cj = first, hc[first]
			for q := first + 1; q < n; q++ {
				if hc[q] < cj {
					j, cj = q, hc[q]
				}
			}
		}
		if c <= cj {
			break
		}
		hc[p] = cj
		heap[p] = heap[j]
		pos[heap[p]] = int32(p)
		p = j
	}
	hc[p] = c
	heap[p] = i
	pos[i] = int32(p)
}

// minOf returns the smaller of a and b with its index (ia or ib), and a on
// a tie, without branches. It relies on a and b being below 2^63, which
// holds for the bit patterns of non-negative floats, so that a-b does not
// overflow as a signed number and its sign bit says whether b < a.
func minOf(a, b uint64, ia, ib int) (uint64, int) {
	lt := int64(b-a) >> 63 // All ones if b < a, else zero.
	return a ^ (a^b)&uint64(lt), ia ^ (ia^ib)&int(lt)
}

// siftUp sets the count bits at heap position p to c and restores the
// heap above p. It is only used when a counter is appended.
func (s *Sketch) siftUp(p int, c uint64) {
	hc, heap, pos := s.hc, s.heap, s.pos
	i := heap[p]
	for p > 0 {
		parent := (p - 1) / arity
		if hc[parent] <= c {
			break
		}
		hc[p] = hc[parent]
		heap[p] = heap[parent]
		pos[heap[p]] = int32(p)
		p = parent
	}
	hc[p] = c
	heap[p] = i
	pos[i] = int32(p)
}

// Top returns up to n counters (all of them if n <= 0), sorted by Count
// descending and then by Key ascending, so the order is deterministic. The
// returned keys are fresh strings that the caller may keep.
func (s *Sketch) Top(n int) []Counter {
	return s.top(n, func(a, b int32) int {
		return s.cmpDesc(s.count(int(a)), s.keys[a], s.count(int(b)), s.keys[b])
	})
}

// TopGuaranteed returns up to n counters (all of them if n <= 0) sorted by
// the weight each key is guaranteed to have, Count-Err, descending, then
// by Count descending and Key ascending. It is the ranking to report the
// heaviest keys with: Count is an upper bound, and a key that took over a
// counter shortly before has a Count near the smallest counts whatever it
// weighs, so ranking by Count lets such keys push out keys that have
// held their counters, and their weight, all along. The returned keys are
// fresh strings that the caller may keep.
func (s *Sketch) TopGuaranteed(n int) []Counter {
	return s.top(n, func(a, b int32) int {
		la, lb := s.count(int(a))-s.errs[a], s.count(int(b))-s.errs[b]
		switch {
		case la > lb:
			return -1
		case la < lb:
			return 1
		}
		return s.cmpDesc(s.count(int(a)), s.keys[a], s.count(int(b)), s.keys[b])
	})
}

// top returns up to n counters (all if n <= 0) in the order of cmp over
// counter indices.
func (s *Sketch) top(n int, cmp func(a, b int32) int) []Counter {
	idx := make([]int32, s.n)
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, cmp)
	if n > 0 && n < len(idx) {
		idx = idx[:n]
	}
	out := make([]Counter, len(idx))
	for j, i := range idx {
		out[j] = Counter{Key: string(s.keys[i]), Count: s.count(int(i)), Err: s.errs[i], Tag: s.tags[i]}
	}
	return out
}

// cmpDesc orders by count descending, then key ascending.
func (*Sketch) cmpDesc(ca float64, ka []byte, cb float64, kb []byte) int {
	switch {
	case ca > cb:
		return -1
	case ca < cb:
		return 1
	}
	return bytes.Compare(ka, kb)
}

// Reset forgets all keys and weights but keeps the allocated memory,
// including each counter's key buffer, for reuse.
func (s *Sketch) Reset() {
	s.n = 0
	s.total = 0
	s.floor = 0
	clear(s.table)
	clear(s.cells)
}

// mergeCand is a counter of the union of two sketches during Merge. Its key
// lives in a scratch arena, because the receiver's key buffers are
// overwritten while the merged counters are written back.
type mergeCand struct {
	off, len int
	hash     uint64
	count    float64
	err      float64
	tag      int32
}

// Merge folds o into s, so that s summarizes the concatenation of both
// streams, o's as the later one; o is not modified. s keeps s.K()
// counters and its total becomes N = N_s + N_o. A key's merged count sums
// its estimates in both sketches (its count where it has a counter, else
// the sketch's MinCount), and its Err sums its Errs the same way; the K()
// largest sums are kept (ties by key), with the guarantee of a sketch
// that saw both streams, or with N_s/s.K() + N_o/o.K() for N/k when
// o.K() < s.K(). The merged filter still bounds every key neither sketch
// counts. Merging a sketch into itself doubles every count. A merged
// counter keeps o's tag if o tagged the key, else s's. Merge allocates
// scratch space proportional to the counters of both sketches. Only tests
// and benchmarks call it; why it is kept, and the derivation of its
// bounds: docs/architecture.md, Design notes: merging sketches.
func (s *Sketch) Merge(o *Sketch) {
	if o == s {
		// The estimate of every key doubles, which preserves the heap order,
		// so only the numbers change. Doubling a float32 cell is exact (or
		// +Inf, which absent caps).
		for i := range s.n {
			s.hc[i] = math.Float64bits(2 * math.Float64frombits(s.hc[i]))
			s.errs[i] *= 2
		}
		for c := range s.cells {
			s.cells[c] *= 2
		}
		s.floor *= 2
		s.total *= 2
		return
	}
	if o.n == 0 {
		s.total += o.total
		return
	}

	ms, mo := s.MinCount(), o.MinCount()
	// The filter of the union, while s's cells still hold s's bounds.
	same := len(o.cells) == len(s.cells)
	for c := range s.cells {
		ob := mo
		if same {
			ob = min(float64(o.cells[c]), mo)
		}
		s.cells[c] = roundUp32(min(float64(s.cells[c]), ms) + ob)
	}

	arenaLen := 0
	for i := range s.n {
		arenaLen += len(s.keys[i])
	}
	for j := range o.n {
		arenaLen += len(o.keys[j])
	}
	arena := make([]byte, 0, arenaLen)
	cands := make([]mergeCand, 0, s.n+o.n)

	for i := range s.n {
		h := xxhash.Sum64(s.keys[i])
		c := mergeCand{off: len(arena), len: len(s.keys[i]), hash: h, tag: s.tags[i]}
		arena = append(arena, s.keys[i]...)
		if j := o.find(string(s.keys[i]), h); j >= 0 {
			c.count = s.count(i) + o.count(j)
			c.err = s.errs[i] + o.errs[j]
			if o.tags[j] != NoTag {
				c.tag = o.tags[j]
			}
		} else {
			c.count = s.count(i) + mo
			c.err = s.errs[i] + mo
		}
		cands = append(cands, c)
	}
	for j := range o.n {
		h := xxhash.Sum64(o.keys[j])
		if s.find(string(o.keys[j]), h) >= 0 {
			continue // Already combined above.
		}
		cands = append(cands, mergeCand{
			off: len(arena), len: len(o.keys[j]), hash: h,
			count: o.count(j) + ms, err: o.errs[j] + ms, tag: o.tags[j],
		})
		arena = append(arena, o.keys[j]...)
	}

	key := func(c *mergeCand) []byte { return arena[c.off : c.off+c.len] }
	slices.SortFunc(cands, func(a, b mergeCand) int {
		return s.cmpDesc(a.count, key(&a), b.count, key(&b))
	})
	if len(cands) > s.k {
		// A dropped key weighs at most its sum: its cell must cover it.
		for _, c := range cands[s.k:] {
			if cc := &s.cells[s.cell(c.hash)]; float64(*cc) < c.count {
				*cc = roundUp32(c.count)
			}
		}
		cands = cands[:s.k]
	}

	// Write the kept counters back in ascending count order: a sorted array
	// is a valid min-heap, so the heap needs no further work.
	clear(s.table)
	s.n = len(cands)
	for p := range cands {
		c := &cands[len(cands)-1-p]
		s.keys[p] = append(s.keys[p][:0], key(c)...)
		s.hc[p] = math.Float64bits(c.count)
		s.errs[p] = c.err
		s.tags[p] = c.tag
		s.heap[p] = int32(p)
		s.pos[p] = int32(p)
		s.insert(c.hash, p)
	}
	// Keys that neither sketch counts weigh at most ms + mo. If o has as
	// many counters as s, every kept sum is at least that, so this only
	// matters when it has fewer.
	s.floor = ms + mo
	s.total += o.total
}
