/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink IR: the validator (qlink/lib/ir.h).
 *
 * Views come from plugins and hosts alike, so nothing here trusts a count or
 * an id before checking it: every index is range-checked before it is used
 * to read, arrays are read only up to the counts that describe them, and the
 * tree walk is iterative (an explicit stack bounded by the number of
 * entries, since an entry is pushed at most once) so a deep or cyclic input
 * cannot exhaust the C stack. What cannot be checked is that a non-NULL
 * pointer really points at as many items as its count says; that is the
 * producer's side of the contract.
 */
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

struct ql_ir_checker {
  const struct ql_plan_view *view;
  struct ql_error *error;
  uint8_t *expr_seen; /* one byte per expression: reached from a root */
  uint8_t *node_seen;
  int32_t *stack;     /* pending expression ids of the current walk */
};

static int node_fail(const struct ql_ir_checker *c, ql_node_id id, const char *fmt, ...) QL_PRINTF_FORMAT(3, 4);
static int expr_fail(const struct ql_ir_checker *c, ql_expr_id id, const char *fmt, ...) QL_PRINTF_FORMAT(3, 4);

/* "node 3 (Join): <rule>" */
static int node_fail(const struct ql_ir_checker *c, ql_node_id id, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  ql_error_setv(c->error, QL_EINVAL, fmt, args);
  va_end(args);
  const struct ql_plan_node *n = &c->view->nodes[id];
  ql_error_prefix(c->error, "node %d (%s)", (int)id, ql_node_kind_name(n->kind));
  return QL_EINVAL; /* also when error is NULL */
}

/* "expr 4 (BINARY): <rule>" */
static int expr_fail(const struct ql_ir_checker *c, ql_expr_id id, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  ql_error_setv(c->error, QL_EINVAL, fmt, args);
  va_end(args);
  const struct ql_expr *e = &c->view->exprs[id];
  ql_error_prefix(c->error, "expr %d (%s)", (int)id, ql_expr_kind_name(e->kind));
  return QL_EINVAL;
}

static int view_check(const struct ql_plan_view *view, struct ql_error *error) {
  if (view == NULL) {
    return ql_error_set(error, QL_EINVAL, "plan view is NULL");
  }
  if (!QL_HAS_MEMBER(view, struct ql_plan_view, expand)) {
    return ql_error_set(error, QL_EINVAL, "plan view: struct_size %u is smaller than the 0.1 view",
                        (unsigned)view->struct_size);
  }
  if (view->n_nodes < 0 || view->n_exprs < 0) {
    return ql_error_set(error, QL_EINVAL, "plan view: negative count (%d nodes, %d exprs)", (int)view->n_nodes,
                        (int)view->n_exprs);
  }
  if ((view->n_nodes > 0 && view->nodes == NULL) || (view->n_exprs > 0 && view->exprs == NULL)) {
    return ql_error_set(error, QL_EINVAL, "plan view: %d nodes and %d exprs but a NULL array", (int)view->n_nodes,
                        (int)view->n_exprs);
  }
  return QL_OK;
}

/* ---- expressions, each on its own */

static int expr_expect_args(const struct ql_ir_checker *c, ql_expr_id id, int32_t n) {
  const struct ql_expr *e = &c->view->exprs[id];
  if (e->n_args != n) {
    return expr_fail(c, id, "expects %d arg%s, has %d", (int)n, n == 1 ? "" : "s", (int)e->n_args);
  }
  return QL_OK;
}

