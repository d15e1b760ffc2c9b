/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: the `series` table provider and its execution plan.
 *
 * series?start=S&stop=E&step=T&partitions=P is the table of the values
 * S, S+T, ... up to E (exclusive), like PostgreSQL's generate_series but
 * half-open, with columns value, square = value*value and parity
 * ("even"/"odd"). Its P partitions are contiguous row ranges. The scan
 * pushes down projection, limit and filters on `value` (see
 * smp_filter_pushdown), and reports exact statistics.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
#include "sample_internal.h"

/* Largest |value| whose square fits in int64 (floor(sqrt(INT64_MAX))). */
#define SMP_MAX_ABS INT64_C(3037000499)
#define SMP_MAX_PARTITIONS 1024

const struct ql_option_info smp_series_options[] = {
    {"start", "first value (int64)", "0", 0, 0},
    {"stop", "end of the series, exclusive (int64)", NULL, 1, 0},
    {"step", "difference between consecutive values (non-zero int64)", "1", 0, 0},
    {"partitions", "number of partitions (contiguous row ranges), 1..1024", "4", 0, 0},
};
const int32_t smp_series_n_options = 4;

static const char *const k_column_names[3] = {"value", "square", "parity"};
static const char *const k_column_formats[3] = {"l", "l", "u"};

int smp_series_schema(int32_t n_columns, struct ArrowSchema *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_schema_init_struct(out, "", n_columns, error));
  for (int i = 0; i < n_columns; i++) {
    int rc = ql_schema_init(out->children[i], k_column_formats[i], k_column_names[i], 0, error);
    if (rc != QL_OK) {
      ql_schema_release(out);
      return rc;
    }
  }
  return QL_OK;
}

/* ------------------------------------------------------------- options */

static int check_bound(const char *who, const char *key, int64_t v, struct ql_error *error) {
  if (v > SMP_MAX_ABS || v < -SMP_MAX_ABS) {
    return ql_error_set(error, QL_EINVAL,
                        "%s '%s' = %" PRId64 " out of range: |%s| must be <= %" PRId64 " so that square fits in int64",
                        who, key, v, key, SMP_MAX_ABS);
  }
  return QL_OK;
}

int smp_series_init(struct smp_series *s, const char *who, struct ql_error *error) {
  QL_RETURN_NOT_OK(check_bound(who, "start", s->start, error));
  QL_RETURN_NOT_OK(check_bound(who, "stop", s->stop, error));
  if (s->step == 0) return ql_error_set(error, QL_EINVAL, "%s 'step' must not be 0", who);
  QL_RETURN_NOT_OK(check_bound(who, "step", s->step, error));
  if (s->partitions < 1 || s->partitions > SMP_MAX_PARTITIONS) {
    return ql_error_set(error, QL_EINVAL, "%s 'partitions' = %" PRId64 " must be in 1..%d", who, s->partitions,
                        SMP_MAX_PARTITIONS);
  }
  int64_t span = s->stop - s->start;
  if ((s->step > 0 && span <= 0) || (s->step < 0 && span >= 0)) {
    s->count = 0;
  } else {
    int64_t mag = s->step > 0 ? s->step : -s->step;
    int64_t dist = span > 0 ? span : -span;
    s->count = (dist + mag - 1) / mag;
  }
  return QL_OK;
}

static int series_from_options(const struct ql_options *options, struct smp_series *s, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_options_check(options, smp_series_options, smp_series_n_options,
                                    "qlink_sample/series", error));
  QL_RETURN_NOT_OK(ql_options_get_i64(options, "start", 0, &s->start, error));
  QL_RETURN_NOT_OK(ql_options_get_i64(options, "stop", 0, &s->stop, error));
  QL_RETURN_NOT_OK(ql_options_get_i64(options, "step", 1, &s->step, error));
  QL_RETURN_NOT_OK(ql_options_get_i64(options, "partitions", 4, &s->partitions, error));
  s->n_columns = 3;
  return smp_series_init(s, "qlink_sample/series: option", error);
}

/* ---------------------------------------------------------- statistics */

static void statistics_release(struct ql_statistics *st) {
  free(st->columns);
  st->columns = NULL;
  st->release = NULL;
}

static void scalar_i64(struct ql_scalar *out, int64_t v) {
  memset(out, 0, sizeof *out);
  out->format = "l";
  out->value.i64 = v;
}

