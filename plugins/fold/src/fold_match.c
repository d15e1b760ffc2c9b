/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: recognising a contraction in a plan view (see fold_spec.h). */
#include "fold_spec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"

/* Casts followed around one operand or the product (more: declined). */
#define FD_MAX_CASTS 16

static int fd_decline(struct fd_spec *s, const char *fmt, ...) QL_PRINTF_FORMAT(2, 3);
static int fd_decline(struct fd_spec *s, const char *fmt, ...) {
  if (!s->want_why) return 0; /* nobody reads the reason: format nothing */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->why, sizeof(s->why), fmt, ap);
  va_end(ap);
  return 0;
}

/* Complete node `id` of a lazy view (qlink/plan.h) before its schema or
 * expressions are read. Expanding may move `v->exprs` (node records stay):
 * matching holds no expression pointer across an expansion, only ids.
 * A host that cannot expand means a decline: the query runs as planned. */
static int fd_expand(const struct ql_plan_view *v, ql_node_id id, struct fd_spec *s) {
  struct ql_error err = {0};
  if (ql_plan_expand(v, id, &err) == QL_OK) return 1;
  fd_decline(s, "plan view: %s", ql_error_message(&err));
  ql_error_release(&err);
  return 0;
}

int32_t fd_format_storage(const char *f) {
  if (!f) return 0;
  if (!f[0]) return 0;
  if (!f[1]) {
    switch (f[0]) {
      case 'c': return FD_S8;
      case 's': return FD_S16;
      case 'i': return FD_S32;
      case 'l': return FD_S64;
      case 'C': return FD_U8;
      case 'S': return FD_U16;
      case 'I': return FD_U32;
      case 'L': return FD_U64;
      case 'f': return FD_F32;
      case 'g': return FD_F64;
      default: return 0;
    }
  }
  /* Decimal128 ("d:p,s" or "d:p,s,128"); other widths are not read. */
  if (f[0] == 'd' && f[1] == ':') {
    int p, sc, bits = 128, used = 0;
    if (sscanf(f, "d:%d,%d%n", &p, &sc, &used) == 2 && (f[used] == 0 || (sscanf(f + used, ",%d", &bits) == 1 && bits == 128)))
      return FD_D128;
    return 0;
  }
  /* Temporal types: dates, times, timestamps, durations (Arrow C formats). */
  if (!strcmp(f, "tdD") || !strcmp(f, "tts") || !strcmp(f, "ttm")) return FD_S32;
  if (!strcmp(f, "tdm") || !strcmp(f, "ttu") || !strcmp(f, "ttn")) return FD_S64;
  if (f[0] == 't' && (f[1] == 's' || f[1] == 'D') && strchr("smun", f[2]) && f[2]) return FD_S64;
  return 0;
}

static int fd_is_plain_int(const char *f) { return f && f[0] && !f[1] && strchr("csilCSIL", f[0]); }

/* Range width in bits and signedness of a plain integer format. */
static void fd_int_range(const char *f, int *bits, int *is_signed) {
  const char *order = "csilCSIL";
  int i = (int)(strchr(order, f[0]) - order);
  *bits = 8 << (i % 4);
  *is_signed = i < 4;
}

/* A cast the fold may apply: it changes no value (widening integers) or is
 * the deterministic conversion to float64 that DataFusion applies too. */
static int fd_cast_ok(const char *from, const char *to) {
  if (!strcmp(from, to)) return 1;
  if (fd_is_plain_int(from) && fd_is_plain_int(to)) {
    int fb, fs, tb, ts;
    fd_int_range(from, &fb, &fs);
    fd_int_range(to, &tb, &ts);
    if (fs == ts) return tb >= fb;
    return !fs && ts && tb > fb;
  }
  if (!strcmp(to, "g")) return fd_is_plain_int(from) || !strcmp(from, "f");
  return 0;
}

static int fd_is_key_format(const char *f) {
  int32_t s = fd_format_storage(f);
  return s != 0 && s != FD_F32 && s != FD_F64 && s != FD_D128;
}

