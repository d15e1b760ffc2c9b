/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: declarations shared by the sample plugin's files.
 *
 * Nothing here is exported: the plugin is built with hidden visibility and
 * only qlink_plugin_init (plugin.c) has default visibility.
 */
#ifndef QLINK_SAMPLE_INTERNAL_H
#define QLINK_SAMPLE_INTERNAL_H

#include <stdint.h>

#include "qlink/plugin.h"

#define SMP_NAME "qlink_sample"
#define SMP_VERSION "0.1.0"

/* Function uids, unique within qlink_sample (function identity, gap G2). */
enum { SMP_UID_ADD_ONE = 1, SMP_UID_SUM_SQ = 2, SMP_UID_RUNNING_COUNT = 3, SMP_UID_SAMPLE_RANGE = 4 };

/* ---- series table provider (series.c, series_ranges.c, series_stream.c) */

extern const struct ql_option_info smp_series_options[];
extern const int32_t smp_series_n_options;

int smp_series_open(const struct ql_options *options, struct ql_table_provider *out, struct ql_error *error);

/* Parameters of one series: value_k = start + k * step for k in [0, count).
 * n_columns: the table's columns are the first n_columns of value, square,
 * parity (3 for the series provider, 1 for the sample_range function). */
struct smp_series {
  int64_t start;
  int64_t stop;
  int64_t step;
  int64_t partitions;
  int64_t count;
  int32_t n_columns;
};

/* Check start, stop, step and partitions of `s` and compute its count.
 * QL_EINVAL naming the parameter after `who` ("qlink_sample/series:
 * option", "sample_range: argument") for |start|, |stop| or |step| above
 * 3037000499 (so that square fits in int64), step 0, or partitions outside
 * 1..1024. */
int smp_series_init(struct smp_series *s, const char *who, struct ql_error *error);
/* A table provider over `s` (copied; initialised by smp_series_init):
 * the series provider's scans, pushdown and statistics over s->n_columns
 * columns. `out` owned by the caller. */
int smp_series_provider(const struct smp_series *s, struct ql_table_provider *out, struct ql_error *error);

/* Half-open ranges [lo, hi) of row indices k, sorted and disjoint. */
struct smp_range {
  int64_t lo;
  int64_t hi;
};
struct smp_ranges {
  int64_t n;
  struct smp_range *items; /* malloc'd; NULL when n == 0 */
};

int64_t smp_series_value(const struct smp_series *s, int64_t k);
/* Row range of partition p: [count*p/partitions, count*(p+1)/partitions). */
struct smp_range smp_partition_range(const struct smp_series *s, int64_t p);
/* What the scan does with one filter: QL_PUSHDOWN_EXACT for a comparison
 * (=, <, <=, >, >=), BETWEEN or IN over `value` with integer literals,
 * QL_PUSHDOWN_UNSUPPORTED for anything else. */
int32_t smp_filter_pushdown(const struct ql_plan_view *view, ql_expr_id expr);
/* The rows that pass an EXACT filter (QL_EINTERNAL for any other). */
int smp_filter_rows(const struct smp_series *s, const struct ql_plan_view *view, ql_expr_id expr,
                          struct smp_ranges *out, struct ql_error *error);
int smp_ranges_intersect(const struct smp_ranges *a, const struct smp_ranges *b,
                               struct smp_ranges *out, struct ql_error *error);
/* Keep only the first `limit` rows (limit >= 0). */
void smp_ranges_truncate(struct smp_ranges *r, int64_t limit);
int64_t smp_ranges_rows(const struct smp_ranges *r);
void smp_ranges_free(struct smp_ranges *r);
/* Exact min/max of value and of value*value over the rows of `r` (rows > 0). */
void smp_ranges_minmax(const struct smp_series *s, const struct smp_ranges *r, int64_t *vmin,
                             int64_t *vmax, int64_t *sqmin, int64_t *sqmax);

/* Statistics over `n_columns` output columns (indices into the full schema:
 * 0 value, 1 square, 2 parity) of the rows in `r`. */
int smp_statistics_fill(const struct smp_series *s, const struct smp_ranges *r,
                              const int32_t *columns, int64_t n_columns, struct ql_statistics *out,
                              struct ql_error *error);

/* The table schema: the first n_columns of value int64, square int64,
 * parity utf8. */
int smp_series_schema(int32_t n_columns, struct ArrowSchema *out, struct ql_error *error);

/* One planned scan, shared (reference-counted) by the execution plan, its
 * copies and its streams, so a stream may outlive the plan. Immutable after
 * creation except the atomic counters. */
struct smp_scan {
  _Atomic int64_t refs;
  _Atomic int64_t output_rows; /* metric: rows produced by every stream */
  struct smp_series series;
  int32_t n_columns;
  int32_t *columns;             /* full-schema indices of the output columns */
  struct smp_ranges rows; /* rows that pass the pushed filters and limit */
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
int64_t smp_leaf_child_count(const struct ql_execution_plan *self);
const struct ql_execution_plan *smp_leaf_child(const struct ql_execution_plan *self, int64_t i);
int smp_leaf_take_children(const char *plan, struct ql_execution_plan *children, int64_t n_children,
                                 struct ql_error *error);

/* A plan's display line, built on first use: installs `built` (malloc'd,
 * NULL when out of memory) in `slot` unless another thread's is already
 * there (then `built` is freed) and returns the one kept, or
 * `out_of_memory` (static) for NULL. Callers look at `slot` first. */
const char *smp_display_keep(_Atomic(char *) *slot, char *built, const char *out_of_memory);

void smp_scan_ref(struct smp_scan *scan);
void smp_scan_unref(struct smp_scan *scan);

/* The stream of partition `partition` of `scan` (takes a reference).
 * Reserves its buffers from ctx's memory pool, if any. */
int smp_series_stream_new(struct smp_scan *scan, int64_t partition, const struct ql_task_context *ctx,
                                struct ArrowArrayStream *out, struct ql_error *error);

/* ---- grid table provider (grid.c): an in-memory table built at open,
 * whose scans hand out its buffers by reference (see grid.c) */

extern const struct ql_option_info smp_grid_options[];
extern const int32_t smp_grid_n_options;

int smp_grid_open(const struct ql_options *options, struct ql_table_provider *out, struct ql_error *error);

/* ---- functions (functions.c) */
int smp_scalar_open(const char *name, struct ql_scalar_function *out, struct ql_error *error);
int smp_aggregate_open(const char *name, struct ql_aggregate_function *out, struct ql_error *error);
int smp_window_open(const char *name, struct ql_window_function *out, struct ql_error *error);

/* ---- table function (range.c) */
int smp_table_function_open(const char *name, struct ql_table_function *out, struct ql_error *error);

/* ---- planners (planners.c) */
int smp_planner_open(const char *name, const struct ql_options *options, struct ql_planner *out,
                           struct ql_error *error);

#endif /* QLINK_SAMPLE_INTERNAL_H */
