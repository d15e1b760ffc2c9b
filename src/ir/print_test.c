/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the IR printer: exact text of plans (DataFusion EXPLAIN layout)
 * and of every expression kind and literal format. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir_test_plans.h"
#include "ql_test.h"

#define CHECK_EXPR_TEXT(view, id, expected)                                 \
  do {                                                                      \
    char *text_ = NULL;                                                     \
    struct ql_error e_ = {0};                                               \
    QL_CHECK_OK(ql_ir_expr_to_string((view), (id), &text_, &e_), e_);       \
    QL_CHECK_STR(text_, (expected));                                        \
    free(text_);                                                            \
    ql_error_release(&e_);                                                  \
  } while (0)

#define CHECK_PLAN_TEXT(view, id, expected)                                 \
  do {                                                                      \
    char *text_ = NULL;                                                     \
    struct ql_error e_ = {0};                                               \
    QL_CHECK_OK(ql_ir_plan_to_string((view), (id), &text_, &e_), e_);       \
    QL_CHECK_STR(text_, (expected));                                        \
    free(text_);                                                            \
    ql_error_release(&e_);                                                  \
  } while (0)

static void test_matmul(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  ql_node_id root = qt_build_matmul(b);
  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, root, &v, &err), err);
  CHECK_PLAN_TEXT(&v, v.root, qt_matmul_text);
  CHECK_PLAN_TEXT(&v, 2,
                  "Inner Join: a.k = w.k\n"
                  "  TableScan: a projection=[s, k, val]\n"
                  "  TableScan: w projection=[k, o, val]\n");
  CHECK_EXPR_TEXT(&v, 7, "sum(a.val * w.val)");
  v.release(&v);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

/* A node over `inputs` with a schema from `spec`. */
static ql_node_id add_node(struct ql_ir_builder *b, struct ql_plan_node n, const char *spec) {
  struct ArrowSchema s;
  qt_schema(&s, spec);
  n.schema = &s;
  ql_node_id id = ql_ir_node(b, &n);
  ql_schema_release(&s);
  return id;
}

/* Limit / Sort / Projection / Filter / SubqueryAlias / Union / TableScan
 * with filters and fetch / Values. */