static int fd_decimal_scale(const char *f) {
  int p = 0, sc = -1;
  return sscanf(f, "d:%d,%d", &p, &sc) == 2 ? sc : -1;
}

/* The struct-schema child `i` of node `id`, or NULL. */
static const struct ArrowSchema *fd_field(const struct ql_plan_view *v, ql_node_id id, int64_t i) {
  const struct ArrowSchema *s = v->nodes[id].schema;
  if (!s || i < 0 || i >= s->n_children || !s->children[i]) return NULL;
  return s->children[i];
}

static int64_t fd_width(const struct ql_plan_view *v, ql_node_id id) {
  const struct ArrowSchema *s = v->nodes[id].schema;
  return s ? s->n_children : 0;
}

/* Index of a column expression in the concatenation of `node`'s inputs. */
static int32_t fd_column_index(const struct ql_plan_view *v, ql_node_id node, const struct ql_expr *e) {
  const struct ql_plan_node *n = &v->nodes[node];
  int64_t total = 0;
  for (int32_t k = 0; k < n->n_inputs; k++) total += fd_width(v, n->inputs[k]);
  if (e->column_index >= 0) return e->column_index < total ? e->column_index : -1;
  if (!e->name) return -1;
  /* No index from the producer: find the field by name and qualifier. */
  int32_t found = -1;
  int64_t base = 0;
  for (int32_t k = 0; k < n->n_inputs; k++) {
    const struct ql_plan_node *in = &v->nodes[n->inputs[k]];
    int64_t w = fd_width(v, n->inputs[k]);
    for (int64_t i = 0; i < w; i++) {
      const struct ArrowSchema *f = in->schema->children[i];
      if (!f->name || strcmp(f->name, e->name)) continue;
      const char *q = in->field_qualifiers ? in->field_qualifiers[i] : NULL;
      if (e->qualifier && (!q || strcmp(q, e->qualifier))) continue;
      if (found >= 0) return -1; /* ambiguous */
      found = (int32_t)(base + i);
    }
    base += w;
  }
  return found;
}

/* Where an expression leads once aliases and column references are followed
 * down to the join: either `column` >= 0, a column of the join's output (the
 * concatenation of its inputs), or `expr`, another kind of expression over
 * the input of `node`. */
struct fd_ref {
  ql_node_id node;
  ql_expr_id expr;
  int32_t column;
};

static int fd_chase(const struct ql_plan_view *v, ql_node_id join, ql_node_id node, ql_expr_id e,
                         struct fd_ref *out, struct fd_spec *s) {
  for (int guard = 0; guard < 10000; guard++) {
    if (e < 0 || e >= v->n_exprs) return fd_decline(s, "expression id %d out of range", e);
    const struct ql_expr *ex = &v->exprs[e];
    if (ex->kind == QL_EXPR_ALIAS && ex->n_args == 1) {
      e = ex->args[0];
      continue;
    }
    if (ex->kind != QL_EXPR_COLUMN) {
      out->node = node;
      out->expr = e;
      out->column = -1;
      return 1;
    }
    int32_t idx = fd_column_index(v, node, ex);
    if (idx < 0) return fd_decline(s, "column %s cannot be resolved", ex->name ? ex->name : "?");
    if (node == join) {
      out->node = join;
      out->expr = e;
      out->column = idx;
      return 1;
    }
    ql_node_id in = v->nodes[node].inputs[0];
    while (in >= 0 && in < v->n_nodes && v->nodes[in].kind == QL_NODE_SUBQUERY_ALIAS && v->nodes[in].n_inputs == 1)
      in = v->nodes[in].inputs[0];
    if (in < 0 || in >= v->n_nodes) return fd_decline(s, "node id %d out of range", in);
    if (in == join) {
      out->node = join;
      out->expr = e;
      out->column = idx;
      return 1;
    }
    if (v->nodes[in].kind != QL_NODE_PROJECTION || idx >= v->nodes[in].n_exprs)
      return fd_decline(s, "column %s does not come from a projection or the join", ex->name ? ex->name : "?");
    node = in;
    e = v->nodes[in].exprs[idx];
  }
  return fd_decline(s, "expression chain too deep");
}

