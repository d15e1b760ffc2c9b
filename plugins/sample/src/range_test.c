/* SPDX-License-Identifier: Apache-2.0 */
/* The sample plugin's table function sample_range through the loader and
 * the reference host: the rows of each call, its schema, statistics and
 * pushdown, and the exact error of every bad argument list. Executor hooks
 * must balance and the memory pool return to zero. */
#include <stdlib.h>
#include <string.h>

#include "qlink_sample.h"
#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/check.h"
#include "qlink/lib/host.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"
#include "test_host.h"

static const struct ql_plugin *g_plugin;
static struct ql_ref_host *g_host;
static struct ql_table_function g_fn;

/* Call sample_range with the expressions `roots` of the builder `b`
 * (finished here); QL_OK with *out set, or the status with *err. */
static int call(struct ql_ir_builder *b, const ql_expr_id *roots, int32_t n, struct ql_table_provider *out,
                struct ql_error *err) {
  struct ql_plan_view view = {0};
  struct ql_error berr = {0};
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &view, &berr), berr);
  ql_error_release(&berr);
  struct ql_expr_list args = {&view, n, 0, roots};
  memset(out, 0, sizeof *out);
  void *tok = ql_plugin_enter(g_plugin);
  int rc = g_fn.call(&g_fn, ql_ref_host_session(g_host), &args, out, err);
  ql_plugin_leave(g_plugin, tok);
  if (view.release) view.release(&view);
  return rc;
}

/* sample_range over int64 literals v[0..n). */
static int call_i64(const int64_t *v, int32_t n, struct ql_table_provider *out, struct ql_error *err) {
  struct ql_ir_builder *b = NULL;
  struct ql_error berr = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &berr), berr);
  ql_expr_id roots[4];
  for (int32_t i = 0; i < n; i++) roots[i] = ql_ir_literal_i64(b, v[i]);
  int rc = call(b, roots, n, out, err);
  ql_ir_builder_free(b);
  return rc;
}

static void release_provider(struct ql_table_provider *tp) {
  void *tok = ql_plugin_enter(g_plugin);
  if (tp->release) tp->release(tp);
  ql_plugin_leave(g_plugin, tok);
}

/* The provider's rows (column 0) equal want[0..n_want). */
static void check_rows(const struct ql_table_provider *tp, const struct ql_scan_args *args, const int64_t *want,
                       int64_t n_want) {
  struct ql_batches bs = {0};
  struct ql_error err = {0};
  QL_CHECK_OK(ql_batches_scan(g_plugin, tp, g_host, args, &bs, &err), err);
  ql_error_release(&err);
  QL_CHECK_INT(bs.n_rows, n_want);
  for (int64_t i = 0; i < bs.n_rows && i < n_want; i++) {
    int64_t v = 0;
    QL_CHECK(ql_batches_i64(&bs, 0, i, &v));
    QL_CHECK_INT(v, want[i]);
  }
  ql_batches_free(&bs);
}

static void expect_rows(const int64_t *args, int32_t n, const int64_t *want, int64_t n_want) {
  struct ql_table_provider tp;
  struct ql_error err = {0};
  QL_CHECK_OK(call_i64(args, n, &tp, &err), err);
  ql_error_release(&err);
  if (!tp.release) return;
  check_rows(&tp, NULL, want, n_want);
  release_provider(&tp);
}

static void expect_error(int rc, struct ql_error *err, const char *message) {
  QL_CHECK_INT(rc, QL_EINVAL);
  QL_CHECK_INT(err->status, QL_EINVAL);
  QL_CHECK_STR(ql_error_message(err), message);
  ql_error_release(err);
}

static void test_rows(void) {
  static const int64_t a[2] = {3, 8}, want_a[5] = {3, 4, 5, 6, 7};
  expect_rows(a, 2, want_a, 5);
  static const int64_t b[3] = {10, -3, -4}, want_b[4] = {10, 6, 2, -2};
  expect_rows(b, 3, want_b, 4);
  static const int64_t c[3] = {0, 10, 5}, want_c[2] = {0, 5};
  expect_rows(c, 3, want_c, 2);
  static const int64_t empty[3] = {5, 5, 1}, backwards[3] = {5, 9, -1};
  expect_rows(empty, 3, NULL, 0);
  expect_rows(backwards, 3, NULL, 0);
  /* 11 rows cross the host's 4-row batches */
  static const int64_t d[2] = {-5, 6}, want_d[11] = {-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5};
  expect_rows(d, 2, want_d, 11);
}

