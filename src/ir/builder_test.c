/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the IR builder: every field round-trips as a copy, ids and
 * errors behave as qlink/lib/ir.h says, and releasing frees everything
 * (run under ASan and valgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_test_plans.h"
#include "ql_test.h"

static void test_matmul_round_trip(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  ql_node_id root = qt_build_matmul(b);
  QL_CHECK_INT(root, 3);
  QL_CHECK_OK(ql_ir_builder_status(b, &err), err);
  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, root, &v, &err), err);
  QL_CHECK_INT(v.struct_size, sizeof(struct ql_plan_view));
  QL_CHECK_INT(v.n_nodes, 4);
  QL_CHECK_INT(v.n_exprs, 8);
  QL_CHECK_INT(v.root, 3);
  QL_CHECK(v.release != NULL);

  const struct ql_plan_node *scan = &v.nodes[0];
  QL_CHECK_INT(scan->kind, QL_NODE_TABLE_SCAN);
  QL_CHECK_INT(scan->n_inputs, 0);
  QL_CHECK(scan->inputs == NULL);
  QL_CHECK_STR(scan->name, "a");
  QL_CHECK_INT(scan->n_projection, 3);
  QL_CHECK_INT(scan->projection[0], 0);
  QL_CHECK_INT(scan->projection[2], 2);
  QL_CHECK_INT(scan->fetch, -1);
  QL_CHECK_STR(scan->schema->format, "+s");
  QL_CHECK_INT(scan->schema->n_children, 3);
  QL_CHECK_STR(scan->schema->children[2]->name, "val");
  QL_CHECK_STR(scan->schema->children[2]->format, "g");
  QL_CHECK_INT(scan->schema->children[2]->flags, ARROW_FLAG_NULLABLE);
  QL_CHECK(scan->schema->release != NULL);
  QL_CHECK_STR(scan->field_qualifiers[1], "a");
  QL_CHECK_STR(scan->table->name, "a");
  QL_CHECK(scan->table->host_handle == &qt_handle_a);
  QL_CHECK(scan->table->provider == NULL);
  QL_CHECK_INT(scan->table->schema->n_children, 3);
  QL_CHECK_STR(scan->table->schema->children[0]->name, "s");
  QL_CHECK(v.nodes[1].table->host_handle == &qt_handle_w);
  QL_CHECK_STR(v.nodes[1].schema->children[1]->name, "o");

  const struct ql_plan_node *join = &v.nodes[2];
  QL_CHECK_INT(join->kind, QL_NODE_JOIN);
  QL_CHECK_INT(join->join_type, QL_JOIN_INNER);
  QL_CHECK_INT(join->n_inputs, 2);
  QL_CHECK_INT(join->inputs[0], 0);
  QL_CHECK_INT(join->inputs[1], 1);
  QL_CHECK_INT(join->n_exprs, 1);
  QL_CHECK_INT(join->exprs[0], 0);
  QL_CHECK_INT(join->exprs2[0], 1);
  QL_CHECK_INT(join->condition, -1);
  QL_CHECK_STR(join->field_qualifiers[3], "w");
  QL_CHECK(join->table == NULL);

  const struct ql_plan_node *agg = &v.nodes[3];
  QL_CHECK_INT(agg->inputs[0], 2);
  QL_CHECK_INT(agg->n_exprs, 2);
  QL_CHECK_INT(agg->exprs[0], 2);
  QL_CHECK_INT(agg->exprs[1], 3);
  QL_CHECK_INT(agg->exprs2[0], 7);
  QL_CHECK(agg->field_qualifiers[2] == NULL);
  QL_CHECK_STR(agg->schema->children[2]->name, "sum(a.val * w.val)");

  const struct ql_expr *col = &v.exprs[3];
  QL_CHECK_INT(col->kind, QL_EXPR_COLUMN);
  QL_CHECK_STR(col->name, "o");
  QL_CHECK_STR(col->qualifier, "w");
  QL_CHECK_INT(col->column_index, 4);
  QL_CHECK_INT(col->n_args, 0);
  QL_CHECK_INT(col->filter, -1);
  const struct ql_expr *mul = &v.exprs[6];
  QL_CHECK_INT(mul->kind, QL_EXPR_BINARY);
  QL_CHECK_INT(mul->op, QL_OP_MULTIPLY);
  QL_CHECK_INT(mul->n_args, 2);
  QL_CHECK_INT(mul->args[0], 4);
  QL_CHECK_INT(mul->args[1], 5);
  const struct ql_expr *sum = &v.exprs[7];
  QL_CHECK_INT(sum->kind, QL_EXPR_AGGREGATE_FUNCTION);
  QL_CHECK_STR(sum->name, "sum");
  QL_CHECK_INT(sum->function.origin, QL_ORIGIN_BUILTIN);
  QL_CHECK_INT(sum->function.kind, QL_FUNCTION_AGGREGATE);
  QL_CHECK_STR(sum->function.name, "sum");
  QL_CHECK(sum->function.name != qt_sum.name); /* copied, not borrowed */
  QL_CHECK(sum->function.library == NULL);
  QL_CHECK_INT(sum->args[0], 6);
  QL_CHECK_INT(sum->filter, -1);

  v.release(&v);
  QL_CHECK(v.release == NULL);
  /* The builder is empty and reusable after finish. */
  QL_CHECK_INT(ql_ir_column(b, "x", NULL, 0), 0);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

