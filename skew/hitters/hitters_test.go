package hitters

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// checkStructure verifies the internal invariants that the public
// guarantees rest on: the heap is a min-heap whose pos array is its
// inverse, the hash table holds exactly the live counters and finds each of
// them from its hash, and counts and errors are ordered sensibly.
func checkStructure(t testing.TB, s *Sketch) {
	t.Helper()
	if s.n < 0 || s.n > s.k {
		t.Fatalf("n = %d outside [0, %d]", s.n, s.k)
	}
	for p := range s.n {
		i := s.heap[p]
		if int(s.pos[i]) != p {
			t.Fatalf("pos[%d] = %d, want %d", i, s.pos[i], p)
		}
		if p > 0 {
			if parent := (p - 1) / arity; s.count(int(s.heap[parent])) > s.count(int(i)) {
				t.Fatalf("heap order broken at %d: parent %v > child %v", p, s.count(int(s.heap[parent])), s.count(int(i)))
			}
		}
	}
	used := 0
	for _, e := range s.table {
		if e == 0 {
			continue
		}
		used++
		i := int(uint32(e)) - 1
		if i < 0 || i >= s.n {
			t.Fatalf("table entry points at dead counter %d (n=%d)", i, s.n)
		}
		if e>>32 != xxhash.Sum64(s.keys[i])>>32 {
			t.Fatalf("table entry hash fragment mismatch for counter %d", i)
		}
	}
	if used != s.n {
		t.Fatalf("table has %d entries, want %d", used, s.n)
	}
	for i := range s.n {
		key := string(s.keys[i])
		if j := s.find(key, xxhash.Sum64String(key)); j != i {
			t.Fatalf("find(%q) = %d, want %d", key, j, i)
		}
		if !(s.errs[i] >= 0 && s.errs[i] <= s.count(i)) {
			t.Fatalf("counter %q: err %v not in [0, count %v]", key, s.errs[i], s.count(i))
		}
		// A key takes a counter with its bound as an absent key as its
		// error, which is at most MinCount, and MinCount only grows.
		if s.errs[i] > s.MinCount() {
			t.Fatalf("counter %q: err %v > MinCount %v", key, s.errs[i], s.MinCount())
		}
	}
	if len(s.cells) != cellsPerCounter*s.k {
		t.Fatalf("%d filter cells for k %d", len(s.cells), s.k)
	}
	for c, v := range s.cells {
		if !(v >= 0) {
			t.Fatalf("filter cell %d = %v", c, v)
		}
	}
}

// checkGuarantees asserts the documented Space-Saving guarantees of s
// against the exact weights of the stream it summarizes. tol absorbs
// floating-point rounding, which depends on summation order.
func checkGuarantees(t testing.TB, s *Sketch, exact map[string]float64) {
	t.Helper()
	var n float64
	for _, w := range exact {
		n += w
	}
	tol := 1e-9*n + 1e-300
	if math.Abs(s.Total()-n) > tol {
		t.Fatalf("Total = %v, exact %v", s.Total(), n)
	}
	bound := n / float64(s.K())
	if m := s.MinCount(); m > bound+tol {
		t.Fatalf("MinCount %v > N/k %v", m, bound)
	}
	top := s.Top(0)
	if len(top) != s.Len() || s.Len() > s.K() {
		t.Fatalf("Len %d, Top %d, K %d", s.Len(), len(top), s.K())
	}
	reported := make(map[string]bool, len(top))
	for _, c := range top {
		if reported[c.Key] {
			t.Fatalf("key %q reported twice", c.Key)
		}
		reported[c.Key] = true
		tw := exact[c.Key]
		if c.Count < tw-tol {
			t.Fatalf("key %q: Count %v < true %v", c.Key, c.Count, tw)
		}
		if c.Count-c.Err > tw+tol {
			t.Fatalf("key %q: Count-Err %v > true %v", c.Key, c.Count-c.Err, tw)
		}
		if c.Err > bound+tol || c.Err < 0 {
			t.Fatalf("key %q: Err %v outside [0, N/k=%v]", c.Key, c.Err, bound)
		}
		if c.Count-tw > bound+tol {
			t.Fatalf("key %q: Count %v overestimates true %v by more than N/k %v", c.Key, c.Count, tw, bound)
		}
	}
	for key, tw := range exact {
		if reported[key] {
			continue
		}
		if tw > bound+tol {
			t.Fatalf("heavy key %q (true %v > N/k %v) missing", key, tw, bound)
		}
		if tw > s.MinCount()+tol {
			t.Fatalf("absent key %q: true %v > MinCount %v", key, tw, s.MinCount())
		}
		// The filter's bound for the key, which Estimate reports.
		if c, e, ok := s.Estimate(key); ok || c != e || tw > c+tol || c > s.MinCount() {
			t.Fatalf("absent key %q (true %v): Estimate %v, %v, %v with MinCount %v", key, tw, c, e, ok, s.MinCount())
		}
	}
}

