/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: filter analysis and evaluation. See filters.h. */
#include "filters.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

#define ZR_NO_DIM (-1)
#define ZR_MULTI_DIM (-2)
#define ZR_UNSUPPORTED (-3)

struct zr_lit {
  long double v;
  int is_nan;
};

static const struct ql_expr *expr_at(const struct ql_plan_view *v, ql_expr_id id) {
  return (id >= 0 && id < v->n_exprs) ? &v->exprs[id] : NULL;
}

static int64_t unit_of(char c) {
  switch (c) {
    case 's': return 1000000000LL;
    case 'm': return 1000000LL;
    case 'u': return 1000LL;
    case 'n': return 1LL;
    default: return 0;
  }
}

/* The table dimension a column expression names, or -1. */
static int32_t column_dim(const struct zr_table *t, const struct ql_expr *e) {
  if (!e || e->kind != QL_EXPR_COLUMN) return -1;
  int32_t idx = e->column_index;
  if (idx < 0 || idx >= t->n_columns || (e->name && strcmp(t->columns[idx].name, e->name) != 0)) {
    idx = -1;
    for (int32_t i = 0; e->name && i < t->n_columns; i++) {
      if (strcmp(t->columns[i].name, e->name) == 0) idx = i;
    }
  }
  if (idx < 0 || t->columns[idx].role != ZR_ROLE_DIM) return -1;
  return t->columns[idx].dim;
}

/* Convert a literal to the dimension's value space; 0 if incompatible. */
static int literal_value(const struct zr_dim *d, const struct ql_expr *e, struct zr_lit *out) {
  if (!e || e->kind != QL_EXPR_LITERAL || !e->literal.format || e->literal.is_null) return 0;
  const char *lf = e->literal.format;
  const char *cf = d->dec.format;
  out->is_nan = 0;
  if (!d->comparable) return 0;
  if (cf[0] == 't' && cf[1] == 's') {
    int64_t col_unit = unit_of(cf[2]);
    if (lf[0] == 't' && lf[1] == 's' && unit_of(lf[2])) {
      out->v = (long double)e->literal.value.i64 * unit_of(lf[2]) / col_unit;
    } else if (strcmp(lf, "tdD") == 0) {
      out->v = (long double)e->literal.value.i64 * 86400000000000.0L / col_unit;
    } else if (strcmp(lf, "tdm") == 0) {
      out->v = (long double)e->literal.value.i64 * 1000000.0L / col_unit;
    } else {
      return 0;
    }
    return 1;
  }
  if (cf[0] == 't' && cf[1] == 'D') {
    if (lf[0] != 't' || lf[1] != 'D' || !unit_of(lf[2])) return 0;
    out->v = (long double)e->literal.value.i64 * unit_of(lf[2]) / unit_of(cf[2]);
    return 1;
  }
  if (!cf[0] || strchr("csilCSILefgb", cf[0]) == NULL || cf[1] != '\0') return 0;
  if (!lf[0] || lf[1] != '\0') return 0;
  if (strchr("csilb", lf[0])) {
    out->v = (long double)e->literal.value.i64;
  } else if (strchr("CSIL", lf[0])) {
    out->v = (long double)e->literal.value.u64;
  } else if (strchr("efg", lf[0])) {
    out->is_nan = isnan(e->literal.value.f64);
    out->v = (long double)e->literal.value.f64;
  } else {
    return 0;
  }
  return 1;
}

static long double dim_value(const struct zr_value *v, int *is_nan) {
  *is_nan = 0;
  switch (v->kind) {
    case 1: return (long double)v->u;
    case 2: *is_nan = isnan(v->f); return (long double)v->f;
    default: return (long double)v->i;
  }
}

/* DataFusion's comparison of floats in filters: NaN is largest and equal
 * to itself; -0.0 equals +0.0 (x = 0, x < 0 and x >= 0 treat them alike). */
static int cmp3(long double a, int a_nan, const struct zr_lit *b) {
  if (a_nan || b->is_nan) return a_nan && b->is_nan ? 0 : (a_nan ? 1 : -1);
  if (a < b->v) return -1;
  if (a > b->v) return 1;
  return 0;
}

static int op_holds(int32_t op, int c) {
  switch (op) {
    case QL_OP_EQ: return c == 0;
    case QL_OP_NE: return c != 0;
    case QL_OP_LT: return c < 0;
    case QL_OP_LE: return c <= 0;
    case QL_OP_GT: return c > 0;
    case QL_OP_GE: return c >= 0;
    default: return 0;
  }
}