static void noop_array_release(struct ArrowArray *a) { a->release = NULL; }

/* Every member of ql_expr, including a literal with bytes, schema and array. */
static void test_expr_every_field(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  ql_expr_id x = ql_ir_column(b, "x", "t", 0);
  ql_expr_id s = ql_ir_sort(b, ql_ir_column(b, "y", "t", 1), QL_SORT_DESC);

  /* A utf8 array of three values; the literal is row 1 ("bc") via offset 1. */
  int32_t offsets[] = {0, 1, 3, 6};
  const char data[] = "abcdef";
  uint8_t validity = 0x7;
  const void *buffers[] = {&validity, offsets, data};
  struct ArrowArray arr = {.length = 1, .null_count = 0, .offset = 1, .n_buffers = 3, .buffers = buffers,
                           .release = noop_array_release};
  struct ArrowSchema field;
  QL_CHECK_OK(ql_schema_init(&field, "u", "lit", ARROW_FLAG_NULLABLE, &err), err);
  static const char *const keys[] = {"origin"}, *const vals[] = {"test"};
  QL_CHECK_OK(ql_schema_set_metadata(&field, 1, keys, vals, &err), err);
  char text[] = "bc";
  struct ql_expr e;
  memset(&e, 0, sizeof(e));
  e.kind = QL_EXPR_LITERAL;
  e.op = 5;
  e.flags = QL_EXPR_NEGATED;
  e.name = "lit_name";
  e.qualifier = "q";
  e.column_index = 9;
  e.n_func_args = 2;
  e.n_partition_by = 1;
  e.filter = 0; /* unused by LITERAL: kept as given */
  e.function = (struct ql_function_id){QL_ORIGIN_USER, QL_FUNCTION_SCALAR, "f", "lib", 42};
  e.literal.format = "u";
  e.literal.value.bytes.data = text;
  e.literal.value.bytes.size = 2;
  e.literal.schema = &field;
  e.literal.array = &arr;
  e.type_format = "u";
  ql_expr_id args[] = {x, s};
  e.n_args = 2;
  e.args = args;
  ql_expr_id id = ql_ir_expr(b, &e);
  QL_CHECK_INT(id, 3);
  text[0] = 'Z'; /* the copy must not see this */
  args[0] = 77;

  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &v, &err), err);
  QL_CHECK_INT(v.root, -1);
  QL_CHECK_INT(v.n_nodes, 0);
  QL_CHECK(v.nodes == NULL);
  const struct ql_expr *c = &v.exprs[id];
  QL_CHECK_INT(c->kind, QL_EXPR_LITERAL);
  QL_CHECK_INT(c->op, 5);
  QL_CHECK_INT(c->flags, QL_EXPR_NEGATED);
  QL_CHECK_INT(c->n_args, 2);
  QL_CHECK_INT(c->args[0], x);
  QL_CHECK_INT(c->args[1], s);
  QL_CHECK_STR(c->name, "lit_name");
  QL_CHECK_STR(c->qualifier, "q");
  QL_CHECK_INT(c->column_index, 9);
  QL_CHECK_INT(c->n_func_args, 2);
  QL_CHECK_INT(c->n_partition_by, 1);
  QL_CHECK_INT(c->filter, 0);
  QL_CHECK_INT(c->function.origin, QL_ORIGIN_USER);
  QL_CHECK_INT(c->function.kind, QL_FUNCTION_SCALAR);
  QL_CHECK_STR(c->function.name, "f");
  QL_CHECK_STR(c->function.library, "lib");
  QL_CHECK_INT(c->function.uid, 42);
  QL_CHECK_STR(c->type_format, "u");
  QL_CHECK_STR(c->literal.format, "u");
  QL_CHECK_INT(c->literal.is_null, 0);
  QL_CHECK_INT(c->literal.value.bytes.size, 2);
  QL_CHECK(memcmp(c->literal.value.bytes.data, "bc", 2) == 0);
  QL_CHECK(c->literal.value.bytes.data != text);
  QL_CHECK_STR(c->literal.schema->format, "u");
  QL_CHECK_STR(c->literal.schema->name, "lit");
  char *meta = NULL;
  QL_CHECK_INT(ql_schema_metadata_get(c->literal.schema, "origin", &meta), QL_OK);
  QL_CHECK_STR(meta, "test");
  free(meta);
  const struct ArrowArray *ca = c->literal.array;
  QL_CHECK_INT(ca->length, 1);
  QL_CHECK_INT(ca->offset, 0);
  QL_CHECK_INT(ca->null_count, 0);
  QL_CHECK_INT(ca->n_buffers, 3);
  QL_CHECK_INT(((const int32_t *)ca->buffers[1])[0], 0);
  QL_CHECK_INT(((const int32_t *)ca->buffers[1])[1], 2);
  QL_CHECK(memcmp(ca->buffers[2], "bc", 2) == 0);
  QL_CHECK_INT(((const uint8_t *)ca->buffers[0])[0] & 1, 1);
  QL_CHECK_INT(v.exprs[s].kind, QL_EXPR_SORT);
  QL_CHECK_INT(v.exprs[s].flags, QL_SORT_DESC);
  QL_CHECK_INT(v.exprs[s].args[0], 1);
  v.release(&v);
  ql_schema_release(&field);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

