/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: the `grid` table provider, an in-memory table.
 *
 * grid?ny=NY&nx=NX&batch_rows=B&partitions=P is the NY x NX grid as a table
 * of NY*NX rows in row-major order; row k = i*NX + j (0 <= i < NY,
 * 0 <= j < NX) holds
 *   y  float64  -80.0 + 160.0 * i / (NY - 1)   (-80.0 when NY == 1)
 *   x  int64    j
 *   v  float64  ((k * 37) % 101 - 50) / 8.0
 * with no nulls. Every value is one or two correctly rounded IEEE operations,
 * so numpy computes the same bits (tests and bench/ffi rebuild the table
 * that way); with the defaults (65 x 16) y is numpy.linspace(-80, 80, 65).
 *
 * What it is for: the counterpart of DataFusion's MemTable
 * (`register_record_batches`), so a benchmark compares the interface, not
 * the storage. The three columns are built once, when the provider opens;
 * every scan hands out the same buffers by reference: a batch is a struct
 * array whose children point into those columns (no copy, no per-scan
 * generation), and keeps the columns alive through a reference count until
 * the consumer releases it. Partitions are the contiguous row ranges
 * [N*p/P, N*(p+1)/P); each partition comes in batches of B rows (the last
 * one shorter), whatever batch size the host asks for, as MemTable does.
 * The scan honours the projection (any columns, in any order, repeats
 * allowed) and the limit (each partition stops after `limit` rows; the host
 * applies the exact limit); filters are left to the host. Statistics are
 * what MemTable reports: exact row counts (table, plan, partition) and null
 * counts (0), no min/max.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
#include "sample_internal.h"

#define QL_GRID_COLUMNS 3
/* At most 2^28 rows (6 GiB of columns): enough for any test or benchmark. */
#define QL_GRID_MAX_ROWS (INT64_C(1) << 28)
#define QL_GRID_MAX_PARTITIONS 1024
/* Projections beyond a few copies of the columns serve no query; the bound
 * keeps EXPLAIN's display line finite. */
#define QL_GRID_MAX_PROJECTION 12

const struct ql_option_info smp_grid_options[] = {
    {"ny", "rows of the grid (the y axis), 1..2^28", "65", 0, 0},
    {"nx", "columns of the grid (the x axis), 1..2^28; ny*nx <= 2^28", "16", 0, 0},
    {"batch_rows", "rows per record batch, >= 1", "8192", 0, 0},
    {"partitions", "number of partitions (contiguous row ranges), 1..1024", "1", 0, 0},
};
const int32_t smp_grid_n_options = 4;

static const char *const k_names[QL_GRID_COLUMNS] = {"y", "x", "v"};
static const char *const k_formats[QL_GRID_COLUMNS] = {"g", "l", "g"};

/* The table: immutable after open, shared by the provider, every scan,
 * stream and batch (reference-counted; the last one frees it). */
struct grid {
  _Atomic int64_t refs;
  int64_t ny, nx, rows, batch_rows, partitions;
  double *y;
  int64_t *x;
  double *v;
};

static void grid_ref(struct grid *g) { atomic_fetch_add(&g->refs, 1); }

static void grid_unref(struct grid *g) {
  if (g == NULL || atomic_fetch_sub(&g->refs, 1) != 1) return;
  free(g->y);
  free(g->x);
  free(g->v);
  free(g);
}

static const void *grid_column(const struct grid *g, int32_t column) {
  return column == 0 ? (const void *)g->y : column == 1 ? (const void *)g->x : (const void *)g->v;
}

static int option_in_range(const struct ql_options *options, const char *key, int64_t fallback, int64_t lo,
                           int64_t hi, int64_t *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_options_get_i64(options, key, fallback, out, error));
  if (*out < lo || *out > hi) {
    return ql_error_set(error, QL_EINVAL,
                        "qlink_sample/grid: option '%s' = %" PRId64 " must be in %" PRId64 "..%" PRId64, key, *out, lo,
                        hi);
  }
  return QL_OK;
}

static void grid_fill(struct grid *g) {
  for (int64_t k = 0; k < g->rows; k++) {
    int64_t i = k / g->nx;
    g->y[k] = g->ny == 1 ? -80.0 : -80.0 + 160.0 * (double)i / (double)(g->ny - 1);
    g->x[k] = k % g->nx;
    g->v[k] = (double)((k * 37) % 101 - 50) / 8.0;
  }
}

