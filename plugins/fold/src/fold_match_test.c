/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: what the planner folds and what it declines (with the
 * reason), through the planner object and through the built plugin. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "fold_planner.h"
#include "qlink/lib/arrow.h"
#include "fold_spec.h"
#include "fold_test_util.h"
#include "ql_test.h"
#include "qlink/lib/status.h"

static struct ft_table *ta, *tb;

static void make_tables(void) {
  ta = calloc(1, sizeof(*ta));
  tb = calloc(1, sizeof(*tb));
  struct ft_table *t[2] = {ta, tb};
  const char *names[5] = {"k0", "k1", "g0", "g1", "v"};
  for (int k = 0; k < 2; k++) {
    snprintf(t[k]->name, sizeof(t[k]->name), "%s", k ? "w" : "a");
    t[k]->n_cols = 5;
    for (int c = 0; c < 5; c++) {
      snprintf(t[k]->cols[c].name, 16, "%s", names[c]);
      snprintf(t[k]->cols[c].format, 8, "%s", c == 4 ? "g" : "l");
    }
    t[k]->n_rows = 0;
    ft_table_reset_layout(t[k]);
  }
}

static struct ft_query matmul(void) {
  struct ft_query q;
  memset(&q, 0, sizeof(q));
  q.is_float = 1;
  q.n_keys = 1;
  q.n_groups = 2;
  q.gside[0] = 0, q.gcol[0] = 2;
  q.gside[1] = 1, q.gcol[1] = 3;
  q.aval = q.bval = 4;
  return q;
}

/* Run the planner on q's view (or its lazy twin, as a host hands it to a
 * planner that sets QL_PLANNER_LAZY_VIEW); returns the action and the
 * decline reason of the matcher in why. */
static int plan_action_on(const struct ft_query *q, int lazy, char *why, size_t cap, int *physical_calls) {
  struct ql_plan_view full, twin;
  struct ft_view_ids ids;
  if (ft_build_view(q, ta, tb, &full, &ids)) return -1;
  if (lazy && ql_ir_lazy_twin(&full, &twin, NULL) != QL_OK) return -1;
  struct ql_plan_view *v = lazy ? &twin : &full;
  struct fd_spec spec;
  fd_find(v, &spec, 1);
  snprintf(why, cap, "%s", spec.why);
  if (lazy) { /* a fresh twin for the planner call: nothing expanded yet */
    twin.release(&twin);
    if (ql_ir_lazy_twin(&full, &twin, NULL) != QL_OK) return -1;
  }
  struct ft_planner_env env;
  ft_planner_env_init(&env, v, &ids, ta, tb);
  struct ql_planner planner;
  fd_planner_new(NULL, &planner, NULL);
  struct ql_planner_result res;
  memset(&res, 0, sizeof(res));
  res.struct_size = sizeof(res);
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  int rc = planner.plan(&planner, &env.ctx, &res, &err);
  int action = rc == QL_OK ? res.action : -rc;
  if (action == QL_PLANNER_PHYSICAL && res.node != ids.aggregate) action = -100;
  if (res.physical.release) res.physical.release(&res.physical);
  ql_error_release(&err);
  planner.release(&planner);
  if (lazy) twin.release(&twin);
  full.release(&full);
  *physical_calls = env.calls;
  return action;
}

/* The planner answers alike on the complete view and on its lazy twin. */
static int plan_action(const struct ft_query *q, char *why, size_t cap, int *physical_calls) {
  char lazy_why[256];
  int lazy_calls = -1;
  int lazy_action = plan_action_on(q, 1, lazy_why, sizeof(lazy_why), &lazy_calls);
  int action = plan_action_on(q, 0, why, cap, physical_calls);
  QL_CHECK_INT(lazy_action, action);
  QL_CHECK_INT(lazy_calls, *physical_calls);
  QL_CHECK_STR(lazy_why, why);
  return action;
}