static void fd_operand_name(const struct ql_plan_view *v, ql_node_id input, int32_t col, char *buf, size_t cap) {
  const struct ql_plan_node *n = &v->nodes[input];
  const char *q = n->field_qualifiers ? n->field_qualifiers[col] : NULL;
  const char *name = n->schema->children[col]->name;
  snprintf(buf, cap, "%s%s%s", q ? q : "", q ? "." : "", name ? name : "?");
}

/* Follow an expression over `node`'s input through aliases, projections and
 * casts to a column of the join's output: its index there in *column, the
 * casts' target formats (outermost first) in casts[0..*n_casts). Reads the
 * view from `node` down to the join, not the join's inputs, so a shape that
 * does not fold is declined before they are expanded. */
static int fd_operand_ref(const struct ql_plan_view *v, ql_node_id join, ql_node_id node, ql_expr_id e,
                               int32_t *column, const char **casts, int *n_casts, struct fd_spec *s) {
  struct fd_ref r;
  *n_casts = 0;
  for (;;) {
    if (!fd_chase(v, join, node, e, &r, s)) return 0;
    if (r.column >= 0) break;
    const struct ql_expr *ex = &v->exprs[r.expr];
    if ((ex->kind == QL_EXPR_CAST || ex->kind == QL_EXPR_TRY_CAST) && ex->n_args == 1 && ex->type_format) {
      if (*n_casts == FD_MAX_CASTS) return fd_decline(s, "too many casts");
      casts[(*n_casts)++] = ex->type_format;
      node = r.node;
      e = ex->args[0];
      continue;
    }
    return fd_decline(s, "operand is a %d expression, not a column", ex->kind);
  }
  *column = r.column;
  return 1;
}

/* Resolve an expression over `node`'s input to a join-input column read
 * through exact casts (the join's inputs expanded). */
static int fd_operand(const struct ql_plan_view *v, const struct fd_spec *spec_in, ql_node_id node,
                           ql_expr_id e, struct fd_operand *out, struct fd_spec *s) {
  const char *casts[FD_MAX_CASTS];
  int n_casts = 0;
  int32_t column;
  if (!fd_operand_ref(v, spec_in->join, node, e, &column, casts, &n_casts, s)) return 0;
  int64_t n_left = fd_width(v, spec_in->inputs[0]);
  out->side = column < n_left ? 0 : 1;
  out->column = (int32_t)(out->side ? column - n_left : column);
  const struct ArrowSchema *f = fd_field(v, spec_in->inputs[out->side], out->column);
  if (!f || !f->format) return fd_decline(s, "join input column %d has no type", out->column);
  out->storage = fd_format_storage(f->format);
  if (!out->storage) return fd_decline(s, "column type '%s' is not supported", f->format);
  const char *fmt = f->format;
  for (int i = n_casts - 1; i >= 0; i--) {
    if (!fd_cast_ok(fmt, casts[i])) return fd_decline(s, "cast from '%s' to '%s' may change values", fmt, casts[i]);
    fmt = casts[i];
  }
  if (strlen(fmt) >= FD_FORMAT_MAX) return fd_decline(s, "type '%s' not supported", fmt);
  strcpy(out->format, fmt);
  out->as_f64 = 0;
  fd_operand_name(v, spec_in->inputs[out->side], out->column, out->name, sizeof(out->name));
  return 1;
}

/* The inner join the aggregate's input reaches through projections and
 * aliases, or -1 (s->why says why). Reads the skeleton alone, so an
 * aggregate that is not over a join is declined before anything is
 * expanded. */