static void test_relational_plan(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  struct ArrowSchema table_schema;
  qt_schema(&table_schema, "x:l,y:u,z:g");
  struct ql_table_ref table = {"src", &table_schema, NULL, NULL};
  int32_t proj[] = {0, 1};
  ql_expr_id filter = ql_ir_binary(b, QL_OP_GE, ql_ir_column(b, "x", NULL, 0), ql_ir_literal_i64(b, 0));
  struct ql_plan_node scan = qt_node(QL_NODE_TABLE_SCAN);
  scan.table = &table;
  scan.name = "src";
  scan.n_projection = 2;
  scan.projection = proj;
  scan.n_exprs = 1;
  scan.exprs = &filter;
  scan.fetch = 100;
  ql_node_id n0 = add_node(b, scan, "x:l,y:u");

  ql_expr_id rows[4];
  rows[0] = ql_ir_literal_i64(b, 1);
  rows[1] = ql_ir_literal_utf8(b, "a'b");
  rows[2] = ql_ir_literal_i64(b, 2);
  rows[3] = ql_ir_literal_null(b, "u");
  struct ql_plan_node values = qt_node(QL_NODE_VALUES);
  values.n_rows = 2;
  values.n_exprs = 4;
  values.exprs = rows;
  ql_node_id n1 = add_node(b, values, "x:l,y:u");

  ql_node_id union_inputs[] = {n0, n1};
  struct ql_plan_node un = qt_node(QL_NODE_UNION);
  un.n_inputs = 2;
  un.inputs = union_inputs;
  ql_node_id n2 = add_node(b, un, "x:l,y:u");

  struct ql_plan_node alias = qt_node(QL_NODE_SUBQUERY_ALIAS);
  alias.n_inputs = 1;
  alias.inputs = &n2;
  alias.name = "t";
  ql_node_id n3 = add_node(b, alias, "x:l,y:u");

  ql_expr_id pred = ql_ir_binary(b, QL_OP_AND,
                                 ql_ir_binary(b, QL_OP_GT, ql_ir_column(b, "x", "t", 0), ql_ir_literal_i64(b, 3)),
                                 ql_ir_unary(b, QL_EXPR_IS_NOT_NULL, ql_ir_column(b, "y", "t", 1)));
  struct ql_plan_node filt = qt_node(QL_NODE_FILTER);
  filt.n_inputs = 1;
  filt.inputs = &n3;
  filt.n_exprs = 1;
  filt.exprs = &pred;
  ql_node_id n4 = add_node(b, filt, "x:l,y:u");

  ql_expr_id outs[2];
  outs[0] = ql_ir_column(b, "x", "t", 0);
  outs[1] = ql_ir_alias(
      b, ql_ir_binary(b, QL_OP_STRING_CONCAT, ql_ir_column(b, "y", "t", 1), ql_ir_literal_utf8(b, "!")), "y1");
  struct ql_plan_node proj_node = qt_node(QL_NODE_PROJECTION);
  proj_node.n_inputs = 1;
  proj_node.inputs = &n4;
  proj_node.n_exprs = 2;
  proj_node.exprs = outs;
  ql_node_id n5 = add_node(b, proj_node, "x:l,y1:u");

  ql_expr_id key = ql_ir_sort(b, ql_ir_column(b, "x", "t", 0), QL_SORT_DESC | QL_SORT_NULLS_FIRST);
  struct ql_plan_node sort = qt_node(QL_NODE_SORT);
  sort.n_inputs = 1;
  sort.inputs = &n5;
  sort.n_exprs = 1;
  sort.exprs = &key;
  sort.fetch = 15;
  ql_node_id n6 = add_node(b, sort, "x:l,y1:u");

  struct ql_plan_node limit = qt_node(QL_NODE_LIMIT);
  limit.n_inputs = 1;
  limit.inputs = &n6;
  limit.skip = 5;
  limit.fetch = 10;
  ql_node_id n7 = add_node(b, limit, "x:l,y1:u");

  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, n7, &v, &err), err);
  QL_CHECK_OK(ql_ir_validate(&v, &err), err);
  CHECK_PLAN_TEXT(&v, v.root,
                  "Limit: skip=5, fetch=10\n"
                  "  Sort: t.x DESC NULLS FIRST, fetch=15\n"
                  "    Projection: t.x, t.y || '!' AS y1\n"
                  "      Filter: (t.x > 3) AND (t.y IS NOT NULL)\n"
                  "        SubqueryAlias: t\n"
                  "          Union\n"
                  "            TableScan: src projection=[x, y], full_filters=[x >= 0], fetch=100\n"
                  "            Values: (1, 'a''b'), (2, NULL)\n");
  v.release(&v);
  ql_schema_release(&table_schema);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

/* Other / Limit without fetch / semi join with a filter / Distinct /
 * WindowAggr / EmptyRelation / a scan of all columns. */
