/* qlink_zarr: exact statistics. See scan.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"
#include "qlink/lib/status.h"

static void stats_release(struct ql_statistics *s) {
  if (!s || !s->release) return;
  for (int64_t i = 0; i < s->n_columns; i++) {
    free((char *)s->columns[i].min.format);
    free((char *)s->columns[i].max.format);
  }
  free(s->columns);
  s->release = NULL;
}

static int set_scalar(struct ql_scalar *s, const char *format, const struct zr_value *v) {
  s->format = strdup(format);
  if (!s->format) return QL_ENOMEM;
  if (v->kind == 1) {
    s->value.u64 = v->u;
  } else if (v->kind == 2) {
    s->value.f64 = v->f;
  } else {
    s->value.i64 = v->i;
  }
  return QL_OK;
}

static int less(const struct zr_value *a, const struct zr_value *b) {
  if (a->kind == 1) return a->u < b->u;
  if (a->kind == 2) return a->f < b->f;
  return a->i < b->i;
}

int zr_statistics(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_selection *sel,
                  const int64_t *start, const int64_t *count, const int32_t *proj, int32_t n_proj, int64_t limit,
                  struct ql_statistics *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  int32_t n = n_proj < 0 ? t->n_columns : n_proj;
  out->columns = calloc((size_t)(n ? n : 1), sizeof(struct ql_column_statistics));
  if (!out->columns) return ql_error_set(error, QL_ENOMEM, "out of memory for statistics");
  out->n_columns = n;
  out->release = stats_release;
  /* Selected positions per dimension, and their extremes. */
  int64_t rows = 1;
  int64_t selected[ZR_MAX_DIMS];
  struct zr_value lo[ZR_MAX_DIMS], hi[ZR_MAX_DIMS];
  int has[ZR_MAX_DIMS];
  for (int32_t k = 0; k < t->ndim; k++) {
    const struct zr_dim *d = &ds->dims[t->dims[k]];
    int64_t a = start ? start[k] : 0, c = count ? count[k] : d->size;
    selected[k] = 0;
    has[k] = 0;
    for (int64_t i = a; i < a + c; i++) {
      if (sel && sel->mask[k] && !sel->mask[k][i]) continue;
      selected[k]++;
      const struct zr_value *v = &d->values[i];
      if (!d->comparable || v->is_null) continue;
      if (!has[k] || less(v, &lo[k])) lo[k] = *v;
      if (!has[k] || less(&hi[k], v)) hi[k] = *v;
      has[k] = 1;
    }
    rows *= selected[k];
  }
  out->num_rows_precision = QL_PRECISION_EXACT;
  out->num_rows = limit >= 0 && limit < rows ? limit : rows;
  out->total_bytes_precision = QL_PRECISION_ABSENT;
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
    if (rows > 0 && has[c->dim] && !d->has_nan && d->comparable) {
      cs->min_max_precision = limit >= 0 && limit < rows ? QL_PRECISION_INEXACT : QL_PRECISION_EXACT;
      cs->min.is_null = 0;
      cs->max.is_null = 0;
      if (set_scalar(&cs->min, c->dec.format, &lo[c->dim]) != QL_OK ||
          set_scalar(&cs->max, c->dec.format, &hi[c->dim]) != QL_OK) {
        stats_release(out);
        return ql_error_set(error, QL_ENOMEM, "out of memory for statistics");
      }
    }
  }
  return QL_OK;
}
