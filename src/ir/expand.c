/* libqlink IR: completing the nodes of a lazy plan view (qlink/lib/ir.h,
 * qlink/plan.h ql_plan_view.expand). */
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
  if (!QL_HAS_MEMBER(view, struct ql_plan_view, expand) || view->expand == NULL) {
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