static int function_check(const struct ql_ir_checker *c, ql_expr_id id) {
  const struct ql_expr *e = &c->view->exprs[id];
  const struct ql_function_id *f = &e->function;
  if (f->name == NULL) {
    return expr_fail(c, id, "function identity has no name");
  }
  if (f->origin < QL_ORIGIN_UNKNOWN || f->origin > QL_ORIGIN_USER) {
    return expr_fail(c, id, "function %s has unknown origin %d", f->name, (int)f->origin);
  }
  if (f->origin == QL_ORIGIN_USER && f->library == NULL) {
    return expr_fail(c, id, "user function %s has no library", f->name);
  }
  int ok = (e->kind == QL_EXPR_SCALAR_FUNCTION && f->kind == QL_FUNCTION_SCALAR) ||
           (e->kind == QL_EXPR_AGGREGATE_FUNCTION && f->kind == QL_FUNCTION_AGGREGATE) ||
           (e->kind == QL_EXPR_WINDOW_FUNCTION && (f->kind == QL_FUNCTION_WINDOW || f->kind == QL_FUNCTION_AGGREGATE));
  if (!ok) {
    return expr_fail(c, id, "function %s has kind %d, which this expression cannot call", f->name, (int)f->kind);
  }
  if (e->kind == QL_EXPR_AGGREGATE_FUNCTION && e->filter != -1 && (e->filter < 0 || e->filter >= c->view->n_exprs)) {
    return expr_fail(c, id, "filter %d out of range (%d exprs)", (int)e->filter, (int)c->view->n_exprs);
  }
  if (e->kind == QL_EXPR_WINDOW_FUNCTION) {
    if (e->n_func_args < 0 || e->n_partition_by < 0 ||
        (int64_t)e->n_func_args + e->n_partition_by > (int64_t)e->n_args) {
      return expr_fail(c, id, "n_func_args %d + n_partition_by %d exceed %d args", (int)e->n_func_args,
                       (int)e->n_partition_by, (int)e->n_args);
    }
    for (int32_t i = e->n_func_args + e->n_partition_by; i < e->n_args; i++) {
      if (c->view->exprs[e->args[i]].kind != QL_EXPR_SORT) {
        return expr_fail(c, id, "order-by arg %d (expr %d) is not a SORT expression", (int)i, (int)e->args[i]);
      }
    }
  }
  return QL_OK;
}

static int case_check(const struct ql_ir_checker *c, ql_expr_id id) {
  const struct ql_expr *e = &c->view->exprs[id];
  int32_t extra = ((e->flags & QL_CASE_HAS_OPERAND) ? 1 : 0) + ((e->flags & QL_CASE_HAS_ELSE) ? 1 : 0);
  int32_t pairs = e->n_args - extra;
  if (pairs < 2 || pairs % 2 != 0) {
    return expr_fail(c, id, "%d args do not form %s WHEN/THEN pairs%s%s", (int)e->n_args,
                     pairs < 2 ? "one or more" : "whole", (e->flags & QL_CASE_HAS_OPERAND) ? " after the operand" : "",
                     (e->flags & QL_CASE_HAS_ELSE) ? " before ELSE" : "");
  }
  return QL_OK;
}

