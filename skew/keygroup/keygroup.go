package keygroup

import (
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// Flink's bounds for the default max parallelism
// (KeyGroupRangeAssignment.DEFAULT_LOWER_BOUND_MAX_PARALLELISM and
// UPPER_BOUND_MAX_PARALLELISM).
const (
	LowerBoundMaxParallelism = 128
	UpperBoundMaxParallelism = 1 << 15
)

// StringHash is Java's String.hashCode of s: s[0]*31^(n-1) + ... + s[n-1]
// over UTF-16 code units, with int32 wraparound.
//
// Go strings are UTF-8. Characters outside the Basic Multilingual Plane
// are two code units (a surrogate pair) in Java, so they are split here the
// same way. Bytes that are not valid UTF-8 count as U+FFFD, which is what
// Java's UTF-8 decoder substitutes for a malformed byte.
func StringHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf { // ASCII fast path: one byte, one code unit.
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r) // utf8.RuneError (U+FFFD) for malformed bytes.
	}
	return h
}

// IntHash, LongHash and TupleHash are used only by the tests today:
// skewlens samples keys as strings (StringHash). They are kept, checked
// against Flink's own values, for jobs keyed by numbers or tuples.

// IntHash is Java's Integer.hashCode: the value itself.
func IntHash(v int32) int32 { return v }

// LongHash is Java's Long.hashCode: (int)(value ^ (value >>> 32)).
func LongHash(v int64) int32 { return int32(uint64(v) ^ uint64(v)>>32) }

// TupleHash is the hashCode of Flink's Tuple2 (and of a two-field POJO or
// row key built the same way): 31*hash(f0) + hash(f1).
func TupleHash(h0, h1 int32) int32 { return 31*h0 + h1 }

// MurmurHash is Flink's MathUtils.murmurHash: one round of Murmur3_32 over
// a single int, made non-negative the way Flink does it (Integer.MIN_VALUE
// maps to 0).
func MurmurHash(code int32) int32 {
	c := uint32(code)
	c *= 0xcc9e2d51
	c = bits.RotateLeft32(c, 15)
	c *= 0x1b873593
	c = bits.RotateLeft32(c, 13)
	c = c*5 + 0xe6546b64
	c ^= 4
	// bitMix (Murmur3's fmix32).
	c ^= c >> 16
	c *= 0x85ebca6b
	c ^= c >> 13
	c *= 0xc2b2ae35
	c ^= c >> 16
	h := int32(c)
	switch {
	case h >= 0:
		return h
	case h != -1<<31:
		return -h
	default:
		return 0
	}
}

// DefaultMaxParallelism is KeyGroupRangeAssignment.computeDefaultMaxParallelism:
// roundUpToPowerOfTwo(p + p/2), clamped to [128, 32768].
func DefaultMaxParallelism(parallelism int) int {
	n := parallelism + parallelism/2
	pow := 1
	if n > 1 {
		pow = 1 << bits.Len(uint(n-1))
	}
	return min(max(pow, LowerBoundMaxParallelism), UpperBoundMaxParallelism)
}

// KeyGroupForHash is computeKeyGroupForKeyHash: murmurHash(hash) % maxParallelism.
func KeyGroupForHash(hash int32, maxParallelism int) int {
	return int(MurmurHash(hash)) % maxParallelism
}

// OperatorIndex is computeOperatorIndexForKeyGroup: the subtask that owns a
// key group. Flink computes it in int arithmetic; keyGroup < maxParallelism
// <= 32768, so the product cannot overflow int32 either.
func OperatorIndex(keyGroup, maxParallelism, parallelism int) int {
	return keyGroup * parallelism / maxParallelism
}

// Range returns the inclusive key-group range [start, end] owned by
// subtask index, as computeKeyGroupRangeForOperatorIndex does. Only tests
// call it (to check OperatorIndex against Flink's range rule).
func Range(maxParallelism, parallelism, index int) (start, end int) {
	start = (index*maxParallelism + parallelism - 1) / parallelism
	end = ((index+1)*maxParallelism - 1) / parallelism
	return start, end
}

// Router routes keys of one keyed operator to subtasks. The zero value is
// not usable; build one with NewRouter.
type Router struct {
	Parallelism    int
	MaxParallelism int
}

// NewRouter checks the parallelism pair the way Flink does and returns a
// Router. maxParallelism 0 means Flink's default for parallelism.
func NewRouter(parallelism, maxParallelism int) (Router, error) {
	if maxParallelism == 0 {
		maxParallelism = DefaultMaxParallelism(parallelism)
	}
	if err := Validate(parallelism, maxParallelism); err != nil {
		return Router{}, err
	}
	return Router{Parallelism: parallelism, MaxParallelism: maxParallelism}, nil
}

// Validate reports whether Flink would accept this parallelism pair.
func Validate(parallelism, maxParallelism int) error {
	switch {
	case parallelism < 1:
		return fmt.Errorf("parallelism %d: must be at least 1", parallelism)
	case maxParallelism < 1 || maxParallelism > UpperBoundMaxParallelism:
		return fmt.Errorf("max parallelism %d: must be in [1, %d]", maxParallelism, UpperBoundMaxParallelism)
	case parallelism > maxParallelism:
		return fmt.Errorf("parallelism %d exceeds max parallelism %d", parallelism, maxParallelism)
	}
	return nil
}

// Route returns the key group and subtask of a key with the given Java hash.
func (r Router) Route(hash int32) (keyGroup, subtask int) {
	kg := KeyGroupForHash(hash, r.MaxParallelism)
	return kg, OperatorIndex(kg, r.MaxParallelism, r.Parallelism)
}

// Subtask returns the subtask that receives the String key s.
func (r Router) Subtask(s string) int {
	_, st := r.Route(StringHash(s))
	return st
}