/* Fixed-width and boolean literal arrays re-based to offset 0. */
static void test_literal_arrays(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  int32_t ints[] = {10, 20, 30};
  uint8_t validity = 0x3; /* row 2 is null */
  const void *ibuf[] = {&validity, ints};
  struct ArrowArray iarr = {.length = 1, .offset = 2, .null_count = 1, .n_buffers = 2, .buffers = ibuf,
                            .release = noop_array_release};
  struct ql_scalar si = {.format = "i", .is_null = 1, .array = &iarr};
  ql_expr_id a = ql_ir_literal(b, &si);
  uint8_t bits = 0x2; /* rows: false, true */
  const void *bbuf[] = {NULL, &bits};
  struct ArrowArray barr = {.length = 1, .offset = 1, .n_buffers = 2, .buffers = bbuf, .release = noop_array_release};
  struct ql_scalar sb = {.format = "b", .array = &barr};
  sb.value.i64 = 1;
  ql_expr_id bo = ql_ir_literal(b, &sb);
  ql_expr_id i = ql_ir_literal_i64(b, -7);
  ql_expr_id f = ql_ir_literal_f64(b, 2.5);
  ql_expr_id u = ql_ir_literal_utf8(b, "hé");
  ql_expr_id n = ql_ir_literal_null(b, "l");
  ql_expr_id nn = ql_ir_literal_null(b, NULL);
  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &v, &err), err);
  const struct ArrowArray *ca = v.exprs[a].literal.array;
  QL_CHECK_INT(ca->offset, 0);
  QL_CHECK_INT(ca->null_count, 1);
  QL_CHECK_INT(((const int32_t *)ca->buffers[1])[0], 30);
  QL_CHECK_INT(((const uint8_t *)ca->buffers[0])[0] & 1, 0);
  QL_CHECK_INT(v.exprs[a].literal.is_null, 1);
  const struct ArrowArray *cb = v.exprs[bo].literal.array;
  QL_CHECK_INT(cb->null_count, 0);
  QL_CHECK_INT(((const uint8_t *)cb->buffers[1])[0] & 1, 1);
  QL_CHECK_STR(v.exprs[i].literal.format, "l");
  QL_CHECK_INT(v.exprs[i].literal.value.i64, -7);
  QL_CHECK_STR(v.exprs[i].type_format, "l");
  QL_CHECK(v.exprs[f].literal.value.f64 == 2.5);
  QL_CHECK_STR(v.exprs[f].literal.format, "g");
  QL_CHECK_INT(v.exprs[u].literal.value.bytes.size, 3);
  QL_CHECK(memcmp(v.exprs[u].literal.value.bytes.data, "hé", 3) == 0);
  QL_CHECK_INT(v.exprs[n].literal.is_null, 1);
  QL_CHECK_STR(v.exprs[n].literal.format, "l");
  QL_CHECK_STR(v.exprs[nn].literal.format, "n");
  QL_CHECK(v.exprs[i].literal.array == NULL);
  QL_CHECK(v.exprs[i].literal.schema == NULL);
  v.release(&v);

  /* A list literal's array is not copyable: QL_ENOTSUP. */
  const void *lbuf[] = {NULL, NULL};
  struct ArrowArray larr = {.length = 1, .n_buffers = 2, .buffers = lbuf, .release = noop_array_release};
  struct ql_scalar sl = {.format = "+l", .array = &larr};
  QL_CHECK_INT(ql_ir_literal(b, &sl), -1);
  QL_CHECK_INT(ql_ir_builder_finish(b, -1, &v, &err), QL_ENOTSUP);
  QL_CHECK_STR(ql_error_message(&err), "IR builder: literal arrays of format \"+l\" are not supported");
  QL_CHECK_STR(err.sqlstate, "0A000");
  /* A length-3 array is not a scalar. */
  iarr.length = 3;
  QL_CHECK_INT(ql_ir_literal(b, &si), -1);
  QL_CHECK_INT(ql_ir_builder_status(b, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err),
               "IR builder: a literal's array must be a live length-1 array (length 3)");
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

