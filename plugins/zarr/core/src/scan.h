/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: ZarrScanExec, the execution plan of a table scan.
 *
 * Partitions are blocks of the table's chunk grid (model.h: extents that
 * are common multiples of every array's chunk extent, so a partition reads
 * whole chunks of each array), minus the blocks the dimension filters prune.
 * Inside a block only the chunks covering the selected positions are read,
 * and only the projected arrays. Each partition produces record batches of
 * the task context's batch size, in C order of its block, at most `limit`
 * rows. Statistics (zr_stats_emit) claim exactness only where it holds.
 *
 * Thread-safety: the plan and its shared state are immutable except for
 * atomic metrics; partitions may execute concurrently; a stream may
 * outlive its plan.
 */
#ifndef QLINK_ZARR_SCAN_H
#define QLINK_ZARR_SCAN_H

#include "filters.h"
#include "qlink/table.h"
#include "qlink_zarr/model.h"

/* Build the plan for table `table` of `ds` (a reference is taken).
 * `target_partitions` (the host's "qlink.execution.target_partitions";
 * <= 0 when unknown) bounds the partition count: the kept blocks are dealt
 * out in C order as that many contiguous runs, so no more blocks are
 * decoded at once than the host runs partitions (memory, and decode
 * buffers reused instead of freshly mapped). <= 0: one partition per kept
 * block. */
int zr_scan_plan_new(struct zr_dataset *ds, int32_t table, const struct ql_scan_args *args, int64_t target_partitions,
                     struct ql_execution_plan *out, struct ql_error *error);

/* Statistics over a union of disjoint boxes of a table: each box is the
 * product of one position range (or set of ranges) per dimension. */
struct zr_dim_stats {
  int64_t selected; /* positions of the dimension in the box that the selection keeps */
  int32_t has;      /* lo/hi hold a value (comparable, non-null coordinates) */
  struct zr_value lo, hi;
};
struct zr_stats_acc {
  int64_t rows;
  struct zr_dim_stats dims[ZR_MAX_DIMS];
};

/* Add the positions [from, to) of table dimension k (those `sel` keeps;
 * sel may be NULL) to one box's share of that dimension. */
void zr_dim_stats_add(struct zr_dim_stats *acc, const struct zr_dataset *ds, const struct zr_table *t,
                      const struct zr_selection *sel, int32_t k, int64_t from, int64_t to);
/* Add the box whose dimensions are `dims` (ndim of them) to `acc`. */
void zr_stats_acc_merge(struct zr_stats_acc *acc, int32_t ndim, const struct zr_dim_stats *dims);
/* Statistics of the accumulated boxes over the columns `proj` (n_proj; -1
 * for every column), at most `limit` rows (-1 for none): the exact row
 * count; per dimension column its min/max (numbers, times, durations, and
 * utf8 / binary bytewise: model.h's zr_dim_ordered; EXACT, INEXACT under a
 * limit; none with a NaN) and a null count of 0 when it has no NULL; total
 * bytes as the scan's Arrow buffers hold them (EXACT only when every column
 * is fixed-width and cannot be NULL, INEXACT with a nullable or bool column,
 * ABSENT with a string column). `out` is owned by the caller (release). */
int zr_stats_emit(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_stats_acc *acc,
                  const int32_t *proj, int32_t n_proj, int64_t limit, struct ql_statistics *out,
                  struct ql_error *error);

/* The accumulated statistics of the whole table `t` restricted to `sel`
 * (NULL: every row), for zr_stats_emit. */
void zr_stats_whole(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_selection *sel,
                    struct zr_stats_acc *acc);

/* Exact statistics of the whole table `t` restricted to `sel` (NULL: every
 * row), as zr_stats_emit. */
int zr_statistics(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_selection *sel,
                  const int32_t *proj, int32_t n_proj, int64_t limit, struct ql_statistics *out,
                  struct ql_error *error);

#endif /* QLINK_ZARR_SCAN_H */