static void expect_decline(const struct ft_query *q, const char *reason) {
  char why[256];
  int calls = -1;
  int action = plan_action(q, why, sizeof(why), &calls);
  QL_CHECK_INT(action, QL_PLANNER_DECLINE);
  QL_CHECK_INT(calls, 0); /* declining costs the host nothing */
  if (!strstr(why, reason)) fprintf(stderr, "decline reason '%s' lacks '%s'\n", why, reason);
  QL_CHECK(strstr(why, reason) != NULL);
}

static void expect_fold(const struct ft_query *q) {
  char why[256];
  int calls = -1;
  int action = plan_action(q, why, sizeof(why), &calls);
  if (action != QL_PLANNER_PHYSICAL) fprintf(stderr, "declined: %s\n", why);
  QL_CHECK_INT(action, QL_PLANNER_PHYSICAL);
  QL_CHECK_INT(calls, 2);
}

static void test_folds(void) {
  struct ft_query q = matmul();
  expect_fold(&q);
  q.projection = 1;
  expect_fold(&q);
  q.projection = 2; /* the product computed in a projection (__common_expr) */
  expect_fold(&q);
  q.alias_inputs = 1;
  q.swap_product = 1;
  expect_fold(&q);
  q = matmul();
  q.sort_root = 1; /* the aggregate below another node is still found */
  expect_fold(&q);
  q = matmul();
  q.n_groups = 0; /* a dot product */
  expect_fold(&q);
  q = matmul();
  q.n_keys = 2;
  q.akey[1] = q.bkey[1] = 1;
  expect_fold(&q);
  q = matmul();
  q.is_float = 0;
  snprintf(ta->cols[4].format, 8, "i"); /* int32 value widened to int64 */
  snprintf(tb->cols[4].format, 8, "l");
  snprintf(ta->cols[0].format, 8, "i"); /* int32 key widened to int64 */
  expect_fold(&q);
  snprintf(ta->cols[4].format, 8, "g");
  snprintf(tb->cols[4].format, 8, "g");
  snprintf(ta->cols[0].format, 8, "l");
}

static void test_declines(void) {
  struct ft_query q = matmul();
  q.function = (struct ql_function_id){QL_ORIGIN_BUILTIN, QL_FUNCTION_AGGREGATE, "avg", NULL, 0};
  expect_decline(&q, "not the built-in sum");
  q = matmul();
  q.function = (struct ql_function_id){QL_ORIGIN_USER, QL_FUNCTION_AGGREGATE, "sum", "my_udfs", 7};
  expect_decline(&q, "not the built-in sum"); /* a session UDF that shadows sum */
  q = matmul();
  q.function = (struct ql_function_id){QL_ORIGIN_UNKNOWN, QL_FUNCTION_AGGREGATE, "sum", NULL, 0};
  expect_decline(&q, "not the built-in sum");
  q = matmul();
  q.agg_flags = QL_EXPR_DISTINCT;
  expect_decline(&q, "DISTINCT");
  q = matmul();
  q.join_type = QL_JOIN_LEFT;
  expect_decline(&q, "not an inner join");
  q.join_type = QL_JOIN_FULL;
  expect_decline(&q, "not an inner join");
  q = matmul();
  q.with_condition = 1;
  expect_decline(&q, "non-equi condition");
  q = matmul();
  q.null_equals_null = 1;
  expect_decline(&q, "NULL keys as equal");
  q = matmul();
  q.other_between = 1;
  expect_decline(&q, "not a join");
  q = matmul();
  q.filter_between = 1;
  expect_decline(&q, "not a join");
  q = matmul();
  q.other_root = 1; /* below an opaque node nothing is touched */
  expect_decline(&q, "no aggregate in the plan");
  q = matmul();
  q.value_same_side = 1;
  expect_decline(&q, "one join input");
  q = matmul();
  q.op = QL_OP_PLUS;
  expect_decline(&q, "not a product");
  q.projection = 2;
  expect_decline(&q, "not a product");
  q = matmul();
  /* Group keys of a float type: grouping floats (NaN, -0.0) is left to the host. */
  snprintf(ta->cols[2].format, 8, "g");
  expect_decline(&q, "group key 0");
  snprintf(ta->cols[2].format, 8, "l");
  /* A float64 value cast to int64 (truncating) for an int64 sum. */
  q = matmul();
  snprintf(ta->cols[4].format, 8, "l");
  q.is_float = 0;
  expect_decline(&q, "cast from 'g' to 'l' may change values");
  snprintf(ta->cols[4].format, 8, "g");
  /* Float join keys. */
  q = matmul();
  snprintf(ta->cols[0].format, 8, "g");
  snprintf(tb->cols[0].format, 8, "g");
  expect_decline(&q, "join keys");
  snprintf(ta->cols[0].format, 8, "l");
  snprintf(tb->cols[0].format, 8, "l");
}