/* Arity and members of one expression; its arg ids are already in range. */
static int expr_kind_check(const struct ql_ir_checker *c, ql_expr_id id) {
  const struct ql_expr *e = &c->view->exprs[id];
  switch (e->kind) {
    case QL_EXPR_COLUMN:
      QL_RETURN_NOT_OK(expr_expect_args(c, id, 0));
      if (e->name == NULL) return expr_fail(c, id, "has no name");
      if (e->column_index < -1) return expr_fail(c, id, "column_index %d is negative", (int)e->column_index);
      return QL_OK;
    case QL_EXPR_LITERAL:
      QL_RETURN_NOT_OK(expr_expect_args(c, id, 0));
      if (e->literal.format == NULL) return expr_fail(c, id, "literal has no format");
      if (!e->literal.is_null && ql_ir_format_storage(e->literal.format) == QL_IR_STORAGE_BYTES &&
          (e->literal.value.bytes.size < 0 || (e->literal.value.bytes.size > 0 && e->literal.value.bytes.data == NULL))) {
        return expr_fail(c, id, "literal of format %s has %lld bytes at a NULL pointer or a negative size",
                         e->literal.format, (long long)e->literal.value.bytes.size);
      }
      return QL_OK;
    case QL_EXPR_BINARY:
      QL_RETURN_NOT_OK(expr_expect_args(c, id, 2));
      if (e->op < QL_OP_EQ || e->op > QL_OP_OTHER) return expr_fail(c, id, "unknown operator %d", (int)e->op);
      return QL_OK;
    case QL_EXPR_NOT:
    case QL_EXPR_NEGATIVE:
    case QL_EXPR_IS_NULL:
    case QL_EXPR_IS_NOT_NULL:
    case QL_EXPR_SORT:
      return expr_expect_args(c, id, 1);
    case QL_EXPR_CAST:
    case QL_EXPR_TRY_CAST:
      QL_RETURN_NOT_OK(expr_expect_args(c, id, 1));
      if (e->type_format == NULL) return expr_fail(c, id, "has no target type_format");
      return QL_OK;
    case QL_EXPR_ALIAS:
      QL_RETURN_NOT_OK(expr_expect_args(c, id, 1));
      if (e->name == NULL) return expr_fail(c, id, "has no name");
      return QL_OK;
    case QL_EXPR_CASE:
      return case_check(c, id);
    case QL_EXPR_SCALAR_FUNCTION:
    case QL_EXPR_AGGREGATE_FUNCTION:
    case QL_EXPR_WINDOW_FUNCTION:
      return function_check(c, id);
    case QL_EXPR_IN_LIST:
      if (e->n_args < 1) return expr_fail(c, id, "expects at least 1 arg, has %d", (int)e->n_args);
      return QL_OK;
    case QL_EXPR_BETWEEN:
      return expr_expect_args(c, id, 3);
    case QL_EXPR_LIKE:
      return expr_expect_args(c, id, 2);
    case QL_EXPR_OTHER:
      return QL_OK;
    default:
      return ql_error_set(c->error, QL_EINVAL, "expr %d: unknown kind %d", (int)id, (int)e->kind);
  }
}

static int expr_check(const struct ql_ir_checker *c, ql_expr_id id) {
  const struct ql_expr *e = &c->view->exprs[id];
  if (e->kind < QL_EXPR_COLUMN || e->kind > QL_EXPR_OTHER) {
    return ql_error_set(c->error, QL_EINVAL, "expr %d: unknown kind %d", (int)id, (int)e->kind);
  }
  if (e->n_args < 0 || (e->n_args > 0 && e->args == NULL)) {
    return expr_fail(c, id, "%d args but %s", (int)e->n_args, e->n_args < 0 ? "a negative count" : "a NULL array");
  }
  for (int32_t i = 0; i < e->n_args; i++) {
    if (e->args[i] < 0 || e->args[i] >= c->view->n_exprs) {
      return expr_fail(c, id, "arg %d is expr %d, out of range (%d exprs)", (int)i, (int)e->args[i],
                       (int)c->view->n_exprs);
    }
  }
  return expr_kind_check(c, id);
}

/* ---- the tree walk */

/* Walk the expression tree under `root`, marking what it reaches; `width`
 * bounds column indices (-1: unknown). Every expression is checked before
 * its children are read, so ids read from it are already in range. */