static int32_t flip(int32_t op) {
  switch (op) {
    case QL_OP_LT: return QL_OP_GT;
    case QL_OP_LE: return QL_OP_GE;
    case QL_OP_GT: return QL_OP_LT;
    case QL_OP_GE: return QL_OP_LE;
    default: return op;
  }
}

static int is_cmp(int32_t op) { return op >= QL_OP_EQ && op <= QL_OP_GE; }

/* Which dimension `id` constrains: a dimension index, ZR_MULTI_DIM for an
 * AND over several, or ZR_UNSUPPORTED. */
static int32_t analyze(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *v,
                       ql_expr_id id, int depth) {
  const struct ql_expr *e = expr_at(v, id);
  struct zr_lit lit = {0};
  if (!e || depth > 64) return ZR_UNSUPPORTED;
  switch (e->kind) {
    case QL_EXPR_BINARY: {
      if (e->n_args != 2) return ZR_UNSUPPORTED;
      if (e->op == QL_OP_AND || e->op == QL_OP_OR) {
        int32_t a = analyze(ds, t, v, e->args[0], depth + 1);
        int32_t b = analyze(ds, t, v, e->args[1], depth + 1);
        if (a == ZR_UNSUPPORTED || b == ZR_UNSUPPORTED) return ZR_UNSUPPORTED;
        if (a == b) return a;
        return e->op == QL_OP_AND ? ZR_MULTI_DIM : ZR_UNSUPPORTED;
      }
      if (!is_cmp(e->op)) return ZR_UNSUPPORTED;
      int32_t d = column_dim(t, expr_at(v, e->args[0]));
      ql_expr_id lit_id = e->args[1];
      if (d < 0) {
        d = column_dim(t, expr_at(v, e->args[1]));
        lit_id = e->args[0];
      }
      if (d < 0 || !literal_value(&ds->dims[t->dims[d]], expr_at(v, lit_id), &lit)) return ZR_UNSUPPORTED;
      return d;
    }
    case QL_EXPR_BETWEEN:
    case QL_EXPR_IN_LIST: {
      if (e->n_args < (e->kind == QL_EXPR_BETWEEN ? 3 : 2)) return ZR_UNSUPPORTED;
      if (e->kind == QL_EXPR_BETWEEN && e->n_args != 3) return ZR_UNSUPPORTED;
      int32_t d = column_dim(t, expr_at(v, e->args[0]));
      if (d < 0) return ZR_UNSUPPORTED;
      for (int32_t k = 1; k < e->n_args; k++) {
        if (!literal_value(&ds->dims[t->dims[d]], expr_at(v, e->args[k]), &lit)) return ZR_UNSUPPORTED;
      }
      return d;
    }
    case QL_EXPR_NOT: {
      if (e->n_args != 1) return ZR_UNSUPPORTED;
      int32_t d = analyze(ds, t, v, e->args[0], depth + 1);
      return d >= 0 ? d : ZR_UNSUPPORTED;
    }
    default: return ZR_UNSUPPORTED;
  }
}

int zr_filter_supported(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *view,
                        ql_expr_id e) {
  return analyze(ds, t, view, e, 0) != ZR_UNSUPPORTED;
}

