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
    for (int64_t i = 0; i < n; i++) m[i] = !d->values[i].is_null && !m[i];
    return QL_OK;
  }
  struct zr_lit lits[2] = {{0}};
  if (e->kind == QL_EXPR_BINARY) {
    int col_left = column_dim(t, expr_at(v, e->args[0])) == dim;
    int32_t op = col_left ? e->op : flip(e->op);
    literal_value(d, expr_at(v, e->args[col_left ? 1 : 0]), &lits[0]);
    for (int64_t i = 0; i < n; i++) {
      int nan;
      long double x = dim_value(&d->values[i], &nan);
      m[i] = !d->values[i].is_null && op_holds(op, cmp3(x, nan, &lits[0]));
    }
    return QL_OK;
  }
  int negated = (e->flags & QL_EXPR_NEGATED) != 0;
  if (e->kind == QL_EXPR_BETWEEN) {
    literal_value(d, expr_at(v, e->args[1]), &lits[0]);
    literal_value(d, expr_at(v, e->args[2]), &lits[1]);
    for (int64_t i = 0; i < n; i++) {
      int nan;
      long double x = dim_value(&d->values[i], &nan);
      int in = cmp3(x, nan, &lits[0]) >= 0 && cmp3(x, nan, &lits[1]) <= 0;
      m[i] = !d->values[i].is_null && (negated ? !in : in);
    }
    return QL_OK;
  }
  /* IN list */
  for (int64_t i = 0; i < n; i++) {
    int nan, in = 0;
    long double x = dim_value(&d->values[i], &nan);
    for (int32_t k = 1; k < e->n_args && !in; k++) {
      struct zr_lit lit = {0};
      literal_value(d, expr_at(v, e->args[k]), &lit);
      in = cmp3(x, nan, &lit) == 0;
    }
    m[i] = !d->values[i].is_null && (negated ? !in : in);
  }
  return QL_OK;
}

static int apply(const struct zr_dataset *ds, const struct zr_table *t, const struct ql_plan_view *v, ql_expr_id id,
                 struct zr_selection *sel, struct ql_error *error) {
  int32_t d = analyze(ds, t, v, id, 0);
  if (d == ZR_UNSUPPORTED) return QL_OK;
  const struct ql_expr *e = expr_at(v, id);
  if (d == ZR_MULTI_DIM) {
    QL_RETURN_NOT_OK(apply(ds, t, v, e->args[0], sel, error));
    return apply(ds, t, v, e->args[1], sel, error);
  }
  int64_t n = ds->dims[t->dims[d]].size;
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

void zr_selection_free(struct zr_selection *sel) {
  for (int32_t i = 0; i < ZR_MAX_DIMS; i++) {
    free(sel->mask[i]);
    sel->mask[i] = NULL;
  }
}
