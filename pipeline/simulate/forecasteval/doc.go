// Package forecasteval scores the engine's checkpoint-timeout forecast
// (skew's checkpoint_risk with a forecast in its evidence) against what
// the checkpoints of a run did: precision and recall of "a checkpoint
// times out within the horizon", evaluated at the end of every window,
// and the lead time from the first warning to the first timeout.
//
// Score takes findings and checkpoint outcomes, wherever they come from:
// the simulator's (pipeline/simulate, Generator.Checkpoints, through
// Ended) in this package's labelled set, or a real Flink capture's truth:
// a Run per job with the findings `skewlens analyze` printed for it
// (run with the job's --checkpoint-timeout), its checkpoints' ends and
// whether each timed out, its execution.checkpointing.interval, and the
// span the capture covers. The package's
// test is the labelled set: seeded simulated runs whose sink slows step
// by step towards a checkpoint timeout (some recover before, some after
// it), runs with a sudden burst, and healthy or steadily slow runs,
// replayed through the engine as `skewlens analyze` does.
//
// Score is pure and safe for concurrent use.
package forecasteval
