/* qlink_zarr: ZarrScanExec, the execution plan of a table scan.
 *
 * Partitions are blocks of the table's chunk grid (model.h: extents that
 * are common multiples of every array's chunk extent, so a partition reads
 * whole chunks of each array), minus the blocks the dimension filters prune.
 * Inside a block only the chunks covering the selected positions are read,
 * and only the projected arrays. Each partition produces record batches of
 * the task context's batch size, in C order of its block, at most `limit`
 * rows. Statistics are exact.
 *
 * Thread-safety: the plan and its shared state are immutable except for
 * atomic metrics; partitions may execute concurrently; a stream may
 * outlive its plan.
 */
#ifndef QLINK_ZARR_SCAN_H
#define QLINK_ZARR_SCAN_H

#include "filters.h"
#include "model.h"
#include "qlink/table.h"

/* Build the plan for table `table` of `ds` (a reference is taken). */
int zr_scan_plan_new(struct zr_dataset *ds, int32_t table, const struct ql_scan_args *args,
                     struct ql_execution_plan *out, struct ql_error *error);

/* Exact statistics of `t` restricted to `sel` over the columns `proj`
 * (n_proj; -1 for every column); partition box start/count, or NULL for the
 * whole table. `limit` -1 for none. */
int zr_statistics(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_selection *sel,
                  const int64_t *start, const int64_t *count, const int32_t *proj, int32_t n_proj, int64_t limit,
                  struct ql_statistics *out, struct ql_error *error);

#endif /* QLINK_ZARR_SCAN_H */