static ql_node_id fd_join_below(const struct ql_plan_view *v, ql_node_id agg, struct fd_spec *s) {
  ql_node_id id = v->nodes[agg].inputs[0];
  for (int32_t steps = 0; steps < v->n_nodes; steps++) {
    if (id < 0 || id >= v->n_nodes) return fd_decline(s, "node id %d out of range", id), -1;
    const struct ql_plan_node *n = &v->nodes[id];
    if (n->kind == QL_NODE_JOIN) {
      if (n->join_type != QL_JOIN_INNER) return fd_decline(s, "not an inner join"), -1;
      return id;
    }
    if ((n->kind != QL_NODE_PROJECTION && n->kind != QL_NODE_SUBQUERY_ALIAS) || n->n_inputs != 1)
      return fd_decline(s, "aggregate input is a %d node, not a join", n->kind), -1;
    id = n->inputs[0];
  }
  return fd_decline(s, "aggregate input chain does not end"), -1;
}

/* The join found by fd_join_below, expanded, checked and recorded in
 * s. The join's own members decide several declines (an extra condition,
 * NULL-equal keys), so it is read before the nodes above it. */
static int fd_take_join(const struct ql_plan_view *v, ql_node_id join, struct fd_spec *s) {
  const struct ql_plan_node *j = &v->nodes[join];
  if (j->n_inputs != 2) return fd_decline(s, "join without two inputs");
  for (int k = 0; k < 2; k++)
    if (j->inputs[k] < 0 || j->inputs[k] >= v->n_nodes) return fd_decline(s, "join input out of range");
  if (!fd_expand(v, join, s)) return 0;
  if (j->condition >= 0) return fd_decline(s, "join has a non-equi condition");
  if (j->flags & QL_NODE_NULL_EQUALS_NULL) return fd_decline(s, "join treats NULL keys as equal");
  if (j->n_exprs < 1 || j->n_exprs != j->n_exprs2) return fd_decline(s, "join has no equi-keys");
  if (j->n_exprs > FD_MAX_KEYS) return fd_decline(s, "join has more than %d keys", FD_MAX_KEYS);
  s->join = join;
  s->inputs[0] = j->inputs[0];
  s->inputs[1] = j->inputs[1];
  return 1;
}

/* Expand the Projection and SubqueryAlias nodes between the aggregate and
 * the join: expressions are followed through them. */
static int fd_expand_chain(const struct ql_plan_view *v, ql_node_id agg, ql_node_id join, struct fd_spec *s) {
  for (ql_node_id id = v->nodes[agg].inputs[0]; id != join; id = v->nodes[id].inputs[0])
    if (!fd_expand(v, id, s)) return 0;
  return 1;
}

/* Expand the join's two inputs: their schemas give each column's side and
 * type. The costliest expansions (a join input is often a wide join or a
 * filtered scan), so they come after every check that does without. */
static int fd_expand_inputs(const struct ql_plan_view *v, struct fd_spec *s) {
  for (int k = 0; k < 2; k++) {
    if (!fd_expand(v, s->inputs[k], s)) return 0;
    if (!v->nodes[s->inputs[k]].schema) return fd_decline(s, "join input without a schema");
  }
  return 1;
}

static int fd_match_keys(const struct ql_plan_view *v, struct fd_spec *s) {
  const struct ql_plan_node *j = &v->nodes[s->join];
  s->n_keys = j->n_exprs;
  for (int32_t i = 0; i < j->n_exprs; i++) {
    struct fd_operand a, b;
    if (!fd_operand(v, s, s->join, j->exprs[i], &a, s)) return 0;
    if (!fd_operand(v, s, s->join, j->exprs2[i], &b, s)) return 0;
    if (a.side == b.side) return fd_decline(s, "join key pair %d compares columns of one input", i);
    if (!fd_is_key_format(a.format) || strcmp(a.format, b.format))
      return fd_decline(s, "join keys of types '%s' and '%s' not supported", a.format, b.format);
    s->keys[a.side][i] = a;
    s->keys[b.side][i] = b;
  }
  return 1;
}