static int expr_tree_check(struct ql_ir_checker *c, ql_expr_id root, int64_t width, ql_node_id owner) {
  int32_t top = 0;
  if (root < 0 || root >= c->view->n_exprs) {
    if (owner >= 0) {
      return node_fail(c, owner, "refers to expr %d, out of range (%d exprs)", (int)root, (int)c->view->n_exprs);
    }
    return ql_error_set(c->error, QL_EINVAL, "expr %d out of range (%d exprs)", (int)root, (int)c->view->n_exprs);
  }
  if (c->expr_seen[root]) {
    return expr_fail(c, root, "reachable twice from the root (the view must be a tree)");
  }
  c->expr_seen[root] = 1;
  c->stack[top++] = root;
  while (top > 0) {
    ql_expr_id id = c->stack[--top];
    const struct ql_expr *e = &c->view->exprs[id];
    QL_RETURN_NOT_OK(expr_check(c, id));
    if (e->kind == QL_EXPR_COLUMN && width >= 0 && e->column_index >= width) {
      return expr_fail(c, id, "column_index %d out of range (%lld input columns)", (int)e->column_index,
                       (long long)width);
    }
    int32_t n = e->n_args;
    for (int32_t i = 0; i <= n; i++) {
      ql_expr_id child = i < n ? e->args[i] : (e->kind == QL_EXPR_AGGREGATE_FUNCTION ? e->filter : -1);
      if (child == -1) {
        continue;
      }
      if (c->expr_seen[child]) {
        return expr_fail(c, child, "reachable twice from the root (the view must be a tree)");
      }
      c->expr_seen[child] = 1;
      c->stack[top++] = child;
    }
  }
  return QL_OK;
}

/* ---- nodes */

static int64_t schema_width(const struct ArrowSchema *schema) { return schema ? schema->n_children : -1; }

static int struct_schema_check(const struct ql_ir_checker *c, ql_node_id id, const struct ArrowSchema *s,
                               const char *what) {
  if (s == NULL) return node_fail(c, id, "has no %s", what);
  if (s->format == NULL || strcmp(s->format, "+s") != 0) {
    return node_fail(c, id, "%s has format \"%s\", expected a struct (\"+s\")", what, s->format ? s->format : "(null)");
  }
  /* Widths are bounded so sums and products of them cannot overflow. */
  if (s->n_children < 0 || s->n_children > INT32_MAX || (s->n_children > 0 && s->children == NULL)) {
    return node_fail(c, id, "%s has %lld children but %s", what, (long long)s->n_children,
                     s->n_children < 0 ? "a negative count" : s->n_children > INT32_MAX ? "the limit is 2^31-1" : "a NULL array");
  }
  return QL_OK;
}

static int id_list_check(const struct ql_ir_checker *c, ql_node_id id, int32_t n, const int32_t *ids,
                         int32_t limit, const char *what) {
  if (n < 0 || (n > 0 && ids == NULL)) {
    return node_fail(c, id, "%d %s but %s", (int)n, what, n < 0 ? "a negative count" : "a NULL array");
  }
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= limit) {
      return node_fail(c, id, "%s[%d] = %d out of range (%d)", what, (int)i, (int)ids[i], (int)limit);
    }
  }
  return QL_OK;
}

static int expect_inputs(const struct ql_ir_checker *c, ql_node_id id, int32_t n) {
  int32_t have = c->view->nodes[id].n_inputs;
  if (have != n) {
    return node_fail(c, id, "expects %d input%s, has %d", (int)n, n == 1 ? "" : "s", (int)have);
  }
  return QL_OK;
}

static int expect_width(const struct ql_ir_checker *c, ql_node_id id, int64_t want, const char *why) {
  int64_t have = c->view->nodes[id].schema->n_children;
  if (have != want) {
    return node_fail(c, id, "schema has %lld columns, expected %lld (%s)", (long long)have, (long long)want, why);
  }
  return QL_OK;
}

static int scan_check(const struct ql_ir_checker *c, ql_node_id id) {
  const struct ql_plan_node *n = &c->view->nodes[id];
  if (n->table == NULL) return node_fail(c, id, "has no table");
  QL_RETURN_NOT_OK(struct_schema_check(c, id, n->table->schema, "table schema"));
  int64_t table_width = n->table->schema->n_children;
  if (n->n_projection < -1 || (n->n_projection > 0 && n->projection == NULL)) {
    return node_fail(c, id, "n_projection %d with %s projection", (int)n->n_projection,
                     n->projection ? "a" : "a NULL");
  }
  for (int32_t i = 0; i < n->n_projection; i++) {
    if (n->projection[i] < 0 || n->projection[i] >= table_width) {
      return node_fail(c, id, "projection[%d] = %d out of range (table has %lld columns)", (int)i,
                       (int)n->projection[i], (long long)table_width);
    }
  }
  if (n->fetch < -1) return node_fail(c, id, "fetch %lld is negative", (long long)n->fetch);
  return expect_width(c, id, n->n_projection == -1 ? table_width : n->n_projection, "the projection");
}

