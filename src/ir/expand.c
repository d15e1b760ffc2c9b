/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink IR: completing the nodes of a lazy plan view (qlink/lib/ir.h,
 * qlink/plan.h ql_plan_view.expand). */
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

int ql_plan_expand(const struct ql_plan_view *view, ql_node_id node, struct ql_error *error) {
  if (view == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_plan_expand: view is NULL");
  }
  if (node < 0 || node >= view->n_nodes) {
    return ql_error_set(error, QL_EINVAL, "ql_plan_expand: no node %d (the view has %d)", (int)node,
                        (int)view->n_nodes);
  }
  if (!(view->nodes[node].flags & QL_NODE_UNEXPANDED)) {
    return QL_OK;
  }
  if (!QL_HAS_MEMBER(view, struct ql_plan_view, expand)) {
    return ql_error_set(error, QL_EINVAL, "ql_plan_expand: view struct_size %u is smaller than the 0.1 view",
                        (unsigned)view->struct_size);
  }
  if (view->expand == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_plan_expand: node %d is unexpanded but the view has no expand",
                        (int)node);
  }
  return view->expand(view, node, error);
}

int ql_plan_expand_all(const struct ql_plan_view *view, struct ql_error *error) {
  if (view == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_plan_expand_all: view is NULL");
  }
  for (ql_node_id i = 0; i < view->n_nodes; i++) {
    QL_RETURN_NOT_OK(ql_plan_expand(view, i, error));
  }
  return QL_OK;
}

/* ---- lazy twins (for testing planners) */

struct ql_ir_twin {
  const struct ql_plan_view *full;
  struct ql_plan_node *nodes; /* the twin's node records */
};

static int twin_expand(const struct ql_plan_view *self, ql_node_id node, struct ql_error *error) {
  struct ql_ir_twin *t = self->private_data;
  if (node < 0 || node >= self->n_nodes) {
    return ql_error_set(error, QL_EINVAL, "expand: no node %d (the view has %d)", (int)node, (int)self->n_nodes);
  }
  t->nodes[node] = t->full->nodes[node];
  /* The twin's struct belongs to whoever received it from ql_ir_lazy_twin
   * (never a const object): expanding makes the expressions visible, as a
   * host appending them would. */
  struct ql_plan_view *v = (struct ql_plan_view *)self;
  v->exprs = t->full->exprs;
  v->n_exprs = t->full->n_exprs;
  return QL_OK;
}

static void twin_release(struct ql_plan_view *view) {
  if (view == NULL || view->release == NULL) {
    return;
  }
  struct ql_ir_twin *t = view->private_data;
  if (t != NULL) {
    free(t->nodes);
    free(t);
  }
  view->private_data = NULL;
  view->nodes = NULL;
  view->exprs = NULL;
  view->release = NULL;
}

int ql_ir_lazy_twin(const struct ql_plan_view *full, struct ql_plan_view *out, struct ql_error *error) {
  if (full == NULL || out == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_ir_lazy_twin: view or out is NULL");
  }
  memset(out, 0, sizeof(*out));
  struct ql_ir_twin *t = calloc(1, sizeof(*t));
  size_t n = full->n_nodes > 0 ? (size_t)full->n_nodes : 1;
  struct ql_plan_node *nodes = t ? calloc(n, sizeof(*nodes)) : NULL;
  if (nodes == NULL) {
    free(t);
    return ql_error_set(error, QL_ENOMEM, "ql_ir_lazy_twin: out of memory for %d nodes", (int)full->n_nodes);
  }
  for (int32_t i = 0; i < full->n_nodes; i++) {
    const struct ql_plan_node *f = &full->nodes[i];
    struct ql_plan_node *s = &nodes[i];
    s->kind = f->kind;
    s->flags = f->flags | QL_NODE_UNEXPANDED;
    s->n_inputs = f->n_inputs;
    s->inputs = f->inputs;
    s->join_type = f->join_type;
    s->condition = -1;
    s->n_projection = -1;
    s->skip = f->skip;
    s->fetch = f->fetch;
    s->n_rows = f->n_rows;
    s->name = f->name;
  }
  t->full = full;
  t->nodes = nodes;
  out->struct_size = sizeof(*out);
  out->n_nodes = full->n_nodes;
  out->n_exprs = 0;
  out->root = full->root;
  out->nodes = nodes;
  out->exprs = NULL;
  out->release = twin_release;
  out->private_data = t;
  out->expand = twin_expand;
  return QL_OK;
}
