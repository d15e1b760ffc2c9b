/* SPDX-License-Identifier: Apache-2.0 */
/* Plans shared by the IR tests (builder_test.c, validate_test.c,
 * print_test.c). Header-only so the library glob does not pick it up. */
#ifndef QL_IR_TEST_PLANS_H
#define QL_IR_TEST_PLANS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"

/* A struct schema from "name:format,name:format" (no spaces); aborts on
 * failure since a test cannot go on without it. */
static inline void qt_schema(struct ArrowSchema *out, const char *spec) {
  char buf[512];
  int64_t n = 0;
  snprintf(buf, sizeof(buf), "%s", spec);
  for (const char *p = spec; *p; p++) n += (*p == ',');
  n += spec[0] != '\0';
  if (ql_schema_init_struct(out, NULL, n, NULL) != QL_OK) abort();
  char *save = NULL;
  int64_t i = 0;
  for (char *field = strtok_r(buf, ",", &save); field; field = strtok_r(NULL, ",", &save), i++) {
    char *colon = strrchr(field, ':');
    if (!colon) abort();
    *colon = '\0';
    if (ql_schema_init(out->children[i], colon + 1, field, ARROW_FLAG_NULLABLE, NULL) != QL_OK) abort();
  }
}

/* A node with every unused member at its "none" value. */
static inline struct ql_plan_node qt_node(int32_t kind) {
  struct ql_plan_node n;
  memset(&n, 0, sizeof(n));
  n.kind = kind;
  n.condition = -1;
  n.n_projection = -1;
  n.fetch = -1;
  return n;
}

__attribute__((unused)) static const struct ql_function_id qt_sum = {QL_ORIGIN_BUILTIN, QL_FUNCTION_AGGREGATE, "sum", NULL, 0};

/* Handles a host would put in table refs; only their identity matters. */
__attribute__((unused)) static int qt_handle_a, qt_handle_w;

/* SELECT a.s, w.o, sum(a.val * w.val) FROM a JOIN w ON a.k = w.k GROUP BY a.s, w.o
 * as DataFusion's optimizer leaves it:
 *   node 0 TableScan a, node 1 TableScan w, node 2 Join, node 3 Aggregate (root);
 *   expr 0 a.k, 1 w.k (join keys), 2 a.s, 3 w.o (group keys),
 *   4 a.val, 5 w.val, 6 a.val * w.val, 7 sum(...). */
static inline ql_node_id qt_build_matmul(struct ql_ir_builder *b) {
  struct ArrowSchema a, w, join, agg;
  qt_schema(&a, "s:l,k:l,val:g");
  qt_schema(&w, "k:l,o:l,val:g");
  qt_schema(&join, "s:l,k:l,val:g,k:l,o:l,val:g");
  qt_schema(&agg, "s:l,o:l,sum(a.val * w.val):g");
  struct ql_table_ref ta = {"a", &a, &qt_handle_a, NULL};
  struct ql_table_ref tw = {"w", &w, &qt_handle_w, NULL};
  static const int32_t all3[] = {0, 1, 2};
  static const char *const qa[] = {"a", "a", "a"}, *const qw[] = {"w", "w", "w"};
  static const char *const qjoin[] = {"a", "a", "a", "w", "w", "w"}, *const qagg[] = {"a", "w", NULL};

  struct ql_plan_node scan_a = qt_node(QL_NODE_TABLE_SCAN);
  scan_a.schema = &a;
  scan_a.field_qualifiers = qa;
  scan_a.n_projection = 3;
  scan_a.projection = all3;
  scan_a.name = "a";
  scan_a.table = &ta;
  ql_node_id sa = ql_ir_node(b, &scan_a);
  struct ql_plan_node scan_w = scan_a;
  scan_w.schema = &w;
  scan_w.field_qualifiers = qw;
  scan_w.name = "w";
  scan_w.table = &tw;
  ql_node_id sw = ql_ir_node(b, &scan_w);

  ql_expr_id lk = ql_ir_column(b, "k", "a", 1);
  ql_expr_id rk = ql_ir_column(b, "k", "w", 3);
  ql_node_id inputs[2] = {sa, sw};
  struct ql_plan_node jn = qt_node(QL_NODE_JOIN);
  jn.join_type = QL_JOIN_INNER;
  jn.n_inputs = 2;
  jn.inputs = inputs;
  jn.schema = &join;
  jn.field_qualifiers = qjoin;
  jn.n_exprs = 1;
  jn.exprs = &lk;
  jn.n_exprs2 = 1;
  jn.exprs2 = &rk;
  ql_node_id j = ql_ir_node(b, &jn);

  ql_expr_id groups[2];
  groups[0] = ql_ir_column(b, "s", "a", 0);
  groups[1] = ql_ir_column(b, "o", "w", 4);
  ql_expr_id av = ql_ir_column(b, "val", "a", 2);
  ql_expr_id wv = ql_ir_column(b, "val", "w", 5);
  ql_expr_id mul = ql_ir_binary(b, QL_OP_MULTIPLY, av, wv);
  ql_expr_id sum = ql_ir_function(b, QL_EXPR_AGGREGATE_FUNCTION, &qt_sum, &mul, 1, 0, -1);
  struct ql_plan_node an = qt_node(QL_NODE_AGGREGATE);
  an.n_inputs = 1;
  an.inputs = &j;
  an.schema = &agg;
  an.field_qualifiers = qagg;
  an.n_exprs = 2;
  an.exprs = groups;
  an.n_exprs2 = 1;
  an.exprs2 = &sum;
  ql_node_id root = ql_ir_node(b, &an);

  ql_schema_release(&a);
  ql_schema_release(&w);
  ql_schema_release(&join);
  ql_schema_release(&agg);
  return root;
}

__attribute__((unused)) static const char qt_matmul_text[] =
    "Aggregate: groupBy=[[a.s, w.o]], aggr=[[sum(a.val * w.val)]]\n"
    "  Inner Join: a.k = w.k\n"
    "    TableScan: a projection=[s, k, val]\n"
    "    TableScan: w projection=[k, o, val]\n";

#endif /* QL_IR_TEST_PLANS_H */