/* The first failure sticks; later calls return -1; finish reports it and
 * leaves the builder empty and reusable. */
static void test_sticky_errors(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  ql_expr_id x = ql_ir_column(b, "x", NULL, 0);
  QL_CHECK_INT(x, 0);
  QL_CHECK_INT(ql_ir_binary(b, QL_OP_PLUS, x, 5), -1);
  QL_CHECK_INT(ql_ir_column(b, "y", NULL, 1), -1);
  QL_CHECK_INT(ql_ir_unary(b, 99, x), -1);
  QL_CHECK_INT(ql_ir_builder_status(b, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "IR builder: expression args[1] = 5 does not exist (have 1)");
  QL_CHECK_STR(err.sqlstate, "22023");
  struct ql_plan_view v = {0};
  QL_CHECK_INT(ql_ir_builder_finish(b, -1, &v, &err), QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "IR builder: expression args[1] = 5 does not exist (have 1)");
  QL_CHECK(v.release == NULL);
  QL_CHECK_INT(ql_ir_builder_status(b, NULL), QL_OK);

  /* Each convenience call checks what it needs. */
  struct {
    int which;
    const char *message;
  } cases[] = {
      {0, "IR builder: a column needs a name"},
      {1, "IR builder: ql_ir_unary does not build kind 3"},
      {2, "IR builder: a cast needs a target type format"},
      {3, "IR builder: an alias needs a name"},
      {4, "IR builder: ql_ir_function does not build kind 14"},
      {5, "IR builder: FILTER applies to aggregate functions only (sum)"},
      {6, "IR builder: filter 9 does not exist (have 1 expressions)"},
      {7, "IR builder: root node 0 does not exist (have 0 nodes)"},
      {8, "IR builder: node inputs[0] = 0 does not exist (have 0)"},
      {9, "IR builder: join condition 4 does not exist (have 1 expressions)"},
      {10, "IR builder: a utf8 literal needs a string (use ql_ir_literal_null)"},
      {11, "IR builder: field_qualifiers given without a schema to size them"},
      {12, "IR builder: n_projection -2 (use -1 for all columns)"},
      {13, "IR builder: 2 node exprs but the array is NULL"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ql_expr_id arg = ql_ir_column(b, "x", NULL, 0);
    struct ql_plan_node n = qt_node(QL_NODE_PROJECTION);
    static const char *const quals[] = {"t"};
    ql_node_id root = -1;
    switch (cases[i].which) {
      case 0: ql_ir_column(b, NULL, NULL, 0); break;
      case 1: ql_ir_unary(b, QL_EXPR_BINARY, arg); break;
      case 2: ql_ir_cast(b, arg, NULL, 0); break;
      case 3: ql_ir_alias(b, arg, NULL); break;
      case 4: ql_ir_function(b, QL_EXPR_WINDOW_FUNCTION, &qt_sum, &arg, 1, 0, -1); break;
      case 5: ql_ir_function(b, QL_EXPR_SCALAR_FUNCTION, &qt_sum, &arg, 1, 0, arg); break;
      case 6: ql_ir_function(b, QL_EXPR_AGGREGATE_FUNCTION, &qt_sum, &arg, 1, 0, 9); break;
      case 7: root = 0; break;
      case 8: n.n_inputs = 1; n.inputs = &root; root = 0; ql_ir_node(b, &n); break;
      case 9: n.kind = QL_NODE_JOIN; n.condition = 4; ql_ir_node(b, &n); break;
      case 10: ql_ir_literal_utf8(b, NULL); break;
      case 11: n.field_qualifiers = quals; ql_ir_node(b, &n); break;
      case 12: n.n_projection = -2; ql_ir_node(b, &n); break;
      case 13: n.n_exprs = 2; ql_ir_node(b, &n); break;
    }
    QL_CHECK_INT(ql_ir_builder_finish(b, root, &v, &err), QL_EINVAL);
    QL_CHECK_STR(ql_error_message(&err), cases[i].message);
  }
  ql_ir_builder_free(b);
  ql_ir_builder_free(NULL);
  QL_CHECK_INT(ql_ir_builder_new(NULL, &err), QL_EINVAL);
  QL_CHECK_INT(ql_ir_builder_status(NULL, NULL), QL_EINVAL);
  ql_error_release(&err);
}

/* Many entries: arrays grow and blocks chain, and earlier pointers stay
 * valid (ASan would catch a stale one). */
static void test_growth(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  char name[32];
  ql_expr_id prev = ql_ir_column(b, "c0", NULL, 0);
  for (int i = 1; i < 20000; i++) {
    snprintf(name, sizeof(name), "c%d", i);
    ql_expr_id col = ql_ir_column(b, name, NULL, i);
    prev = ql_ir_binary(b, QL_OP_AND, prev, col);
  }
  QL_CHECK_INT(prev, 39998);
  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &v, &err), err);
  QL_CHECK_INT(v.n_exprs, 39999);
  QL_CHECK_STR(v.exprs[0].name, "c0");
  QL_CHECK_STR(v.exprs[39997].name, "c19999");
  QL_CHECK_INT(v.exprs[39998].args[0], 39996);
  QL_CHECK_INT(v.exprs[39998].args[1], 39997);
  /* A 20000-deep left chain validates without recursion. */
  QL_CHECK_OK(ql_ir_validate_exprs(&v, &prev, 1, &err), err);
  v.release(&v);
  ql_ir_builder_free(b);
  ql_error_release(&err);
}