static int grid_new(const struct ql_options *options, struct grid **out, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_options_check(options, smp_grid_options, smp_grid_n_options, "qlink_sample/grid",
                                    error));
  int64_t ny, nx, batch_rows, partitions;
  QL_RETURN_NOT_OK(option_in_range(options, "ny", 65, 1, QL_GRID_MAX_ROWS, &ny, error));
  QL_RETURN_NOT_OK(option_in_range(options, "nx", 16, 1, QL_GRID_MAX_ROWS, &nx, error));
  QL_RETURN_NOT_OK(option_in_range(options, "batch_rows", 8192, 1, INT64_MAX, &batch_rows, error));
  QL_RETURN_NOT_OK(option_in_range(options, "partitions", 1, 1, QL_GRID_MAX_PARTITIONS, &partitions, error));
  if (ny > QL_GRID_MAX_ROWS / nx) {
    return ql_error_set(error, QL_EINVAL,
                        "qlink_sample/grid: ny * nx = %" PRId64 " * %" PRId64 " is more than 2^28 rows", ny, nx);
  }
  struct grid *g = calloc(1, sizeof *g);
  if (!g) return ql_error_set(error, QL_ENOMEM, "qlink_sample/grid: out of memory");
  atomic_init(&g->refs, 1);
  g->ny = ny;
  g->nx = nx;
  g->rows = ny * nx;
  g->batch_rows = batch_rows;
  g->partitions = partitions;
  g->y = malloc((size_t)g->rows * sizeof *g->y);
  g->x = malloc((size_t)g->rows * sizeof *g->x);
  g->v = malloc((size_t)g->rows * sizeof *g->v);
  if (!g->y || !g->x || !g->v) {
    grid_unref(g);
    return ql_error_set(error, QL_ENOMEM, "qlink_sample/grid: out of memory for %" PRId64 " rows", ny * nx);
  }
  grid_fill(g);
  *out = g;
  return QL_OK;
}

/* ------------------------------------------------------------- batches */

/* One batch handed out: the struct array and its children live in one
 * block, with a count of the arrays not yet released (the parent and each
 * child, since a consumer may move a child out and release it on its own).
 * The block holds a reference to the grid, whose columns the buffers point
 * into. */
struct grid_batch {
  _Atomic int32_t live;
  struct grid *grid;
  const void *struct_buffers[1];
  struct ArrowArray *child_ptrs[QL_GRID_MAX_PROJECTION];
  struct ArrowArray children[QL_GRID_MAX_PROJECTION];
  const void *buffers[QL_GRID_MAX_PROJECTION][2];
};

static void batch_drop(struct grid_batch *b) {
  if (atomic_fetch_sub(&b->live, 1) != 1) return;
  grid_unref(b->grid);
  free(b);
}

static void batch_child_release(struct ArrowArray *a) {
  struct grid_batch *b = a->private_data;
  a->release = NULL;
  batch_drop(b);
}

static void batch_release(struct ArrowArray *a) {
  struct grid_batch *b = a->private_data;
  for (int64_t c = 0; c < a->n_children; c++) {
    if (a->children[c]->release) a->children[c]->release(a->children[c]);
  }
  a->release = NULL;
  batch_drop(b);
}

/* The rows [start, start + rows) of `columns` as a struct array, by reference. */
static int batch_new(struct grid *g, const int32_t *columns, int32_t n_columns, int64_t start, int64_t rows,
                     struct ArrowArray *out, struct ql_error *error) {
  struct grid_batch *b = calloc(1, sizeof *b);
  if (!b) return ql_error_set(error, QL_ENOMEM, "GridScanExec: out of memory for a batch");
  atomic_init(&b->live, n_columns + 1);
  grid_ref(g);
  b->grid = g;
  for (int32_t c = 0; c < n_columns; c++) {
    struct ArrowArray *child = &b->children[c];
    b->buffers[c][0] = NULL; /* no validity bitmap: no nulls */
    /* The columns are 8-byte values, so start * 8 keeps them aligned. */
    b->buffers[c][1] = (const char *)grid_column(g, columns[c]) + start * 8;
    child->length = rows;
    child->n_buffers = 2;
    child->buffers = b->buffers[c];
    child->release = batch_child_release;
    child->private_data = b;
    b->child_ptrs[c] = child;
  }
  memset(out, 0, sizeof *out);
  out->length = rows;
  out->n_buffers = 1;
  out->buffers = b->struct_buffers;
  out->n_children = n_columns;
  out->children = b->child_ptrs;
  out->release = batch_release;
  out->private_data = b;
  return QL_OK;
}

