// Package hitters finds the heavy hitters of a weighted key stream with the
// Space-Saving algorithm (Metwally, Agrawal and El Abbadi, 2005), extended to
// weighted updates and to merging. skewlens uses it to find the keys that
// carry a disproportionate share of the records sent to a Flink operator.
//
// # Guarantee
//
// A Sketch with k counters that has seen a total weight N (the sum of all
// weights passed to Add and AddTagged, plus the totals of merged sketches)
// promises:
//
//   - Every key whose true weight exceeds N/k has a counter.
//   - For every key with a counter, Count-Err <= true weight <= Count, and
//     Err <= N/k. So Count overestimates by at most N/k.
//   - A key without a counter has a true weight of at most the smallest
//     Count in the sketch (MinCount), which is itself at most N/k. While the
//     sketch has fewer than k counters it has never dropped a key, so every
//     count is exact and Err is 0.
//
// The bound is relative to the whole stream: a key's share is reported to
// within 1/k of N, so k must be chosen as the inverse of the smallest share
// that matters (k = 1000 resolves shares of 0.1%).
//
// Merge keeps the same guarantee over the union of both streams, with N the
// sum of both totals, as long as the merged-in sketch has at least as many
// counters as the receiver (see Merge for the general bound). This is what
// lets each Flink subtask's sketch be built independently and combined.
//
// The guarantees hold exactly in real arithmetic. Counts are float64 sums,
// so in practice they carry the usual floating-point rounding error, which
// is relative to N and far below N/k for any realistic k.
//
// # Determinism
//
// The sketch uses no randomness, no clock and no map iteration, and the hash
// (xxhash64) is unseeded, so the same sequence of calls always produces the
// same counters, and Top breaks ties by key.
//
// # Concurrency
//
// A Sketch is not safe for concurrent use: one goroutine owns it. Sketches
// built by different goroutines may be combined with Merge once their
// writers have stopped; Merge only reads its argument.
//
// # Memory
//
// A Sketch allocates all of its bookkeeping in New: under 100 bytes per
// counter (60 bytes for count, error, tag, hash, heap links and the key's
// slice header, plus two to four 8-byte hash-table slots, since the table
// is the power of two at or above 2k). On top of that each counter keeps a
// byte buffer for its key that is reused for every key that later takes
// the counter, so it grows to the longest key the counter has held and
// never shrinks, not even on Reset. Memory is therefore bounded by about
// k * (100 + longest key) bytes regardless of the stream length, and
// updates stop allocating once the buffers have reached the stream's key
// length. Callers that may see unbounded keys should cap key length before
// adding.
package hitters