/* Rules of one node beyond its inputs' arity. Input ids are in range and
 * the inputs' schemas checked (inputs are checked first). */
static int64_t node_input_width(const struct ql_ir_checker *c, const struct ql_plan_node *n);

static int node_kind_check(const struct ql_ir_checker *c, ql_node_id id) {
  const struct ql_plan_node *n = &c->view->nodes[id];
  switch (n->kind) {
    case QL_NODE_TABLE_SCAN:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 0));
      return scan_check(c, id);
    case QL_NODE_PROJECTION:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 1));
      return expect_width(c, id, n->n_exprs, "one per expression");
    case QL_NODE_FILTER:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 1));
      if (n->n_exprs != 1) return node_fail(c, id, "expects 1 predicate, has %d", (int)n->n_exprs);
      return QL_OK;
    case QL_NODE_AGGREGATE:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 1));
      return expect_width(c, id, (int64_t)n->n_exprs + n->n_exprs2, "group keys then aggregates");
    case QL_NODE_JOIN:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 2));
      if (n->join_type < QL_JOIN_INNER || n->join_type > QL_JOIN_OTHER) {
        return node_fail(c, id, "unknown join type %d", (int)n->join_type);
      }
      if (n->n_exprs != n->n_exprs2) {
        return node_fail(c, id, "%d left keys but %d right keys", (int)n->n_exprs, (int)n->n_exprs2);
      }
      return QL_OK;
    case QL_NODE_SORT:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 1));
      if (n->fetch < -1) return node_fail(c, id, "fetch %lld is negative", (long long)n->fetch);
      for (int32_t i = 0; i < n->n_exprs; i++) {
        if (c->view->exprs[n->exprs[i]].kind != QL_EXPR_SORT) {
          return node_fail(c, id, "exprs[%d] (expr %d) is not a SORT expression", (int)i, (int)n->exprs[i]);
        }
      }
      return QL_OK;
    case QL_NODE_LIMIT:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 1));
      if (n->skip < 0 || n->fetch < -1) {
        return node_fail(c, id, "skip %lld / fetch %lld out of range", (long long)n->skip, (long long)n->fetch);
      }
      return QL_OK;
    case QL_NODE_UNION:
      if (n->n_inputs < 2) return node_fail(c, id, "expects at least 2 inputs, has %d", (int)n->n_inputs);
      for (int32_t i = 0; i < n->n_inputs; i++) {
        int64_t w = c->view->nodes[n->inputs[i]].schema->n_children;
        if (w != n->schema->n_children) {
          return node_fail(c, id, "input %d has %lld columns, expected %lld", (int)i, (long long)w,
                           (long long)n->schema->n_children);
        }
      }
      return QL_OK;
    case QL_NODE_SUBQUERY_ALIAS:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 1));
      if (n->name == NULL) return node_fail(c, id, "has no alias name");
      return QL_OK;
    case QL_NODE_VALUES:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 0));
      if (n->n_rows < 0 || n->n_rows > INT32_MAX ||
          n->n_rows * n->schema->n_children != (int64_t)n->n_exprs) {
        return node_fail(c, id, "%lld rows of %lld columns but %d exprs", (long long)n->n_rows,
                         (long long)n->schema->n_children, (int)n->n_exprs);
      }
      return QL_OK;
    case QL_NODE_EMPTY_RELATION:
      return expect_inputs(c, id, 0);
    case QL_NODE_WINDOW:
      QL_RETURN_NOT_OK(expect_inputs(c, id, 1));
      return expect_width(c, id, node_input_width(c, n) + n->n_exprs, "input columns then window expressions");
    case QL_NODE_DISTINCT:
      return expect_inputs(c, id, 1);
    case QL_NODE_OTHER:
      return QL_OK;
    default:
      return ql_error_set(c->error, QL_EINVAL, "node %d: unknown kind %d", (int)id, (int)n->kind);
  }
}