func TestNewPanicsOnBadK(t *testing.T) {
	for _, k := range []int{0, -1, math.MinInt} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d) did not panic", k)
				}
			}()
			New(k)
		}()
	}
	if s := New(1); s.K() != 1 || s.Len() != 0 || s.Total() != 0 {
		t.Fatalf("New(1) = K %d Len %d Total %v", s.K(), s.Len(), s.Total())
	}
}

func TestExactWhenKeysFit(t *testing.T) {
	type upd struct {
		key string
		w   float64
	}
	tests := []struct {
		name string
		k    int
		upds []upd
		want []Counter
	}{
		{"empty", 3, nil, []Counter{}},
		{"single", 1, []upd{{"a", 2}, {"a", 3}}, []Counter{{"a", 5, 0, NoTag}}},
		{
			"three keys",
			4,
			[]upd{{"b", 1}, {"a", 1}, {"c", 5}, {"b", 2}, {"a", 0.5}},
			[]Counter{{"c", 5, 0, NoTag}, {"b", 3, 0, NoTag}, {"a", 1.5, 0, NoTag}},
		},
		{
			"ties sorted by key",
			8,
			[]upd{{"z", 1}, {"y", 1}, {"", 1}, {"x", 2}},
			[]Counter{{"x", 2, 0, NoTag}, {"", 1, 0, NoTag}, {"y", 1, 0, NoTag}, {"z", 1, 0, NoTag}},
		},
		{
			"invalid weights ignored",
			4,
			[]upd{{"a", 1}, {"a", 0}, {"a", -3}, {"a", math.NaN()}, {"a", math.Inf(1)}, {"b", math.Inf(-1)}, {"c", math.Copysign(0, -1)}},
			[]Counter{{"a", 1, 0, NoTag}},
		},
		{
			"exactly k keys",
			3,
			[]upd{{"a", 1}, {"b", 2}, {"c", 3}, {"a", 4}},
			[]Counter{{"a", 5, 0, NoTag}, {"c", 3, 0, NoTag}, {"b", 2, 0, NoTag}},
		},
		{
			"binary keys",
			4,
			[]upd{{"\x00", 1}, {"\x00\x00", 2}, {"\xff", 3}, {"\x00", 1}},
			[]Counter{{"\xff", 3, 0, NoTag}, {"\x00", 2, 0, NoTag}, {"\x00\x00", 2, 0, NoTag}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.k)
			exact := map[string]float64{}
			var total float64
			for _, u := range tc.upds {
				s.Add(u.key, u.w)
				if u.w > 0 && !math.IsInf(u.w, 0) {
					exact[u.key] += u.w
					total += u.w
				}
			}
			checkStructure(t, s)
			if got := s.Top(0); !slices.Equal(got, tc.want) {
				t.Fatalf("Top = %v, want %v", got, tc.want)
			}
			if s.Total() != total || s.Len() != len(tc.want) {
				t.Fatalf("Total %v Len %d, want %v %d", s.Total(), s.Len(), total, len(tc.want))
			}
			if s.MinCount() != 0 && s.Len() < s.K() {
				t.Fatalf("MinCount %v on a sketch with free counters", s.MinCount())
			}
			for key, w := range exact {
				c, e, ok := s.Estimate(key)
				if !ok || c != w || e != 0 {
					t.Fatalf("Estimate(%q) = %v, %v, %v; want %v, 0, true", key, c, e, ok, w)
				}
			}
			if _, _, ok := s.Estimate("never added"); ok {
				t.Fatal("Estimate of an unseen key reported ok")
			}
		})
	}
}

