package hitters

import (
	"math"
	"testing"
)

// fuzzWeight maps a byte to a weight, including every kind of value the
// sketch must ignore, and small integers so that counts tie often.
func fuzzWeight(b byte) float64 {
	switch b {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1)
	case 2:
		return math.Inf(-1)
	case 3:
		return 0
	case 4:
		return -1
	case 5:
		return math.SmallestNonzeroFloat64
	case 6:
		return 1e12
	}
	if b < 128 {
		return float64(b % 4) // Small integers, 0 included: many ties.
	}
	return float64(b) / 37
}

// FuzzSketch decodes data into a sequence of operations on two sketches,
// then checks the structural invariants and the guarantees of each sketch
// and of their merge against exact counts: Count-Err <= true <= Count and
// Err <= N/k for every counter, and for every key without one, true <=
// its Estimate bound <= MinCount <= N/k.
//
// Each operation is a control byte c, then c&7 key bytes, then a weight
// byte. Bit 3 of c selects AddTagged, bit 4 the second sketch, and
// c == 0xFF resets the first sketch.
func FuzzSketch(f *testing.F) {
	f.Add(uint8(1), []byte("\x01a\x09\x01b\x09\x01a\x80"))
	f.Add(uint8(2), []byte("\x01a\x80\x01b\x81\x01c\x82\x11a\x83\x11d\x84\x01e\x00\x01e\x01"))
	f.Add(uint8(3), []byte("\x02ab\x40\x0aab\x41\x12xy\x90\xff\x01z\x99\x01q\x06"))
	f.Add(uint8(4), []byte("\x00\x09\x00\x05\x01\x00\x7f\x01\x01\x7e\x19\x01\x7d"))
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		kk := int(k%16) + 1
		sketches := [2]*Sketch{New(kk), New(kk)}
		exact := [2]map[string]float64{{}, {}}
		totals := [2]float64{}
		for len(data) > 0 {
			c := data[0]
			data = data[1:]
			if c == 0xFF {
				sketches[0].Reset()
				exact[0] = map[string]float64{}
				totals[0] = 0
				continue
			}
			n := min(int(c&7), len(data))
			key := string(data[:n])
			data = data[n:]
			if len(data) == 0 {
				break
			}
			w := fuzzWeight(data[0])
			data = data[1:]
			which := int(c>>4) & 1
			if c&8 != 0 {
				sketches[which].AddTagged(key, w, int32(c))
			} else {
				sketches[which].Add(key, w)
			}
			if w > 0 && !math.IsInf(w, 1) {
				exact[which][key] += w
				totals[which] += w
			}
		}
		for p, s := range sketches {
			checkStructure(t, s)
			// Total is summed in the same order as here, so it is exact.
			if s.Total() != totals[p] {
				t.Fatalf("sketch %d: Total %v, want %v", p, s.Total(), totals[p])
			}
			if s.Len() > s.K() || s.Len() > len(exact[p]) {
				t.Fatalf("sketch %d: Len %d with k %d and %d distinct keys", p, s.Len(), s.K(), len(exact[p]))
			}
			// The counts sum to at most N, which is what bounds MinCount
			// by N/k: a takeover adds its weight and its cell's bound,
			// at most the evicted count, and weight that stays in the
			// filter is in no count. (Plain Space-Saving, before the
			// filter, summed to exactly N.)
			var sum float64
			for _, c := range s.Top(0) {
				sum += c.Count
			}
			if sum > s.Total()*(1+1e-9) {
				t.Fatalf("sketch %d: counts sum to %v > Total %v", p, sum, s.Total())
			}
			checkGuarantees(t, s, exact[p])
		}
		union := map[string]float64{}
		for _, e := range exact {
			for key, w := range e {
				union[key] += w
			}
		}
		other := sketches[1].Top(0)
		sketches[0].Merge(sketches[1])
		checkStructure(t, sketches[0])
		checkGuarantees(t, sketches[0], union)
		if got := sketches[1].Top(0); len(got) != len(other) {
			t.Fatal("Merge modified its argument")
		}
		// After a merge the counts may sum to less than N, never more.
		var sum float64
		for _, c := range sketches[0].Top(0) {
			sum += c.Count
		}
		if sum > sketches[0].Total()*(1+1e-9) {
			t.Fatalf("merged counts sum to %v > Total %v", sum, sketches[0].Total())
		}
	})
}