/* sum(CAST(x * y AS Int64)) over int32 factors (DataFusion's coercion of
 * sum): the product wraps at 32 bits, then widens. Folded, per joined pair;
 * the same over uint32 factors (summed as uint64 by DataFusion) declines. */
static void narrow_product(const char *factor, int expect_fold) {
  struct ql_ir_builder *b;
  ql_ir_builder_new(&b, NULL);
  struct ArrowSchema s;
  ql_schema_init_struct(&s, NULL, 2, NULL);
  ql_schema_init(s.children[0], factor, "x", 2, NULL);
  ql_schema_init(s.children[1], "i", "k", 2, NULL);
  struct ArrowSchema js, as;
  ql_schema_init_struct(&js, NULL, 4, NULL);
  for (int i = 0; i < 4; i++) ql_schema_init(js.children[i], i % 2 ? "i" : factor, i % 2 ? "k" : "x", 2, NULL);
  ql_schema_init_struct(&as, NULL, 1, NULL);
  ql_schema_init(as.children[0], "l", "sum", 2, NULL);
  struct ql_table_ref ref = {"t", &s, NULL, NULL};
  struct ql_plan_node scan;
  memset(&scan, 0, sizeof(scan));
  scan.kind = QL_NODE_TABLE_SCAN;
  scan.schema = &s;
  scan.n_projection = -1;
  scan.fetch = -1;
  scan.condition = -1;
  scan.table = &ref;
  scan.name = "t";
  ql_node_id in[2] = {ql_ir_node(b, &scan), ql_ir_node(b, &scan)};
  ql_expr_id lk = ql_ir_column(b, "k", NULL, 1), rk = ql_ir_column(b, "k", NULL, 3);
  struct ql_plan_node j = scan;
  j.kind = QL_NODE_JOIN;
  j.table = NULL;
  j.join_type = QL_JOIN_INNER;
  j.n_inputs = 2;
  j.inputs = in;
  j.schema = &js;
  j.n_exprs = j.n_exprs2 = 1;
  j.exprs = &lk;
  j.exprs2 = &rk;
  ql_node_id jid = ql_ir_node(b, &j);
  ql_expr_id prod = ql_ir_binary(b, QL_OP_MULTIPLY, ql_ir_column(b, "x", NULL, 0), ql_ir_column(b, "x", NULL, 2));
  ql_expr_id cast = ql_ir_cast(b, prod, "l", 0);
  struct ql_function_id sum = {QL_ORIGIN_BUILTIN, QL_FUNCTION_AGGREGATE, "sum", NULL, 0};
  ql_expr_id agg = ql_ir_function(b, QL_EXPR_AGGREGATE_FUNCTION, &sum, &cast, 1, 0, -1);
  struct ql_plan_node a = scan;
  a.kind = QL_NODE_AGGREGATE;
  a.table = NULL;
  a.n_inputs = 1;
  a.inputs = &jid;
  a.schema = &as;
  a.n_exprs2 = 1;
  a.exprs2 = &agg;
  ql_node_id root = ql_ir_node(b, &a);
  struct ql_plan_view view;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  QL_CHECK_OK(ql_ir_builder_finish(b, root, &view, &err), err);
  struct fd_spec spec;
  if (expect_fold) {
    QL_CHECK_INT(fd_find(&view, &spec, 1), root);
    QL_CHECK_INT(spec.product, FD_S32);
    QL_CHECK_INT(spec.value_type, FD_INT64);
  } else {
    QL_CHECK_INT(fd_find(&view, &spec, 1), -1);
    QL_CHECK(strstr(spec.why, "not supported") != NULL);
    /* The planner's path without tracing: the same decision, no message. */
    QL_CHECK_INT(fd_find(&view, &spec, 0), -1);
    QL_CHECK_STR(spec.why, "");
  }
  view.release(&view);
  ql_ir_builder_free(b);
  ql_schema_release(&s);
  ql_schema_release(&js);
  ql_schema_release(&as);
}