static void test_schema_statistics_pushdown(void) {
  static const int64_t v[3] = {1, 100, 2};
  struct ql_table_provider tp;
  struct ql_error err = {0};
  QL_CHECK_OK(call_i64(v, 3, &tp, &err), err);
  if (!tp.release) return;
  struct ArrowSchema schema = {0};
  void *tok = ql_plugin_enter(g_plugin);
  QL_CHECK_OK(tp.get_schema(&tp, &schema, &err), err);
  ql_plugin_leave(g_plugin, tok);
  QL_CHECK_INT(schema.n_children, 1);
  if (schema.n_children == 1) {
    QL_CHECK_STR(schema.children[0]->format, "l");
    QL_CHECK_STR(schema.children[0]->name, "value");
  }
  ql_schema_release(&schema);

  struct ql_statistics st = {0};
  tok = ql_plugin_enter(g_plugin);
  QL_CHECK_OK(tp.get_statistics(&tp, &st, &err), err);
  ql_plugin_leave(g_plugin, tok);
  QL_CHECK_INT(st.num_rows_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.num_rows, 50);
  QL_CHECK_INT(st.n_columns, 1);
  if (st.n_columns == 1) {
    QL_CHECK_INT(st.columns[0].min.value.i64, 1);
    QL_CHECK_INT(st.columns[0].max.value.i64, 99);
  }
  if (st.release) st.release(&st);

  /* value >= 90 is pushed down exactly; limit 3 */
  struct ql_ir_builder *b = NULL;
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  ql_expr_id f = ql_ir_binary(b, QL_OP_GE, ql_ir_column(b, "value", NULL, 0), ql_ir_literal_i64(b, 90));
  struct ql_plan_view view = {0};
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &view, &err), err);
  ql_ir_builder_free(b);
  struct ql_expr_list filters = {&view, 1, 0, &f};
  int32_t answer = -1;
  tok = ql_plugin_enter(g_plugin);
  QL_CHECK_OK(tp.supports_filters(&tp, &filters, &answer, &err), err);
  ql_plugin_leave(g_plugin, tok);
  QL_CHECK_INT(answer, QL_PUSHDOWN_EXACT);
  struct ql_scan_args args = {sizeof args, -1, NULL, filters, 3};
  static const int64_t want[3] = {91, 93, 95};
  check_rows(&tp, &args, want, 3);
  /* column 1 does not exist in a one-column table */
  int32_t proj = 1;
  struct ql_scan_args bad = {sizeof bad, 1, &proj, {0}, -1};
  struct ql_execution_plan plan = {0};
  tok = ql_plugin_enter(g_plugin);
  int rc = tp.scan(&tp, ql_ref_host_session(g_host), &bad, &plan, &err);
  ql_plugin_leave(g_plugin, tok);
  QL_CHECK_INT(rc, QL_EINVAL);
  QL_CHECK_STR(ql_error_message(&err), "qlink_sample/series: projection[0] = 1 is not a column (0..0)");
  ql_error_release(&err);
  view.release(&view);
  release_provider(&tp);
}

