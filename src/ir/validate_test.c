/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of ql_ir_validate / ql_ir_validate_exprs: a correct plan passes and
 * each broken variant is rejected with its exact message. Broken variants
 * are made by copying the matmul view's arrays and changing one member. */
#include <stdlib.h>
#include <string.h>

#include "ir_test_plans.h"
#include "ql_test.h"

/* A borrowed, mutable copy of a view's arrays. */
struct mutable_view {
  struct ql_plan_view view;
  struct ql_plan_node *nodes;
  struct ql_expr *exprs;
};

static void mutable_copy(const struct ql_plan_view *src, struct mutable_view *out) {
  out->nodes = malloc((size_t)src->n_nodes * sizeof(*out->nodes) + 1);
  out->exprs = malloc((size_t)src->n_exprs * sizeof(*out->exprs) + 1);
  if (src->n_nodes > 0) memcpy(out->nodes, src->nodes, (size_t)src->n_nodes * sizeof(*out->nodes));
  if (src->n_exprs > 0) memcpy(out->exprs, src->exprs, (size_t)src->n_exprs * sizeof(*out->exprs));
  out->view = *src;
  out->view.nodes = out->nodes;
  out->view.exprs = out->exprs;
  out->view.release = NULL;
  out->view.private_data = NULL;
}

static void mutable_free(struct mutable_view *m) {
  free(m->nodes);
  free(m->exprs);
}

static struct ql_plan_view build_matmul(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_plan_view v = {0};
  if (ql_ir_builder_new(&b, NULL) != QL_OK) abort();
  ql_node_id root = qt_build_matmul(b);
  if (ql_ir_builder_finish(b, root, &v, NULL) != QL_OK) abort();
  ql_ir_builder_free(b);
  return v;
}

static struct ArrowSchema schema_abc;
/* Borrowed and never released: a list type where a struct belongs, and a
 * struct claiming more columns than an int32 can count. */
static struct ArrowSchema schema_list = {.format = "+l"};
static struct ArrowSchema schema_huge = {.format = "+s", .n_children = INT64_C(1) << 40, .children = NULL};
static int32_t ids_a[] = {0}, ids_00[] = {0, 0}, ids_33[] = {3}, ids_bad[] = {0, 7}, ids_50[] = {6, 50};

/* Each case breaks one rule of the matmul view (nodes: 0 scan a, 1 scan w,
 * 2 join, 3 aggregate; exprs: 0 a.k, 1 w.k, 2 a.s, 3 w.o, 4 a.val, 5 w.val,
 * 6 a.val * w.val, 7 sum(6)). */
static void break_view(int which, struct ql_plan_view *v, struct ql_plan_node *n, struct ql_expr *e) {
  switch (which) {
    case 0: v->root = 9; break;
    case 1: n[2].n_inputs = 1; break;
    case 2: n[0].kind = 99; break;
    case 3: n[2].join_type = 42; break;
    case 4: e[6].n_args = 1; break;
    case 5: e[6].op = 99; break;
    case 6: e[6].args = ids_50; break;
    case 7: n[3].exprs = ids_a; n[3].n_exprs = 1; n[3].n_exprs2 = 2; n[3].exprs2 = ids_00; break;
    case 8: n[2].inputs = ids_00; break;
    case 9: n[3].inputs = ids_33; break;
    case 10: n[0].table = NULL; break;
    case 11: n[0].projection = ids_bad; n[0].n_projection = 2; break;
    case 12: n[1].schema = NULL; break;
    case 13: n[1].schema = &schema_list; break;
    case 14: n[3].n_exprs2 = 0; break;
    case 15: e[2].column_index = 6; break;
    case 16: e[2].name = NULL; break;
    case 17: e[4].kind = QL_EXPR_LITERAL; e[4].literal.format = NULL; break;
    case 18: e[7].function.kind = QL_FUNCTION_SCALAR; break;
    case 19: e[7].function.origin = QL_ORIGIN_USER; break;
    case 20: e[7].filter = 12; break;
    case 21: e[7].filter = 6; break;
    case 22: n[3].kind = QL_NODE_FILTER; break;
    case 23: n[3].kind = QL_NODE_LIMIT; n[3].skip = -1; break;
    case 24: n[2].kind = QL_NODE_UNION; n[2].schema = &schema_abc; break;
    case 25: n[3].kind = QL_NODE_SORT; break;
    case 26: n[3].kind = QL_NODE_SUBQUERY_ALIAS; break;
    case 27: n[3].kind = QL_NODE_PROJECTION; break;
    case 28: n[3].kind = QL_NODE_WINDOW; break;
    case 29: n[0].kind = QL_NODE_VALUES; n[0].n_rows = 2; break;
    case 30: n[0].n_exprs = -1; break;
    case 31: v->struct_size = 8; break;
    case 32: v->n_exprs = -3; break;
    case 33: e[0].kind = 0; break;
    case 34: n[2].exprs2 = NULL; break;
    case 35: n[2].condition = 6; break;
    case 36: e[0].column_index = -2; break;
    case 37: n[3].kind = QL_NODE_EMPTY_RELATION; break;
    case 38: n[0].fetch = -5; break;
    case 39: n[0].schema = &schema_huge; break;
  }
}

