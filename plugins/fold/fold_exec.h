/* qlink_fold: FoldExec, the execution plan that folds SUM(x * y) into the join.
 *
 * Children: the two host-planned join inputs (child 0 = the join's left
 * input, child 1 = its right input), visible to the host for EXPLAIN and
 * optimisation. One output partition; output schema = the Aggregate node's.
 *
 * Algorithm (no joined row is ever materialised):
 *  1. Build: drain every partition of the build child (the one with fewer
 *     rows by statistics; the right input when unknown) into a table keyed
 *     by the join keys (in parallel on the host's executor when it offers
 *     one, a table per partition merged in partition order). Rows with a NULL key are dropped
 *     (NULL never matches). int64 sums are pre-aggregated per (join key,
 *     build-side group key): sum over the pairs of x * y = x * (sum of y),
 *     exact under DataFusion's wrapping int64 arithmetic; a flag remembers
 *     whether any y was non-NULL. float64 build rows are kept one per row so
 *     each product is the same rounded product DataFusion computes.
 *     When statistics prove a single integer join key dense on the build side
 *     (exact min, max and distinct count with distinct = max - min + 1), the
 *     key index is a dense array indexed by key - min instead of a hash.
 *  2. Probe: stream the other child's partitions (in parallel on the host's
 *     executor when it offers one), each into its own group table; for each
 *     probe row and each matching build entry the group (probe group keys,
 *     build group keys) is created (a group exists iff a joined row exists)
 *     and, when both factors are non-NULL, the product is added.
 *  3. Merge the per-partition group tables in partition order and emit
 *     record batches of the task context's batch size. A group without any
 *     non-NULL product gives NULL; without GROUP BY, one row (NULL when there
 *     is no joined row).
 * Determinism: int64 sums are exact (mod 2^64, as DataFusion's). float64
 * sums are exact sums rounded once (fold_xsum.h): the same bits whatever the
 * partitioning, thread count or timing.
 * Memory: every table is reserved from the task context's memory pool; a
 * refusal fails the stream with the pool's QL_ERESOURCES error (errno ENOSPC
 * from get_next, message from get_last_error).
 */
#ifndef QL_FOLD_EXEC_H
#define QL_FOLD_EXEC_H

#include "fold_spec.h"
#include "qlink/table.h"

/* A FoldExec over `children` (two plans, moved in on success and failure)
 * producing `schema` (copied: the aggregate node's output schema). */
int ql_fold_exec_new(const struct ql_fold_spec *spec, const struct ArrowSchema *schema,
                     struct ql_execution_plan *children, struct ql_execution_plan *out, struct ql_error *error);

/* QL_OK if `child`'s schema has the columns `spec` reads from `side` with
 * the types the plan view promised; QL_EINVAL naming the first that differs. */
int ql_fold_check_child(const struct ql_fold_spec *spec, int side, const struct ql_execution_plan *child,
                        struct ql_error *error);

#endif /* QL_FOLD_EXEC_H */