func TestEvictionReplacesMinimum(t *testing.T) {
	// Keys of distinct filter cells (with k = 2: a in cell 2, b 0, c 3 and
	// d 2, but a keeps its counter, so d's cell stays 0).
	s := New(2)
	s.Add("a", 3)
	s.Add("b", 1)
	s.Add("c", 0.5)  // 0.5 <= MinCount 1: c stays in the filter.
	s.Add("c", 0.75) // 0.5+0.75 > 1: c evicts b (count 1): 1.25 with err 0.5.
	want := []Counter{{"a", 3, 0, NoTag}, {"c", 1.25, 0.5, NoTag}}
	if got := s.Top(0); !slices.Equal(got, want) {
		t.Fatalf("Top = %v, want %v", got, want)
	}
	if c, e, ok := s.Estimate("b"); ok || c != 1 || e != 1 {
		t.Fatalf("Estimate(b) = %v %v %v, want 1 1 false (its count when evicted)", c, e, ok)
	}
	s.Add("d", 4) // Evicts c (1.25): d is unseen, so it gets 4 with err 0.
	want = []Counter{{"d", 4, 0, NoTag}, {"a", 3, 0, NoTag}}
	if got := s.Top(0); !slices.Equal(got, want) {
		t.Fatalf("Top = %v, want %v", got, want)
	}
	if got := s.Top(1); !slices.Equal(got, want[:1]) {
		t.Fatalf("Top(1) = %v, want %v", got, want[:1])
	}
	if got := s.Top(10); !slices.Equal(got, want) {
		t.Fatalf("Top(10) = %v, want %v", got, want)
	}
	checkStructure(t, s)
}

// TestFilter checks the filter in front of the counters: what stays in a
// cell, what a cell bounds, and the error a key brings from its cell when
// it takes a counter. With k = 2 there are 4 cells: a, d, x and y share
// cell 2, b is in cell 0, c in 3 and z in 1.
func TestFilter(t *testing.T) {
	type upd struct {
		key string
		w   float64
	}
	tests := []struct {
		name   string
		k      int
		upds   []upd
		want   []Counter          // Top(0)
		absent map[string]float64 // Estimate's bound for keys without a counter
	}{
		{
			name:   "a light new key stays in its cell",
			k:      2,
			upds:   []upd{{"a", 3}, {"b", 1}, {"c", 0.5}},
			want:   []Counter{{"a", 3, 0, NoTag}, {"b", 1, 0, NoTag}},
			absent: map[string]float64{"c": 0.5, "z": 0, "never": 0},
		},
		{
			name:   "weight up to MinCount stays in the cell",
			k:      2,
			upds:   []upd{{"a", 3}, {"b", 1}, {"c", 0.5}, {"c", 0.5}},
			want:   []Counter{{"a", 3, 0, NoTag}, {"b", 1, 0, NoTag}},
			absent: map[string]float64{"c": 1},
		},
		{
			name:   "the cell becomes the error of a takeover, the evicted count the cell",
			k:      2,
			upds:   []upd{{"a", 3}, {"b", 1}, {"c", 0.5}, {"c", 0.75}},
			want:   []Counter{{"a", 3, 0, NoTag}, {"c", 1.25, 0.5, NoTag}},
			absent: map[string]float64{"b": 1},
		},
		{
			name:   "an unseen heavy key takes a counter exactly",
			k:      2,
			upds:   []upd{{"a", 3}, {"b", 1}, {"c", 4}},
			want:   []Counter{{"c", 4, 0, NoTag}, {"a", 3, 0, NoTag}},
			absent: map[string]float64{"b": 1},
		},
		{
			// a's weight in cell 2 is d's error: the filter cannot tell
			// the keys of a cell apart.
			name:   "keys sharing a cell share its bound",
			k:      2,
			upds:   []upd{{"b", 5}, {"c", 4}, {"a", 3}, {"d", 2}},
			want:   []Counter{{"b", 5, 0, NoTag}, {"d", 5, 3, NoTag}},
			absent: map[string]float64{"a": 3, "x": 3, "c": 4, "z": 0},
		},
		{
			// b's evicted count 0.1 is rounded up to float32 in its cell;
			// the cap keeps its bound at MinCount, a's 0.1.
			name:   "a cell rounded up is capped by MinCount",
			k:      2,
			upds:   []upd{{"b", 0.1}, {"a", 0.1}, {"c", 0.2}},
			want:   []Counter{{"c", 0.2, 0, NoTag}, {"a", 0.1, 0, NoTag}},
			absent: map[string]float64{"b": 0.1},
		},
		{
			// y's cell overflows float32 to +Inf; capped by MinCount it is
			// 1e300, which is then y's error.
			name:   "beyond float32 a cell is +Inf, capped by MinCount",
			k:      1,
			upds:   []upd{{"a", 1e300}, {"b", 1e299}},
			want:   []Counter{{"a", 1e300, 0, NoTag}},
			absent: map[string]float64{"b": 1e300},
		},
		{
			// a's cell is +Inf too now, capped by the new MinCount.
			name:   "then a takeover takes the capped bound as its error",
			k:      1,
			upds:   []upd{{"a", 1e300}, {"b", 1e299}, {"b", 1e299}},
			want:   []Counter{{"b", 1e300 + 1e299, 1e300, NoTag}},
			absent: map[string]float64{"a": 1e300 + 1e299},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.k)
			exact := map[string]float64{}
			for _, u := range tc.upds {
				s.Add(u.key, u.w)
				exact[u.key] += u.w
			}
			checkStructure(t, s)
			checkGuarantees(t, s, exact)
			if got := s.Top(0); !slices.Equal(got, tc.want) {
				t.Fatalf("Top = %v, want %v", got, tc.want)
			}
			for key, want := range tc.absent {
				if c, e, ok := s.Estimate(key); ok || c != want || e != want {
					t.Errorf("Estimate(%q) = %v %v %v, want %v %v false", key, c, e, ok, want, want)
				}
			}
		})
	}
}

