/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: filter pushdown on dimension columns.
 *
 * Supported exactly: a dimension column compared with a literal (=, <>, <,
 * <=, >, >=, either side), [NOT] BETWEEN, [NOT] IN (literals), NOT of a
 * supported expression, AND of supported expressions, and OR of supported
 * expressions on the same dimension. Literals must be non-null numbers for
 * numeric columns, timestamps (any unit, any time zone, or dates) for
 * timestamp columns and durations for duration columns; timestamps compare
 * in the column's unit. Comparisons order floats as Arrow does (NaN
 * largest and equal to itself). A NULL coordinate never matches.
 *
 * How a dimension's selection is held depends on the dimension, not on the
 * filter: along a dimension whose values strictly increase or decrease
 * (every dimension without a coordinate, whose values are its positions;
 * most coordinates) each comparison is a binary search and the selection a
 * list of position ranges, so a filter costs O(literals * log n) time and
 * memory whatever the dimension's length. Along any other dimension
 * (non-monotonic, NULL or NaN coordinates, strings) it is a mask of one
 * byte per position, evaluated on every decoded value.
 *
 * Thread-safety: pure functions of their arguments.
 */
#ifndef QLINK_ZARR_FILTERS_H
#define QLINK_ZARR_FILTERS_H

#include "qlink/plan.h"
#include "qlink_zarr/model.h"

/* Sorted, disjoint, non-touching half-open position ranges
 * [bounds[2i], bounds[2i + 1]) for i < n. bounds == NULL: absent. */
struct zr_ranges {
  int64_t n;
  int64_t *bounds;
};

/* Per table dimension, the positions that pass every applied filter: a
 * mask (1 = kept), a range list, or neither (every position passes). A
 * dimension never has both. Released with zr_selection_free. */
struct zr_selection {
  int32_t ndim;
  uint8_t *mask[ZR_MAX_DIMS];
  struct zr_ranges ranges[ZR_MAX_DIMS];
};

/* The first run [*lo, *hi) of consecutive positions in [from, to) that
 * dimension k of `sel` keeps (sel may be NULL: every position); 0 when
 * there is none. Iterate with from = *hi. O(log ranges) for a range list,
 * O(positions looked at) for a mask. */
int zr_selection_run(const struct zr_selection *sel, int32_t k, int64_t from, int64_t to, int64_t *lo, int64_t *hi);

/* 1 if filter `e` of `view` can be applied exactly, else 0. */
int zr_filter_supported(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *view,
                        ql_expr_id e);
/* Apply a supported filter (zr_filter_supported == 1) to `sel`. */
int zr_filter_apply(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *view,
                    ql_expr_id e, struct zr_selection *sel, struct ql_error *error);
void zr_selection_free(struct zr_selection *sel);

#endif /* QLINK_ZARR_FILTERS_H */
