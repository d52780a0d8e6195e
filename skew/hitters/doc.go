// Package hitters finds the heavy hitters of a weighted key stream with
// filtered Space-Saving (Homem and Carvalho, 2010, after Metwally, Agrawal
// and El Abbadi's Space-Saving, 2005), extended to weighted updates and to
// merging. skewlens uses it to find the keys that carry a disproportionate
// share of the records sent to a Flink operator.
//
// # Design
//
// A Sketch has k counters and, in front of them, a filter of 2k cells. A
// key without a counter is hashed to a cell, which holds an upper bound on
// the weight of every key of the cell without a counter. Such a key's
// weight goes to its cell as long as the cell stays at or below the
// smallest count; only a key whose cell would pass it takes over the
// counter with the smallest count, with its cell's bound as its error,
// and the evicted key's count becomes its own cell's bound. So the many
// light keys of a long tail stay in the filter instead of evicting each
// other through the counters (plain Space-Saving), and a key that takes a
// counter brings the error of its cell, not of the whole sketch: at
// k = 1024, recall@200 on a Zipf(1.1) stream, ranked by Count-Err, rises
// from 0.89 to 1. The cells are float32s that take the bytes a 64-bit key
// hash per counter took before, so the filter costs no memory.
//
// # Guarantee
//
// A Sketch with k counters that has seen a total weight N (the sum of all
// weights passed to Add and AddTagged, plus the totals of merged sketches)
// promises:
//
//   - Every key whose true weight exceeds N/k has a counter.
//   - For every key with a counter, Count-Err <= true weight <= Count, and
//     Err <= MinCount <= N/k. So Count overestimates by at most N/k. Err is
//     the bound of the key's cell when it took its counter (0 for a key
//     first seen then), which is usually far below MinCount.
//   - A key without a counter has a true weight of at most its cell's
//     bound capped by MinCount, which Estimate reports, and so at most
//     MinCount, the smallest Count in the sketch, which is itself at most
//     N/k. While the sketch has fewer than k counters it has never dropped
//     a key, so every count is exact and Err is 0.
//
// These are the bounds of plain Space-Saving with k counters: the filter
// adds no error, because a cell never exceeds the smallest count and the
// counts still add up to at most N (weight that stays in the filter is in
// no count, and a takeover adds its weight plus a bound of at most the
// count it evicts). The bound is relative to the whole stream: a key's
// share is reported to within 1/k of N, so k must be chosen as the inverse
// of the smallest share that matters (k = 1000 resolves shares of 0.1%).
//
// Merge keeps the same guarantee over the union of both streams, with N the
// sum of both totals, as long as the merged-in sketch has at least as many
// counters as the receiver (see Merge for the general bound). This is what
// lets each Flink subtask's sketch be built independently and combined.
//
// The guarantees hold exactly in real arithmetic. Counts are float64 sums,
// so in practice they carry the usual floating-point rounding error, which
// is relative to N and far below N/k for any realistic k. Cells are
// rounded up to float32, so they stay upper bounds, and are capped by
// MinCount when read.
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
// counter (60 bytes for count, error, tag, heap links, the key's slice
// header and two 4-byte filter cells, plus two to four 8-byte hash-table
// slots, since the table is the power of two at or above 2k), exactly
// what plain Space-Saving with k counters took here (TestEqualMemory):
// 77,824 bytes of arrays for k = 1024. On top of that each counter keeps a
// byte buffer for its key that is reused for every key that later takes
// the counter, so it grows to the longest key the counter has held and
// never shrinks, not even on Reset. Memory is therefore bounded by about
// k * (100 + longest key) bytes regardless of the stream length, and
// updates stop allocating once the buffers have reached the stream's key
// length. Callers that may see unbounded keys should cap key length before
// adding.
package hitters