// TestFilterCells pins the cells the tests above rely on.
func TestFilterCells(t *testing.T) {
	s := New(2)
	for key, want := range map[string]int{"a": 2, "b": 0, "c": 3, "d": 2, "x": 2, "y": 2, "z": 1} {
		if got := s.cell(xxhash.Sum64String(key)); got != want {
			t.Errorf("cell(%q) = %d, want %d", key, got, want)
		}
	}
}

// naive is a direct transcription of weighted filtered Space-Saving with a
// linear scan, used as a reference for the hash table, heap and filter.
// It shares only the mapping of keys to its 2k cells with the sketch.
type naive struct {
	k     int
	keys  []string
	cnt   []float64
	err   []float64
	alpha []float32 // Upper bounds, rounded up, of the keys without a counter.
}

func (r *naive) cell(key string) *float32 {
	if r.alpha == nil {
		r.alpha = make([]float32, 2*r.k)
	}
	return &r.alpha[int(uint64(uint32(xxhash.Sum64String(key)))*uint64(len(r.alpha))>>32)]
}

// up32 rounds x up to a float32.
func up32(x float64) float32 {
	r := float32(x)
	if float64(r) < x {
		r = math.Nextafter32(r, float32(math.Inf(1)))
	}
	return r
}

func (r *naive) add(key string, w float64) {
	for i, k := range r.keys {
		if k == key {
			r.cnt[i] += w
			return
		}
	}
	a := r.cell(key)
	if len(r.keys) < r.k {
		r.keys = append(r.keys, key)
		r.cnt = append(r.cnt, w)
		r.err = append(r.err, 0)
		return
	}
	m := 0
	for i := range r.cnt {
		if r.cnt[i] < r.cnt[m] {
			m = i
		}
	}
	alpha := min(float64(*a), r.cnt[m])
	if alpha+w <= r.cnt[m] {
		*a = up32(alpha + w)
		return
	}
	if e := r.cell(r.keys[m]); float64(*e) < r.cnt[m] {
		*e = up32(r.cnt[m])
	}
	r.keys[m], r.err[m], r.cnt[m] = key, alpha, alpha+w
}