static const char *const break_messages[] = {
    "plan view: root 9 out of range (4 nodes)",
    "node 2 (Join): expects 2 inputs, has 1",
    "node 0: unknown kind 99",
    "node 2 (Join): unknown join type 42",
    "expr 6 (BINARY): expects 2 args, has 1",
    "expr 6 (BINARY): unknown operator 99",
    "expr 6 (BINARY): arg 1 is expr 50, out of range (8 exprs)",
    "expr 0 (COLUMN): reachable twice from the root (the view must be a tree)",
    "node 0 (TableScan): reachable twice from the root (the plan must be a tree)",
    "node 3 (Aggregate): reachable twice from the root (the plan must be a tree)",
    "node 0 (TableScan): has no table",
    "node 0 (TableScan): projection[1] = 7 out of range (table has 3 columns)",
    "node 1 (TableScan): has no schema",
    "node 1 (TableScan): schema has format \"+l\", expected a struct (\"+s\")",
    "node 3 (Aggregate): schema has 3 columns, expected 2 (group keys then aggregates)",
    "expr 2 (COLUMN): column_index 6 out of range (6 input columns)",
    "expr 2 (COLUMN): has no name",
    "expr 4 (LITERAL): literal has no format",
    "expr 7 (AGGREGATE_FUNCTION): function sum has kind 1, which this expression cannot call",
    "expr 7 (AGGREGATE_FUNCTION): user function sum has no library",
    "expr 7 (AGGREGATE_FUNCTION): filter 12 out of range (8 exprs)",
    "expr 6 (BINARY): reachable twice from the root (the view must be a tree)",
    "node 3 (Filter): expects 1 predicate, has 2",
    "node 3 (Limit): skip -1 / fetch -1 out of range",
    "node 2 (Union): input 0 has 3 columns, expected 4",
    "node 3 (Sort): exprs[0] (expr 2) is not a SORT expression",
    "node 3 (SubqueryAlias): has no alias name",
    "node 3 (Projection): schema has 3 columns, expected 2 (one per expression)",
    "node 3 (WindowAggr): schema has 3 columns, expected 8 (input columns then window expressions)",
    "node 0 (Values): 2 rows of 3 columns but 0 exprs",
    "node 0 (TableScan): -1 exprs but a negative count",
    "plan view: struct_size 8 is smaller than the 0.1 view",
    "plan view: negative count (4 nodes, -3 exprs)",
    "expr 0: unknown kind 0",
    "node 2 (Join): 1 exprs2 but a NULL array",
    "expr 6 (BINARY): reachable twice from the root (the view must be a tree)",
    "expr 0 (COLUMN): column_index -2 is negative",
    "node 3 (EmptyRelation): expects 0 inputs, has 1",
    "node 0 (TableScan): fetch -5 is negative",
    "node 0 (TableScan): schema has 1099511627776 children but the limit is 2^31-1",
};