int smp_statistics_fill(const struct smp_series *s, const struct smp_ranges *r,
                              const int32_t *columns, int64_t n_columns, struct ql_statistics *out,
                              struct ql_error *error) {
  struct ql_column_statistics *cols = calloc((size_t)(n_columns > 0 ? n_columns : 1), sizeof *cols);
  if (!cols) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory for statistics");
  int64_t rows = smp_ranges_rows(r);
  int64_t vmin = 0, vmax = 0, sqmin = 0, sqmax = 0;
  if (rows > 0) smp_ranges_minmax(s, r, &vmin, &vmax, &sqmin, &sqmax);
  for (int64_t i = 0; i < n_columns; i++) {
    struct ql_column_statistics *c = &cols[i];
    c->null_count_precision = QL_PRECISION_EXACT;
    c->null_count = 0;
    c->distinct_count_precision = QL_PRECISION_ABSENT;
    /* min/max of an empty set are absent, as in DataFusion. */
    if (rows > 0 && columns[i] == 0) {
      c->min_max_precision = QL_PRECISION_EXACT;
      scalar_i64(&c->min, vmin);
      scalar_i64(&c->max, vmax);
    } else if (rows > 0 && columns[i] == 1) {
      c->min_max_precision = QL_PRECISION_EXACT;
      scalar_i64(&c->min, sqmin);
      scalar_i64(&c->max, sqmax);
    } else {
      c->min_max_precision = QL_PRECISION_ABSENT;
    }
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->num_rows_precision = QL_PRECISION_EXACT;
  out->num_rows = rows;
  out->total_bytes_precision = QL_PRECISION_ABSENT;
  out->n_columns = n_columns;
  out->columns = cols;
  out->release = statistics_release;
  return QL_OK;
}

/* The rows that pass every EXACT filter, then the limit. */
static int scan_rows(const struct smp_series *s, const struct ql_scan_args *args, struct smp_ranges *out,
                     struct ql_error *error) {
  struct smp_ranges all = {0, NULL};
  struct smp_range whole = {0, s->count};
  if (s->count > 0) {
    all.items = malloc(sizeof *all.items);
    if (!all.items) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory");
    all.items[0] = whole;
    all.n = 1;
  }
  for (int32_t i = 0; i < args->filters.n_exprs; i++) {
    ql_expr_id f = args->filters.exprs[i];
    /* Filters the scan does not support are the host's to apply. */
    if (smp_filter_pushdown(args->filters.view, f) != QL_PUSHDOWN_EXACT) continue;
    struct smp_ranges one, both;
    int rc = smp_filter_rows(s, args->filters.view, f, &one, error);
    if (rc == QL_OK) {
      rc = smp_ranges_intersect(&all, &one, &both, error);
      smp_ranges_free(&one);
    }
    smp_ranges_free(&all);
    if (rc != QL_OK) return rc;
    all = both;
  }
  if (args->limit >= 0) smp_ranges_truncate(&all, args->limit);
  *out = all;
  return QL_OK;
}

/* One line for EXPLAIN, or NULL without memory. */
static char *scan_display(const struct smp_scan *scan) {
  char cols[128] = "";
  for (int32_t i = 0; i < scan->n_columns; i++) {
    strcat(cols, i ? "," : "");
    strcat(cols, k_column_names[scan->columns[i]]);
  }
  const struct smp_series *s = &scan->series;
  char buf[512];
  snprintf(buf, sizeof buf,
           "start=%" PRId64 " stop=%" PRId64 " step=%" PRId64 " partitions=%" PRId64
           " projection=[%s] filters=%" PRId64 " limit=%" PRId64 " rows=%" PRId64,
           s->start, s->stop, s->step, s->partitions, cols, scan->n_filters, scan->limit,
           smp_ranges_rows(&scan->rows));
  return strdup(buf);
}

static int scan_new(const struct smp_series *s, const struct ql_scan_args *args, struct smp_scan **out,
                    struct ql_error *error) {
  int32_t n = args->n_projection < 0 ? s->n_columns : args->n_projection;
  /* Projections beyond a few copies of the 3 columns serve no query; the
   * bound keeps EXPLAIN's display line finite. */
  if (n > 12) return ql_error_set(error, QL_EINVAL, "qlink_sample/series: projection of %d columns (at most 12)", n);
  for (int32_t i = 0; args->n_projection >= 0 && i < n; i++) {
    if (args->projection == NULL || args->projection[i] < 0 || args->projection[i] >= s->n_columns) {
      return ql_error_set(error, QL_EINVAL, "qlink_sample/series: projection[%d] = %d is not a column (0..%d)", i,
                          args->projection ? args->projection[i] : -1, s->n_columns - 1);
    }
  }
  struct smp_scan *scan = calloc(1, sizeof *scan);
  if (!scan) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory");
  atomic_init(&scan->refs, 1);
  atomic_init(&scan->output_rows, 0);
  atomic_init(&scan->display, NULL);
  scan->series = *s;
  scan->n_columns = n;
  scan->columns = malloc((size_t)(n > 0 ? n : 1) * sizeof *scan->columns);
  int rc = scan->columns ? QL_OK : ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory");
  for (int32_t i = 0; rc == QL_OK && i < n; i++) scan->columns[i] = args->n_projection < 0 ? i : args->projection[i];
  if (rc == QL_OK) rc = scan_rows(s, args, &scan->rows, error);
  if (rc == QL_OK) rc = ql_schema_init_struct(&scan->schema, "", n, error);
  for (int32_t i = 0; rc == QL_OK && i < n; i++) {
    rc = ql_schema_init(scan->schema.children[i], k_column_formats[scan->columns[i]],
                        k_column_names[scan->columns[i]], 0, error);
  }
  for (int32_t i = 0; rc == QL_OK && i < n; i++) {
    /* Within each partition rows come in k order: value ascends when step > 0. */
    if (scan->columns[i] == 0) {
      scan->ordering[0].column = i;
      scan->ordering[0].flags = s->step > 0 ? 0 : QL_SORT_DESC;
      scan->n_ordering = 1;
      break;
    }
  }
  scan->n_filters = args->filters.n_exprs;
  scan->limit = args->limit;
  if (rc != QL_OK) {
    smp_scan_unref(scan);
    return rc;
  }
  *out = scan;
  return QL_OK;
}

/* ------------------------------------------------------ execution plan */

static struct smp_scan *plan_scan(const struct ql_execution_plan *self) { return self->private_data; }

static const char *plan_name(const struct ql_execution_plan *self) {
  (void)self;
  return "SeriesScanExec";
}

static const char *plan_display(const struct ql_execution_plan *self) {
  struct smp_scan *scan = plan_scan(self);
  char *text = atomic_load(&scan->display);
  if (text != NULL) return text;
  return smp_display_keep(&scan->display, scan_display(scan), "SeriesScanExec (out of memory for the display)");
}

static int plan_get_schema(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error) {
  return ql_schema_copy(&plan_scan(self)->schema, out, error);
}

static int plan_get_properties(const struct ql_execution_plan *self, struct ql_plan_properties *out,
                               struct ql_error *error) {
  (void)error;
  const struct smp_scan *scan = plan_scan(self);
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->boundedness = QL_BOUNDED;
  out->partition_count = scan->series.partitions;
  out->n_ordering = scan->n_ordering;
  out->ordering = scan->n_ordering ? scan->ordering : NULL;
  return QL_OK;
}

static void plan_init(struct smp_scan *scan, struct ql_execution_plan *out);

static int plan_with_new_children(const struct ql_execution_plan *self, struct ql_execution_plan *children,
                                  int64_t n_children, struct ql_execution_plan *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(smp_leaf_take_children("SeriesScanExec", children, n_children, error));
  smp_scan_ref(plan_scan(self));
  plan_init(plan_scan(self), out);
  return QL_OK;
}

static int check_partition(const struct smp_scan *scan, int64_t partition, struct ql_error *error) {
  if (partition < 0 || partition >= scan->series.partitions) {
    return ql_error_set(error, QL_EINVAL, "SeriesScanExec: partition %" PRId64 " out of range (0..%" PRId64 ")",
                        partition, scan->series.partitions - 1);
  }
  return QL_OK;
}

static int plan_execute(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                        struct ArrowArrayStream *out, struct ql_error *error) {
  struct smp_scan *scan = plan_scan(self);
  QL_RETURN_NOT_OK(check_partition(scan, partition, error));
  if (ctx == NULL) return ql_error_set(error, QL_EINVAL, "SeriesScanExec: execute needs a task context");
  return smp_series_stream_new(scan, partition, ctx, out, error);
}

static int plan_get_statistics(const struct ql_execution_plan *self, int64_t partition, struct ql_statistics *out,
                               struct ql_error *error) {
  struct smp_scan *scan = plan_scan(self);
  if (partition == -1) {
    return smp_statistics_fill(&scan->series, &scan->rows, scan->columns, scan->n_columns, out, error);
  }
  QL_RETURN_NOT_OK(check_partition(scan, partition, error));
  struct smp_range pr = smp_partition_range(&scan->series, partition);
  struct smp_ranges part = {pr.lo < pr.hi ? 1 : 0, &pr}, rows;
  QL_RETURN_NOT_OK(smp_ranges_intersect(&scan->rows, &part, &rows, error));
  int rc = smp_statistics_fill(&scan->series, &rows, scan->columns, scan->n_columns, out, error);
  smp_ranges_free(&rows);
  return rc;
}

static void metrics_release(struct ql_metrics *m) {
  free(m->items);
  m->items = NULL;
  m->release = NULL;
}

static int plan_get_metrics(const struct ql_execution_plan *self, struct ql_metrics *out, struct ql_error *error) {
  struct ql_metric *items = calloc(1, sizeof *items);
  if (!items) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory for metrics");
  items[0].name = "output_rows";
  items[0].kind = QL_METRIC_COUNT;
  items[0].partition = -1;
  items[0].value = atomic_load(&plan_scan(self)->output_rows);
  out->count = 1;
  out->items = items;
  out->release = metrics_release;
  out->private_data = NULL;
  return QL_OK;
}

static void plan_release(struct ql_execution_plan *self) {
  smp_scan_unref(plan_scan(self));
  self->private_data = NULL;
  self->release = NULL;
}

static void plan_init(struct smp_scan *scan, struct ql_execution_plan *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->name = plan_name;
  out->display = plan_display;
  out->get_schema = plan_get_schema;
  out->get_properties = plan_get_properties;
  out->child_count = smp_leaf_child_count;
  out->child = smp_leaf_child;
  out->with_new_children = plan_with_new_children;
  out->execute = plan_execute;
  out->get_statistics = plan_get_statistics;
  out->get_metrics = plan_get_metrics;
  out->release = plan_release;
  out->private_data = scan;
}

/* ------------------------------------------------------- table provider */

static const struct smp_series *provider_series(const struct ql_table_provider *self) {
  return self->private_data;
}

static int provider_get_schema(const struct ql_table_provider *self, struct ArrowSchema *out, struct ql_error *error) {
  return smp_series_schema(provider_series(self)->n_columns, out, error);
}

static int provider_get_statistics(const struct ql_table_provider *self, struct ql_statistics *out,
                                   struct ql_error *error) {
  const struct smp_series *s = provider_series(self);
  struct smp_range whole = {0, s->count};
  struct smp_ranges all = {s->count > 0 ? 1 : 0, &whole};
  static const int32_t columns[3] = {0, 1, 2};
  return smp_statistics_fill(s, &all, columns, s->n_columns, out, error);
}

static int provider_supports_filters(const struct ql_table_provider *self, const struct ql_expr_list *filters,
                                     int32_t *answers, struct ql_error *error) {
  (void)self;
  if (filters == NULL || (filters->n_exprs > 0 && (answers == NULL || filters->exprs == NULL))) {
    return ql_error_set(error, QL_EINVAL, "qlink_sample/series: supports_filters needs filters and answers");
  }
  for (int32_t i = 0; i < filters->n_exprs; i++) answers[i] = smp_filter_pushdown(filters->view, filters->exprs[i]);
  return QL_OK;
}

static int provider_scan(const struct ql_table_provider *self, const struct ql_session *session,
                         const struct ql_scan_args *args, struct ql_execution_plan *out, struct ql_error *error) {
  (void)session;
  if (args == NULL || out == NULL) return ql_error_set(error, QL_EINVAL, "qlink_sample/series: scan needs args and out");
  if (args->filters.n_exprs > 0 && (args->filters.view == NULL || args->filters.exprs == NULL)) {
    return ql_error_set(error, QL_EINVAL, "qlink_sample/series: %d filters without a view", args->filters.n_exprs);
  }
  struct smp_scan *scan = NULL;
  QL_RETURN_NOT_OK(scan_new(provider_series(self), args, &scan, error));
  plan_init(scan, out);
  return QL_OK;
}

static void provider_release(struct ql_table_provider *self) {
  free(self->private_data);
  self->private_data = NULL;
  self->release = NULL;
}

int smp_series_open(const struct ql_options *options, struct ql_table_provider *out, struct ql_error *error) {
  struct smp_series s;
  QL_RETURN_NOT_OK(series_from_options(options, &s, error));
  return smp_series_provider(&s, out, error);
}

int smp_series_provider(const struct smp_series *series, struct ql_table_provider *out, struct ql_error *error) {
  struct smp_series s = *series;
  struct smp_series *copy = malloc(sizeof *copy);
  if (!copy) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory");
  *copy = s;
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->table_type = QL_TABLE_BASE;
  out->get_schema = provider_get_schema;
  out->get_statistics = provider_get_statistics;
  out->supports_filters = provider_supports_filters;
  out->scan = provider_scan;
  out->release = provider_release;
  out->private_data = copy;
  return QL_OK;
}