static void test_other_nodes(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  struct ql_plan_node empty = qt_node(QL_NODE_EMPTY_RELATION);
  empty.flags = QL_NODE_PRODUCE_ONE_ROW;
  ql_node_id n0 = add_node(b, empty, "x:l");

  static const struct ql_function_id row_number = {QL_ORIGIN_BUILTIN, QL_FUNCTION_WINDOW, "row_number", NULL, 0};
  ql_expr_id wargs[] = {ql_ir_column(b, "x", NULL, 0), ql_ir_sort(b, ql_ir_column(b, "x", NULL, 0), 0)};
  struct ql_expr we;
  memset(&we, 0, sizeof(we));
  we.kind = QL_EXPR_WINDOW_FUNCTION;
  we.n_args = 2;
  we.args = wargs;
  we.name = "row_number";
  we.function = row_number;
  we.column_index = -1;
  we.filter = -1;
  we.n_func_args = 0;
  we.n_partition_by = 1;
  ql_expr_id wexpr = ql_ir_expr(b, &we);
  struct ql_plan_node window = qt_node(QL_NODE_WINDOW);
  window.n_inputs = 1;
  window.inputs = &n0;
  window.n_exprs = 1;
  window.exprs = &wexpr;
  ql_node_id n1 = add_node(b, window, "x:l,rn:L");

  struct ql_plan_node distinct = qt_node(QL_NODE_DISTINCT);
  distinct.n_inputs = 1;
  distinct.inputs = &n1;
  ql_node_id n2 = add_node(b, distinct, "x:l,rn:L");

  struct ArrowSchema u_schema;
  qt_schema(&u_schema, "x:l,rn:L");
  struct ql_table_ref u = {"u", &u_schema, NULL, NULL};
  struct ql_plan_node scan = qt_node(QL_NODE_TABLE_SCAN);
  scan.table = &u;
  ql_node_id n3 = add_node(b, scan, "x:l,rn:L");

  ql_expr_id lk = ql_ir_column(b, "x", NULL, 0), rk = ql_ir_column(b, "x", "u", 2);
  struct ql_plan_node join = qt_node(QL_NODE_JOIN);
  ql_node_id join_inputs[] = {n2, n3};
  join.join_type = QL_JOIN_LEFT_SEMI;
  join.flags = QL_NODE_NULL_EQUALS_NULL;
  join.n_inputs = 2;
  join.inputs = join_inputs;
  join.n_exprs = join.n_exprs2 = 1;
  join.exprs = &lk;
  join.exprs2 = &rk;
  join.condition = ql_ir_binary(b, QL_OP_GT, ql_ir_column(b, "rn", "u", 3), ql_ir_literal_i64(b, 1));
  ql_node_id n4 = add_node(b, join, "x:l,rn:L");

  struct ql_plan_node limit = qt_node(QL_NODE_LIMIT);
  limit.n_inputs = 1;
  limit.inputs = &n4;
  ql_node_id n5 = add_node(b, limit, "x:l,rn:L");

  struct ql_plan_node other = qt_node(QL_NODE_OTHER);
  other.n_inputs = 1;
  other.inputs = &n5;
  other.name = "MyExtension: k=3";
  ql_node_id n6 = add_node(b, other, "x:l,rn:L");

  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, n6, &v, &err), err);
  QL_CHECK_OK(ql_ir_validate(&v, &err), err);
  CHECK_PLAN_TEXT(&v, v.root,
                  "MyExtension: k=3\n"
                  "  Limit: skip=0, fetch=None\n"
                  "    LeftSemi Join: x IS NOT DISTINCT FROM u.x Filter: u.rn > 1\n"
                  "      Distinct:\n"
                  "        WindowAggr: windowExpr=[[row_number() OVER (PARTITION BY x ORDER BY x ASC NULLS LAST)]]\n"
                  "          EmptyRelation: rows=1\n"
                  "      TableScan: u\n");
  v.release(&v);
  ql_schema_release(&u_schema);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

/* A scan of every column with filters, a scan with only a fetch, UNION
 * (distinct), a join with only a filter, a sort without fetch. */