static void test_broken_plans(void) {
  struct ql_plan_view v = build_matmul();
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_validate(&v, &err), err);
  qt_schema(&schema_abc, "a:l,b:l,c:l,d:l");
  int n_cases = (int)(sizeof(break_messages) / sizeof(break_messages[0]));
  for (int i = 0; i < n_cases; i++) {
    struct mutable_view m;
    mutable_copy(&v, &m);
    break_view(i, &m.view, m.nodes, m.exprs);
    int status = ql_ir_validate(&m.view, &err);
    if (status != QL_EINVAL || strcmp(ql_error_message(&err), break_messages[i]) != 0) {
      fprintf(stderr, "case %d:\n", i);
    }
    QL_CHECK_INT(status, QL_EINVAL);
    QL_CHECK_STR(ql_error_message(&err), break_messages[i]);
    QL_CHECK_STR(err.sqlstate, "22023");
    /* Without an error struct only the status comes back. */
    QL_CHECK_INT(ql_ir_validate(&m.view, NULL), QL_EINVAL);
    mutable_free(&m);
  }
  ql_schema_release(&schema_abc);
  QL_CHECK_INT(ql_ir_validate(NULL, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "plan view is NULL");
  v.release(&v);
  ql_error_release(&err);
}

/* Rules of expression kinds that the matmul plan does not use, checked
 * through ql_ir_validate_exprs on an expression-only arena. */