static int fd_match_groups(const struct ql_plan_view *v, ql_node_id agg, struct fd_spec *s) {
  const struct ql_plan_node *n = &v->nodes[agg];
  if (n->n_exprs > FD_MAX_GROUPS) return fd_decline(s, "more than %d group keys", FD_MAX_GROUPS);
  s->n_groups = n->n_exprs;
  for (int32_t i = 0; i < n->n_exprs; i++) {
    struct fd_operand *g = &s->groups[i];
    if (!fd_operand(v, s, agg, n->exprs[i], g, s)) return 0;
    const struct ArrowSchema *f = fd_field(v, agg, i);
    if (!fd_is_key_format(g->format) || !f || !f->format || strcmp(f->format, g->format))
      return fd_decline(s, "group key %d of type '%s' not supported", i, g->format);
  }
  return 1;
}

/* The aggregate expression: built-in sum of x * y. */
/* The aggregate node's one aggregate expression if it is a plain call of
 * the built-in sum with one argument, else NULL with s->why set. Cheap: it
 * runs before anything else, so most declines (AVG, MAX, ...) stop here. */
static const struct ql_expr *fd_builtin_sum(const struct ql_plan_view *v, const struct ql_plan_node *n,
                                                 struct fd_spec *s) {
  if (n->n_exprs2 != 1) return fd_decline(s, "%d aggregate expressions, not one", n->n_exprs2), NULL;
  ql_expr_id e = n->exprs2[0];
  while (e >= 0 && e < v->n_exprs && v->exprs[e].kind == QL_EXPR_ALIAS) e = v->exprs[e].args[0];
  if (e < 0 || e >= v->n_exprs) return fd_decline(s, "bad aggregate expression"), NULL;
  const struct ql_expr *sum = &v->exprs[e];
  if (sum->kind != QL_EXPR_AGGREGATE_FUNCTION)
    return fd_decline(s, "aggregate expression is not a function call"), NULL;
  if (sum->function.origin != QL_ORIGIN_BUILTIN || !sum->function.name || strcmp(sum->function.name, "sum"))
    return fd_decline(s, "aggregate is not the built-in sum"), NULL;
  if (sum->flags & QL_EXPR_DISTINCT) return fd_decline(s, "sum(DISTINCT ...)"), NULL;
  if (sum->filter >= 0) return fd_decline(s, "sum(...) FILTER (WHERE ...)"), NULL;
  if (sum->n_args != 1) return fd_decline(s, "sum with %d arguments", sum->n_args), NULL;
  return sum;
}

/* The product under the built-in sum: the multiply expression (over the
 * input of *node) reached from the sum's argument `e` through aliases,
 * projections and casts, whose targets (outermost first) go to casts. */
static const struct ql_expr *fd_product(const struct ql_plan_view *v, ql_node_id agg, ql_expr_id e,
                                             ql_node_id *node, const char **casts, int *n_casts,
                                             struct fd_spec *s) {
  struct fd_ref r;
  *node = agg;
  *n_casts = 0;
  for (;;) {
    if (!fd_chase(v, s->join, *node, e, &r, s)) return NULL;
    if (r.column >= 0) return fd_decline(s, "sum of a column, not of a product"), NULL;
    const struct ql_expr *ex = &v->exprs[r.expr];
    if ((ex->kind == QL_EXPR_CAST || ex->kind == QL_EXPR_TRY_CAST) && ex->n_args == 1 && ex->type_format &&
        *n_casts < FD_MAX_CASTS) {
      casts[(*n_casts)++] = ex->type_format;
      *node = r.node;
      e = ex->args[0];
      continue;
    }
    if (ex->kind != QL_EXPR_BINARY || ex->op != QL_OP_MULTIPLY || ex->n_args != 2)
      return fd_decline(s, "sum argument is not a product"), NULL;
    *node = r.node;
    return ex;
  }
}