static void test_more_lines(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  struct ArrowSchema ab, a;
  qt_schema(&ab, "a:l,b:l");
  qt_schema(&a, "a:l");
  struct ql_table_ref t = {"t", &ab, NULL, NULL}, t2 = {"t2", &ab, NULL, NULL}, u = {"u", &a, NULL, NULL};
  ql_expr_id eq = ql_ir_binary(b, QL_OP_EQ, ql_ir_column(b, "a", NULL, 0), ql_ir_literal_i64(b, 1));
  struct ql_plan_node scan = qt_node(QL_NODE_TABLE_SCAN);
  scan.table = &t;
  scan.n_exprs = 1;
  scan.exprs = &eq;
  ql_node_id s0 = add_node(b, scan, "a:l,b:l");
  scan = qt_node(QL_NODE_TABLE_SCAN);
  scan.table = &t2;
  scan.fetch = 5;
  ql_node_id s1 = add_node(b, scan, "a:l,b:l");
  ql_node_id union_inputs[] = {s0, s1};
  struct ql_plan_node un = qt_node(QL_NODE_UNION);
  un.flags = QL_NODE_UNION_DISTINCT;
  un.n_inputs = 2;
  un.inputs = union_inputs;
  ql_node_id n2 = add_node(b, un, "a:l,b:l");
  scan = qt_node(QL_NODE_TABLE_SCAN);
  scan.table = &u;
  ql_node_id s3 = add_node(b, scan, "a:l");
  struct ql_plan_node join = qt_node(QL_NODE_JOIN);
  ql_node_id join_inputs[] = {n2, s3};
  join.join_type = QL_JOIN_INNER;
  join.n_inputs = 2;
  join.inputs = join_inputs;
  join.condition = ql_ir_binary(b, QL_OP_LT, ql_ir_column(b, "a", "t", 0), ql_ir_column(b, "a", "u", 2));
  ql_node_id n4 = add_node(b, join, "a:l,b:l,a:l");
  ql_expr_id key = ql_ir_sort(b, ql_ir_column(b, "a", "t", 0), 0);
  struct ql_plan_node sort = qt_node(QL_NODE_SORT);
  sort.n_inputs = 1;
  sort.inputs = &n4;
  sort.n_exprs = 1;
  sort.exprs = &key;
  ql_node_id n5 = add_node(b, sort, "a:l,b:l,a:l");
  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, n5, &v, &err), err);
  QL_CHECK_OK(ql_ir_validate(&v, &err), err);
  CHECK_PLAN_TEXT(&v, v.root,
                  "Sort: t.a ASC NULLS LAST\n"
                  "  Inner Join: Filter: t.a < u.a\n"
                  "    Union: distinct\n"
                  "      TableScan: t full_filters=[a = 1]\n"
                  "      TableScan: t2, fetch=5\n"
                  "    TableScan: u\n");
  v.release(&v);
  ql_schema_release(&ab);
  ql_schema_release(&a);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

static ql_expr_id col(struct ql_ir_builder *b, const char *name) { return ql_ir_column(b, name, NULL, -1); }

static ql_expr_id scalar(struct ql_ir_builder *b, const char *format, int64_t i64) {
  struct ql_scalar s = {.format = format};
  s.value.i64 = i64;
  return ql_ir_literal(b, &s);
}