/* Memory the builder handed out is shared, not copied: one struct schema
 * and one qualifier array serve two nodes and a table reference; strings
 * need no NUL terminator and lose inner NULs to spaces. */
static void test_shared_memory(void) {
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  const char *formats[2] = {"l", "g"};
  const char *names[2] = {"keyXX", "v\0al"};
  const size_t lengths[2] = {3, 4};
  const int64_t flags[2] = {0, 2};
  const struct ArrowSchema *schema = ql_ir_struct_schema(b, 2, formats, names, lengths, flags);
  QL_CHECK(schema != NULL);
  const char *t = ql_ir_string(b, "tbl.ignored", 3);
  const char **quals = ql_ir_string_array(b, 2);
  QL_CHECK(quals != NULL);
  quals[0] = t;
  quals[1] = NULL;
  ql_expr_id col = ql_ir_column(b, ql_ir_string(b, "key", 3), t, 0);
  struct ql_table_ref table = {t, schema, NULL, NULL};
  struct ql_plan_node scan = qt_node(QL_NODE_TABLE_SCAN);
  scan.schema = schema;
  scan.field_qualifiers = quals;
  scan.name = t;
  scan.table = &table;
  ql_node_id s = ql_ir_node(b, &scan);
  struct ql_plan_node filter = qt_node(QL_NODE_FILTER);
  ql_node_id inputs[1] = {s};
  filter.n_inputs = 1;
  filter.inputs = inputs;
  filter.schema = schema;
  filter.field_qualifiers = quals;
  ql_expr_id pred = ql_ir_binary(b, QL_OP_GT, col, ql_ir_literal_i64(b, 1));
  filter.n_exprs = 1;
  filter.exprs = &pred;
  ql_node_id f = ql_ir_node(b, &filter);
  struct ql_plan_view v;
  QL_CHECK_OK(ql_ir_builder_finish(b, f, &v, &err), err);
  QL_CHECK_OK(ql_ir_validate(&v, &err), err);
  QL_CHECK(v.nodes[0].schema == v.nodes[1].schema);
  QL_CHECK(v.nodes[0].table->schema == v.nodes[0].schema);
  QL_CHECK(v.nodes[0].field_qualifiers == v.nodes[1].field_qualifiers);
  QL_CHECK(v.nodes[0].name == v.nodes[0].field_qualifiers[0]);
  QL_CHECK_STR(v.nodes[1].field_qualifiers[0], "tbl");
  QL_CHECK(v.nodes[1].field_qualifiers[1] == NULL);
  QL_CHECK_STR(v.nodes[1].schema->format, "+s");
  QL_CHECK_INT(v.nodes[1].schema->n_children, 2);
  QL_CHECK_STR(v.nodes[1].schema->children[0]->name, "key");
  QL_CHECK_STR(v.nodes[1].schema->children[0]->format, "l");
  QL_CHECK_INT(v.nodes[1].schema->children[0]->flags, 0);
  QL_CHECK_STR(v.nodes[1].schema->children[1]->name, "v al");
  QL_CHECK_STR(v.nodes[1].schema->children[1]->format, "g");
  QL_CHECK_INT(v.nodes[1].schema->children[1]->flags, 2);
  QL_CHECK_STR(v.exprs[col].name, "key");
  QL_CHECK(v.exprs[col].qualifier == t);
  v.release(&v);

  /* An array mixing in a caller's string is copied, strings and all. */
  char mine[4] = "own";
  const struct ArrowSchema *one = ql_ir_struct_schema(b, 1, formats, names, lengths, flags);
  const char **mixed = ql_ir_string_array(b, 1);
  mixed[0] = mine;
  struct ql_plan_node e = qt_node(QL_NODE_EMPTY_RELATION);
  e.schema = one;
  e.field_qualifiers = mixed;
  ql_node_id id = ql_ir_node(b, &e);
  QL_CHECK_OK(ql_ir_builder_finish(b, id, &v, &err), err);
  QL_CHECK(v.nodes[0].field_qualifiers != (const char *const *)mixed);
  QL_CHECK(v.nodes[0].field_qualifiers[0] != mine);
  mine[0] = 'X';
  QL_CHECK_STR(v.nodes[0].field_qualifiers[0], "own");
  v.release(&v);

  /* Bad arguments fail the builder with a message. */
  QL_CHECK(ql_ir_struct_schema(b, 2, NULL, names, lengths, flags) == NULL);
  QL_CHECK_INT(ql_ir_builder_status(b, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "struct schema of 2 fields") != NULL);
  ql_error_release(&err);
  ql_ir_builder_free(b);
}