/* Evaluate a single-dimension expression into m[0..n). */
static int eval_dim(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *v,
                    ql_expr_id id, int32_t dim, uint8_t *m) {
  const struct ql_expr *e = expr_at(v, id);
  const struct zr_dim *d = &ds->dims[t->dims[dim]];
  int64_t n = d->size;
  if (e->kind == QL_EXPR_BINARY && (e->op == QL_OP_AND || e->op == QL_OP_OR)) {
    uint8_t *other = malloc((size_t)(n ? n : 1));
    if (!other) return QL_ENOMEM;
    int rc = eval_dim(ds, t, v, e->args[0], dim, m);
    if (rc == QL_OK) rc = eval_dim(ds, t, v, e->args[1], dim, other);
    for (int64_t i = 0; rc == QL_OK && i < n; i++) m[i] = e->op == QL_OP_AND ? (m[i] & other[i]) : (m[i] | other[i]);
    free(other);
    return rc;
  }
  if (e->kind == QL_EXPR_NOT) {
    QL_RETURN_NOT_OK(eval_dim(ds, t, v, e->args[0], dim, m));
    for (int64_t i = 0; i < n; i++) m[i] = !zr_dim_value(d, i).is_null && !m[i];
    return QL_OK;
  }
  struct zr_lit lits[2] = {{0}};
  if (e->kind == QL_EXPR_BINARY) {
    int col_left = column_dim(t, expr_at(v, e->args[0])) == dim;
    int32_t op = col_left ? e->op : flip(e->op);
    literal_value(d, expr_at(v, e->args[col_left ? 1 : 0]), &lits[0]);
    for (int64_t i = 0; i < n; i++) {
      int nan;
      struct zr_value x = zr_dim_value(d, i);
      long double xv = dim_value(&x, &nan);
      m[i] = !x.is_null && op_holds(op, cmp3(xv, nan, &lits[0]));
    }
    return QL_OK;
  }
  int negated = (e->flags & QL_EXPR_NEGATED) != 0;
  if (e->kind == QL_EXPR_BETWEEN) {
    literal_value(d, expr_at(v, e->args[1]), &lits[0]);
    literal_value(d, expr_at(v, e->args[2]), &lits[1]);
    for (int64_t i = 0; i < n; i++) {
      int nan;
      struct zr_value x = zr_dim_value(d, i);
      long double xv = dim_value(&x, &nan);
      int in = cmp3(xv, nan, &lits[0]) >= 0 && cmp3(xv, nan, &lits[1]) <= 0;
      m[i] = !x.is_null && (negated ? !in : in);
    }
    return QL_OK;
  }
  /* IN list */
  for (int64_t i = 0; i < n; i++) {
    int nan, in = 0;
    struct zr_value x = zr_dim_value(d, i);
    long double xv = dim_value(&x, &nan);
    for (int32_t k = 1; k < e->n_args && !in; k++) {
      struct zr_lit lit = {0};
      literal_value(d, expr_at(v, e->args[k]), &lit);
      in = cmp3(xv, nan, &lit) == 0;
    }
    m[i] = !x.is_null && (negated ? !in : in);
  }
  return QL_OK;
}

/* ------------------------------------------------ range lists (monotonic) */

static void ranges_free(struct zr_ranges *r) {
  free(r->bounds);
  r->bounds = NULL;
  r->n = 0;
}

/* Room for `n` ranges (bounds non-NULL even when n == 0: present). */
static int ranges_alloc(struct zr_ranges *r, int64_t n) {
  r->n = 0;
  r->bounds = malloc(sizeof(int64_t) * (size_t)(2 * n + 2));
  return r->bounds ? QL_OK : QL_ENOMEM;
}

/* Append [lo, hi) (lo at or after the last range's start), merging with the
 * last range when they touch or overlap; empty ranges are dropped. */
static void ranges_push(struct zr_ranges *r, int64_t lo, int64_t hi) {
  if (lo >= hi) return;
  if (r->n > 0 && lo <= r->bounds[2 * r->n - 1]) {
    if (hi > r->bounds[2 * r->n - 1]) r->bounds[2 * r->n - 1] = hi;
    return;
  }
  r->bounds[2 * r->n] = lo;
  r->bounds[2 * r->n + 1] = hi;
  r->n++;
}

static int ranges_intersect(const struct zr_ranges *a, const struct zr_ranges *b, struct zr_ranges *out) {
  QL_RETURN_NOT_OK(ranges_alloc(out, a->n + b->n));
  int64_t i = 0, j = 0;
  while (i < a->n && j < b->n) {
    int64_t lo = a->bounds[2 * i] > b->bounds[2 * j] ? a->bounds[2 * i] : b->bounds[2 * j];
    int64_t hi = a->bounds[2 * i + 1] < b->bounds[2 * j + 1] ? a->bounds[2 * i + 1] : b->bounds[2 * j + 1];
    ranges_push(out, lo, hi);
    if (a->bounds[2 * i + 1] < b->bounds[2 * j + 1]) {
      i++;
    } else {
      j++;
    }
  }
  return QL_OK;
}

static int ranges_union(const struct zr_ranges *a, const struct zr_ranges *b, struct zr_ranges *out) {
  QL_RETURN_NOT_OK(ranges_alloc(out, a->n + b->n));
  int64_t i = 0, j = 0;
  while (i < a->n || j < b->n) {
    int take_a = j >= b->n || (i < a->n && a->bounds[2 * i] <= b->bounds[2 * j]);
    const int64_t *r = take_a ? &a->bounds[2 * i++] : &b->bounds[2 * j++];
    ranges_push(out, r[0], r[1]);
  }
  return QL_OK;
}

/* The positions of [0, n) outside `a`. */
static int ranges_complement(const struct zr_ranges *a, int64_t n, struct zr_ranges *out) {
  QL_RETURN_NOT_OK(ranges_alloc(out, a->n + 1));
  int64_t at = 0;
  for (int64_t i = 0; i < a->n; i++) {
    ranges_push(out, at, a->bounds[2 * i]);
    at = a->bounds[2 * i + 1];
  }
  ranges_push(out, at, n);
  return QL_OK;
}

