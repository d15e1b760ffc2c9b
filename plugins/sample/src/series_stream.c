/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: the record-batch stream of one partition of a series scan.
 *
 * Follows the Arrow C Stream Interface: get_next returns 0 with a released
 * array at the end (and keeps doing so), an errno-style code with
 * get_last_error() on failure. The stream keeps a reference to its scan, so
 * it may be read after the plan was released, and reserves the memory it
 * holds from the task context's pool (gap G5): its state for its lifetime,
 * and each batch while building it (the finished batch belongs to the
 * consumer, which accounts for it).
 */
#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"
#include "sample_internal.h"

#define SMP_DEFAULT_BATCH 8192

struct series_stream {
  struct smp_scan *scan;
  struct smp_ranges rows; /* this partition's rows */
  int64_t range;                /* cursor: index into rows.items */
  int64_t next_k;               /* cursor: next row within that range */
  int64_t batch_size;
  const struct ql_task_context *ctx;
  struct ql_memory_reservation reservation; /* release == NULL without a pool */
  int64_t state_bytes;
  int failed;        /* errno-style code once an error happened, else 0 */
  char *last_error;  /* malloc'd message for get_last_error */
};

static void stream_set_error(struct series_stream *st, int status, struct ql_error *err, const char *fallback) {
  free(st->last_error);
  const char *msg = (err && err->release && err->message) ? err->message : fallback;
  st->last_error = strdup(msg);
  st->failed = ql_status_to_errno(status);
  if (st->failed == 0) st->failed = EIO;
}

static int stream_get_schema(struct ArrowArrayStream *self, struct ArrowSchema *out) {
  struct series_stream *st = self->private_data;
  if (st == NULL) return EINVAL;
  struct ql_error err = {0};
  int rc = ql_schema_copy(&st->scan->schema, out, &err);
  if (rc != QL_OK) {
    stream_set_error(st, rc, &err, "qlink_sample: cannot copy the schema");
    ql_error_release(&err);
    return ql_status_to_errno(rc);
  }
  return 0;
}

static int build_int_column(const struct series_stream *st, int column, int64_t rows, struct ArrowArray *out,
                            struct ql_error *error) {
  int64_t *data = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *data);
  if (!data) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory for a batch");
  const struct smp_series *s = &st->scan->series;
  int64_t i = 0, r = st->range, k = st->next_k;
  /* One tight loop per contiguous run of rows (the compiler vectorises it):
   * the generation is most of what a scan of this table costs. */
  while (i < rows) {
    int64_t hi = st->rows.items[r].hi, n = hi - k < rows - i ? hi - k : rows - i;
    int64_t v0 = smp_series_value(s, k), step = s->step;
    int64_t *d = data + i;
    if (column == 0) {
      for (int64_t j = 0; j < n; j++) d[j] = v0 + j * step;
    } else {
      for (int64_t j = 0; j < n; j++) d[j] = (v0 + j * step) * (v0 + j * step);
    }
    i += n;
    k += n;
    if (k >= hi && ++r < st->rows.n) k = st->rows.items[r].lo;
  }
  return ql_array_init_fixed(out, rows, 0, NULL, data, error);
}

static int build_parity_column(const struct series_stream *st, int64_t rows, struct ArrowArray *out,
                               struct ql_error *error) {
  int32_t *offsets = malloc((size_t)(rows + 1) * sizeof *offsets);
  char *data = malloc((size_t)(rows > 0 ? rows : 1) * 4);
  if (!offsets || !data) {
    free(offsets);
    free(data);
    return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory for a batch");
  }
  const struct smp_series *s = &st->scan->series;
  int64_t i = 0, r = st->range, k = st->next_k;
  int32_t pos = 0;
  offsets[0] = 0;
  while (i < rows) {
    int64_t v = smp_series_value(s, k);
    const char *word = (v % 2 == 0) ? "even" : "odd";
    size_t len = strlen(word);
    memcpy(data + pos, word, len);
    pos += (int32_t)len;
    offsets[++i] = pos;
    if (++k >= st->rows.items[r].hi && ++r < st->rows.n) k = st->rows.items[r].lo;
  }
  return ql_array_init_binary(out, rows, 0, NULL, offsets, data, error);
}

static void advance(struct series_stream *st, int64_t rows) {
  while (rows > 0 && st->range < st->rows.n) {
    int64_t left = st->rows.items[st->range].hi - st->next_k;
    if (rows < left) {
      st->next_k += rows;
      return;
    }
    rows -= left;
    if (++st->range < st->rows.n) st->next_k = st->rows.items[st->range].lo;
  }
}

static int64_t rows_left_in_batch(const struct series_stream *st) {
  int64_t rows = 0;
  for (int64_t r = st->range; r < st->rows.n && rows < st->batch_size; r++) {
    rows += st->rows.items[r].hi - (r == st->range ? st->next_k : st->rows.items[r].lo);
  }
  return rows < st->batch_size ? rows : st->batch_size;
}