/* A chain ij,jk,k->i: the outer contraction's left input is the inner one
 * (through a SubqueryAlias). The planner folds the outer one and asks the
 * host for the inner subtree, where a second call folds the inner one. */
static void test_chain(void) {
  struct ql_plan_view inner_view;
  struct ft_view_ids inner_ids;
  struct ft_query q = matmul();
  QL_CHECK_INT(ft_build_view(&q, ta, tb, &inner_view, &inner_ids), 0);
  /* Build the outer plan around a copy of the inner one by re-adding its nodes
   * through a builder is long-winded; instead check the matcher on the
   * inner view rooted at an alias: */
  struct fd_spec spec;
  QL_CHECK_INT(fd_find(&inner_view, &spec, 1), inner_ids.aggregate);
  QL_CHECK_INT(spec.inputs[0], inner_ids.inputs[0]);
  QL_CHECK_INT(spec.inputs[1], inner_ids.inputs[1]);
  QL_CHECK_INT(spec.n_groups, 2);
  QL_CHECK_INT(spec.groups[0].side, 0);
  QL_CHECK_INT(spec.groups[0].column, 2);
  QL_CHECK_INT(spec.groups[1].side, 1);
  QL_CHECK_INT(spec.groups[1].column, 3);
  QL_CHECK_INT(spec.keys[0][0].column, 0);
  QL_CHECK_INT(spec.keys[1][0].column, 0);
  QL_CHECK_INT(spec.values[0].column, 4);
  QL_CHECK_INT(spec.value_type, FD_FLOAT64);
  inner_view.release(&inner_view);
}

/* The built plugin loads through its one entry point and offers `fold`. */
static void test_plugin_module(void) {
  const char *dir = getenv("QL_BUILD_DIR");
  char path[1024];
  snprintf(path, sizeof(path), "%s/plugins/qlink_fold.so", dir ? dir : ".");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  QL_CHECK(h != NULL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return;
  }
  ql_plugin_init_fn init = (ql_plugin_init_fn)(uintptr_t)dlsym(h, QL_PLUGIN_ENTRY_POINT);
  QL_CHECK(init != NULL);
  struct ql_plugin p;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  QL_CHECK_INT(init(QL_ABI_VERSION_MAKE(0, 9), &p, &err), QL_EVERSION);
  if (err.release) err.release(&err);
  QL_CHECK_OK(init(QL_ABI_VERSION_0_1, &p, &err), err);
  QL_CHECK_INT(p.magic, QL_PLUGIN_MAGIC);
  QL_CHECK_STR(p.name, "qlink_fold");
  QL_CHECK_INT(p.n_items, 1);
  QL_CHECK_INT(p.items[0].kind, QL_ITEM_PLANNER);
  QL_CHECK_STR(p.items[0].name, "fold");
  struct ql_planner planner;
  QL_CHECK_INT(p.planner_open(&p, "nope", NULL, &planner, &err), QL_ENOTFOUND);
  if (err.release) err.release(&err);
  const char *keys[] = {"bogus"}, *values[] = {"1"};
  struct ql_options opts = {1, keys, values};
  QL_CHECK_INT(p.planner_open(&p, "fold", &opts, &planner, &err), QL_EINVAL);
  if (err.release) err.release(&err);
  QL_CHECK_OK(p.planner_open(&p, "fold", NULL, &planner, &err), err);
  QL_CHECK_INT(planner.interest, QL_NODE_BIT(QL_NODE_AGGREGATE));
  /* The module's planner folds like the linked one. */
  struct ft_query q = matmul();
  struct ql_plan_view view;
  struct ft_view_ids ids;
  ft_build_view(&q, ta, tb, &view, &ids);
  struct ft_planner_env env;
  ft_planner_env_init(&env, &view, &ids, ta, tb);
  struct ql_planner_result res;
  memset(&res, 0, sizeof(res));
  QL_CHECK_OK(planner.plan(&planner, &env.ctx, &res, &err), err);
  QL_CHECK_INT(res.action, QL_PLANNER_PHYSICAL);
  QL_CHECK_INT(res.node, ids.aggregate);
  QL_CHECK_STR(res.physical.name(&res.physical), "FoldExec");
  res.physical.release(&res.physical);
  view.release(&view);
  planner.release(&planner);
  QL_CHECK(planner.release == NULL);
  p.release(&p);
  dlclose(h);
}