/* Members every node has; afterwards inputs and expr ids are in range. */
static int node_common_check(const struct ql_ir_checker *c, ql_node_id id) {
  const struct ql_plan_node *n = &c->view->nodes[id];
  if (n->kind < QL_NODE_TABLE_SCAN || n->kind > QL_NODE_OTHER) {
    return ql_error_set(c->error, QL_EINVAL, "node %d: unknown kind %d", (int)id, (int)n->kind);
  }
  if (n->flags & QL_NODE_UNEXPANDED) {
    return node_fail(c, id, "not expanded (a lazy view: ql_plan_expand_all first)");
  }
  QL_RETURN_NOT_OK(id_list_check(c, id, n->n_inputs, n->inputs, c->view->n_nodes, "inputs"));
  QL_RETURN_NOT_OK(id_list_check(c, id, n->n_exprs, n->exprs, c->view->n_exprs, "exprs"));
  QL_RETURN_NOT_OK(id_list_check(c, id, n->n_exprs2, n->exprs2, c->view->n_exprs, "exprs2"));
  if (n->kind == QL_NODE_JOIN && n->condition != -1 && (n->condition < 0 || n->condition >= c->view->n_exprs)) {
    return node_fail(c, id, "condition %d out of range (%d exprs)", (int)n->condition, (int)c->view->n_exprs);
  }
  return struct_schema_check(c, id, n->schema, "schema");
}

/* Width the node's column expressions index: the table for a scan, else
 * the concatenation of the inputs' schemas. */
static int64_t node_input_width(const struct ql_ir_checker *c, const struct ql_plan_node *n) {
  if (n->kind == QL_NODE_TABLE_SCAN) {
    return schema_width(n->table->schema);
  }
  if (n->kind == QL_NODE_OTHER) {
    return -1; /* an opaque node may bind columns its own way */
  }
  int64_t width = 0;
  for (int32_t i = 0; i < n->n_inputs; i++) {
    width += c->view->nodes[n->inputs[i]].schema->n_children;
  }
  return width;
}

static int node_exprs_check(struct ql_ir_checker *c, ql_node_id id) {
  const struct ql_plan_node *n = &c->view->nodes[id];
  int64_t width = node_input_width(c, n);
  for (int32_t i = 0; i < n->n_exprs; i++) {
    QL_RETURN_NOT_OK(expr_tree_check(c, n->exprs[i], width, id));
  }
  for (int32_t i = 0; i < n->n_exprs2; i++) {
    QL_RETURN_NOT_OK(expr_tree_check(c, n->exprs2[i], width, id));
  }
  if (n->kind == QL_NODE_JOIN && n->condition != -1) {
    QL_RETURN_NOT_OK(expr_tree_check(c, n->condition, width, id));
  }
  return QL_OK;
}

/* Walk the node tree from the root: each node is checked once all its
 * inputs are (post-order with an explicit stack), so kind rules may read
 * the inputs' schemas. */
static int node_tree_check(struct ql_ir_checker *c, ql_node_id root, int32_t *stack, uint8_t *done) {
  int32_t top = 0;
  c->node_seen[root] = 1;
  QL_RETURN_NOT_OK(node_common_check(c, root));
  stack[top++] = root;
  while (top > 0) {
    ql_node_id id = stack[top - 1];
    const struct ql_plan_node *n = &c->view->nodes[id];
    if (!done[id]) {
      done[id] = 1; /* children pushed once */
      for (int32_t i = 0; i < n->n_inputs; i++) {
        ql_node_id child = n->inputs[i];
        if (c->node_seen[child]) {
          return node_fail(c, child, "reachable twice from the root (the plan must be a tree)");
        }
        c->node_seen[child] = 1;
        QL_RETURN_NOT_OK(node_common_check(c, child));
        stack[top++] = child;
      }
      continue;
    }
    top--;
    QL_RETURN_NOT_OK(node_kind_check(c, id));
    QL_RETURN_NOT_OK(node_exprs_check(c, id));
  }
  return QL_OK;
}