static void test_expression_rules(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  ql_expr_id x = ql_ir_column(b, "x", NULL, 0);               /* 0 */
  ql_expr_id y = ql_ir_column(b, "y", NULL, 1);               /* 1 */
  ql_expr_id z = ql_ir_literal_i64(b, 3);                     /* 2 */
  ql_expr_id w = ql_ir_literal_i64(b, 4);                     /* 3 */
  ql_expr_id args[] = {x, y, z};
  struct ql_expr e;
  memset(&e, 0, sizeof(e));
  e.filter = -1;
  e.column_index = -1;
  e.kind = QL_EXPR_CASE;
  e.flags = QL_CASE_HAS_ELSE;
  e.n_args = 3;
  e.args = args;
  ql_expr_id case_ok = ql_ir_expr(b, &e);                     /* 4 */
  ql_expr_id more[] = {w};
  ql_expr_id between_args[] = {ql_ir_column(b, "p", NULL, 0), ql_ir_literal_i64(b, 1), ql_ir_literal_i64(b, 2)};
  e.kind = QL_EXPR_BETWEEN;                                   /* args 5, 6, 7 */
  e.flags = QL_EXPR_NEGATED;
  e.args = between_args;
  ql_expr_id between_ok = ql_ir_expr(b, &e);                  /* 8 */
  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &v, &err), err);
  ql_expr_id roots[] = {case_ok, between_ok, w};
  QL_CHECK_OK(ql_ir_validate_exprs(&v, roots, 3, &err), err);
  /* The whole view (no nodes, root -1) is valid too. */
  QL_CHECK_OK(ql_ir_validate(&v, &err), err);
  (void)more;

  struct {
    int32_t kind, flags, n_args;
    const char *type_format;
    const char *message;
  } cases[] = {
      {QL_EXPR_CASE, 0, 3, NULL, "expr 4 (CASE): 3 args do not form whole WHEN/THEN pairs"},
      {QL_EXPR_CASE, QL_CASE_HAS_OPERAND | QL_CASE_HAS_ELSE, 2, NULL,
       "expr 4 (CASE): 2 args do not form one or more WHEN/THEN pairs after the operand before ELSE"},
      {QL_EXPR_BETWEEN, 0, 2, NULL, "expr 4 (BETWEEN): expects 3 args, has 2"},
      {QL_EXPR_LIKE, 0, 3, NULL, "expr 4 (LIKE): expects 2 args, has 3"},
      {QL_EXPR_IN_LIST, 0, 0, NULL, "expr 4 (IN_LIST): expects at least 1 arg, has 0"},
      {QL_EXPR_NOT, 0, 2, NULL, "expr 4 (NOT): expects 1 arg, has 2"},
      {QL_EXPR_CAST, 0, 1, NULL, "expr 4 (CAST): has no target type_format"},
      {QL_EXPR_ALIAS, 0, 1, "l", "expr 4 (ALIAS): has no name"},
      {QL_EXPR_LITERAL, 0, 1, NULL, "expr 4 (LITERAL): expects 0 args, has 1"},
      {QL_EXPR_SORT, 0, 0, NULL, "expr 4 (SORT): expects 1 arg, has 0"},
      {QL_EXPR_OTHER + 1, 0, 0, NULL, "expr 4: unknown kind 20"},
      {QL_EXPR_SCALAR_FUNCTION, 0, 1, NULL, "expr 4 (SCALAR_FUNCTION): function identity has no name"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct mutable_view m;
    mutable_copy(&v, &m);
    m.exprs[4].kind = cases[i].kind;
    m.exprs[4].flags = cases[i].flags;
    m.exprs[4].n_args = cases[i].n_args;
    m.exprs[4].type_format = cases[i].type_format;
    QL_CHECK_INT(ql_ir_validate_exprs(&m.view, roots, 3, &err), QL_EINVAL);
    QL_CHECK_STR(ql_error_message(&err), cases[i].message);
    mutable_free(&m);
  }

  /* Window functions: partition and order counts, ORDER BY args are SORTs. */
  struct mutable_view m;
  mutable_copy(&v, &m);
  m.exprs[4].kind = QL_EXPR_WINDOW_FUNCTION;
  m.exprs[4].function = (struct ql_function_id){QL_ORIGIN_BUILTIN, QL_FUNCTION_WINDOW, "row_number", NULL, 0};
  m.exprs[4].n_func_args = 1;
  m.exprs[4].n_partition_by = 1;
  QL_CHECK_INT(ql_ir_validate_exprs(&m.view, roots, 1, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "expr 4 (WINDOW_FUNCTION): order-by arg 2 (expr 2) is not a SORT expression");
  m.exprs[4].n_partition_by = 3;
  QL_CHECK_INT(ql_ir_validate_exprs(&m.view, roots, 1, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "expr 4 (WINDOW_FUNCTION): n_func_args 1 + n_partition_by 3 exceed 3 args");
  m.exprs[4].n_partition_by = 2;
  QL_CHECK_OK(ql_ir_validate_exprs(&m.view, roots, 1, &err), err);
  mutable_free(&m);

  /* Roots out of range, shared between roots, or a bad list. */
  ql_expr_id bad_roots[] = {4, 9};
  QL_CHECK_INT(ql_ir_validate_exprs(&v, bad_roots, 2, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "expr 9 out of range (9 exprs)");
  ql_expr_id shared[] = {4, 0};
  QL_CHECK_INT(ql_ir_validate_exprs(&v, shared, 2, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "expr 0 (COLUMN): reachable twice from the root (the view must be a tree)");
  QL_CHECK_INT(ql_ir_validate_exprs(&v, NULL, 2, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "expression list: 2 roots but a NULL array");
  QL_CHECK_OK(ql_ir_validate_exprs(&v, NULL, 0, &err), err);

  /* An unreachable entry is still checked by ql_ir_validate. */
  mutable_copy(&v, &m);
  m.exprs[3].kind = 77;
  QL_CHECK_INT(ql_ir_validate(&m.view, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "expr 3: unknown kind 77");
  m.view.n_nodes = 1;
  m.view.nodes = NULL;
  QL_CHECK_INT(ql_ir_validate(&m.view, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "plan view: 1 nodes and 9 exprs but a NULL array");
  mutable_free(&m);
  v.release(&v);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

int main(void) {
  test_broken_plans();
  test_expression_rules();
  QL_TEST_END();
}