static void test_expressions(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  enum { N = 40 };
  ql_expr_id ids[N];
  const char *want[N];
  int n = 0;
#define ADD(id, text) (ids[n] = (id), want[n] = (text), n++)
  ADD(ql_ir_binary(b, QL_OP_GT,
                   ql_ir_binary(b, QL_OP_PLUS, ql_ir_column(b, "a", "t", 0), ql_ir_cast(b, col(b, "b"), "g", 0)),
                   ql_ir_literal_i64(b, 3)),
      "(t.a + CAST(b AS g)) > 3");
  ql_expr_id case_args[] = {col(b, "x"), ql_ir_literal_i64(b, 1), ql_ir_literal_utf8(b, "one"),
                            ql_ir_literal_null(b, "u")};
  struct ql_expr e;
  memset(&e, 0, sizeof(e));
  e.kind = QL_EXPR_CASE;
  e.flags = QL_CASE_HAS_OPERAND | QL_CASE_HAS_ELSE;
  e.n_args = 4;
  e.args = case_args;
  e.filter = -1;
  ADD(ql_ir_expr(b, &e), "CASE x WHEN 1 THEN 'one' ELSE NULL END");
  ql_expr_id when_args[] = {ql_ir_binary(b, QL_OP_LT, col(b, "x"), ql_ir_literal_i64(b, 0)), ql_ir_literal_i64(b, -1)};
  e.flags = 0;
  e.n_args = 2;
  e.args = when_args;
  ADD(ql_ir_expr(b, &e), "CASE WHEN x < 0 THEN -1 END");
  ql_expr_id in_args[] = {col(b, "x"), ql_ir_literal_i64(b, 1), ql_ir_literal_i64(b, 2), ql_ir_literal_i64(b, 3)};
  e.kind = QL_EXPR_IN_LIST;
  e.flags = QL_EXPR_NEGATED;
  e.n_args = 4;
  e.args = in_args;
  ADD(ql_ir_expr(b, &e), "x NOT IN (1, 2, 3)");
  ql_expr_id between_args[] = {col(b, "x"), ql_ir_literal_i64(b, 1), ql_ir_literal_i64(b, 2)};
  e.kind = QL_EXPR_BETWEEN;
  e.flags = 0;
  e.n_args = 3;
  e.args = between_args;
  ADD(ql_ir_expr(b, &e), "x BETWEEN 1 AND 2");
  ql_expr_id like_args[] = {col(b, "name"), ql_ir_literal_utf8(b, "a%")};
  e.kind = QL_EXPR_LIKE;
  e.flags = QL_EXPR_NEGATED | QL_EXPR_CASE_INSENSITIVE;
  e.n_args = 2;
  e.args = like_args;
  ADD(ql_ir_expr(b, &e), "name NOT ILIKE 'a%'");
  ADD(ql_ir_unary(b, QL_EXPR_NOT, ql_ir_unary(b, QL_EXPR_IS_NULL, col(b, "x"))), "NOT (x IS NULL)");
  ADD(ql_ir_unary(b, QL_EXPR_NEGATIVE, col(b, "x")), "-x");
  ADD(ql_ir_unary(b, QL_EXPR_NEGATIVE, ql_ir_binary(b, QL_OP_MINUS, col(b, "x"), col(b, "y"))), "-(x - y)");
  ADD(ql_ir_cast(b, col(b, "ts"), "tsu:UTC", 1), "TRY_CAST(ts AS tsu:UTC)");
  ADD(ql_ir_binary(b, QL_OP_IS_DISTINCT_FROM, col(b, "x"), ql_ir_literal_null(b, "l")), "x IS DISTINCT FROM NULL");
  static const struct ql_function_id count = {QL_ORIGIN_BUILTIN, QL_FUNCTION_AGGREGATE, "count", NULL, 0};
  ql_expr_id count_arg = col(b, "x");
  ql_expr_id count_filter = ql_ir_binary(b, QL_OP_GT, col(b, "x"), ql_ir_literal_i64(b, 0));
  ADD(ql_ir_function(b, QL_EXPR_AGGREGATE_FUNCTION, &count, &count_arg, 1, QL_EXPR_DISTINCT, count_filter),
      "count(DISTINCT x) FILTER (WHERE x > 0)");
  static const struct ql_function_id my_sum = {QL_ORIGIN_USER, QL_FUNCTION_SCALAR, "my_sum", "qlink_sample", 7};
  ql_expr_id fargs[] = {col(b, "x"), ql_ir_literal_f64(b, 0.5)};
  ADD(ql_ir_function(b, QL_EXPR_SCALAR_FUNCTION, &my_sum, fargs, 2, 0, -1), "my_sum(x, 0.5)");
  ADD(ql_ir_function(b, QL_EXPR_SCALAR_FUNCTION, &my_sum, NULL, 0, 0, -1), "my_sum()");
  memset(&e, 0, sizeof(e));
  e.kind = QL_EXPR_OTHER;
  e.name = "exists(<subquery>)";
  e.filter = -1;
  ADD(ql_ir_expr(b, &e), "exists(<subquery>)");
  /* literals */
  ADD(ql_ir_literal_f64(b, 0.1), "0.1");
  ADD(ql_ir_literal_f64(b, 3.0), "3.0");
  ADD(ql_ir_literal_f64(b, -0.5), "-0.5");
  ADD(ql_ir_literal_f64(b, 1e300), "1e+300");
  ADD(ql_ir_literal_f64(b, 1.0 / 3.0), "0.3333333333333333");
  ADD(ql_ir_literal_f64(b, 0.1 + 0.2), "0.30000000000000004");
  ADD(ql_ir_literal_f64(b, NAN), "NaN");
  ADD(ql_ir_literal_f64(b, -INFINITY), "-inf");
  struct ql_scalar f32 = {.format = "f"};
  f32.value.f64 = (double)0.1f;
  ADD(ql_ir_literal(b, &f32), "0.1");
  ADD(scalar(b, "b", 1), "true");
  ADD(scalar(b, "b", 0), "false");
  ADD(scalar(b, "l", INT64_MIN), "-9223372036854775808");
  struct ql_scalar u64 = {.format = "L"};
  u64.value.u64 = UINT64_MAX;
  ADD(ql_ir_literal(b, &u64), "18446744073709551615");
  ADD(scalar(b, "tdD", 19000), "DATE '2022-01-08'");
  ADD(scalar(b, "tdD", -1), "DATE '1969-12-31'");
  ADD(scalar(b, "tsu:UTC", 1700000000), "CAST(1700000000 AS tsu:UTC)");
  struct ql_scalar dec = {.format = "d:10,2"};
  dec.value.dec128.lo = 12345;
  dec.value.dec128.hi = 0;
  ADD(ql_ir_literal(b, &dec), "123.45");
  dec.format = "d:5,2";
  dec.value.dec128.lo = (uint64_t)-5;
  dec.value.dec128.hi = -1;
  ADD(ql_ir_literal(b, &dec), "-0.05");
  struct ql_scalar bin = {.format = "z"};
  bin.value.bytes.data = "\x00\xff";
  bin.value.bytes.size = 2;
  ADD(ql_ir_literal(b, &bin), "X'00ff'");
  ADD(scalar(b, "+l", 0), "<+l literal>");
  ADD(ql_ir_literal_null(b, NULL), "NULL");
#undef ADD
  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &v, &err), err);
  QL_CHECK_OK(ql_ir_validate_exprs(&v, ids, n, &err), err);
  for (int i = 0; i < n; i++) {
    CHECK_EXPR_TEXT(&v, ids[i], want[i]);
  }
  v.release(&v);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