/* A lazy view as a host builds one: skeleton nodes, filled by expand. */
struct lazy_host {
  struct ql_ir_builder *b;
  const struct ql_plan_node *full; /* the complete node for each id */
  struct ql_plan_view view;
  int expands;
};

static int lazy_expand(const struct ql_plan_view *self, ql_node_id node, struct ql_error *error) {
  struct lazy_host *h = self->private_data;
  if (node < 0 || node >= self->n_nodes) return ql_error_set(error, QL_EINVAL, "no node %d", (int)node);
  h->expands++;
  /* The host lowers the node's expressions only now. */
  struct ql_plan_node n = h->full[node];
  ql_expr_id pred = -1;
  if (n.kind == QL_NODE_FILTER) {
    pred = ql_ir_binary(h->b, QL_OP_GT, ql_ir_column(h->b, "key", "tbl", 0), ql_ir_literal_i64(h->b, 1));
    n.n_exprs = 1;
    n.exprs = &pred;
  }
  QL_RETURN_NOT_OK(ql_ir_node_expand(h->b, node, &n));
  return ql_ir_builder_peek(h->b, self->root, &h->view, error);
}

static void test_lazy_view(void) {
  struct ql_error err = {0};
  struct lazy_host h = {0};
  QL_CHECK_OK(ql_ir_builder_new(&h.b, &err), err);
  const char *formats[1] = {"l"};
  const char *names[1] = {"key"};
  const size_t lengths[1] = {3};
  const int64_t flags[1] = {2};
  const struct ArrowSchema *schema = ql_ir_struct_schema(h.b, 1, formats, names, lengths, flags);
  struct ql_table_ref table = {"tbl", schema, NULL, NULL};
  struct ql_plan_node full[2];
  full[0] = qt_node(QL_NODE_TABLE_SCAN);
  full[0].schema = schema;
  full[0].name = "tbl";
  full[0].table = &table;
  full[0].fetch = 7;
  ql_node_id inputs[1] = {0};
  full[1] = qt_node(QL_NODE_FILTER);
  full[1].n_inputs = 1;
  full[1].inputs = inputs;
  full[1].schema = schema;
  h.full = full;
  /* Skeletons: kind, inputs, name, fetch; the rest waits for expand. */
  for (int i = 0; i < 2; i++) {
    struct ql_plan_node sk = qt_node(full[i].kind);
    sk.flags = QL_NODE_UNEXPANDED;
    sk.n_inputs = full[i].n_inputs;
    sk.inputs = full[i].inputs;
    sk.name = full[i].name;
    sk.fetch = full[i].fetch;
    QL_CHECK_INT(ql_ir_node(h.b, &sk), i);
  }
  h.view.struct_size = sizeof(h.view);
  h.view.private_data = &h;
  h.view.expand = lazy_expand;
  QL_CHECK_OK(ql_ir_builder_peek(h.b, 1, &h.view, &err), err);
  QL_CHECK_INT(h.view.n_exprs, 0);
  QL_CHECK(h.view.nodes[1].schema == NULL);
  QL_CHECK_INT(h.view.nodes[0].fetch, 7);
  QL_CHECK_STR(h.view.nodes[0].name, "tbl");
  QL_CHECK_INT(ql_ir_validate(&h.view, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "not expanded") != NULL);
  ql_error_release(&err);
  char *text = NULL;
  QL_CHECK_INT(ql_ir_plan_to_string(&h.view, 1, &text, &err), QL_EINVAL);
  ql_error_release(&err);

  /* Expanding the filter fills it alone; a second call does nothing. */
  QL_CHECK_OK(ql_plan_expand(&h.view, 1, &err), err);
  QL_CHECK_OK(ql_plan_expand(&h.view, 1, &err), err);
  QL_CHECK_INT(h.expands, 1);
  QL_CHECK_INT(h.view.nodes[1].flags, 0);
  QL_CHECK_INT(h.view.nodes[1].n_exprs, 1);
  QL_CHECK_INT(h.view.n_exprs, 3);
  QL_CHECK_INT(h.view.exprs[h.view.nodes[1].exprs[0]].op, QL_OP_GT);
  QL_CHECK(h.view.nodes[1].schema == schema);
  QL_CHECK_INT(h.view.nodes[0].flags, QL_NODE_UNEXPANDED);
  QL_CHECK(h.view.nodes[0].table == NULL);

  QL_CHECK_INT(ql_plan_expand(&h.view, 2, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "no node 2") != NULL);
  ql_error_release(&err);

  QL_CHECK_OK(ql_plan_expand_all(&h.view, &err), err);
  QL_CHECK_INT(h.expands, 2);
  QL_CHECK_STR(h.view.nodes[0].table->name, "tbl");
  QL_CHECK_OK(ql_ir_validate(&h.view, &err), err);
  QL_CHECK_OK(ql_ir_plan_to_string(&h.view, 1, &text, &err), err);
  QL_CHECK(strstr(text, "Filter") != NULL && strstr(text, "> 1") != NULL);
  free(text);

  /* A node marked unexpanded in a view without expand is an error, not a crash. */
  struct ql_plan_view plain = h.view;
  plain.expand = NULL;
  struct ql_plan_node marked[1];
  marked[0] = h.view.nodes[0];
  marked[0].flags = QL_NODE_UNEXPANDED;
  plain.nodes = marked;
  plain.n_nodes = 1;
  QL_CHECK_INT(ql_plan_expand(&plain, 0, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "no expand") != NULL);
  ql_error_release(&err);
  /* A view whose struct_size stops before `expand`: smaller than 0.1, refused. */
  plain.struct_size = (uint32_t)offsetof(struct ql_plan_view, expand);
  plain.expand = lazy_expand;
  QL_CHECK_INT(ql_plan_expand(&plain, 0, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "smaller than the 0.1 view") != NULL);
  ql_error_release(&err);
  ql_ir_builder_free(h.b);
}

int main(void) {
  test_matmul_round_trip();
  test_expr_every_field();
  test_literal_arrays();
  test_sticky_errors();
  test_growth();
  test_shared_memory();
  test_lazy_view();
  QL_TEST_END();
}
