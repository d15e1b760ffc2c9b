/* SPDX-License-Identifier: Apache-2.0 */
/* Test support for qlink_fold (see fold_test_util.h). */
#include "fold_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

uint64_t ft_rand(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

int64_t ft_rand_range(uint64_t *s, int64_t lo, int64_t hi) {
  return lo + (int64_t)(ft_rand(s) % (uint64_t)(hi - lo + 1));
}

void ft_table_reset_layout(struct ft_table *t) {
  for (int64_t r = 0; r < t->n_rows; r++) t->order[r] = r;
  t->n_parts = 1;
  t->bounds[0] = 0;
  t->bounds[1] = t->n_rows;
  t->batch_rows = 1024;
}

void ft_table_shuffle_layout(struct ft_table *t, uint64_t *rng, int n_parts, int64_t batch_rows) {
  for (int64_t r = 0; r < t->n_rows; r++) t->order[r] = r;
  for (int64_t r = t->n_rows - 1; r > 0; r--) {
    int64_t j = ft_rand_range(rng, 0, r);
    int64_t tmp = t->order[r];
    t->order[r] = t->order[j];
    t->order[j] = tmp;
  }
  t->n_parts = n_parts;
  t->bounds[0] = 0;
  for (int p = 1; p < n_parts; p++) t->bounds[p] = ft_rand_range(rng, t->bounds[p - 1], t->n_rows);
  t->bounds[n_parts] = t->n_rows;
  t->batch_rows = batch_rows;
}

/* ----------------------------------------------------------- table plan */

static int64_t ft_width(const char *format) {
  switch (format[0]) {
    case 'd': return 16;
    case 'l': case 'g': return 8;
    case 'i': case 'f': return 4;
    case 's': return 2;
    default: return 8;
  }
}

void ft_table_schema(const struct ft_table *t, struct ArrowSchema *out) {
  if (ql_schema_init_struct(out, NULL, t->n_cols, NULL) != QL_OK) abort();
  for (int c = 0; c < t->n_cols; c++)
    if (ql_schema_init(out->children[c], t->cols[c].format, t->cols[c].name, ARROW_FLAG_NULLABLE, NULL) != QL_OK) abort();
}

static int ft_column_array(const struct ft_col *col, const int64_t *rows, int64_t n, struct ArrowArray *out) {
  int64_t w = ft_width(col->format);
  uint8_t *data = calloc((size_t)(n ? n : 1), (size_t)w);
  uint8_t *validity = calloc((size_t)(n / 8 + 1), 1);
  int64_t nulls = 0;
  for (int64_t k = 0; k < n; k++) {
    int64_t r = rows[k];
    if (col->valid[r]) validity[k >> 3] |= (uint8_t)(1u << (k & 7));
    else nulls++;
    switch (col->format[0]) {
      case 'g': memcpy(data + k * 8, &col->f[r], 8); break;
      case 'f': { float x = (float)col->f[r]; memcpy(data + k * 4, &x, 4); break; }
      case 'i': { int32_t x = (int32_t)col->i[r]; memcpy(data + k * 4, &x, 4); break; }
      case 's': { int16_t x = (int16_t)col->i[r]; memcpy(data + k * 2, &x, 2); break; }
      case 'd': { __int128 x = col->i[r]; memcpy(data + k * 16, &x, 16); break; }
      default: memcpy(data + k * 8, &col->i[r], 8);
    }
  }
  if (nulls == 0) {
    free(validity);
    validity = NULL;
  }
  return ql_array_init_fixed(out, n, nulls, validity, data, NULL);
}

static const struct ft_table *ft_of(const struct ql_execution_plan *p) { return p->private_data; }
static const char *ft_name(const struct ql_execution_plan *p) { (void)p; return "FtTableExec"; }
static const char *ft_display(const struct ql_execution_plan *p) { return ft_of(p)->name; }
static int ft_get_schema(const struct ql_execution_plan *p, struct ArrowSchema *out, struct ql_error *e) {
  (void)e;
  ft_table_schema(ft_of(p), out);
  return QL_OK;
}
static int ft_get_properties(const struct ql_execution_plan *p, struct ql_plan_properties *out, struct ql_error *e) {
  (void)e;
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->partition_count = ft_of(p)->n_parts;
  return QL_OK;
}
static int64_t ft_child_count(const struct ql_execution_plan *p) { (void)p; return 0; }
static const struct ql_execution_plan *ft_child(const struct ql_execution_plan *p, int64_t i) {
  (void)p;
  (void)i;
  return NULL;
}
static int ft_with_new_children(const struct ql_execution_plan *p, struct ql_execution_plan *c, int64_t n,
                                struct ql_execution_plan *out, struct ql_error *e) {
  (void)c;
  if (n != 0) return ql_error_set(e, QL_EINVAL, "no children");
  return ft_plan_new(ft_of(p), out);
}

static int ft_execute(const struct ql_execution_plan *p, int64_t part, const struct ql_task_context *ctx,
                      struct ArrowArrayStream *out, struct ql_error *e) {
  (void)ctx;
  const struct ft_table *t = ft_of(p);
  if (part < 0 || part >= t->n_parts) return ql_error_set(e, QL_EINVAL, "bad partition");
  int64_t from = t->bounds[part], to = t->bounds[part + 1];
  int64_t n_batches = (to - from + t->batch_rows - 1) / t->batch_rows;
  struct ArrowArray *batches = calloc((size_t)(n_batches ? n_batches : 1), sizeof(*batches));
  for (int64_t b = 0; b < n_batches; b++) {
    int64_t lo = from + b * t->batch_rows, hi = lo + t->batch_rows < to ? lo + t->batch_rows : to;
    int n_cols = t->broken_batches ? 1 : t->n_cols;
    if (ql_array_init_struct(&batches[b], hi - lo, n_cols, NULL) != QL_OK) abort();
    for (int c = 0; c < n_cols; c++)
      if (ft_column_array(&t->cols[c], t->order + lo, hi - lo, batches[b].children[c]) != QL_OK) abort();
  }
  struct ArrowSchema schema;
  ft_table_schema(t, &schema);
  int rc = ql_stream_from_arrays(&schema, batches, n_batches, out, e);
  free(batches);
  return rc;
}

static void ft_stats_release(struct ql_statistics *s) {
  free(s->columns);
  s->release = NULL;
}

static int ft_i64_cmp(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

static int ft_get_statistics(const struct ql_execution_plan *p, int64_t part, struct ql_statistics *out,
                             struct ql_error *e) {
  const struct ft_table *t = ft_of(p);
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->n_columns = t->n_cols;
  out->columns = calloc((size_t)t->n_cols, sizeof(struct ql_column_statistics));
  out->release = ft_stats_release;
  if (!t->with_stats || part != -1) return QL_OK;
  (void)e;
  out->num_rows_precision = QL_PRECISION_EXACT;
  out->num_rows = t->n_rows;
  for (int c = 0; c < t->n_cols; c++) {
    const struct ft_col *col = &t->cols[c];
    if (col->format[0] == 'g' || col->format[0] == 'f') continue;
    struct ql_column_statistics *s = &out->columns[c];
    int64_t lo = INT64_MAX, hi = INT64_MIN, nulls = 0, distinct = 0, n = 0;
    int64_t *sorted = malloc((size_t)(t->n_rows ? t->n_rows : 1) * sizeof(int64_t));
    for (int64_t r = 0; r < t->n_rows; r++) {
      if (!col->valid[r]) {
        nulls++;
        continue;
      }
      sorted[n++] = col->i[r];
      if (col->i[r] < lo) lo = col->i[r];
      if (col->i[r] > hi) hi = col->i[r];
    }
    qsort(sorted, (size_t)n, sizeof(int64_t), ft_i64_cmp);
    for (int64_t r = 0; r < n; r++) distinct += r == 0 || sorted[r] != sorted[r - 1];
    free(sorted);
    s->null_count_precision = QL_PRECISION_EXACT;
    s->null_count = nulls;
    s->distinct_count_precision = QL_PRECISION_EXACT;
    s->distinct_count = distinct;
    if (distinct == 0) continue;
    s->min_max_precision = QL_PRECISION_EXACT;
    s->min.format = col->format;
    s->min.value.i64 = lo;
    s->max.format = col->format;
    s->max.value.i64 = hi;
  }
  return QL_OK;
}

static void ft_release(struct ql_execution_plan *p) { p->release = NULL; }

int ft_plan_new(const struct ft_table *t, struct ql_execution_plan *out) {
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->name = ft_name;
  out->display = ft_display;
  out->get_schema = ft_get_schema;
  out->get_properties = ft_get_properties;
  out->child_count = ft_child_count;
  out->child = ft_child;
  out->with_new_children = ft_with_new_children;
  out->execute = ft_execute;
  out->get_statistics = ft_get_statistics;
  out->release = ft_release;
  out->private_data = (void *)t;
  return QL_OK;
}

/* ------------------------------------------------------------------ host */

void ft_host_init(struct ft_host *h, int64_t limit, int threads, int64_t batch_size) {
  memset(h, 0, sizeof(*h));
  struct ql_ref_host_options o = {limit, batch_size, threads > 0 ? threads : 1};
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  if (ql_ref_host_new(&o, &h->host, &err) != QL_OK) {
    fprintf(stderr, "ql_ref_host_new: %s\n", ql_error_message(&err));
    abort();
  }
  h->pool = ql_ref_host_memory_pool(h->host);
  ql_ref_host_task_context(h->host, 0, &h->ctx);
  if (threads == 0) h->ctx.executor = NULL;
}

int ft_host_free(struct ft_host *h) {
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  int rc = ql_ref_host_free(h->host, &err);
  if (rc != QL_OK) fprintf(stderr, "ql_ref_host_free: %s\n", ql_error_message(&err));
  ql_error_release(&err);
  return rc;
}

/* ------------------------------------------------------------ plan views */

static struct ql_plan_node ft_node(int32_t kind) {
  struct ql_plan_node n;
  memset(&n, 0, sizeof(n));
  n.kind = kind;
  n.condition = -1;
  n.n_projection = -1;
  n.fetch = -1;
  return n;
}

/* The type a column is read as in the query: keys int64 (cast from narrower
 * integers); values int64 or float64. */
static const char *ft_key_type(const char *f) { return (f[0] == 'i' || f[0] == 's') ? "l" : f; }

static ql_expr_id ft_column_as(struct ql_ir_builder *b, const char *name, const char *qual, int32_t index,
                               const char *format, const char *as) {
  ql_expr_id c = ql_ir_column(b, name, qual, index);
  return strcmp(format, as) ? ql_ir_cast(b, c, as, 0) : c;
}

static void ft_set_field(struct ArrowSchema *s, int64_t i, const char *format, const char *name) {
  if (ql_schema_init(s->children[i], format, name, ARROW_FLAG_NULLABLE, NULL) != QL_OK) abort();
}

int ft_build_view(const struct ft_query *q, const struct ft_table *a, const struct ft_table *b, struct ql_plan_view *out,
                  struct ft_view_ids *ids) {
  struct ql_ir_builder *bld;
  if (ql_ir_builder_new(&bld, NULL) != QL_OK) return 1;
  const struct ft_table *t[2] = {a, b};
  const char *quals[2][FT_MAX_COLS];
  struct ArrowSchema schemas[2];
  static const int32_t proj_all[FT_MAX_COLS] = {0, 1, 2, 3, 4, 5, 6, 7};
  struct ql_table_ref refs[2];
  ql_node_id in[2];
  for (int k = 0; k < 2; k++) {
    ft_table_schema(t[k], &schemas[k]);
    for (int c = 0; c < t[k]->n_cols; c++) quals[k][c] = t[k]->name;
    refs[k].name = t[k]->name;
    refs[k].schema = &schemas[k];
    refs[k].host_handle = t[k];
    refs[k].provider = NULL;
    struct ql_plan_node scan = ft_node(QL_NODE_TABLE_SCAN);
    scan.schema = &schemas[k];
    scan.field_qualifiers = quals[k];
    scan.n_projection = t[k]->n_cols;
    scan.projection = proj_all;
    scan.name = t[k]->name;
    scan.table = &refs[k];
    ids->scans[k] = in[k] = ql_ir_node(bld, &scan);
    if (q->alias_inputs) {
      struct ql_plan_node al = ft_node(QL_NODE_SUBQUERY_ALIAS);
      al.n_inputs = 1;
      al.inputs = &in[k];
      al.schema = &schemas[k];
      al.field_qualifiers = quals[k];
      al.name = t[k]->name;
      in[k] = ql_ir_node(bld, &al);
    }
    ids->inputs[k] = in[k];
  }
  int na = a->n_cols, nj = a->n_cols + b->n_cols;
  /* Join. */
  struct ArrowSchema js;
  if (ql_schema_init_struct(&js, NULL, nj, NULL) != QL_OK) abort();
  const char *jq[2 * FT_MAX_COLS];
  for (int c = 0; c < nj; c++) {
    const struct ft_col *col = c < na ? &a->cols[c] : &b->cols[c - na];
    ft_set_field(&js, c, col->format, col->name);
    jq[c] = c < na ? a->name : b->name;
  }
  ql_expr_id lk[2], rk[2];
  for (int i = 0; i < q->n_keys; i++) {
    const struct ft_col *ca = &a->cols[q->akey[i]], *cb = &b->cols[q->bkey[i]];
    lk[i] = ft_column_as(bld, ca->name, a->name, q->akey[i], ca->format, ft_key_type(ca->format));
    rk[i] = ft_column_as(bld, cb->name, b->name, na + q->bkey[i], cb->format, ft_key_type(cb->format));
  }
  struct ql_plan_node jn = ft_node(QL_NODE_JOIN);
  jn.join_type = q->join_type ? q->join_type : QL_JOIN_INNER;
  jn.flags = q->null_equals_null ? QL_NODE_NULL_EQUALS_NULL : 0;
  jn.n_inputs = 2;
  jn.inputs = in;
  jn.schema = &js;
  jn.field_qualifiers = jq;
  jn.n_exprs = jn.n_exprs2 = q->n_keys;
  jn.exprs = lk;
  jn.exprs2 = rk;
  if (q->with_condition) {
    ql_expr_id x = ql_ir_column(bld, a->cols[q->aval].name, a->name, q->aval);
    ql_expr_id y = ql_ir_column(bld, b->cols[q->bval].name, b->name, na + q->bval);
    jn.condition = ql_ir_binary(bld, QL_OP_LT, x, y);
  }
  ql_node_id top = ql_ir_node(bld, &jn);
  ids->join = top;
  if (q->other_between || q->filter_between) {
    struct ql_plan_node o = ft_node(q->other_between ? QL_NODE_OTHER : QL_NODE_FILTER);
    o.n_inputs = 1;
    o.inputs = &top;
    o.schema = &js;
    o.field_qualifiers = jq;
    o.name = "SomeExtension";
    ql_expr_id pred = -1;
    if (q->filter_between) {
      pred = ql_ir_unary(bld, QL_EXPR_IS_NOT_NULL, ql_ir_column(bld, a->cols[q->aval].name, a->name, q->aval));
      o.n_exprs = 1;
      o.exprs = &pred;
    }
    top = ql_ir_node(bld, &o);
  }
  /* Operands as the aggregate sees them: over the join's output, or over a projection. */
  const char *vt = q->is_float ? "g" : "l";
  char dec_sum[32];
  if (q->decimal) {
    int p1, s1, p2, s2;
    sscanf(a->cols[q->aval].format, "d:%d,%d", &p1, &s1);
    sscanf(b->cols[q->bval].format, "d:%d,%d", &p2, &s2);
    snprintf(dec_sum, sizeof(dec_sum), "d:38,%d", s1 + s2);
    vt = dec_sum;
  }
  /* Narrow products and decimals: the factors stay in their own types. */
  int keep = q->narrow_product || q->decimal;
  const char *ft = keep ? a->cols[q->aval].format : vt;
  int bv_side = q->value_same_side ? 0 : 1;
  const struct ft_table *tb = bv_side ? b : a;
  int bv_col = q->value_same_side ? q->akey[0] : q->bval;
  int32_t xi = q->aval, yi = (bv_side ? na : 0) + bv_col;
  const struct ft_col *xc = &a->cols[q->aval], *yc = &tb->cols[bv_col];
  const char *fy = keep ? yc->format : vt;
  int32_t gidx[3];
  const struct ft_col *gc[3];
  for (int i = 0; i < q->n_groups; i++) {
    gc[i] = &(q->gside[i] ? b : a)->cols[q->gcol[i]];
    gidx[i] = (q->gside[i] ? na : 0) + q->gcol[i];
  }
  ql_expr_id group_exprs[3], sum_arg;
  struct ArrowSchema ps;
  const char *pq[8];
  ql_expr_id pe[8];
  int np = 0;
  char pnames[8][16];
  if (q->projection) {
    /* Projection: group columns (aliased g0..), then x and y or their product. */
    for (int i = 0; i < q->n_groups; i++) {
      snprintf(pnames[np], 16, "g%d", i);
      pe[np] = ql_ir_alias(bld, ql_ir_column(bld, gc[i]->name, q->gside[i] ? b->name : a->name, gidx[i]), pnames[np]);
      pq[np] = NULL;
      np++;
    }
    ql_expr_id x = ft_column_as(bld, xc->name, a->name, xi, xc->format, ft);
    ql_expr_id y = ft_column_as(bld, yc->name, tb->name, yi, yc->format, fy);
    if (q->projection == 2) {
      ql_expr_id prod = q->swap_product ? ql_ir_binary(bld, q->op ? q->op : QL_OP_MULTIPLY, y, x)
                                        : ql_ir_binary(bld, q->op ? q->op : QL_OP_MULTIPLY, x, y);
      snprintf(pnames[np], 16, "__common_expr_1");
      if (q->narrow_product) prod = ql_ir_cast(bld, prod, vt, 0);
      pe[np] = ql_ir_alias(bld, prod, pnames[np]);
      pq[np++] = NULL;
    } else {
      snprintf(pnames[np], 16, "x");
      pe[np] = ql_ir_alias(bld, x, pnames[np]);
      pq[np++] = NULL;
      snprintf(pnames[np], 16, "y");
      pe[np] = ql_ir_alias(bld, y, pnames[np]);
      pq[np++] = NULL;
    }
    if (ql_schema_init_struct(&ps, NULL, np, NULL) != QL_OK) abort();
    for (int i = 0; i < q->n_groups; i++) ft_set_field(&ps, i, gc[i]->format, pnames[i]);
    if (q->projection == 1) {
      ft_set_field(&ps, q->n_groups, ft, pnames[q->n_groups]);
      ft_set_field(&ps, q->n_groups + 1, fy, pnames[q->n_groups + 1]);
    } else {
      ft_set_field(&ps, q->n_groups, vt, pnames[q->n_groups]);
    }
    struct ql_plan_node pn = ft_node(QL_NODE_PROJECTION);
    pn.n_inputs = 1;
    pn.inputs = &top;
    pn.schema = &ps;
    pn.field_qualifiers = pq;
    pn.n_exprs = np;
    pn.exprs = pe;
    top = ql_ir_node(bld, &pn);
    ql_schema_release(&ps);
    for (int i = 0; i < q->n_groups; i++) group_exprs[i] = ql_ir_column(bld, pnames[i], NULL, i);
    if (q->projection == 2) {
      sum_arg = ql_ir_column(bld, "__common_expr_1", NULL, q->n_groups);
    } else {
      ql_expr_id px = ql_ir_column(bld, "x", NULL, q->n_groups), py = ql_ir_column(bld, "y", NULL, q->n_groups + 1);
      sum_arg = q->swap_product ? ql_ir_binary(bld, q->op ? q->op : QL_OP_MULTIPLY, py, px)
                                : ql_ir_binary(bld, q->op ? q->op : QL_OP_MULTIPLY, px, py);
      if (q->narrow_product) sum_arg = ql_ir_cast(bld, sum_arg, vt, 0);
    }
  } else {
    for (int i = 0; i < q->n_groups; i++)
      group_exprs[i] = ql_ir_column(bld, gc[i]->name, q->gside[i] ? b->name : a->name, gidx[i]);
    ql_expr_id x = ft_column_as(bld, xc->name, a->name, xi, xc->format, ft);
    ql_expr_id y = ft_column_as(bld, yc->name, tb->name, yi, yc->format, fy);
    sum_arg = q->swap_product ? ql_ir_binary(bld, q->op ? q->op : QL_OP_MULTIPLY, y, x)
                              : ql_ir_binary(bld, q->op ? q->op : QL_OP_MULTIPLY, x, y);
    if (q->narrow_product) sum_arg = ql_ir_cast(bld, sum_arg, vt, 0);
  }
  struct ql_function_id fid = {QL_ORIGIN_BUILTIN, QL_FUNCTION_AGGREGATE, "sum", NULL, 0};
  if (q->function.name) fid = q->function;
  ql_expr_id sum = ql_ir_function(bld, QL_EXPR_AGGREGATE_FUNCTION, &fid, &sum_arg, 1, q->agg_flags, -1);
  struct ArrowSchema as;
  if (ql_schema_init_struct(&as, NULL, q->n_groups + 1, NULL) != QL_OK) abort();
  const char *aq[4];
  for (int i = 0; i < q->n_groups; i++) {
    ft_set_field(&as, i, gc[i]->format, gc[i]->name);
    aq[i] = q->gside[i] ? b->name : a->name;
  }
  ft_set_field(&as, q->n_groups, vt, "sum(x * y)");
  aq[q->n_groups] = NULL;
  struct ql_plan_node an = ft_node(QL_NODE_AGGREGATE);
  an.n_inputs = 1;
  an.inputs = &top;
  an.schema = &as;
  an.field_qualifiers = aq;
  an.n_exprs = q->n_groups;
  an.exprs = group_exprs;
  an.n_exprs2 = 1;
  an.exprs2 = &sum;
  top = ql_ir_node(bld, &an);
  ids->aggregate = top;
  if (q->other_root || q->sort_root) {
    struct ql_plan_node o = ft_node(q->other_root ? QL_NODE_OTHER : QL_NODE_SORT);
    o.n_inputs = 1;
    o.inputs = &top;
    o.schema = &as;
    o.field_qualifiers = aq;
    o.name = "SomeExtension";
    ql_expr_id key = -1;
    if (q->sort_root) {
      key = ql_ir_sort(bld, ql_ir_column(bld, "sum(x * y)", NULL, q->n_groups), 0);
      o.n_exprs = 1;
      o.exprs = &key;
    }
    top = ql_ir_node(bld, &o);
  }
  ql_schema_release(&as);
  ql_schema_release(&js);
  int rc = ql_ir_builder_finish(bld, top, out, NULL);
  for (int k = 0; k < 2; k++) ql_schema_release(&schemas[k]);
  ql_ir_builder_free(bld);
  if (rc != QL_OK) return 1;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  if (ql_ir_validate(out, &err) != QL_OK) {
    fprintf(stderr, "generated view does not validate: %s\n", ql_error_message(&err));
    ql_error_release(&err);
    out->release(out);
    return 1;
  }
  return 0;
}

/* --------------------------------------------------------- planner context */

static int ft_plan_physical(const struct ql_planner_context *self, ql_node_id node, struct ql_execution_plan *out,
                            struct ql_error *error) {
  struct ft_planner_env *env = self->private_data;
  env->calls++;
  for (int k = 0; k < 2; k++)
    if (env->nodes[k] == node) return ft_plan_new(env->tables[k], out);
  return ql_error_set(error, QL_ENOTSUP, "test host cannot plan node %d", node);
}

void ft_planner_env_init(struct ft_planner_env *env, const struct ql_plan_view *view, const struct ft_view_ids *ids,
                         const struct ft_table *a, const struct ft_table *b) {
  memset(env, 0, sizeof(*env));
  env->ctx.struct_size = sizeof(env->ctx);
  env->ctx.plan = view;
  env->ctx.plan_physical = ft_plan_physical;
  env->ctx.private_data = env;
  env->tables[0] = a;
  env->tables[1] = b;
  env->nodes[0] = ids->inputs[0];
  env->nodes[1] = ids->inputs[1];
}

/* ------------------------------------------------------------- reference */

static int ft_row_cmp(const void *pa, const void *pb) {
  const struct ft_row *x = pa, *y = pb;
  for (int i = 0; i < 3; i++) {
    if (x->keys[i] != y->keys[i]) return x->keys[i] < y->keys[i] ? -1 : 1;
  }
  if (x->nulls != y->nulls) return x->nulls < y->nulls ? -1 : 1;
  return 0;
}

void ft_sort_rows(struct ft_row *rows, int64_t n) { qsort(rows, (size_t)n, sizeof(*rows), ft_row_cmp); }

int64_t ft_reference(const struct ft_query *q, const struct ft_table *a, const struct ft_table *b, struct ft_row *rows,
                     int64_t cap) {
  int64_t n = 0;
  for (int64_t ra = 0; ra < a->n_rows; ra++) {
    for (int64_t rb = 0; rb < b->n_rows; rb++) {
      int match = 1;
      for (int i = 0; i < q->n_keys && match; i++) {
        const struct ft_col *ka = &a->cols[q->akey[i]], *kb = &b->cols[q->bkey[i]];
        match = ka->valid[ra] && kb->valid[rb] && ka->i[ra] == kb->i[rb];
      }
      if (!match) continue;
      struct ft_row key;
      memset(&key, 0, sizeof(key));
      for (int i = 0; i < q->n_groups; i++) {
        const struct ft_col *g = &(q->gside[i] ? b : a)->cols[q->gcol[i]];
        int64_t r = q->gside[i] ? rb : ra;
        if (g->valid[r]) key.keys[i] = g->i[r];
        else key.nulls |= 1u << i;
      }
      int64_t at = -1;
      for (int64_t k = 0; k < n && at < 0; k++)
        if (ft_row_cmp(&rows[k], &key) == 0) at = k;
      if (at < 0) {
        if (n == cap) return -1;
        at = n++;
        rows[at] = key;
      }
      const struct ft_col *x = &a->cols[q->aval], *y = &b->cols[q->bval];
      if (!x->valid[ra] || !y->valid[rb]) continue;
      rows[at].has = 1;
      if (q->is_float) {
        double xv = x->format[0] == 'g' || x->format[0] == 'f' ? x->f[ra] : (double)x->i[ra];
        double yv = y->format[0] == 'g' || y->format[0] == 'f' ? y->f[rb] : (double)y->i[rb];
        if (x->format[0] == 'f') xv = (double)(float)xv;
        if (y->format[0] == 'f') yv = (double)(float)yv;
        double p = xv * yv;
        if (q->narrow_product) p = (double)((float)xv * (float)yv); /* float32 product */
        rows[at].f += p;
        rows[at].abs_sum += fabs(p);
      } else if (q->decimal) {
        unsigned __int128 acc = ((unsigned __int128)(uint64_t)rows[at].hi << 64) | (uint64_t)rows[at].i;
        acc += (unsigned __int128)(__int128)x->i[ra] * (unsigned __int128)(__int128)y->i[rb];
        rows[at].i = (int64_t)(uint64_t)acc;
        rows[at].hi = (int64_t)(uint64_t)(acc >> 64);
      } else {
        uint64_t p = (uint64_t)x->i[ra] * (uint64_t)y->i[rb];
        if (q->narrow_product && x->format[0] == 'i') p = (uint64_t)(int64_t)(int32_t)(uint32_t)p; /* wraps at 32 bits */
        if (q->narrow_product && x->format[0] == 's') p = (uint64_t)(int64_t)(int16_t)(uint16_t)p;
        rows[at].i = (int64_t)((uint64_t)rows[at].i + p);
      }
    }
  }
  if (q->n_groups == 0 && n == 0) {
    memset(&rows[0], 0, sizeof(rows[0]));
    n = 1;
  }
  return n;
}

static int64_t ft_read_int(const struct ArrowArray *c, const char *format, int64_t i) {
  const void *d = c->buffers[1];
  switch (format[0]) {
    case 'i': return ((const int32_t *)d)[c->offset + i];
    case 's': return ((const int16_t *)d)[c->offset + i];
    default: return ((const int64_t *)d)[c->offset + i];
  }
}

int64_t ft_collect(const struct ql_execution_plan *plan, struct ft_host *h, int n_groups, int is_float,
                   struct ft_row *rows, int64_t cap, char *msg, size_t msg_cap) {
  struct ArrowArrayStream s;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  msg[0] = 0;
  int rc = plan->execute(plan, 0, &h->ctx, &s, &err);
  if (rc != QL_OK) {
    snprintf(msg, msg_cap, "%s", ql_error_message(&err));
    ql_error_release(&err);
    return -rc;
  }
  struct ArrowSchema schema;
  if (s.get_schema(&s, &schema) != 0) abort();
  int64_t n = 0;
  for (;;) {
    struct ArrowArray b;
    int e = s.get_next(&s, &b);
    if (e != 0) {
      snprintf(msg, msg_cap, "%s", s.get_last_error(&s) ? s.get_last_error(&s) : "?");
      s.release(&s);
      ql_schema_release(&schema);
      return -ql_status_from_errno(e);
    }
    if (!b.release) break;
    if (b.n_children != n_groups + 1) abort();
    for (int64_t r = 0; r < b.length && n < cap; r++, n++) {
      struct ft_row *row = &rows[n];
      memset(row, 0, sizeof(*row));
      for (int i = 0; i < n_groups; i++) {
        const struct ArrowArray *c = b.children[i];
        if (ql_array_is_valid(c, r)) row->keys[i] = ft_read_int(c, schema.children[i]->format, r);
        else row->nulls |= 1u << i;
      }
      const struct ArrowArray *c = b.children[n_groups];
      row->has = ql_array_is_valid(c, r);
      if (row->has) {
        if (is_float == 2) {
          memcpy(&row->i, (const uint8_t *)c->buffers[1] + (c->offset + r) * 16, 8);
          memcpy(&row->hi, (const uint8_t *)c->buffers[1] + (c->offset + r) * 16 + 8, 8);
        } else if (is_float) {
          row->f = ((const double *)c->buffers[1])[c->offset + r];
        } else {
          row->i = ((const int64_t *)c->buffers[1])[c->offset + r];
        }
      }
    }
    b.release(&b);
  }
  s.release(&s);
  ql_schema_release(&schema);
  return n;
}
