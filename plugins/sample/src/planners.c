/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: two planners that show the planner hook's two cheapest answers.
 *
 * decline_all        interest 0 (every plan); always QL_PLANNER_DECLINE.
 * drop_true_filters  interest Filter; finds the first `Filter: TRUE` in
 *                    pre-order from the root and answers QL_PLANNER_REWRITE
 *                    of that node into its input, with every other
 *                    `Filter: TRUE` below it dropped as well. A filter whose
 *                    predicate is the boolean literal TRUE keeps every row,
 *                    so dropping it never changes a result. Plans without
 *                    one are declined.
 *
 * The rewrite is built with libqlink's IR builder: the input subtree is
 * copied node by node (table refs are kept by reference, gap G1).
 *
 * Both read the plan view lazily (QL_PLANNER_LAZY_VIEW, qlink/plan.h):
 * decline_all reads nothing; drop_true_filters expands only Filter nodes
 * while it searches, and the whole view once it has decided to rewrite.
 */
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/ir.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
#include "sample_internal.h"

static int is_true_literal(const struct ql_plan_view *v, ql_expr_id id) {
  if (id < 0 || id >= v->n_exprs) return 0;
  const struct ql_expr *e = &v->exprs[id];
  return e->kind == QL_EXPR_LITERAL && e->literal.format && strcmp(e->literal.format, "b") == 0 &&
         !e->literal.is_null && e->literal.value.i64 != 0;
}

static int is_true_filter(const struct ql_plan_view *v, ql_node_id id) {
  const struct ql_plan_node *n = &v->nodes[id];
  if (n->kind != QL_NODE_FILTER || n->n_inputs != 1) return 0;
  struct ql_error err = {0};
  if (ql_plan_expand(v, id, &err) != QL_OK) {
    ql_error_release(&err); /* a filter the host cannot show is left alone */
    return 0;
  }
  return n->n_exprs == 1 && is_true_literal(v, n->exprs[0]);
}

/* The first Filter(TRUE) in pre-order, or -1. Depth is bounded by the view's
 * size because the view is a tree. */
static ql_node_id find_true_filter(const struct ql_plan_view *v, ql_node_id id) {
  if (id < 0 || id >= v->n_nodes) return -1;
  if (is_true_filter(v, id)) return id;
  for (int32_t i = 0; i < v->nodes[id].n_inputs; i++) {
    ql_node_id found = find_true_filter(v, v->nodes[id].inputs[i]);
    if (found >= 0) return found;
  }
  return -1;
}

static ql_expr_id copy_expr(struct ql_ir_builder *b, const struct ql_plan_view *v, ql_expr_id id) {
  if (id < 0) return -1;
  const struct ql_expr *e = &v->exprs[id];
  ql_expr_id small[8];
  ql_expr_id *args = e->n_args <= 8 ? small : malloc((size_t)e->n_args * sizeof *args);
  if (!args) return -1;
  ql_expr_id result = -1;
  int ok = 1;
  for (int32_t i = 0; ok && i < e->n_args; i++) {
    args[i] = copy_expr(b, v, e->args[i]);
    ok = args[i] >= 0;
  }
  ql_expr_id filter = ok ? copy_expr(b, v, e->filter) : -1;
  if (ok && (e->filter < 0 || filter >= 0)) {
    struct ql_expr copy = *e;
    copy.args = args;
    copy.filter = filter;
    result = ql_ir_expr(b, &copy);
  }
  if (args != small) free(args);
  return result;
}

static int copy_expr_list(struct ql_ir_builder *b, const struct ql_plan_view *v, const ql_expr_id *src, int32_t n,
                          ql_expr_id **out) {
  *out = malloc((size_t)(n > 0 ? n : 1) * sizeof **out);
  if (!*out) return 0;
  for (int32_t i = 0; i < n; i++) {
    (*out)[i] = copy_expr(b, v, src[i]);
    if ((*out)[i] < 0) return 0;
  }
  return 1;
}

/* Copy the subtree at `id`, skipping every Filter(TRUE); -1 on failure
 * (the builder then holds the reason). */