/* Along a strictly monotonic dimension, cmp3(value(i), lit) is monotonic in
 * i: the positions split into three runs [0, p1), [p1, p2), [p2, n) where it
 * is constant (-1, 0, 1 when values increase; 1, 0, -1 when they
 * decrease). The first position where `past` holds, by binary search. */
static int64_t first_past(const struct zr_dim *d, const struct zr_lit *lit, int strict) {
  int64_t lo = 0, hi = d->size;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int nan;
    struct zr_value x = zr_dim_value(d, mid);
    long double xv = dim_value(&x, &nan); /* sets nan: not in cmp3's argument list (unsequenced) */
    int c = cmp3(xv, nan, lit) * d->direction;
    if (strict ? c > 0 : c >= 0) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

/* The positions where `value op lit` holds, appended to `out` (room for
 * three ranges). */
static void cmp_ranges(const struct zr_dim *d, int32_t op, const struct zr_lit *lit, struct zr_ranges *out) {
  int64_t p1 = first_past(d, lit, 0), p2 = first_past(d, lit, 1);
  /* the comparison's value on each run, in position order */
  int run_cmp[3] = {-d->direction, 0, d->direction};
  int64_t edges[4] = {0, p1, p2, d->size};
  for (int r = 0; r < 3; r++) {
    if (op_holds(op, run_cmp[r])) ranges_push(out, edges[r], edges[r + 1]);
  }
}

/* qsort order of runs {start, end} by start. */
static int cmp_run_start(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Evaluate a single-dimension expression on a monotonic dimension into a
 * range list (O(literals * log n)); same results as eval_dim. */
static int eval_ranges(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *v,
                       ql_expr_id id, int32_t dim, struct zr_ranges *out) {
  const struct ql_expr *e = expr_at(v, id);
  const struct zr_dim *d = &ds->dims[t->dims[dim]];
  out->bounds = NULL;
  if (e->kind == QL_EXPR_BINARY && (e->op == QL_OP_AND || e->op == QL_OP_OR)) {
    struct zr_ranges a = {0, NULL}, b = {0, NULL};
    int rc = eval_ranges(ds, t, v, e->args[0], dim, &a);
    if (rc == QL_OK) rc = eval_ranges(ds, t, v, e->args[1], dim, &b);
    if (rc == QL_OK) rc = e->op == QL_OP_AND ? ranges_intersect(&a, &b, out) : ranges_union(&a, &b, out);
    ranges_free(&a);
    ranges_free(&b);
    return rc;
  }
  if (e->kind == QL_EXPR_NOT) {
    struct zr_ranges a = {0, NULL};
    int rc = eval_ranges(ds, t, v, e->args[0], dim, &a);
    if (rc == QL_OK) rc = ranges_complement(&a, d->size, out);
    ranges_free(&a);
    return rc;
  }
  struct zr_lit lits[2] = {{0}};
  if (e->kind == QL_EXPR_BINARY) {
    int col_left = column_dim(t, expr_at(v, e->args[0])) == dim;
    literal_value(d, expr_at(v, e->args[col_left ? 1 : 0]), &lits[0]);
    QL_RETURN_NOT_OK(ranges_alloc(out, 3));
    cmp_ranges(d, col_left ? e->op : flip(e->op), &lits[0], out);
    return QL_OK;
  }
  int negated = (e->flags & QL_EXPR_NEGATED) != 0;
  struct zr_ranges in = {0, NULL};
  if (e->kind == QL_EXPR_BETWEEN) {
    literal_value(d, expr_at(v, e->args[1]), &lits[0]);
    literal_value(d, expr_at(v, e->args[2]), &lits[1]);
    struct zr_ranges ge = {0, NULL}, le = {0, NULL};
    int rc = ranges_alloc(&ge, 3);
    if (rc == QL_OK) rc = ranges_alloc(&le, 3);
    if (rc == QL_OK) {
      cmp_ranges(d, QL_OP_GE, &lits[0], &ge);
      cmp_ranges(d, QL_OP_LE, &lits[1], &le);
      rc = ranges_intersect(&ge, &le, &in);
    }
    ranges_free(&ge);
    ranges_free(&le);
    QL_RETURN_NOT_OK(rc);
  } else {
    /* IN list: each literal's matches are one run (at most one position:
     * values are distinct); the runs sorted by start make the list. */
    int64_t n_lits = e->n_args - 1, n = 0;
    int64_t *runs = malloc(sizeof(int64_t) * (size_t)(2 * (n_lits > 0 ? n_lits : 1)));
    if (!runs || ranges_alloc(&in, n_lits) != QL_OK) {
      free(runs);
      ranges_free(&in);
      return QL_ENOMEM;
    }
    for (int32_t k = 1; k < e->n_args; k++) {
      struct zr_lit lit = {0};
      literal_value(d, expr_at(v, e->args[k]), &lit);
      int64_t p1 = first_past(d, &lit, 0), p2 = first_past(d, &lit, 1);
      if (p1 < p2) {
        runs[2 * n] = p1;
        runs[2 * n + 1] = p2;
        n++;
      }
    }
    qsort(runs, (size_t)n, 2 * sizeof(int64_t), cmp_run_start);
    for (int64_t i = 0; i < n; i++) ranges_push(&in, runs[2 * i], runs[2 * i + 1]);
    free(runs);
  }
  if (!negated) {
    *out = in;
    return QL_OK;
  }
  int rc = ranges_complement(&in, d->size, out);
  ranges_free(&in);
  return rc;
}

/* Is the selection along `d` held as a range list? (filters.h) */
static int uses_ranges(const struct zr_dim *d) { return d->direction != 0; }

static int apply(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *v, ql_expr_id id,
                 struct zr_selection *sel, struct ql_error *error) {
  int32_t d = analyze(ds, t, v, id, 0);
  if (d == ZR_UNSUPPORTED) return QL_OK;
  const struct ql_expr *e = expr_at(v, id);
  if (d == ZR_MULTI_DIM) {
    QL_RETURN_NOT_OK(apply(ds, t, v, e->args[0], sel, error));
    return apply(ds, t, v, e->args[1], sel, error);
  }
  const struct zr_dim *dim = &ds->dims[t->dims[d]];
  if (uses_ranges(dim)) {
    struct zr_ranges r = {0, NULL}, both = {0, NULL};
    int rc = eval_ranges(ds, t, v, id, d, &r);
    if (rc == QL_OK && sel->ranges[d].bounds) {
      rc = ranges_intersect(&sel->ranges[d], &r, &both);
      ranges_free(&r);
      r = both;
    }
    if (rc != QL_OK) {
      ranges_free(&r);
      return ql_error_set(error, QL_ENOMEM, "out of memory evaluating a filter");
    }
    ranges_free(&sel->ranges[d]);
    sel->ranges[d] = r;
    return QL_OK;
  }
  int64_t n = dim->size;
  uint8_t *m = malloc((size_t)(n ? n : 1));
  if (!m) return ql_error_set(error, QL_ENOMEM, "out of memory evaluating a filter");
  memset(m, 0, (size_t)(n ? n : 1));
  if (eval_dim(ds, t, v, id, d, m) != QL_OK) {
    free(m);
    return ql_error_set(error, QL_ENOMEM, "out of memory evaluating a filter");
  }
  if (!sel->mask[d]) {
    sel->mask[d] = m;
  } else {
    for (int64_t i = 0; i < n; i++) sel->mask[d][i] &= m[i];
    free(m);
  }
  return QL_OK;
}

int zr_filter_apply(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *view,
                    ql_expr_id e, struct zr_selection *sel, struct ql_error *error) {
  sel->ndim = t->ndim;
  return apply(ds, t, view, e, sel, error);
}

int zr_selection_run(const struct zr_selection *sel, int32_t k, int64_t from, int64_t to, int64_t *lo, int64_t *hi) {
  if (from >= to) return 0;
  if (sel && sel->ranges[k].bounds) {
    const struct zr_ranges *r = &sel->ranges[k];
    /* the first range ending after `from` */
    int64_t a = 0, b = r->n;
    while (a < b) {
      int64_t mid = a + (b - a) / 2;
      if (r->bounds[2 * mid + 1] <= from) {
        a = mid + 1;
      } else {
        b = mid;
      }
    }
    if (a == r->n || r->bounds[2 * a] >= to) return 0;
    *lo = r->bounds[2 * a] > from ? r->bounds[2 * a] : from;
    *hi = r->bounds[2 * a + 1] < to ? r->bounds[2 * a + 1] : to;
    return 1;
  }
  if (sel && sel->mask[k]) {
    const uint8_t *m = sel->mask[k];
    int64_t i = from;
    while (i < to && !m[i]) i++;
    if (i == to) return 0;
    *lo = i;
    while (i < to && m[i]) i++;
    *hi = i;
    return 1;
  }
  *lo = from;
  *hi = to;
  return 1;
}

void zr_selection_free(struct zr_selection *sel) {
  for (int32_t i = 0; i < ZR_MAX_DIMS; i++) {
    free(sel->mask[i]);
    sel->mask[i] = NULL;
    ranges_free(&sel->ranges[i]);
  }
}
