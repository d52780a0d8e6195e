// Package keygroup reproduces Apache Flink's key routing bit for bit: Java's
// hashCode for the common key types, Flink's MathUtils.murmurHash, and
// KeyGroupRangeAssignment (key group, operator index, key-group range and
// the default max parallelism).
//
// Salting suggestions are only useful if the salted keys really land on
// different subtasks, so every function here must agree with the JVM. The
// golden vectors in testdata/keygroups.jsonl were computed on a real JVM
// with Flink's own classes.
//
// All functions are pure and safe for concurrent use.
package keygroup