/* The shapes of the sum and the group keys: a product of two operands and
 * group keys, each a join column through casts. Read before the join's
 * inputs are expanded (their types and sides are checked after). */
static int fd_match_shape(const struct ql_plan_view *v, ql_node_id agg, ql_expr_id sum_arg,
                               struct fd_spec *s) {
  const char *casts[FD_MAX_CASTS];
  int n_casts;
  ql_node_id node;
  int32_t column;
  const struct ql_expr *mul = fd_product(v, agg, sum_arg, &node, casts, &n_casts, s);
  if (!mul) return 0;
  for (int k = 0; k < 2; k++)
    if (!fd_operand_ref(v, s->join, node, mul->args[k], &column, casts, &n_casts, s)) return 0;
  const struct ql_plan_node *n = &v->nodes[agg];
  if (n->n_exprs > FD_MAX_GROUPS) return fd_decline(s, "more than %d group keys", FD_MAX_GROUPS);
  for (int32_t i = 0; i < n->n_exprs; i++)
    if (!fd_operand_ref(v, s->join, agg, n->exprs[i], &column, casts, &n_casts, s)) return 0;
  return 1;
}

static int fd_match_sum(const struct ql_plan_view *v, ql_node_id agg, ql_expr_id sum_arg,
                             struct fd_spec *s) {
  const struct ql_plan_node *n = &v->nodes[agg];
  /* Casts around the product must keep its type; checked once it is known. */
  const char *casts[FD_MAX_CASTS];
  int n_casts;
  ql_node_id node;
  const struct ql_expr *mul = fd_product(v, agg, sum_arg, &node, casts, &n_casts, s);
  if (!mul) return 0;
  struct fd_operand x, y;
  if (!fd_operand(v, s, node, mul->args[0], &x, s)) return 0;
  if (!fd_operand(v, s, node, mul->args[1], &y, s)) return 0;
  if (x.side == y.side) return fd_decline(s, "both factors come from one join input");
  if (fd_format_storage(x.format) == FD_D128 && fd_format_storage(y.format) == FD_D128) {
    /* Decimal product: scale s1 + s2, unscaled values multiplied at 128 bits. */
    const struct ArrowSchema *f = fd_field(v, agg, n->n_exprs);
    int scale = fd_decimal_scale(x.format) + fd_decimal_scale(y.format);
    if (n_casts > 0) return fd_decline(s, "cast of a decimal product");
    if (!f || !f->format || fd_format_storage(f->format) != FD_D128 || fd_decimal_scale(f->format) != scale)
      return fd_decline(s, "decimal sum type '%s' is not of scale %d", f && f->format ? f->format : "?", scale);
    s->value_type = FD_DECIMAL128;
    s->product = FD_D128;
    s->values[x.side] = x;
    s->values[y.side] = y;
    return 1;
  }
  /* The product has the factors' common type P: int64 and float64 as is;
   * int8/16/32 multiply with wrapping at their width and float32 rounds to
   * float32 (DataFusion's kernels) before the cast to the sum's type. */
  int32_t product = fd_format_storage(x.format);
  int narrow = product == FD_S8 || product == FD_S16 || product == FD_S32 || product == FD_F32;
  if (strcmp(x.format, y.format) || !(narrow || product == FD_S64 || product == FD_F64) ||
      !fd_is_plain_int(x.format) != (product == FD_F32 || product == FD_F64))
    return fd_decline(s, "product of '%s' and '%s' not supported (int8..int64, float32, float64, decimal128)",
                           x.format, y.format);
  const char *fmt = x.format;
  for (int i = n_casts - 1; i >= 0; i--) {
    if (!fd_cast_ok(fmt, casts[i])) return fd_decline(s, "cast of the product to '%s'", casts[i]);
    fmt = casts[i];
  }
  if (strcmp(fmt, "l") && strcmp(fmt, "g")) return fd_decline(s, "sum of type '%s' not supported", fmt);
  if ((fmt[0] == 'g') != (product == FD_F32 || product == FD_F64))
    return fd_decline(s, "product of '%s' summed as '%s'", x.format, fmt);
  const struct ArrowSchema *f = fd_field(v, agg, n->n_exprs);
  if (!f || !f->format || strcmp(f->format, fmt))
    return fd_decline(s, "sum result type '%s' differs from the product's", f && f->format ? f->format : "?");
  s->value_type = fmt[0] == 'l' ? FD_INT64 : FD_FLOAT64;
  s->product = product;
  x.as_f64 = y.as_f64 = s->value_type == FD_FLOAT64;
  s->values[x.side] = x;
  s->values[y.side] = y;
  return 1;
}