func (r *naive) top() []Counter {
	out := make([]Counter, len(r.keys))
	for i := range r.keys {
		out[i] = Counter{r.keys[i], r.cnt[i], r.err[i], NoTag}
	}
	slices.SortFunc(out, func(a, b Counter) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return cmpString(a.Key, b.Key)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// With continuous random weights, counts practically never tie, so the
// minimum is unique and the sketch must match the reference exactly, after
// every step. Small k makes tables tiny and dense, which exercises probe
// wrap-around and backward-shift deletion hard.
func TestMatchesNaiveReference(t *testing.T) {
	for _, k := range []int{1, 2, 3, 5, 8, 17, 64} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(k), 7))
			s := New(k)
			ref := &naive{k: k}
			for step := range 20000 {
				key := strconv.Itoa(r.IntN(4 * k))
				w := r.Float64() + 1e-3
				s.Add(key, w)
				ref.add(key, w)
				if step%97 == 0 || step < 200 {
					checkStructure(t, s)
					if got, want := s.Top(0), ref.top(); !slices.Equal(got, want) {
						t.Fatalf("step %d: Top = %v, want %v", step, got, want)
					}
				}
			}
			if got, want := s.Top(0), ref.top(); !slices.Equal(got, want) {
				t.Fatalf("final: Top = %v, want %v", got, want)
			}
		})
	}
}

// zipfStream returns n weighted updates whose keys follow a Zipf law with
// exponent sk over distinct keys, with weights uniform in [0.1, 10).
func zipfStream(seed uint64, sk float64, distinct uint64, n int) ([]string, []float64) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	z := rand.NewZipf(r, sk, 1, distinct-1)
	keys := make([]string, n)
	ws := make([]float64, n)
	for i := range keys {
		// Scramble the rank so that heavy keys are not lexically first.
		keys[i] = "key-" + strconv.FormatUint(z.Uint64()*0x9E3779B97F4A7C15, 36)
		ws[i] = 0.1 + 9.9*r.Float64()
	}
	return keys, ws
}

func exactCounts(keys []string, ws []float64) map[string]float64 {
	m := make(map[string]float64)
	for i, k := range keys {
		m[k] += ws[i]
	}
	return m
}

func TestZipfGuarantees(t *testing.T) {
	n := 300_000
	if testing.Short() {
		n = 50_000
	}
	for _, sk := range []float64{1.1, 1.5, 2.0} {
		keys, ws := zipfStream(uint64(sk*100), sk, 100_000, n)
		exact := exactCounts(keys, ws)
		for _, k := range []int{64, 256, 1024} {
			t.Run(fmt.Sprintf("s=%v/k=%d", sk, k), func(t *testing.T) {
				s := New(k)
				for i, key := range keys {
					s.Add(key, ws[i])
				}
				checkStructure(t, s)
				checkGuarantees(t, s, exact)
				if want := min(k, len(exact)); s.Len() != want {
					t.Fatalf("Len = %d, want %d", s.Len(), want)
				}
				// The heaviest key of a Zipf stream must come out on top.
				top := s.Top(1)[0]
				var best string
				for key, w := range exact {
					if best == "" || w > exact[best] || (w == exact[best] && key < best) {
						best = key
					}
				}
				if top.Key != best {
					t.Fatalf("Top(1) = %q, heaviest is %q", top.Key, best)
				}
			})
		}
	}
}

func TestMerge(t *testing.T) {
	keys, ws := zipfStream(42, 1.3, 50_000, 200_000)
	exact := exactCounts(keys, ws)
	partitioners := map[string]func(i int, key string, parts int) int{
		// Contiguous chunks: like consecutive time windows.
		"chunks": func(i int, _ string, parts int) int { return i * parts / len(keys) },
		// Round-robin: every part sees every heavy key.
		"rebalance": func(i int, _ string, parts int) int { return i % parts },
		// By key: like Flink's keyBy, each key is in exactly one part, so
		// every merged counter combines a count with the other's minimum.
		"keyBy": func(_ int, key string, parts int) int { return int(xxhash.Sum64String(key) % uint64(parts)) },
	}
	for name, part := range partitioners {
		for parts := 2; parts <= 4; parts++ {
			for _, k := range []int{16, 128, 1024} {
				t.Run(fmt.Sprintf("%s/parts=%d/k=%d", name, parts, k), func(t *testing.T) {
					sketches := make([]*Sketch, parts)
					for p := range sketches {
						sketches[p] = New(k)
					}
					for i, key := range keys {
						sketches[part(i, key, parts)].Add(key, ws[i])
					}
					before := sketches[1].Top(0)
					beforeTotal := sketches[1].Total()
					for _, o := range sketches[1:] {
						sketches[0].Merge(o)
						checkStructure(t, sketches[0])
					}
					if !slices.Equal(sketches[1].Top(0), before) || sketches[1].Total() != beforeTotal {
						t.Fatal("Merge modified its argument")
					}
					checkGuarantees(t, sketches[0], exact)

					// The merged sketch keeps working as a sketch.
					exact := maps.Clone(exact)
					more, mws := zipfStream(43, 1.3, 50_000, 20_000)
					for i, key := range more {
						sketches[0].Add(key, mws[i])
						exact[key] += mws[i]
					}
					checkStructure(t, sketches[0])
					checkGuarantees(t, sketches[0], exact)
				})
			}
		}
	}
}