static void test_errors(void) {
  struct ql_table_provider tp;
  struct ql_error err = {0};
  static const int64_t one[1] = {5}, four[4] = {1, 2, 3, 4}, zero[3] = {0, 10, 0}, big[2] = {0, 3037000500};
  expect_error(call_i64(one, 1, &tp, &err), &err, "sample_range takes 2 or 3 arguments (start, stop[, step]), got 1");
  expect_error(call_i64(four, 4, &tp, &err), &err, "sample_range takes 2 or 3 arguments (start, stop[, step]), got 4");
  expect_error(call_i64(NULL, 0, &tp, &err), &err, "sample_range takes 2 or 3 arguments (start, stop[, step]), got 0");
  expect_error(call_i64(zero, 3, &tp, &err), &err, "sample_range: argument 'step' must not be 0");
  expect_error(call_i64(big, 2, &tp, &err), &err,
               "sample_range: argument 'stop' = 3037000500 out of range: |stop| must be <= 3037000499 so that square "
               "fits in int64");

  struct ql_ir_builder *b = NULL;
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  ql_expr_id roots[3] = {ql_ir_literal_i64(b, 0), ql_ir_literal_f64(b, 2.5)};
  expect_error(call(b, roots, 2, &tp, &err), &err,
               "sample_range: argument 2 (stop) must be an integer literal, got a literal of type 'g'");
  roots[0] = ql_ir_literal_utf8(b, "1");
  roots[1] = ql_ir_literal_i64(b, 3);
  expect_error(call(b, roots, 2, &tp, &err), &err,
               "sample_range: argument 1 (start) must be an integer literal, got a literal of type 'u'");
  roots[0] = ql_ir_literal_i64(b, 0);
  roots[1] = ql_ir_literal_i64(b, 3);
  roots[2] = ql_ir_literal_null(b, "l");
  expect_error(call(b, roots, 3, &tp, &err), &err,
               "sample_range: argument 3 (step) must be an integer literal, got a NULL literal");
  roots[0] = ql_ir_binary(b, QL_OP_PLUS, ql_ir_literal_i64(b, 1), ql_ir_literal_i64(b, 2));
  roots[1] = ql_ir_literal_i64(b, 3);
  expect_error(call(b, roots, 2, &tp, &err), &err,
               "sample_range: argument 1 (start) must be an integer literal, got a BINARY expression");

  /* NEGATIVE(literal) and narrower integer literals are constants too */
  struct ql_scalar i32 = {0};
  i32.format = "i";
  i32.value.i64 = 4;
  roots[0] = ql_ir_unary(b, QL_EXPR_NEGATIVE, ql_ir_literal_i64(b, 2));
  roots[1] = ql_ir_literal(b, &i32);
  QL_CHECK_OK(call(b, roots, 2, &tp, &err), err);
  static const int64_t want[6] = {-2, -1, 0, 1, 2, 3};
  if (tp.release) {
    check_rows(&tp, NULL, want, 6);
    release_provider(&tp);
  }
  ql_ir_builder_free(b);
}

int main(void) {
  struct smp_test_host t;
  if (smp_test_host_open(&t) != 0) QL_TEST_END();
  g_plugin = t.plugin;
  g_host = t.host;
  struct ql_error err = {0};

  const struct ql_item_info *item = ql_plugin_find_item(g_plugin, QL_ITEM_TABLE_FUNCTION, "sample_range");
  QL_CHECK(item != NULL);
  void *tok = ql_plugin_enter(g_plugin);
  int rc = g_plugin->table_function_open(g_plugin, "sample_range", &g_fn, &err);
  ql_plugin_leave(g_plugin, tok);
  QL_CHECK_OK(rc, err);
  if (rc == QL_OK) {
    QL_CHECK_INT(g_fn.id.origin, QL_ORIGIN_USER);
    QL_CHECK_INT(g_fn.id.kind, QL_FUNCTION_TABLE);
    QL_CHECK_STR(g_fn.id.library, "qlink_sample");
    QL_CHECK_STR(g_fn.id.name, "sample_range");
    test_rows();
    test_schema_statistics_pushdown();
    test_errors();
    tok = ql_plugin_enter(g_plugin);
    g_fn.release(&g_fn);
    ql_plugin_leave(g_plugin, tok);
    QL_CHECK(g_fn.release == NULL);
  }
  struct ql_table_function none = {0};
  tok = ql_plugin_enter(g_plugin);
  rc = g_plugin->table_function_open(g_plugin, "range", &none, &err);
  ql_plugin_leave(g_plugin, tok);
  QL_CHECK_INT(rc, QL_ENOTFOUND);
  QL_CHECK_STR(ql_error_message(&err), "qlink_sample has no table function 'range'");
  ql_error_release(&err);

  smp_test_host_close(&t);
  QL_TEST_END();
}
