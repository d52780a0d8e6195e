package keygroup

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
	"unicode/utf16"
)

// vector is one line of testdata/keygroups.jsonl, computed on a JVM with
// Flink's KeyGroupRangeAssignment.
type vector struct {
	Key                   string `json:"key"`
	JavaHash              int32  `json:"java_hash"`
	Parallelism           int    `json:"parallelism"`
	MaxParallelism        int    `json:"max_parallelism"`
	DefaultMaxParallelism int    `json:"default_max_parallelism"`
	KeyGroup              int    `json:"key_group"`
	Subtask               int    `json:"subtask"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open("testdata/keygroups.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []vector
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("vector %d: %v", len(vs)+1, err)
		}
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestGoldenVectors(t *testing.T) {
	vs := loadVectors(t)
	if len(vs) != 108 {
		t.Fatalf("got %d vectors, want 108", len(vs))
	}
	for i, v := range vs {
		if got := StringHash(v.Key); got != v.JavaHash {
			t.Errorf("vector %d %q: StringHash = %d, want %d", i+1, v.Key, got, v.JavaHash)
		}
		if got := DefaultMaxParallelism(v.Parallelism); got != v.DefaultMaxParallelism {
			t.Errorf("vector %d: DefaultMaxParallelism(%d) = %d, want %d", i+1, v.Parallelism, got, v.DefaultMaxParallelism)
		}
		r, err := NewRouter(v.Parallelism, v.MaxParallelism)
		if err != nil {
			t.Fatalf("vector %d: %v", i+1, err)
		}
		kg, st := r.Route(v.JavaHash)
		if kg != v.KeyGroup || st != v.Subtask {
			t.Errorf("vector %d %q p=%d m=%d: got kg=%d st=%d, want kg=%d st=%d",
				i+1, v.Key, v.Parallelism, v.MaxParallelism, kg, st, v.KeyGroup, v.Subtask)
		}
		if got := r.Subtask(v.Key); got != v.Subtask {
			t.Errorf("vector %d: Subtask = %d, want %d", i+1, got, v.Subtask)
		}
		start, end := Range(v.MaxParallelism, v.Parallelism, v.Subtask)
		if v.KeyGroup < start || v.KeyGroup > end {
			t.Errorf("vector %d: key group %d outside subtask %d's range [%d,%d]", i+1, v.KeyGroup, v.Subtask, start, end)
		}
	}
}

// javaHashUTF16 is an independent reference: encode to UTF-16 with the
// standard library and fold exactly as Java does.
func javaHashUTF16(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

func TestStringHashTable(t *testing.T) {
	tests := []struct {
		in   string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"Hello", 69609650},
		{"用户42", 917655757},
		{"🔥hot", 1270405829},
		// Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
		{"polygenelubricants", -2147483648},
		{"\xff", 0xFFFD}, // malformed byte counts as U+FFFD.
	}
	for _, tt := range tests {
		if got := StringHash(tt.in); got != tt.want {
			t.Errorf("StringHash(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func FuzzStringHash(f *testing.F) {
	for _, s := range []string{"", "Hello", "用户42", "🔥hot", "\x00x", "k#3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// []rune(s) maps malformed bytes to U+FFFD, matching StringHash.
		if got, want := StringHash(s), javaHashUTF16(s); got != want {
			t.Fatalf("StringHash(%q) = %d, reference %d", s, got, want)
		}
	})
}

func TestMurmurHashNonNegative(t *testing.T) {
	for _, c := range []int32{0, 1, -1, 69609650, -2147483648, 2147483647} {
		if h := MurmurHash(c); h < 0 {
			t.Errorf("MurmurHash(%d) = %d < 0", c, h)
		}
	}
}

func TestDefaultMaxParallelism(t *testing.T) {
	tests := []struct{ p, want int }{
		{1, 128}, {85, 128}, {86, 256}, {100, 256}, {170, 256}, {171, 256}, {172, 512},
		{480, 1024}, {1000, 2048}, {21845, 32768}, {21846, 32768}, {100000, 32768},
	}
	for _, tt := range tests {
		if got := DefaultMaxParallelism(tt.p); got != tt.want {
			t.Errorf("DefaultMaxParallelism(%d) = %d, want %d", tt.p, got, tt.want)
		}
	}
}

func TestNewRouterValidation(t *testing.T) {
	tests := []struct {
		p, m    int
		wantErr bool
		wantM   int
	}{
		{10, 0, false, 128},
		{10, 128, false, 128},
		{0, 128, true, 0},
		{200, 128, true, 0},
		{10, 40000, true, 0},
	}
	for _, tt := range tests {
		r, err := NewRouter(tt.p, tt.m)
		if (err != nil) != tt.wantErr {
			t.Errorf("NewRouter(%d,%d) err = %v, wantErr %v", tt.p, tt.m, err, tt.wantErr)
			continue
		}
		if err == nil && r.MaxParallelism != tt.wantM {
			t.Errorf("NewRouter(%d,%d).MaxParallelism = %d, want %d", tt.p, tt.m, r.MaxParallelism, tt.wantM)
		}
	}
}

// TestRangesPartitionKeyGroups checks that the key-group ranges of all
// subtasks tile [0, maxParallelism) and that OperatorIndex agrees with them.
func TestRangesPartitionKeyGroups(t *testing.T) {
	for _, pm := range [][2]int{{1, 128}, {3, 128}, {7, 32768}, {10, 128}, {100, 256}, {480, 720}, {128, 128}} {
		p, m := pm[0], pm[1]
		next := 0
		for i := 0; i < p; i++ {
			start, end := Range(m, p, i)
			if start != next {
				t.Fatalf("p=%d m=%d: subtask %d starts at %d, want %d", p, m, i, start, next)
			}
			for kg := start; kg <= end; kg++ {
				if got := OperatorIndex(kg, m, p); got != i {
					t.Fatalf("p=%d m=%d: OperatorIndex(%d) = %d, want %d", p, m, kg, got, i)
				}
			}
			next = end + 1
		}
		if next != m {
			t.Fatalf("p=%d m=%d: ranges end at %d", p, m, next)
		}
	}
}

func TestLongAndTupleHash(t *testing.T) {
	tests := []struct {
		v    int64
		want int32
	}{
		{0, 0}, {1, 1}, {-1, 0}, {1 << 32, 1}, {1593004200000, -428666574},
	}
	for _, tt := range tests {
		if got := LongHash(tt.v); got != tt.want {
			t.Errorf("LongHash(%d) = %d, want %d", tt.v, got, tt.want)
		}
	}
	// Tuple2.of("a", 1).hashCode() == 31*97 + 1.
	if got := TupleHash(StringHash("a"), IntHash(1)); got != 31*97+1 {
		t.Errorf("TupleHash = %d", got)
	}
}

func BenchmarkRouteString(b *testing.B) {
	r, _ := NewRouter(480, 720)
	key := "u42|1593004200000"
	b.ReportAllocs()
	b.SetBytes(int64(len(key)))
	for b.Loop() {
		_ = r.Subtask(key)
	}
}
