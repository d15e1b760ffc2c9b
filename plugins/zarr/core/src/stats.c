/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: exact statistics. See scan.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "scan.h"

/* Scalars of these formats carry their value in bytes (owned here). */
static int bytes_format(const char *format) { return format && (strcmp(format, "u") == 0 || strcmp(format, "z") == 0); }

static void scalar_free(struct ql_scalar *s) {
  if (bytes_format(s->format)) free((char *)s->value.bytes.data);
  free((char *)s->format);
}

static void stats_release(struct ql_statistics *s) {
  if (!s || !s->release) return;
  for (int64_t i = 0; i < s->n_columns; i++) {
    scalar_free(&s->columns[i].min);
    scalar_free(&s->columns[i].max);
  }
  free(s->columns);
  s->release = NULL;
}

static int set_scalar(struct ql_scalar *s, const char *format, const struct zr_value *v) {
  s->format = strdup(format);
  if (!s->format) return QL_ENOMEM;
  if (v->kind == ZR_VALUE_BYTES) {
    char *copy = malloc((size_t)v->len + 1);
    if (!copy) return QL_ENOMEM;
    if (v->len) memcpy(copy, v->s, (size_t)v->len);
    copy[v->len] = '\0';
    s->value.bytes.data = copy;
    s->value.bytes.size = v->len;
  } else if (v->kind == 1) {
    s->value.u64 = v->u;
  } else if (v->kind == 2) {
    s->value.f64 = v->f;
  } else {
    s->value.i64 = v->i;
  }
  return QL_OK;
}

static int less(const struct zr_value *a, const struct zr_value *b) { return zr_value_less(a, b); }

static void extend(struct zr_dim_stats *acc, const struct zr_value *v) {
  if (!acc->has || less(v, &acc->lo)) acc->lo = *v;
  if (!acc->has || less(&acc->hi, v)) acc->hi = *v;
  acc->has = 1;
}

/* Along a strictly monotonic dimension the extremes of the selected
 * positions are the values at the first and last of them: the selection's
 * runs give both, without a pass over the positions (O(runs), or
 * O(log ranges) per run of a range list). */
void zr_dim_stats_add(struct zr_dim_stats *acc, const struct zr_dataset *ds, const struct zr_table *t,
                      const struct zr_selection *sel, int32_t k, int64_t from, int64_t to) {
  const struct zr_dim *d = &ds->dims[t->dims[k]];
  int64_t lo, hi, first = -1, last = -1;
  for (int64_t at = from; zr_selection_run(sel, k, at, to, &lo, &hi); at = hi) {
    acc->selected += hi - lo;
    if (first < 0) first = lo;
    last = hi - 1;
    if (d->direction != 0 || !zr_dim_ordered(d)) continue;
    if (lo == 0 && hi == d->size) {
      /* the whole dimension: its extremes found at open are what this pass would find */
      if (d->has_extremes) {
        extend(acc, &d->min);
        extend(acc, &d->max);
      }
      continue;
    }
    for (int64_t i = lo; i < hi; i++) {
      struct zr_value v = zr_dim_stat_value(d, i);
      if (!v.is_null) extend(acc, &v);
    }
  }
  if (d->direction != 0 && first >= 0) {
    /* no nulls or NaNs along a monotonic dimension */
    struct zr_value a = zr_dim_value(d, first), b = zr_dim_value(d, last);
    extend(acc, &a);
    extend(acc, &b);
  }
}

void zr_stats_acc_merge(struct zr_stats_acc *acc, int32_t ndim, const struct zr_dim_stats *dims) {
  int64_t rows = 1;
  for (int32_t k = 0; k < ndim; k++) rows *= dims[k].selected;
  /* a box without rows contributes no extremes: its other dimensions' values never appear */
  if (rows == 0) return;
  acc->rows += rows;
  for (int32_t k = 0; k < ndim; k++) {
    if (!dims[k].has) continue;
    if (!acc->dims[k].has || less(&dims[k].lo, &acc->dims[k].lo)) acc->dims[k].lo = dims[k].lo;
    if (!acc->dims[k].has || less(&acc->dims[k].hi, &dims[k].hi)) acc->dims[k].hi = dims[k].hi;
    acc->dims[k].has = 1;
  }
}

/* 1 when no cell of column `c` can be NULL: a dimension surveyed at open
 * without NULLs, or a column whose decoder passes the stored elements
 * through (no mask, no NaT, no conversion). */
static int never_null(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_column *c) {
  if (c->role == ZR_ROLE_DIM) return !ds->dims[t->dims[c->dim]].has_nulls;
  return zr_decoder_is_identity(&c->dec);
}

