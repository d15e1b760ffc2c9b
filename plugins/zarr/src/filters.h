/* qlink_zarr: filter pushdown on dimension columns.
 *
 * Supported exactly: a dimension column compared with a literal (=, <>, <,
 * <=, >, >=, either side), [NOT] BETWEEN, [NOT] IN (literals), NOT of a
 * supported expression, AND of supported expressions, and OR of supported
 * expressions on the same dimension. Literals must be non-null numbers for
 * numeric columns, timestamps (any unit, any time zone, or dates) for
 * timestamp columns and durations for duration columns; timestamps compare
 * in the column's unit. Each dimension gets a mask over its positions,
 * evaluated on the decoded coordinate values (so non-monotonic coordinates
 * work too); comparisons order floats as Arrow does (NaN largest and equal
 * to itself). A NULL coordinate never matches.
 *
 * Thread-safety: pure functions of their arguments.
 */
#ifndef QLINK_ZARR_FILTERS_H
#define QLINK_ZARR_FILTERS_H

#include "model.h"
#include "qlink/plan.h"

/* Per table dimension, 1 where the position passes every applied filter;
 * NULL: every position passes. */
struct zr_selection {
  int32_t ndim;
  uint8_t *mask[ZR_MAX_DIMS];
};

/* 1 if filter `e` of `view` can be applied exactly, else 0. */
int zr_filter_supported(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *view,
                        ql_expr_id e);
/* Apply a supported filter (zr_filter_supported == 1) to `sel`. */
int zr_filter_apply(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *view,
                    ql_expr_id e, struct zr_selection *sel, struct ql_error *error);
void zr_selection_free(struct zr_selection *sel);

#endif /* QLINK_ZARR_FILTERS_H */