/* ---------------------------------------------------------- statistics */

static void statistics_release(struct ql_statistics *st) {
  free(st->columns);
  st->columns = NULL;
  st->release = NULL;
}

/* Exact `rows` and zero null counts over `n_columns` columns. */
static int statistics_fill(int64_t rows, int64_t n_columns, struct ql_statistics *out, struct ql_error *error) {
  struct ql_column_statistics *cols = calloc((size_t)(n_columns > 0 ? n_columns : 1), sizeof *cols);
  if (!cols) return ql_error_set(error, QL_ENOMEM, "qlink_sample/grid: out of memory for statistics");
  for (int64_t i = 0; i < n_columns; i++) {
    cols[i].null_count_precision = QL_PRECISION_EXACT;
    cols[i].min_max_precision = QL_PRECISION_ABSENT;
    cols[i].distinct_count_precision = QL_PRECISION_ABSENT;
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

/* ---------------------------------------------------------------- scan */

/* One planned scan, shared by its plan, the plan's copies and its streams. */
struct grid_scan {
  _Atomic int64_t refs;
  struct grid *grid;
  int32_t n_columns;
  int32_t columns[QL_GRID_MAX_PROJECTION]; /* indices into the table's columns */
  int64_t limit;                           /* rows per partition, -1: all */
  struct ArrowSchema schema;               /* output schema */
  _Atomic(char *) display;                 /* built on first use */
};

static void scan_ref(struct grid_scan *s) { atomic_fetch_add(&s->refs, 1); }

static void scan_unref(struct grid_scan *s) {
  if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1) return;
  ql_schema_release(&s->schema);
  free(atomic_load(&s->display));
  grid_unref(s->grid);
  free(s);
}

static int schema_of(const int32_t *columns, int32_t n, struct ArrowSchema *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_schema_init_struct(out, "", n, error));
  for (int32_t i = 0; i < n; i++) {
    int rc = ql_schema_init(out->children[i], k_formats[columns[i]], k_names[columns[i]], 0, error);
    if (rc != QL_OK) {
      ql_schema_release(out);
      return rc;
    }
  }
  return QL_OK;
}

static int scan_new(struct grid *g, const struct ql_scan_args *args, struct grid_scan **out, struct ql_error *error) {
  int32_t n = args->n_projection < 0 ? QL_GRID_COLUMNS : args->n_projection;
  if (n > QL_GRID_MAX_PROJECTION) {
    return ql_error_set(error, QL_EINVAL, "qlink_sample/grid: projection of %d columns (at most %d)", n,
                        QL_GRID_MAX_PROJECTION);
  }
  for (int32_t i = 0; args->n_projection >= 0 && i < n; i++) {
    if (args->projection == NULL || args->projection[i] < 0 || args->projection[i] >= QL_GRID_COLUMNS) {
      return ql_error_set(error, QL_EINVAL, "qlink_sample/grid: projection[%d] = %d is not a column (0..2)", i,
                          args->projection ? args->projection[i] : -1);
    }
  }
  struct grid_scan *s = calloc(1, sizeof *s);
  if (!s) return ql_error_set(error, QL_ENOMEM, "qlink_sample/grid: out of memory");
  atomic_init(&s->refs, 1);
  atomic_init(&s->display, NULL);
  grid_ref(g);
  s->grid = g;
  s->n_columns = n;
  for (int32_t i = 0; i < n; i++) s->columns[i] = args->n_projection < 0 ? i : args->projection[i];
  s->limit = args->limit;
  int rc = schema_of(s->columns, n, &s->schema, error);
  if (rc != QL_OK) {
    scan_unref(s);
    return rc;
  }
  *out = s;
  return QL_OK;
}

/* -------------------------------------------------------------- stream */

struct grid_stream {
  struct grid_scan *scan;
  const struct ql_task_context *ctx;
  int64_t next, end; /* rows still to hand out: [next, end) */
  int failed;        /* errno-style code once an error happened */
  char *last_error;
};