/* The bytes `rows` rows of the columns hold in Arrow buffers (the values
 * buffers; validity, offsets and string bytes below) and how well that is
 * known. A fixed-width column holds width bytes a row, and no validity
 * buffer when no cell can be NULL: those columns alone give EXACT. A column
 * that may hold NULLs has a validity buffer in some batches, sized per
 * batch; a bool column packs bits per batch: both make the total INEXACT
 * (the values' bytes, bits rounded up to whole bytes). Strings (offsets and
 * bytes per batch) make it ABSENT, as does a total past int64. */
static int32_t total_bytes(const struct zr_dataset *ds, const struct zr_table *t, const int32_t *proj, int32_t n_proj,
                           int32_t n, int64_t rows, int64_t *out) {
  int64_t width = 0, bool_columns = 0;
  int32_t precision = QL_PRECISION_EXACT;
  *out = 0;
  for (int32_t i = 0; i < n; i++) {
    const struct zr_column *c = &t->columns[proj && n_proj >= 0 ? proj[i] : i];
    int32_t w = zr_out_width(c->dec.out);
    if (w == 0) return QL_PRECISION_ABSENT;
    if (c->dec.out == ZR_OUT_BOOL) {
      bool_columns++;
      precision = QL_PRECISION_INEXACT;
    } else {
      width += w;
    }
    if (!never_null(ds, t, c)) precision = QL_PRECISION_INEXACT;
  }
  int64_t bits_bytes = (rows + 7) / 8;
  if (width > 0 && rows > INT64_MAX / width) return QL_PRECISION_ABSENT;
  if (bool_columns > 0 && bits_bytes > (INT64_MAX - rows * width) / bool_columns) return QL_PRECISION_ABSENT;
  *out = rows * width + bool_columns * bits_bytes;
  return precision;
}

int zr_stats_emit(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_stats_acc *acc,
                  const int32_t *proj, int32_t n_proj, int64_t limit, struct ql_statistics *out,
                  struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  int32_t n = n_proj < 0 ? t->n_columns : n_proj;
  out->columns = calloc((size_t)(n ? n : 1), sizeof(struct ql_column_statistics));
  if (!out->columns) return ql_error_set(error, QL_ENOMEM, "out of memory for statistics");
  out->n_columns = n;
  out->release = stats_release;
  int64_t rows = acc->rows;
  out->num_rows_precision = QL_PRECISION_EXACT;
  out->num_rows = limit >= 0 && limit < rows ? limit : rows;
  out->total_bytes_precision = total_bytes(ds, t, proj, n_proj, n, out->num_rows, &out->total_bytes);
  for (int32_t i = 0; i < n; i++) {
    const struct zr_column *c = &t->columns[proj && n_proj >= 0 ? proj[i] : i];
    struct ql_column_statistics *cs = &out->columns[i];
    cs->min.is_null = 1;
    cs->max.is_null = 1;
    if (c->role != ZR_ROLE_DIM) continue;
    const struct zr_dim *d = &ds->dims[t->dims[c->dim]];
    if (!d->has_nulls) {
      cs->null_count_precision = QL_PRECISION_EXACT;
      cs->null_count = 0;
    }
    /* with a limit, which rows come out is not fixed: only bounds hold */
    const struct zr_dim_stats *ext = &acc->dims[c->dim];
    if (rows > 0 && ext->has && !d->has_nan && zr_dim_ordered(d)) {
      cs->min_max_precision = limit >= 0 && limit < rows ? QL_PRECISION_INEXACT : QL_PRECISION_EXACT;
      cs->min.is_null = 0;
      cs->max.is_null = 0;
      if (set_scalar(&cs->min, c->dec.format, &ext->lo) != QL_OK ||
          set_scalar(&cs->max, c->dec.format, &ext->hi) != QL_OK) {
        stats_release(out);
        return ql_error_set(error, QL_ENOMEM, "out of memory for statistics");
      }
    }
  }
  return QL_OK;
}

void zr_stats_whole(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_selection *sel,
                    struct zr_stats_acc *acc) {
  memset(acc, 0, sizeof(*acc));
  struct zr_dim_stats dims[ZR_MAX_DIMS];
  memset(dims, 0, sizeof(dims));
  for (int32_t k = 0; k < t->ndim; k++) zr_dim_stats_add(&dims[k], ds, t, sel, k, 0, ds->dims[t->dims[k]].size);
  zr_stats_acc_merge(acc, t->ndim, dims);
}

int zr_statistics(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_selection *sel,
                  const int32_t *proj, int32_t n_proj, int64_t limit, struct ql_statistics *out,
                  struct ql_error *error) {
  struct zr_stats_acc acc;
  zr_stats_whole(ds, t, sel, &acc);
  return zr_stats_emit(ds, t, &acc, proj, n_proj, limit, out, error);
}
