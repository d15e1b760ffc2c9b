/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: row-range arithmetic of the series table.
 *
 * Rows are indexed by k, value_k = start + k * step. Pushed filters on
 * `value` become sorted, disjoint half-open ranges of k, so a scan prunes
 * whole partitions and slices the others without looking at a row.
 * Option validation (series.c) bounds every value by 3037000499 in absolute
 * value, so value*value, differences of values and k*step fit in int64.
 */
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "sample_internal.h"

/* Values outside the series' bounds are clamped to this before arithmetic,
 * which keeps every difference below 2^63. */
#define SMP_CLAMP (INT64_C(1) << 40)

int64_t smp_series_value(const struct smp_series *s, int64_t k) { return s->start + k * s->step; }

struct smp_range smp_partition_range(const struct smp_series *s, int64_t p) {
  struct smp_range r = {s->count * p / s->partitions, s->count * (p + 1) / s->partitions};
  return r;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

static int64_t clamp_value(int64_t v) {
  if (v > SMP_CLAMP) return SMP_CLAMP;
  if (v < -SMP_CLAMP) return -SMP_CLAMP;
  return v;
}

/* The k range whose values lie in [vlo, vhi] (inclusive), clipped to [0, count). */
static struct smp_range value_interval_rows(const struct smp_series *s, int64_t vlo, int64_t vhi) {
  struct smp_range r = {0, 0};
  if (vlo > vhi) return r;
  vlo = clamp_value(vlo);
  vhi = clamp_value(vhi);
  int64_t klo, khi; /* inclusive */
  if (s->step > 0) {
    klo = ceil_div(vlo - s->start, s->step);
    khi = floor_div(vhi - s->start, s->step);
  } else {
    klo = ceil_div(vhi - s->start, s->step);
    khi = floor_div(vlo - s->start, s->step);
  }
  if (klo < 0) klo = 0;
  if (khi > s->count - 1) khi = s->count - 1;
  if (klo > khi) return r;
  r.lo = klo;
  r.hi = khi + 1;
  return r;
}

static int ranges_alloc(struct smp_ranges *out, int64_t n, struct ql_error *error) {
  out->n = 0;
  out->items = NULL;
  if (n == 0) return QL_OK;
  out->items = malloc((size_t)n * sizeof *out->items);
  if (!out->items) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory for %lld ranges", (long long)n);
  return QL_OK;
}

static int ranges_single(struct smp_range r, struct smp_ranges *out, struct ql_error *error) {
  if (r.lo >= r.hi) return ranges_alloc(out, 0, error);
  QL_RETURN_NOT_OK(ranges_alloc(out, 1, error));
  out->items[0] = r;
  out->n = 1;
  return QL_OK;
}

void smp_ranges_free(struct smp_ranges *r) {
  free(r->items);
  r->items = NULL;
  r->n = 0;
}

int64_t smp_ranges_rows(const struct smp_ranges *r) {
  int64_t rows = 0;
  for (int64_t i = 0; i < r->n; i++) rows += r->items[i].hi - r->items[i].lo;
  return rows;
}

void smp_ranges_truncate(struct smp_ranges *r, int64_t limit) {
  int64_t left = limit;
  for (int64_t i = 0; i < r->n; i++) {
    int64_t len = r->items[i].hi - r->items[i].lo;
    if (len >= left) {
      r->items[i].hi = r->items[i].lo + left;
      r->n = left > 0 ? i + 1 : i;
      return;
    }
    left -= len;
  }
}

int smp_ranges_intersect(const struct smp_ranges *a, const struct smp_ranges *b,
                               struct smp_ranges *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(ranges_alloc(out, a->n + b->n, error));
  int64_t i = 0, j = 0;
  while (i < a->n && j < b->n) {
    int64_t lo = a->items[i].lo > b->items[j].lo ? a->items[i].lo : b->items[j].lo;
    int64_t hi = a->items[i].hi < b->items[j].hi ? a->items[i].hi : b->items[j].hi;
    if (lo < hi) out->items[out->n++] = (struct smp_range){lo, hi};
    if (a->items[i].hi < b->items[j].hi) {
      i++;
    } else {
      j++;
    }
  }
  return QL_OK;
}

/* ---------------------------------------------------------- min / max */

static int64_t abs_i64(int64_t v) { return v < 0 ? -v : v; }

/* Smallest |value| over rows [lo, hi) (the series is monotonic in k). */
static int64_t range_min_abs(const struct smp_series *s, struct smp_range r) {
  int64_t first = smp_series_value(s, r.lo), last = smp_series_value(s, r.hi - 1);
  if ((first <= 0 && last >= 0) || (first >= 0 && last <= 0)) {
    /* The range crosses zero: the row nearest to it is the one closest to k = -start/step. */
    int64_t k0 = floor_div(-s->start, s->step);
    int64_t best = abs_i64(first) < abs_i64(last) ? abs_i64(first) : abs_i64(last);
    for (int64_t k = k0 - 1; k <= k0 + 1; k++) {
      if (k >= r.lo && k < r.hi && abs_i64(smp_series_value(s, k)) < best) {
        best = abs_i64(smp_series_value(s, k));
      }
    }
    return best;
  }
  return abs_i64(first) < abs_i64(last) ? abs_i64(first) : abs_i64(last);
}

void smp_ranges_minmax(const struct smp_series *s, const struct smp_ranges *r, int64_t *vmin,
                             int64_t *vmax, int64_t *sqmin, int64_t *sqmax) {
  *vmin = INT64_MAX;
  *vmax = INT64_MIN;
  *sqmin = INT64_MAX;
  *sqmax = INT64_MIN;
  for (int64_t i = 0; i < r->n; i++) {
    int64_t first = smp_series_value(s, r->items[i].lo);
    int64_t last = smp_series_value(s, r->items[i].hi - 1);
    int64_t lo = first < last ? first : last, hi = first < last ? last : first;
    if (lo < *vmin) *vmin = lo;
    if (hi > *vmax) *vmax = hi;
    int64_t a = range_min_abs(s, r->items[i]);
    int64_t b = abs_i64(first) > abs_i64(last) ? abs_i64(first) : abs_i64(last);
    if (a * a < *sqmin) *sqmin = a * a;
    if (b * b > *sqmax) *sqmax = b * b;
  }
}

/* ------------------------------------------------------ filter analysis */

/* The column `value` (index 0 of the full schema)? */
static int is_value_column(const struct ql_plan_view *view, ql_expr_id id) {
  if (id < 0 || id >= view->n_exprs) return 0;
  const struct ql_expr *e = &view->exprs[id];
  if (e->kind != QL_EXPR_COLUMN) return 0;
  if (e->column_index >= 0) return e->column_index == 0;
  return e->name != NULL && strcmp(e->name, "value") == 0;
}

/* An integer literal: 1 with *v (or *is_null) set, else 0. Unsigned values
 * above INT64_MAX are clamped, which keeps comparisons exact for a series
 * whose values are far below. */
static int int_literal(const struct ql_plan_view *view, ql_expr_id id, int64_t *v, int *is_null) {
  if (id < 0 || id >= view->n_exprs) return 0;
  const struct ql_expr *e = &view->exprs[id];
  if (e->kind != QL_EXPR_LITERAL || e->literal.format == NULL) return 0;
  const char *f = e->literal.format;
  if (f[0] == '\0' || f[1] != '\0') return 0;
  *is_null = e->literal.is_null != 0;
  if (strchr("csil", f[0])) {
    *v = e->literal.value.i64;
    return 1;
  }
  if (strchr("CSIL", f[0])) {
    *v = e->literal.value.u64 > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)e->literal.value.u64;
    return 1;
  }
  if (f[0] == 'n') { /* the null type: a NULL of no particular type */
    *is_null = 1;
    *v = 0;
    return 1;
  }
  return 0;
}