int fd_match(const struct ql_plan_view *v, ql_node_id agg, struct fd_spec *s) {
  /* Cheap checks first, writing only s->why: declining costs little. */
  const struct ql_plan_node *n = &v->nodes[agg];
  if (n->kind != QL_NODE_AGGREGATE) return fd_decline(s, "not an aggregate");
  if (n->n_inputs != 1) return fd_decline(s, "aggregate without one input");
  ql_node_id join = fd_join_below(v, agg, s);
  if (join < 0) return 0;
  if (!fd_expand(v, agg, s)) return 0;
  if (!n->schema) return fd_decline(s, "aggregate without a schema");
  if (n->schema->n_children != (int64_t)n->n_exprs + n->n_exprs2)
    return fd_decline(s, "aggregate schema width differs from its expressions");
  const struct ql_expr *sum = fd_builtin_sum(v, n, s);
  if (!sum) return 0;
  ql_expr_id sum_arg = sum->args[0]; /* an id: expanding may move v->exprs */
  int32_t want_why = s->want_why;
  memset(s, 0, sizeof(*s));
  s->want_why = want_why;
  s->aggregate = agg;
  s->join = -1;
  /* Expansions in order of what they decide per cost: the join, then the
   * nodes above it and the shapes of the sum and the group keys, and only
   * then the join's inputs (types and sides). */
  if (!fd_take_join(v, join, s)) return 0;
  if (!fd_expand_chain(v, agg, join, s)) return 0;
  if (!fd_match_shape(v, agg, sum_arg, s)) return 0;
  if (!fd_expand_inputs(v, s)) return 0;
  if (!fd_match_sum(v, agg, sum_arg, s)) return 0;
  if (!fd_match_keys(v, s)) return 0;
  if (!fd_match_groups(v, agg, s)) return 0;
  return 1;
}

ql_node_id fd_find(const struct ql_plan_view *v, struct fd_spec *out, int want_why) {
  ql_node_id stack[256];
  int top = 0;
  char first_why[sizeof(out->why)];
  int seen_aggregate = 0;
  out->why[0] = 0;
  out->want_why = want_why != 0;
  if (v->root < 0 || v->root >= v->n_nodes) {
    fd_decline(out, "plan has no root");
    return -1;
  }
  stack[top++] = v->root;
  while (top > 0) {
    ql_node_id id = stack[--top];
    const struct ql_plan_node *n = &v->nodes[id];
    if (n->kind == QL_NODE_OTHER) continue; /* opaque: leave it and what is below alone */
    if (n->kind == QL_NODE_AGGREGATE) {
      if (fd_match(v, id, out)) return id;
      if (!seen_aggregate && want_why) memcpy(first_why, out->why, sizeof(first_why));
      seen_aggregate = 1;
    }
    /* Push inputs in reverse so the left subtree is visited first. */
    for (int32_t k = n->n_inputs - 1; k >= 0; k--) {
      if (top == (int)(sizeof(stack) / sizeof(stack[0]))) break;
      if (n->inputs[k] >= 0 && n->inputs[k] < v->n_nodes) stack[top++] = n->inputs[k];
    }
  }
  if (seen_aggregate && want_why) memcpy(out->why, first_why, sizeof(first_why));
  else fd_decline(out, "no aggregate in the plan");
  return -1;
}