// Merging small sketches whose union fits must give exact counts.
func TestMergeExact(t *testing.T) {
	a, b := New(8), New(8)
	a.AddTagged("x", 1, 3)
	a.AddTagged("y", 2, 4)
	b.Add("y", 5)          // Untagged in b: keeps a's tag.
	b.AddTagged("x", 2, 9) // Tagged in both: b's stream counts as later.
	b.AddTagged("z", 1, 7)
	a.Merge(b)
	want := []Counter{{"y", 7, 0, 4}, {"x", 3, 0, 9}, {"z", 1, 0, 7}}
	if got := a.Top(0); !slices.Equal(got, want) {
		t.Fatalf("Top = %v, want %v", got, want)
	}
	if a.Total() != 11 {
		t.Fatalf("Total = %v, want 11", a.Total())
	}
	checkStructure(t, a)

	// Merging into an empty sketch copies; merging an empty one only adds 0.
	c := New(8)
	c.Merge(a)
	c.Merge(New(3))
	if got := c.Top(0); !slices.Equal(got, want) || c.Total() != 11 {
		t.Fatalf("copy via Merge: Top = %v Total %v", got, c.Total())
	}

	// Self-merge doubles.
	c.Merge(c)
	want2 := []Counter{{"y", 14, 0, 4}, {"x", 6, 0, 9}, {"z", 2, 0, 7}}
	if got := c.Top(0); !slices.Equal(got, want2) || c.Total() != 22 {
		t.Fatalf("self-merge: Top = %v Total %v", got, c.Total())
	}
	checkStructure(t, c)
}

// When both sketches are full, a key held by one only gets the other's
// minimum added, to both count and error.
func TestMergeFillsAbsentWithMinimum(t *testing.T) {
	a, b := New(2), New(2)
	a.Add("p", 10)
	a.Add("q", 4) // a: p=10, q=4; min 4.
	b.Add("p", 1)
	b.Add("r", 6) // b: r=6, p=1; min 1.
	a.Merge(b)
	// p: 10+1 = 11 (err 0); q: 4 + min_b 1 = 5 (err 1); r: 6 + min_a 4 = 10 (err 4).
	want := []Counter{{"p", 11, 0, NoTag}, {"r", 10, 4, NoTag}}
	if got := a.Top(0); !slices.Equal(got, want) {
		t.Fatalf("Top = %v, want %v", got, want)
	}
	if a.MinCount() != 10 || a.Total() != 21 {
		t.Fatalf("MinCount %v Total %v", a.MinCount(), a.Total())
	}
	checkStructure(t, a)
}

func TestReset(t *testing.T) {
	keys, ws := zipfStream(9, 1.2, 10_000, 30_000)
	s := New(100)
	for i, key := range keys {
		s.Add(key, ws[i])
	}
	tableBefore := &s.table[0]
	s.Reset()
	if s.Len() != 0 || s.Total() != 0 || len(s.Top(0)) != 0 || s.MinCount() != 0 {
		t.Fatalf("after Reset: Len %d Total %v Top %v", s.Len(), s.Total(), s.Top(0))
	}
	if _, _, ok := s.Estimate(keys[0]); ok {
		t.Fatal("Reset sketch still finds a key")
	}
	checkStructure(t, s)
	if &s.table[0] != tableBefore {
		t.Fatal("Reset reallocated the table")
	}
	// Reuse must behave exactly like a fresh sketch, and not allocate for
	// keys no longer than those seen before.
	fresh := New(100)
	allocs := testing.AllocsPerRun(3, func() {
		s.Reset()
		for i, key := range keys[:5000] {
			s.Add(key, ws[i])
		}
	})
	for i, key := range keys[:5000] {
		fresh.Add(key, ws[i])
	}
	if !slices.Equal(s.Top(0), fresh.Top(0)) || s.Total() != fresh.Total() {
		t.Fatal("reused sketch differs from a fresh one")
	}
	if allocs != 0 {
		t.Fatalf("Add after Reset allocated %v times", allocs)
	}
	checkGuarantees(t, s, exactCounts(keys[:5000], ws[:5000]))
}

