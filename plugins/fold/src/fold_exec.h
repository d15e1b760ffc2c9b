/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: FoldExec, the execution plan that folds SUM(x * y) into the join.
 *
 * Children: the two host-planned join inputs (child 0 = the join's left
 * input, child 1 = its right input), visible to the host for EXPLAIN and
 * optimisation. One output partition; output schema = the Aggregate node's.
 *
 * Algorithm (no joined row is ever materialised):
 *  0. Read: drain every partition of both children (in parallel on the
 *     host's executor when it offers one) into typed arrays per partition,
 *     dropping rows with a NULL join key (NULL never matches). Which kernel
 *     runs is decided from these rows, never from statistics (a host may
 *     give none, and they may be inexact).
 *  1. Dense kernel (fold_dense.h): when there is one integer join key, at
 *     most one integer group key per side, an int64 or float64 product, and
 *     the key and group values read span ranges so full that the matrices
 *     A[group][key], B[key][group] and C are about as large as the inputs,
 *     C = A B gives the groups directly. A float cell holding two values (a
 *     duplicate (group, key) pair) or a non-finite one sends the run to the
 *     hash path instead, since each product must be DataFusion's product.
 *  2. Hash path, build: the side with fewer rows read (the right one on
 *     ties) goes into a table keyed by the join keys; a single integer key
 *     whose values span at most about twice the rows is indexed directly
 *     (key - min) instead of hashed. int64 sums are pre-aggregated per (join
 *     key, build-side group key): sum over the pairs of x * y = x * (sum of
 *     y), exact under DataFusion's wrapping int64 arithmetic; a flag
 *     remembers whether any y was non-NULL. float64 build rows are kept one
 *     per row so each product is the same rounded product DataFusion
 *     computes.
 *  3. Hash path, probe: the other side's rows are split into buckets by
 *     the hash of their group keys (so buckets own disjoint groups), one
 *     task per bucket on the executor; for each probe row and each matching
 *     build entry the group (probe group keys, build group keys) is created
 *     (a group exists iff a joined row exists) and, when both factors are
 *     non-NULL, the product is added. The bucket tables are concatenated.
 *     (A probe side without group keys: one task per partition, merged in
 *     partition order.)
 *  4. Emit record batches of the task context's batch size. A group without
 *     any non-NULL product gives NULL; without GROUP BY, one row (NULL when
 *     there is no joined row).
 * Determinism: int64 sums are exact (mod 2^64, as DataFusion's). On the
 * hash path float64 sums are exact sums rounded once (fold_xsum.h); on the
 * dense kernel each cell adds its products in ascending key order. Which
 * path runs depends only on the rows read. Either way: the same bits
 * whatever the partitioning, row order, thread count or timing.
 * Memory: every table is reserved from the task context's memory pool; a
 * refusal fails the stream with the pool's QL_ERESOURCES error (errno ENOSPC
 * from get_next, message from get_last_error).
 */
#ifndef QLINK_FOLD_EXEC_H
#define QLINK_FOLD_EXEC_H

#include "fold_spec.h"
#include "qlink/table.h"

/* A FoldExec over `children` (two plans, moved in on success and failure)
 * producing `schema` (copied: the aggregate node's output schema). */
int fd_exec_new(const struct fd_spec *spec, const struct ArrowSchema *schema,
                     struct ql_execution_plan *children, struct ql_execution_plan *out, struct ql_error *error);

/* QL_OK if `child`'s schema has the columns `spec` reads from `side` with
 * the types the plan view promised; QL_EINVAL naming the first that differs. */
int fd_check_child(const struct fd_spec *spec, int side, const struct ql_execution_plan *child,
                        struct ql_error *error);

#endif /* QLINK_FOLD_EXEC_H */