/* ---- entry points */

static int checker_init(struct ql_ir_checker *c, const struct ql_plan_view *view, struct ql_error *error) {
  memset(c, 0, sizeof(*c));
  c->view = view;
  c->error = error;
  size_t n_exprs = (size_t)view->n_exprs, n_nodes = (size_t)view->n_nodes;
  c->expr_seen = calloc(n_exprs + 1, 1);
  c->node_seen = calloc(n_nodes + 1, 1);
  c->stack = malloc((n_exprs + 1) * sizeof(*c->stack));
  if (c->expr_seen == NULL || c->node_seen == NULL || c->stack == NULL) {
    return ql_error_set(error, QL_ENOMEM, "plan view: out of memory validating %zu nodes, %zu exprs", n_nodes,
                        n_exprs);
  }
  return QL_OK;
}

static void checker_free(struct ql_ir_checker *c) {
  free(c->expr_seen);
  free(c->node_seen);
  free(c->stack);
}

static int plan_check(struct ql_ir_checker *c) {
  const struct ql_plan_view *view = c->view;
  if (view->root == -1) {
    if (view->n_nodes > 0) {
      return ql_error_set(c->error, QL_EINVAL, "plan view: %d nodes but no root", (int)view->n_nodes);
    }
    return QL_OK;
  }
  if (view->root < 0 || view->root >= view->n_nodes) {
    return ql_error_set(c->error, QL_EINVAL, "plan view: root %d out of range (%d nodes)", (int)view->root,
                        (int)view->n_nodes);
  }
  size_t n = (size_t)view->n_nodes;
  int32_t *stack = malloc(n * sizeof(*stack));
  uint8_t *done = calloc(n, 1);
  int status = (stack && done) ? node_tree_check(c, view->root, stack, done)
                               : ql_error_set(c->error, QL_ENOMEM, "plan view: out of memory validating");
  free(stack);
  free(done);
  return status;
}

/* Entries not reachable from the root are still checked on their own:
 * readers may iterate over the arrays. */
static int unreached_check(struct ql_ir_checker *c) {
  for (int32_t i = 0; i < c->view->n_nodes; i++) {
    if (!c->node_seen[i]) {
      QL_RETURN_NOT_OK(node_common_check(c, i));
    }
  }
  for (int32_t i = 0; i < c->view->n_exprs; i++) {
    if (!c->expr_seen[i]) {
      QL_RETURN_NOT_OK(expr_check(c, i));
    }
  }
  return QL_OK;
}

int ql_ir_validate(const struct ql_plan_view *view, struct ql_error *error) {
  QL_RETURN_NOT_OK(view_check(view, error));
  struct ql_ir_checker c;
  int status = checker_init(&c, view, error);
  if (status == QL_OK) status = plan_check(&c);
  if (status == QL_OK) status = unreached_check(&c);
  checker_free(&c);
  return status;
}

int ql_ir_validate_exprs(const struct ql_plan_view *view, const ql_expr_id *exprs, int32_t n,
                         struct ql_error *error) {
  QL_RETURN_NOT_OK(view_check(view, error));
  if (n < 0 || (n > 0 && exprs == NULL)) {
    return ql_error_set(error, QL_EINVAL, "expression list: %d roots but %s", (int)n,
                        n < 0 ? "a negative count" : "a NULL array");
  }
  struct ql_ir_checker c;
  int status = checker_init(&c, view, error);
  for (int32_t i = 0; i < n && status == QL_OK; i++) {
    status = expr_tree_check(&c, exprs[i], -1, -1);
  }
  checker_free(&c);
  return status;
}