static int64_t batch_bytes(const struct series_stream *st, int64_t rows) {
  int64_t bytes = 0;
  for (int32_t c = 0; c < st->scan->n_columns; c++) bytes += st->scan->columns[c] == 2 ? 8 * rows + 4 : 8 * rows;
  return bytes;
}

static int build_batch(struct series_stream *st, int64_t rows, struct ArrowArray *out, struct ql_error *error) {
  const struct smp_scan *scan = st->scan;
  QL_RETURN_NOT_OK(ql_array_init_struct(out, rows, scan->n_columns, error));
  for (int32_t c = 0; c < scan->n_columns; c++) {
    int column = scan->columns[c];
    int rc = column == 2 ? build_parity_column(st, rows, out->children[c], error)
                         : build_int_column(st, column, rows, out->children[c], error);
    if (rc != QL_OK) {
      ql_array_release(out);
      return rc;
    }
  }
  return QL_OK;
}

static int stream_get_next(struct ArrowArrayStream *self, struct ArrowArray *out) {
  struct series_stream *st = self->private_data;
  if (st == NULL || out == NULL) return EINVAL;
  if (st->failed) return st->failed;
  memset(out, 0, sizeof *out); /* release == NULL: the end, unless a batch follows */
  int64_t rows = rows_left_in_batch(st);
  if (rows == 0) return 0;
  struct ql_error err = {0};
  if (st->ctx->is_cancelled && st->ctx->is_cancelled(st->ctx)) {
    ql_error_set(&err, QL_ECANCELLED, "SeriesScanExec: partition %" PRId64 " cancelled", st->ctx->partition);
    stream_set_error(st, QL_ECANCELLED, &err, "cancelled");
    ql_error_release(&err);
    return st->failed;
  }
  int64_t bytes = batch_bytes(st, rows);
  int rc = QL_OK;
  if (st->reservation.release) rc = st->reservation.try_grow(&st->reservation, bytes, &err);
  if (rc == QL_OK) {
    rc = build_batch(st, rows, out, &err);
    if (st->reservation.release) st->reservation.shrink(&st->reservation, bytes);
  }
  if (rc != QL_OK) {
    ql_error_prefix(&err, "SeriesScanExec partition %" PRId64, st->ctx->partition);
    stream_set_error(st, rc, &err, "SeriesScanExec: batch failed");
    ql_error_release(&err);
    return st->failed;
  }
  advance(st, rows);
  atomic_fetch_add(&st->scan->output_rows, rows);
  return 0;
}

static const char *stream_get_last_error(struct ArrowArrayStream *self) {
  struct series_stream *st = self->private_data;
  return st ? st->last_error : NULL;
}

static void stream_free(struct series_stream *st) {
  if (st->reservation.release) st->reservation.release(&st->reservation);
  smp_ranges_free(&st->rows);
  smp_scan_unref(st->scan);
  free(st->last_error);
  free(st);
}

static void stream_release(struct ArrowArrayStream *self) {
  if (self->private_data) stream_free(self->private_data);
  self->private_data = NULL;
  self->release = NULL;
}

int smp_series_stream_new(struct smp_scan *scan, int64_t partition, const struct ql_task_context *ctx,
                                struct ArrowArrayStream *out, struct ql_error *error) {
  struct series_stream *st = calloc(1, sizeof *st);
  if (!st) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory for a stream");
  smp_scan_ref(scan);
  st->scan = scan;
  st->ctx = ctx;
  st->batch_size = ctx->batch_size > 0 ? ctx->batch_size : SMP_DEFAULT_BATCH;
  struct smp_range pr = smp_partition_range(&scan->series, partition);
  struct smp_ranges part = {pr.lo < pr.hi ? 1 : 0, &pr};
  int rc = smp_ranges_intersect(&scan->rows, &part, &st->rows, error);
  if (rc == QL_OK && st->rows.n > 0) st->next_k = st->rows.items[0].lo;
  const struct ql_memory_pool *pool = ctx->runtime_env ? ctx->runtime_env->memory_pool : NULL;
  if (rc == QL_OK && pool) {
    char name[64];
    snprintf(name, sizeof name, "SeriesScanExec[%" PRId64 "]", partition);
    rc = pool->reservation_new(pool, name, 0, &st->reservation, error);
    if (rc != QL_OK) st->reservation.release = NULL;
    st->state_bytes = (int64_t)sizeof *st + st->rows.n * (int64_t)sizeof *st->rows.items;
    if (rc == QL_OK) rc = st->reservation.try_grow(&st->reservation, st->state_bytes, error);
  }
  if (rc != QL_OK) {
    stream_free(st);
    return rc;
  }
  memset(out, 0, sizeof *out);
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_get_last_error;
  out->release = stream_release;
  out->private_data = st;
  return QL_OK;
}