/* Bad ids and shared entries are refused, never followed forever. */
static void test_errors(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  char *text = NULL;
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  ql_expr_id x = ql_ir_column(b, "x", NULL, 0);
  ql_expr_id sum = ql_ir_binary(b, QL_OP_PLUS, x, x); /* a DAG, not a tree */
  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &v, &err), err);
  QL_CHECK_INT(ql_ir_expr_to_string(&v, 9, &text, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "printing: expr 9 out of range (2 exprs)");
  QL_CHECK(text == NULL);
  QL_CHECK_INT(ql_ir_expr_to_string(&v, sum, &text, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "printing: expr 0 is reached twice (not a tree)");
  QL_CHECK_INT(ql_ir_plan_to_string(&v, 0, &text, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "printing: node 0 out of range (0 nodes)");
  QL_CHECK_INT(ql_ir_expr_to_string(&v, x, NULL, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "ql_ir_expr_to_string: out is NULL");
  QL_CHECK_INT(ql_ir_plan_to_string(NULL, 0, &text, NULL), QL_EINVAL);
  v.release(&v);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

static void test_names(void) {
  QL_CHECK_STR(ql_expr_kind_name(QL_EXPR_BINARY), "BINARY");
  QL_CHECK_STR(ql_expr_kind_name(QL_EXPR_OTHER), "OTHER");
  QL_CHECK_STR(ql_expr_kind_name(0), "UNKNOWN");
  QL_CHECK_STR(ql_node_kind_name(QL_NODE_AGGREGATE), "Aggregate");
  QL_CHECK_STR(ql_node_kind_name(QL_NODE_WINDOW), "WindowAggr");
  QL_CHECK_STR(ql_node_kind_name(15), "Unknown");
  QL_CHECK_STR(ql_binary_op_symbol(QL_OP_PLUS), "+");
  QL_CHECK_STR(ql_binary_op_symbol(QL_OP_AND), "AND");
  QL_CHECK_STR(ql_binary_op_symbol(QL_OP_IS_DISTINCT_FROM), "IS DISTINCT FROM");
  QL_CHECK_STR(ql_binary_op_symbol(QL_OP_STRING_CONCAT), "||");
  QL_CHECK_STR(ql_binary_op_symbol(-1), "<unknown op>");
  QL_CHECK_STR(ql_join_type_name(QL_JOIN_INNER), "Inner");
  QL_CHECK_STR(ql_join_type_name(QL_JOIN_RIGHT_ANTI), "RightAnti");
  QL_CHECK_STR(ql_join_type_name(99), "Unknown");
}

int main(void) {
  test_matmul();
  test_relational_plan();
  test_other_nodes();
  test_more_lines();
  test_expressions();
  test_errors();
  test_names();
  QL_TEST_END();
}