static int stream_get_schema(struct ArrowArrayStream *self, struct ArrowSchema *out) {
  struct grid_stream *st = self->private_data;
  if (st == NULL || out == NULL) return EINVAL;
  struct ql_error err = {0};
  int rc = ql_schema_copy(&st->scan->schema, out, &err);
  ql_error_release(&err);
  return rc == QL_OK ? 0 : ql_status_to_errno(rc);
}

static int stream_fail(struct grid_stream *st, int status, struct ql_error *err) {
  free(st->last_error);
  st->last_error = strdup(ql_error_message(err));
  st->failed = ql_status_to_errno(status);
  ql_error_release(err);
  return st->failed;
}

static int stream_get_next(struct ArrowArrayStream *self, struct ArrowArray *out) {
  struct grid_stream *st = self->private_data;
  if (st == NULL || out == NULL) return EINVAL;
  if (st->failed) return st->failed;
  memset(out, 0, sizeof *out); /* release == NULL: the end, unless a batch follows */
  if (st->next >= st->end) return 0;
  struct ql_error err = {0};
  if (st->ctx->is_cancelled && st->ctx->is_cancelled(st->ctx)) {
    ql_error_set(&err, QL_ECANCELLED, "GridScanExec: partition %" PRId64 " cancelled", st->ctx->partition);
    return stream_fail(st, QL_ECANCELLED, &err);
  }
  const struct grid_scan *scan = st->scan;
  int64_t rows = st->end - st->next;
  if (rows > scan->grid->batch_rows) rows = scan->grid->batch_rows;
  int rc = batch_new(scan->grid, scan->columns, scan->n_columns, st->next, rows, out, &err);
  if (rc != QL_OK) return stream_fail(st, rc, &err);
  st->next += rows;
  return 0;
}

static const char *stream_get_last_error(struct ArrowArrayStream *self) {
  struct grid_stream *st = self->private_data;
  return st ? st->last_error : NULL;
}

static void stream_release(struct ArrowArrayStream *self) {
  struct grid_stream *st = self->private_data;
  if (st) {
    scan_unref(st->scan);
    free(st->last_error);
    free(st);
  }
  self->private_data = NULL;
  self->release = NULL;
}

/* Rows [*lo, *hi) that partition `p` of `scan` hands out (limit applied). */
static void partition_rows(const struct grid_scan *scan, int64_t p, int64_t *lo, int64_t *hi) {
  const struct grid *g = scan->grid;
  *lo = g->rows * p / g->partitions;
  *hi = g->rows * (p + 1) / g->partitions;
  if (scan->limit >= 0 && *hi - *lo > scan->limit) *hi = *lo + scan->limit;
}

static int stream_new(struct grid_scan *scan, int64_t partition, const struct ql_task_context *ctx,
                      struct ArrowArrayStream *out, struct ql_error *error) {
  struct grid_stream *st = calloc(1, sizeof *st);
  if (!st) return ql_error_set(error, QL_ENOMEM, "GridScanExec: out of memory for a stream");
  scan_ref(scan);
  st->scan = scan;
  st->ctx = ctx;
  partition_rows(scan, partition, &st->next, &st->end);
  memset(out, 0, sizeof *out);
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_get_last_error;
  out->release = stream_release;
  out->private_data = st;
  return QL_OK;
}

/* ------------------------------------------------------ execution plan */

static struct grid_scan *plan_scan(const struct ql_execution_plan *self) { return self->private_data; }

static const char *plan_name(const struct ql_execution_plan *self) {
  (void)self;
  return "GridScanExec";
}

static char *display_new(const struct grid_scan *s) {
  char cols[64] = "";
  for (int32_t i = 0; i < s->n_columns; i++) {
    strcat(cols, i ? "," : "");
    strcat(cols, k_names[s->columns[i]]);
  }
  const struct grid *g = s->grid;
  char buf[256];
  snprintf(buf, sizeof buf,
           "ny=%" PRId64 " nx=%" PRId64 " partitions=%" PRId64 " batch_rows=%" PRId64 " projection=[%s] limit=%" PRId64,
           g->ny, g->nx, g->partitions, g->batch_rows, cols, s->limit);
  return strdup(buf);
}

static const char *plan_display(const struct ql_execution_plan *self) {
  struct grid_scan *s = plan_scan(self);
  char *text = atomic_load(&s->display);
  if (text != NULL) return text;
  return smp_display_keep(&s->display, display_new(s), "GridScanExec (out of memory for the display)");
}

static int plan_get_schema(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error) {
  return ql_schema_copy(&plan_scan(self)->schema, out, error);
}

