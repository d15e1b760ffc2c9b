/* qlink_sample: declarations shared by the sample plugin's files.
 *
 * Nothing here is exported: the plugin is built with hidden visibility and
 * only qlink_plugin_init (plugin.c) has default visibility.
 */
#ifndef QLINK_SAMPLE_INTERNAL_H
#define QLINK_SAMPLE_INTERNAL_H

#include <stdint.h>

#include "qlink/plugin.h"

#define QL_SAMPLE_NAME "qlink_sample"
#define QL_SAMPLE_VERSION "0.1.0"

/* Function uids, unique within qlink_sample (function identity, gap G2). */
enum { QL_SAMPLE_UID_ADD_ONE = 1, QL_SAMPLE_UID_SUM_SQ = 2, QL_SAMPLE_UID_RUNNING_COUNT = 3 };

/* ---- series table provider (series.c, series_ranges.c, series_stream.c) */

extern const struct ql_option_info ql_sample_series_options[];
extern const int32_t ql_sample_series_n_options;

int ql_sample_series_open(const struct ql_options *options, struct ql_table_provider *out, struct ql_error *error);

/* Parameters of one series: value_k = start + k * step for k in [0, count). */
struct ql_sample_series {
  int64_t start;
  int64_t stop;
  int64_t step;
  int64_t partitions;
  int64_t count;
};

/* Half-open ranges [lo, hi) of row indices k, sorted and disjoint. */
struct ql_sample_range {
  int64_t lo;
  int64_t hi;
};
struct ql_sample_ranges {
  int64_t n;
  struct ql_sample_range *items; /* malloc'd; NULL when n == 0 */
};

int64_t ql_sample_series_value(const struct ql_sample_series *s, int64_t k);
/* Row range of partition p: [count*p/partitions, count*(p+1)/partitions). */
struct ql_sample_range ql_sample_partition_range(const struct ql_sample_series *s, int64_t p);
/* What the scan does with one filter: QL_PUSHDOWN_EXACT for a comparison
 * (=, <, <=, >, >=), BETWEEN or IN over `value` with integer literals,
 * QL_PUSHDOWN_UNSUPPORTED for anything else. */
int32_t ql_sample_filter_pushdown(const struct ql_plan_view *view, ql_expr_id expr);
/* The rows that pass an EXACT filter (QL_EINTERNAL for any other). */
int ql_sample_filter_rows(const struct ql_sample_series *s, const struct ql_plan_view *view, ql_expr_id expr,
                          struct ql_sample_ranges *out, struct ql_error *error);
int ql_sample_ranges_intersect(const struct ql_sample_ranges *a, const struct ql_sample_ranges *b,
                               struct ql_sample_ranges *out, struct ql_error *error);
/* Keep only the first `limit` rows (limit >= 0). */
void ql_sample_ranges_truncate(struct ql_sample_ranges *r, int64_t limit);
int64_t ql_sample_ranges_rows(const struct ql_sample_ranges *r);
void ql_sample_ranges_free(struct ql_sample_ranges *r);
/* Exact min/max of value and of value*value over the rows of `r` (rows > 0). */
void ql_sample_ranges_minmax(const struct ql_sample_series *s, const struct ql_sample_ranges *r, int64_t *vmin,
                             int64_t *vmax, int64_t *sqmin, int64_t *sqmax);

/* Statistics over `n_columns` output columns (indices into the full schema:
 * 0 value, 1 square, 2 parity) of the rows in `r`. */
int ql_sample_statistics_fill(const struct ql_sample_series *s, const struct ql_sample_ranges *r,
                              const int32_t *columns, int64_t n_columns, struct ql_statistics *out,
                              struct ql_error *error);

/* The full table schema: value int64, square int64, parity utf8. */
int ql_sample_series_schema(struct ArrowSchema *out, struct ql_error *error);

/* One planned scan, shared (reference-counted) by the execution plan, its
 * copies and its streams, so a stream may outlive the plan. Immutable after
 * creation except the atomic counters. */
struct ql_sample_scan {
  _Atomic int64_t refs;
  _Atomic int64_t output_rows; /* metric: rows produced by every stream */
  struct ql_sample_series series;
  int32_t n_columns;
  int32_t *columns;             /* full-schema indices of the output columns */
  struct ql_sample_ranges rows; /* rows that pass the pushed filters and limit */
  struct ArrowSchema schema;    /* output schema */
  int64_t n_ordering;
  struct ql_sort_key ordering[1];
  int64_t n_filters; /* for EXPLAIN */
  int64_t limit;
  _Atomic(char *) display; /* built on first use: most scans are never explained */
};
/* Leaf execution plans (scans): no children. take_children releases the
 * `n_children` plans it is given (it owns them, as with_new_children does)
 * and fails with QL_EINVAL naming `plan` unless there are none. */
int64_t ql_sample_leaf_child_count(const struct ql_execution_plan *self);
const struct ql_execution_plan *ql_sample_leaf_child(const struct ql_execution_plan *self, int64_t i);
int ql_sample_leaf_take_children(const char *plan, struct ql_execution_plan *children, int64_t n_children,
                                 struct ql_error *error);

/* A plan's display line, built on first use: installs `built` (malloc'd,
 * NULL when out of memory) in `slot` unless another thread's is already
 * there (then `built` is freed) and returns the one kept, or
 * `out_of_memory` (static) for NULL. Callers look at `slot` first. */
const char *ql_sample_display_keep(_Atomic(char *) *slot, char *built, const char *out_of_memory);

void ql_sample_scan_ref(struct ql_sample_scan *scan);
void ql_sample_scan_unref(struct ql_sample_scan *scan);

/* The stream of partition `partition` of `scan` (takes a reference).
 * Reserves its buffers from ctx's memory pool, if any. */
int ql_sample_series_stream_new(struct ql_sample_scan *scan, int64_t partition, const struct ql_task_context *ctx,
                                struct ArrowArrayStream *out, struct ql_error *error);

/* ---- grid table provider (grid.c): an in-memory table built at open,
 * whose scans hand out its buffers by reference (see grid.c) */

extern const struct ql_option_info ql_sample_grid_options[];
extern const int32_t ql_sample_grid_n_options;

int ql_sample_grid_open(const struct ql_options *options, struct ql_table_provider *out, struct ql_error *error);

/* ---- functions (functions.c) */
int ql_sample_scalar_open(const char *name, struct ql_scalar_function *out, struct ql_error *error);
int ql_sample_aggregate_open(const char *name, struct ql_aggregate_function *out, struct ql_error *error);
int ql_sample_window_open(const char *name, struct ql_window_function *out, struct ql_error *error);

/* ---- planners (planners.c) */
int ql_sample_planner_open(const char *name, const struct ql_options *options, struct ql_planner *out,
                           struct ql_error *error);

#endif /* QLINK_SAMPLE_INTERNAL_H */