static ql_node_id copy_without_true_filters(struct ql_ir_builder *b, const struct ql_plan_view *v, ql_node_id id) {
  while (is_true_filter(v, id)) id = v->nodes[id].inputs[0];
  const struct ql_plan_node *n = &v->nodes[id];
  ql_node_id *inputs = malloc((size_t)(n->n_inputs > 0 ? n->n_inputs : 1) * sizeof *inputs);
  ql_expr_id *exprs = NULL, *exprs2 = NULL;
  ql_node_id result = -1;
  int ok = inputs != NULL;
  for (int32_t i = 0; ok && i < n->n_inputs; i++) {
    inputs[i] = copy_without_true_filters(b, v, n->inputs[i]);
    ok = inputs[i] >= 0;
  }
  ok = ok && copy_expr_list(b, v, n->exprs, n->n_exprs, &exprs);
  ok = ok && copy_expr_list(b, v, n->exprs2, n->n_exprs2, &exprs2);
  ql_expr_id condition = ok ? copy_expr(b, v, n->condition) : -1;
  if (ok && (n->condition < 0 || condition >= 0)) {
    struct ql_plan_node copy = *n;
    copy.inputs = inputs;
    copy.exprs = exprs;
    copy.exprs2 = exprs2;
    copy.condition = condition;
    result = ql_ir_node(b, &copy);
  }
  free(inputs);
  free(exprs);
  free(exprs2);
  return result;
}

static int drop_true_filters_plan(const struct ql_planner *self, const struct ql_planner_context *ctx,
                                  struct ql_planner_result *out, struct ql_error *error) {
  (void)self;
  if (ctx == NULL || ctx->plan == NULL || out == NULL) {
    return ql_error_set(error, QL_EINVAL, "drop_true_filters: needs a context with a plan and a result");
  }
  const struct ql_plan_view *v = ctx->plan;
  out->action = QL_PLANNER_DECLINE;
  ql_node_id target = find_true_filter(v, v->root);
  if (target < 0) return QL_OK;
  if (ql_plan_expand_all(v, error) != QL_OK) return ql_error_prefix(error, "drop_true_filters");
  struct ql_ir_builder *b;
  QL_RETURN_NOT_OK(ql_ir_builder_new(&b, error));
  ql_node_id root = copy_without_true_filters(b, v, v->nodes[target].inputs[0]);
  int rc = ql_ir_builder_status(b, error);
  if (rc == QL_OK && root < 0) rc = ql_error_set(error, QL_ENOMEM, "drop_true_filters: out of memory copying the plan");
  if (rc == QL_OK) rc = ql_ir_builder_finish(b, root, &out->rewrite, error);
  ql_ir_builder_free(b);
  if (rc != QL_OK) return ql_error_prefix(error, "drop_true_filters");
  out->action = QL_PLANNER_REWRITE;
  out->node = target;
  return QL_OK;
}

static int decline_all_plan(const struct ql_planner *self, const struct ql_planner_context *ctx,
                            struct ql_planner_result *out, struct ql_error *error) {
  (void)self;
  (void)ctx;
  if (out == NULL) return ql_error_set(error, QL_EINVAL, "decline_all: result is NULL");
  out->action = QL_PLANNER_DECLINE;
  return QL_OK;
}

static void planner_release(struct ql_planner *self) { self->release = NULL; }

int smp_planner_open(const char *name, const struct ql_options *options, struct ql_planner *out,
                           struct ql_error *error) {
  int (*plan)(const struct ql_planner *, const struct ql_planner_context *, struct ql_planner_result *,
              struct ql_error *) = NULL;
  uint32_t interest = 0;
  if (name && strcmp(name, "decline_all") == 0) {
    plan = decline_all_plan;
  } else if (name && strcmp(name, "drop_true_filters") == 0) {
    plan = drop_true_filters_plan;
    interest = QL_NODE_BIT(QL_NODE_FILTER);
  } else {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_sample has no planner '%s'", name ? name : "(null)");
  }
  QL_RETURN_NOT_OK(ql_options_check(options, NULL, 0, name, error));
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->interest = interest;
  out->flags = QL_PLANNER_LAZY_VIEW;
  out->plan = plan;
  out->release = planner_release;
  return QL_OK;
}