func TestAddTaggedKeepsLatestTag(t *testing.T) {
	s := New(2)
	s.AddTagged("a", 1, 5)
	s.AddTagged("a", 1, 7)
	s.Add("a", 1) // Untagged add keeps the tag.
	s.Add("b", 5)
	if got := s.Top(0); !slices.Equal(got, []Counter{{"b", 5, 0, NoTag}, {"a", 3, 0, 7}}) {
		t.Fatalf("Top = %v", got)
	}
	s.AddTagged("b", 1, 0)
	s.AddTagged("c", 0.5, 9) // Stays in the filter: no counter, no tag.
	if got := s.Top(0); !slices.Equal(got, []Counter{{"b", 6, 0, 0}, {"a", 3, 0, 7}}) {
		t.Fatalf("Top = %v", got)
	}
	s.AddTagged("c", 3, 9) // Evicts a (3): c inherits nothing from a.
	if got := s.Top(0); !slices.Equal(got, []Counter{{"b", 6, 0, 0}, {"c", 3.5, 0.5, 9}}) {
		t.Fatalf("Top = %v", got)
	}
	// d shares a's filter cell, which a's eviction raised to 3, so d
	// evicts c at once; Add on a new counter resets the tag.
	s.Add("d", 1)
	if got := s.Top(0); !slices.Equal(got, []Counter{{"b", 6, 0, 0}, {"d", 4, 3, NoTag}}) {
		t.Fatalf("Top = %v", got)
	}
	s.AddTagged("b", 0, 3) // Ignored weight must not change the tag either.
	if got := s.Top(1)[0]; got.Tag != 0 {
		t.Fatalf("tag changed by an ignored update: %v", got)
	}
}

func TestDeterministic(t *testing.T) {
	keys, ws := zipfStream(5, 1.1, 20_000, 50_000)
	run := func() []Counter {
		s := New(64)
		for i, key := range keys {
			s.AddTagged(key, ws[i], int32(i%7))
		}
		o := New(64)
		for i := range keys {
			j := len(keys) - 1 - i
			o.Add(keys[j], ws[j])
		}
		s.Merge(o)
		return s.Top(0)
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Fatal("two identical runs gave different results")
	}
}