/* On a lazy view the matcher expands what it reads and nothing else: the
 * aggregate, the join and the join's inputs, not the Sort above; and the
 * join's inputs only once nothing cheaper has declined. */
static void test_lazy_expands_what_it_reads(void) {
  struct ft_query q = matmul();
  q.sort_root = 1;
  struct ql_plan_view full, twin;
  struct ft_view_ids ids;
  QL_CHECK_INT(ft_build_view(&q, ta, tb, &full, &ids), 0);
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_lazy_twin(&full, &twin, &err), err);
  struct fd_spec spec;
  QL_CHECK_INT(fd_find(&twin, &spec, 1), ids.aggregate);
  int expanded = 0;
  for (int32_t i = 0; i < twin.n_nodes; i++) expanded += !(twin.nodes[i].flags & QL_NODE_UNEXPANDED);
  QL_CHECK_INT(twin.n_nodes, 5);
  QL_CHECK_INT(expanded, 4);
  QL_CHECK(twin.nodes[twin.root].flags & QL_NODE_UNEXPANDED);
  twin.release(&twin);
  full.release(&full);
  /* A sum that is not of a product is declined on the aggregate and the
   * join alone: the join's inputs (the costliest expansions) stay as they
   * are; so are they for a join with an extra condition. */
  for (int c = 0; c < 2; c++) {
    q = matmul();
    if (c == 0) q.op = QL_OP_PLUS;
    else q.with_condition = 1;
    QL_CHECK_INT(ft_build_view(&q, ta, tb, &full, &ids), 0);
    QL_CHECK_OK(ql_ir_lazy_twin(&full, &twin, &err), err);
    QL_CHECK_INT(fd_find(&twin, &spec, 1), -1);
    QL_CHECK(strstr(spec.why, c == 0 ? "not a product" : "non-equi condition") != NULL);
    expanded = 0;
    for (int32_t i = 0; i < twin.n_nodes; i++) expanded += !(twin.nodes[i].flags & QL_NODE_UNEXPANDED);
    QL_CHECK_INT(expanded, 2);
    QL_CHECK(twin.nodes[ids.inputs[0]].flags & QL_NODE_UNEXPANDED);
    QL_CHECK(twin.nodes[ids.inputs[1]].flags & QL_NODE_UNEXPANDED);
    twin.release(&twin);
    full.release(&full);
  }
}

int main(void) {
  make_tables();
  test_folds();
  test_lazy_expands_what_it_reads();
  test_declines();
  narrow_product("i", 1);
  narrow_product("I", 0);
  test_chain();
  test_plugin_module();
  free(ta);
  free(tb);
  QL_TEST_END();
}