static int flip_op(int op) {
  switch (op) {
    case QL_OP_LT: return QL_OP_GT;
    case QL_OP_LE: return QL_OP_GE;
    case QL_OP_GT: return QL_OP_LT;
    case QL_OP_GE: return QL_OP_LE;
    default: return op;
  }
}

/* value OP literal as a value interval; 0 if OP is not one we push down. */
static int op_interval(int op, int64_t lit, int64_t *vlo, int64_t *vhi) {
  lit = clamp_value(lit);
  *vlo = -SMP_CLAMP - 1;
  *vhi = SMP_CLAMP + 1;
  switch (op) {
    case QL_OP_EQ: *vlo = lit; *vhi = lit; return 1;
    case QL_OP_LT: *vhi = lit - 1; return 1;
    case QL_OP_LE: *vhi = lit; return 1;
    case QL_OP_GT: *vlo = lit + 1; return 1;
    case QL_OP_GE: *vlo = lit; return 1;
    default: return 0;
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* value IN (literals...): each literal that is a value of the series is one row. */
static int in_list_rows(const struct smp_series *s, const struct ql_plan_view *view, const struct ql_expr *e,
                        struct smp_ranges *out, struct ql_error *error) {
  int64_t *ks = malloc((size_t)(e->n_args > 1 ? e->n_args : 1) * sizeof *ks);
  if (!ks) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory for an IN list");
  int64_t n = 0;
  for (int32_t i = 1; i < e->n_args; i++) {
    int64_t v = 0;
    int is_null = 1;
    int_literal(view, e->args[i], &v, &is_null);
    if (is_null) continue; /* NULL never equals: it adds no row */
    struct smp_range r = value_interval_rows(s, v, v);
    if (r.lo < r.hi) ks[n++] = r.lo;
  }
  qsort(ks, (size_t)n, sizeof *ks, cmp_i64);
  int rc = ranges_alloc(out, n, error);
  for (int64_t i = 0; rc == QL_OK && i < n; i++) {
    if (out->n > 0 && out->items[out->n - 1].hi == ks[i]) {
      out->items[out->n - 1].hi = ks[i] + 1;
    } else if (out->n == 0 || out->items[out->n - 1].hi < ks[i]) {
      out->items[out->n++] = (struct smp_range){ks[i], ks[i] + 1};
    }
  }
  free(ks);
  return rc;
}

/* The value interval a comparison or BETWEEN selects (*empty when a NULL
 * operand makes it never true); 0 if `e` is not one we push down. */
static int interval_filter(const struct ql_plan_view *view, const struct ql_expr *e, int64_t *vlo, int64_t *vhi,
                           int *empty) {
  int64_t lit = 0, lit2 = 0;
  int null1 = 0, null2 = 0;
  if (e->kind == QL_EXPR_BINARY && e->n_args == 2) {
    int op = e->op;
    if (is_value_column(view, e->args[0]) && int_literal(view, e->args[1], &lit, &null1)) {
      /* value OP literal */
    } else if (is_value_column(view, e->args[1]) && int_literal(view, e->args[0], &lit, &null1)) {
      op = flip_op(op);
    } else {
      return 0;
    }
    *empty = null1;
    return op_interval(op, lit, vlo, vhi);
  }
  if (e->kind == QL_EXPR_BETWEEN && e->n_args == 3 && !(e->flags & QL_EXPR_NEGATED)) {
    if (!is_value_column(view, e->args[0]) || !int_literal(view, e->args[1], &lit, &null1) ||
        !int_literal(view, e->args[2], &lit2, &null2)) {
      return 0;
    }
    *empty = null1 || null2;
    *vlo = clamp_value(lit);
    *vhi = clamp_value(lit2);
    return 1;
  }
  return 0;
}

static int is_in_filter(const struct ql_plan_view *view, const struct ql_expr *e) {
  if (e->kind != QL_EXPR_IN_LIST || e->n_args < 1 || (e->flags & QL_EXPR_NEGATED)) return 0;
  if (!is_value_column(view, e->args[0])) return 0;
  for (int32_t i = 1; i < e->n_args; i++) {
    int64_t v;
    int is_null;
    if (!int_literal(view, e->args[i], &v, &is_null)) return 0;
  }
  return 1;
}

int32_t smp_filter_pushdown(const struct ql_plan_view *view, ql_expr_id expr) {
  if (view == NULL || expr < 0 || expr >= view->n_exprs) return QL_PUSHDOWN_UNSUPPORTED;
  const struct ql_expr *e = &view->exprs[expr];
  int64_t vlo, vhi;
  int empty;
  if (interval_filter(view, e, &vlo, &vhi, &empty) || is_in_filter(view, e)) return QL_PUSHDOWN_EXACT;
  return QL_PUSHDOWN_UNSUPPORTED;
}

int smp_filter_rows(const struct smp_series *s, const struct ql_plan_view *view, ql_expr_id expr,
                          struct smp_ranges *out, struct ql_error *error) {
  if (smp_filter_pushdown(view, expr) != QL_PUSHDOWN_EXACT) {
    return ql_error_set(error, QL_EINTERNAL, "qlink_sample: filter %d is not one the series pushes down", (int)expr);
  }
  const struct ql_expr *e = &view->exprs[expr];
  int64_t vlo, vhi;
  int empty = 0;
  if (interval_filter(view, e, &vlo, &vhi, &empty)) {
    struct smp_range r = empty ? (struct smp_range){0, 0} : value_interval_rows(s, vlo, vhi);
    return ranges_single(r, out, error);
  }
  return in_list_rows(s, view, e, out, error);
}