// The sketch must copy the key bytes it keeps: the caller may pass a string
// that aliases a buffer it overwrites after the call.
func TestKeyAliasesReusedBuffer(t *testing.T) {
	buf := make([]byte, 8)
	s := New(3)
	add := func(k string, w float64) {
		copy(buf, k)
		s.Add(unsafe.String(&buf[0], len(k)), w)
		for i := range buf {
			buf[i] = '#' // Scribble over the key after the call.
		}
	}
	add("alpha", 5)
	add("beta", 3)
	add("gamma", 2)
	add("alpha", 1)
	add("delta", 3.5)    // Evicts gamma (2): takes over its key buffer.
	add("epsilon", 3.25) // Evicts beta (3), with a longer key.
	// Both are unseen and their filter cells empty, so their counts are
	// exact.
	want := []Counter{{"alpha", 6, 0, NoTag}, {"delta", 3.5, 0, NoTag}, {"epsilon", 3.25, 0, NoTag}}
	if got := s.Top(0); !slices.Equal(got, want) {
		t.Fatalf("Top = %v, want %v", got, want)
	}
	for _, c := range want {
		if _, _, ok := s.Estimate(c.Key); !ok {
			t.Fatalf("Estimate(%q) not found", c.Key)
		}
	}
	checkStructure(t, s)

	// Top's keys must not alias the sketch's buffers either.
	top := s.Top(0)
	add("zeta", 100)
	add("eta", 100)
	if !slices.Equal(top, want) {
		t.Fatalf("Top result changed after more Adds: %v", top)
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	const k = 256
	s := New(k)
	keys := make([]string, 4*k)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%015d", i) // All 16 bytes.
	}
	// Warm up: every counter's buffer is sized for a 16-byte key.
	for i, key := range keys {
		s.Add(key, float64(i%5+1))
	}
	present := s.Top(0) // Fresh strings, made before measuring.
	buf := []byte("n000000000000000")
	i := 0
	tests := []struct {
		name string
		f    func()
	}{
		{"existing key", func() { s.Add(present[i%len(present)].Key, 1); i++ }},
		{"new key", func() {
			// Write a never-seen 16-byte key into a reused buffer.
			i++
			for j, d := 15, i; j > 0; j, d = j-1, d/10 {
				buf[j] = byte('0' + d%10)
			}
			s.Add(unsafe.String(&buf[0], len(buf)), 0.5)
		}},
		{"tagged", func() { s.AddTagged(keys[i%len(keys)], 1, int32(i)); i++ }},
		{"Estimate", func() { s.Estimate(keys[i%len(keys)]); i++ }},
	}
	for _, tc := range tests {
		if allocs := testing.AllocsPerRun(1000, tc.f); allocs != 0 {
			t.Errorf("%s: %v allocs per call, want 0", tc.name, allocs)
		}
	}
	if s.Len() != k {
		t.Fatalf("Len = %d, want %d", s.Len(), k)
	}
	checkStructure(t, s)
}

// TestTopGuaranteed: TopGuaranteed holds the counters Top holds, ordered
// by Count-Err, and its prefixes are its shorter answers.
func TestTopGuaranteed(t *testing.T) {
	keys, ws := zipfStream(7, 1.1, 100_000, 200_000)
	for _, tc := range []struct {
		name string
		fill func(s *Sketch)
		k    int
		want []Counter // nil: only the properties are checked
	}{
		{
			// c's first 2 stay in its filter cell; its next 2 take a's
			// counter (a had 3): count 4, but only 2 is guaranteed, less
			// than b's 5.
			name: "takeover ranks below an exact count",
			k:    2,
			fill: func(s *Sketch) { s.Add("a", 3); s.Add("b", 5); s.Add("c", 2); s.Add("c", 2) },
			want: []Counter{{"b", 5, 0, NoTag}, {"c", 4, 2, NoTag}},
		},
		{
			name: "equal guaranteed counts go by count, then key",
			k:    3,
			// z's 1 stays in its cell, its 2 take a's counter: 3 with
			// err 1, so 2 guaranteed like x and y, and the largest count.
			fill: func(s *Sketch) { s.Add("x", 2); s.Add("y", 2); s.Add("a", 1); s.Add("z", 1); s.Add("z", 2) },
			want: []Counter{{"z", 3, 1, NoTag}, {"x", 2, 0, NoTag}, {"y", 2, 0, NoTag}},
		},
		{
			name: "zipf 1.1",
			k:    256,
			fill: func(s *Sketch) {
				for i, k := range keys {
					s.Add(k, ws[i])
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.k)
			tc.fill(s)
			got := s.TopGuaranteed(0)
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Fatalf("TopGuaranteed(0) = %v, want %v", got, tc.want)
			}
			byKey := func(a, b Counter) int { return cmpString(a.Key, b.Key) }
			if !slices.Equal(slices.SortedFunc(slices.Values(got), byKey), slices.SortedFunc(slices.Values(s.Top(0)), byKey)) {
				t.Fatal("TopGuaranteed(0) and Top(0) hold different counters")
			}
			for i := 1; i < len(got); i++ {
				if got[i].Count-got[i].Err > got[i-1].Count-got[i-1].Err {
					t.Fatalf("position %d: guaranteed %v after %v", i, got[i].Count-got[i].Err, got[i-1].Count-got[i-1].Err)
				}
			}
			for _, n := range []int{1, 2, 10} {
				if want := got[:min(n, len(got))]; !slices.Equal(s.TopGuaranteed(n), want) {
					t.Fatalf("TopGuaranteed(%d) = %v, want %v", n, s.TopGuaranteed(n), want)
				}
			}
		})
	}
}