static int plan_get_properties(const struct ql_execution_plan *self, struct ql_plan_properties *out,
                               struct ql_error *error) {
  (void)error;
  /* Written up to the caller's struct_size only (a host built against an
   * older, shorter layout). */
  uint32_t size = out->struct_size ? out->struct_size : (uint32_t)sizeof *out;
  struct ql_plan_properties p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.boundedness = QL_BOUNDED;
  p.partition_count = plan_scan(self)->grid->partitions;
  memcpy(out, &p, size < sizeof p ? size : sizeof p);
  return QL_OK;
}

static void plan_init(struct grid_scan *s, struct ql_execution_plan *out);

static int plan_with_new_children(const struct ql_execution_plan *self, struct ql_execution_plan *children,
                                  int64_t n_children, struct ql_execution_plan *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(smp_leaf_take_children("GridScanExec", children, n_children, error));
  scan_ref(plan_scan(self));
  plan_init(plan_scan(self), out);
  return QL_OK;
}

static int plan_execute(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                        struct ArrowArrayStream *out, struct ql_error *error) {
  struct grid_scan *s = plan_scan(self);
  if (partition < 0 || partition >= s->grid->partitions) {
    return ql_error_set(error, QL_EINVAL, "GridScanExec: partition %" PRId64 " out of range (0..%" PRId64 ")",
                        partition, s->grid->partitions - 1);
  }
  if (ctx == NULL || out == NULL) return ql_error_set(error, QL_EINVAL, "GridScanExec: execute needs ctx and out");
  return stream_new(s, partition, ctx, out, error);
}

static int plan_get_statistics(const struct ql_execution_plan *self, int64_t partition, struct ql_statistics *out,
                               struct ql_error *error) {
  const struct grid_scan *s = plan_scan(self);
  int64_t lo, hi, rows = 0;
  if (partition < -1 || partition >= s->grid->partitions) {
    return ql_error_set(error, QL_EINVAL, "GridScanExec: statistics of partition %" PRId64 " (0..%" PRId64 " or -1)",
                        partition, s->grid->partitions - 1);
  }
  for (int64_t p = partition < 0 ? 0 : partition; p < (partition < 0 ? s->grid->partitions : partition + 1); p++) {
    partition_rows(s, p, &lo, &hi);
    rows += hi - lo;
  }
  return statistics_fill(rows, s->n_columns, out, error);
}

static void plan_release(struct ql_execution_plan *self) {
  scan_unref(plan_scan(self));
  self->private_data = NULL;
  self->release = NULL;
}

static void plan_init(struct grid_scan *s, struct ql_execution_plan *out) {
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
  out->release = plan_release;
  out->private_data = s;
}

/* ------------------------------------------------------- table provider */

static int provider_get_schema(const struct ql_table_provider *self, struct ArrowSchema *out, struct ql_error *error) {
  (void)self;
  static const int32_t all[QL_GRID_COLUMNS] = {0, 1, 2};
  return schema_of(all, QL_GRID_COLUMNS, out, error);
}

static int provider_get_statistics(const struct ql_table_provider *self, struct ql_statistics *out,
                                   struct ql_error *error) {
  const struct grid *g = self->private_data;
  return statistics_fill(g->rows, QL_GRID_COLUMNS, out, error);
}

static int provider_scan(const struct ql_table_provider *self, const struct ql_session *session,
                         const struct ql_scan_args *args, struct ql_execution_plan *out, struct ql_error *error) {
  (void)session;
  if (args == NULL || out == NULL) return ql_error_set(error, QL_EINVAL, "qlink_sample/grid: scan needs args and out");
  struct grid_scan *s = NULL;
  QL_RETURN_NOT_OK(scan_new(self->private_data, args, &s, error));
  plan_init(s, out);
  return QL_OK;
}

static void provider_release(struct ql_table_provider *self) {
  grid_unref(self->private_data);
  self->private_data = NULL;
  self->release = NULL;
}

int smp_grid_open(const struct ql_options *options, struct ql_table_provider *out, struct ql_error *error) {
  struct grid *g = NULL;
  QL_RETURN_NOT_OK(grid_new(options, &g, error));
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->table_type = QL_TABLE_BASE;
  out->get_schema = provider_get_schema;
  out->get_statistics = provider_get_statistics;
  out->scan = provider_scan;
  out->release = provider_release;
  out->private_data = g;
  return QL_OK;
}
