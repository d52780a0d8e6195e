/**
 * Applying skewlens' salting plans inside a Flink job.
 *
 * <ul>
 *   <li>{@link io.github.skewlens.flink.salting.SaltingConfig}: where plans
 *       come from (skewlens serve over HTTP, or the plans topic) and the
 *       keyed task they are for.
 *   <li>{@link io.github.skewlens.flink.salting.Salting}: salts a stream and
 *       keys it by the salted key;
 *       {@link io.github.skewlens.flink.salting.Salter},
 *       {@link io.github.skewlens.flink.salting.Salted} and
 *       {@link io.github.skewlens.flink.salting.SaltedKeySelector} are its
 *       parts.
 *   <li>{@link io.github.skewlens.flink.salting.TwoPhaseAggregation}: the
 *       two-phase aggregation that keeps results right while plans change.
 *   <li>{@link io.github.skewlens.flink.salting.PlanClient}: the shared,
 *       non-blocking plan follower underneath.
 * </ul>
 *
 * <p>With no plan, a retired plan, an invalid plan, a plan for another
 * parallelism, or an unreachable source, keys pass through unchanged.
 */
package io.github.skewlens.flink.salting;
