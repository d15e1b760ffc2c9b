/* SPDX-License-Identifier: Apache-2.0 */
/* End-to-end test of the sample plugin through the loader and the reference
 * host: every scan result, statistic, pushdown answer, function output and
 * planner answer is asserted exactly; executor hooks must balance and the
 * memory pool must return to zero. */
#include <errno.h>
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

/* Every call into the plugin is bracketed, as a host must. */
#define CALL(rc, expr)                          \
  do {                                          \
    void *tok_ = ql_plugin_enter(g_plugin);     \
    (rc) = (expr);                              \
    ql_plugin_leave(g_plugin, tok_);            \
  } while (0)
#define DO(stmt)                                \
  do {                                          \
    void *tok_ = ql_plugin_enter(g_plugin);     \
    stmt;                                       \
    ql_plugin_leave(g_plugin, tok_);            \
  } while (0)

static int64_t pool_reserved(void) {
  const struct ql_memory_pool *pool = ql_ref_host_runtime_env(g_host)->memory_pool;
  return pool->reserved(pool);
}

static int open_series(const char *const *keys, const char *const *values, int64_t n, struct ql_table_provider *out,
                       struct ql_error *err) {
  struct ql_options o = {n, keys, values};
  int rc;
  CALL(rc, g_plugin->table_provider_open(g_plugin, "series", &o, ql_ref_host_session(g_host), out, err));
  return rc;
}

/* Scan and return column 0 of the result as int64s (at most cap). */
static int64_t scan_i64(const struct ql_table_provider *tp, const struct ql_scan_args *args, int64_t *out,
                        int64_t cap) {
  struct ql_batches b = {0};
  struct ql_error err = {0};
  int rc = ql_batches_scan(g_plugin, tp, g_host, args, &b, &err);
  QL_CHECK_OK(rc, err);
  ql_error_release(&err);
  int64_t n = b.n_rows;
  for (int64_t i = 0; i < n && i < cap; i++) QL_CHECK(ql_batches_i64(&b, 0, i, &out[i]));
  ql_batches_free(&b);
  return rc == QL_OK ? n : -1;
}

static void check_list(const int64_t *got, int64_t n, const int64_t *want, int64_t n_want) {
  QL_CHECK_INT(n, n_want);
  for (int64_t i = 0; i < n && i < n_want; i++) QL_CHECK_INT(got[i], want[i]);
}

/* A filter list: `value >= 10`, `value < 40`, `square > 5`, `value != 3`,
 * `value BETWEEN 50 AND 60`, `value IN (3, 4, 99, 300)`, `40 > value`. */
enum { F_GE10, F_LT40, F_SQUARE, F_NE3, F_BETWEEN, F_IN, F_FLIPPED, F_COUNT };
static void build_filters(struct ql_plan_view *view, ql_expr_id *roots) {
  struct ql_ir_builder *b;
  struct ql_error err = {0};
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  roots[F_GE10] = ql_ir_binary(b, QL_OP_GE, ql_ir_column(b, "value", NULL, 0), ql_ir_literal_i64(b, 10));
  roots[F_LT40] = ql_ir_binary(b, QL_OP_LT, ql_ir_column(b, "value", NULL, 0), ql_ir_literal_i64(b, 40));
  roots[F_SQUARE] = ql_ir_binary(b, QL_OP_GT, ql_ir_column(b, "square", NULL, 1), ql_ir_literal_i64(b, 5));
  roots[F_NE3] = ql_ir_binary(b, QL_OP_NE, ql_ir_column(b, "value", NULL, 0), ql_ir_literal_i64(b, 3));
  ql_expr_id between_args[3] = {ql_ir_column(b, "value", NULL, 0), ql_ir_literal_i64(b, 50), ql_ir_literal_i64(b, 60)};
  struct ql_expr e;
  memset(&e, 0, sizeof e);
  e.kind = QL_EXPR_BETWEEN;
  e.n_args = 3;
  e.args = between_args;
  e.column_index = -1;
  e.filter = -1;
  roots[F_BETWEEN] = ql_ir_expr(b, &e);
  ql_expr_id in_args[5] = {ql_ir_column(b, "value", NULL, 0), ql_ir_literal_i64(b, 3), ql_ir_literal_i64(b, 4),
                           ql_ir_literal_i64(b, 99), ql_ir_literal_i64(b, 300)};
  e.kind = QL_EXPR_IN_LIST;
  e.n_args = 5;
  e.args = in_args;
  roots[F_IN] = ql_ir_expr(b, &e);
  roots[F_FLIPPED] = ql_ir_binary(b, QL_OP_GT, ql_ir_literal_i64(b, 40), ql_ir_column(b, "value", NULL, 0));
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, view, &err), err);
  ql_ir_builder_free(b);
}

static void test_series(void) {
  static const char *const keys[] = {"start", "stop", "step", "partitions"};
  static const char *const values[] = {"0", "100", "3", "4"};
  struct ql_table_provider tp;
  struct ql_error err = {0};
  QL_CHECK_OK(open_series(keys, values, 4, &tp, &err), err);

  /* Table statistics: 0, 3, ..., 99 is 34 rows. */
  struct ql_statistics st = {0};
  int rc;
  CALL(rc, tp.get_statistics(&tp, &st, &err));
  QL_CHECK_OK(rc, err);
  QL_CHECK_INT(st.num_rows_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.num_rows, 34);
  QL_CHECK_INT(st.n_columns, 3);
  QL_CHECK_INT(st.columns[0].min.value.i64, 0);
  QL_CHECK_INT(st.columns[0].max.value.i64, 99);
  QL_CHECK_INT(st.columns[1].min.value.i64, 0);
  QL_CHECK_INT(st.columns[1].max.value.i64, 9801);
  QL_CHECK_INT(st.columns[1].null_count, 0);
  QL_CHECK_INT(st.columns[2].min_max_precision, QL_PRECISION_ABSENT);
  DO(st.release(&st));
  QL_CHECK(st.release == NULL);

  /* Pushdown answers. */
  struct ql_plan_view view = {0};
  ql_expr_id roots[F_COUNT];
  build_filters(&view, roots);
  int32_t answers[F_COUNT];
  struct ql_expr_list all_filters = {&view, F_COUNT, 0, roots};
  CALL(rc, tp.supports_filters(&tp, &all_filters, answers, &err));
  QL_CHECK_OK(rc, err);
  static const int32_t want_answers[F_COUNT] = {QL_PUSHDOWN_EXACT, QL_PUSHDOWN_EXACT, QL_PUSHDOWN_UNSUPPORTED,
                                                QL_PUSHDOWN_UNSUPPORTED, QL_PUSHDOWN_EXACT, QL_PUSHDOWN_EXACT,
                                                QL_PUSHDOWN_EXACT};
  for (int i = 0; i < F_COUNT; i++) QL_CHECK_INT(answers[i], want_answers[i]);

  /* value >= 10 AND value < 40, projection [square]. */
  int64_t got[64];
  int32_t square = 1, value = 0;
  ql_expr_id range[2] = {roots[F_GE10], roots[F_LT40]};
  struct ql_scan_args args = {sizeof args, 1, &square, {&view, 2, 0, range}, -1};
  static const int64_t want_squares[] = {144, 225, 324, 441, 576, 729, 900, 1089, 1296, 1521};
  check_list(got, scan_i64(&tp, &args, got, 64), want_squares, 10);

  /* The same plan's statistics: exact, over the projected column. */
  struct ql_execution_plan plan;
  CALL(rc, tp.scan(&tp, ql_ref_host_session(g_host), &args, &plan, &err));
  QL_CHECK_OK(rc, err);
  CALL(rc, plan.get_statistics(&plan, -1, &st, &err));
  QL_CHECK_OK(rc, err);
  QL_CHECK_INT(st.num_rows, 10);
  QL_CHECK_INT(st.n_columns, 1);
  QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.columns[0].min.value.i64, 144);
  QL_CHECK_INT(st.columns[0].max.value.i64, 1521);
  DO(st.release(&st));
  /* Partition 0 holds rows 0..7 (values 0..21): 12, 15, 18, 21 pass. */
  CALL(rc, plan.get_statistics(&plan, 0, &st, &err));
  QL_CHECK_OK(rc, err);
  QL_CHECK_INT(st.num_rows, 4);
  QL_CHECK_INT(st.columns[0].min.value.i64, 144);
  QL_CHECK_INT(st.columns[0].max.value.i64, 441);
  DO(st.release(&st));
  QL_CHECK_STR(plan.name(&plan), "SeriesScanExec");
  QL_CHECK_STR(plan.display(&plan), "start=0 stop=100 step=3 partitions=4 projection=[square] filters=2 limit=-1 rows=10");
  struct ql_plan_properties props;
  CALL(rc, plan.get_properties(&plan, &props, &err));
  QL_CHECK_INT(props.partition_count, 4);

  /* Bad partitions are errors, not crashes. */
  struct ql_task_context ctx;
  ql_ref_host_task_context(g_host, 0, &ctx);
  struct ArrowArrayStream stream = {0};
  CALL(rc, plan.execute(&plan, -1, &ctx, &stream, &err));
  QL_CHECK_INT(rc, QL_EINVAL);
  ql_error_release(&err);
  CALL(rc, plan.execute(&plan, 4, &ctx, &stream, &err));
  QL_CHECK_INT(rc, QL_EINVAL);
  ql_error_release(&err);

  /* A live stream holds a reservation; releasing it returns it. A stream
   * outlives its plan. */
  QL_CHECK_INT(pool_reserved(), 0);
  CALL(rc, plan.execute(&plan, 1, &ctx, &stream, &err));
  QL_CHECK_OK(rc, err);
  QL_CHECK(pool_reserved() > 0);
  DO(plan.release(&plan));
  QL_CHECK(plan.release == NULL);
  struct ql_batches b = {0};
  QL_CHECK_OK(ql_batches_collect(g_plugin, &stream, &b, &err), err);
  QL_CHECK_INT(b.n_rows, 6); /* partition 1: rows 8..16 = values 24..48; 24..39 pass */
  QL_CHECK_INT(b.n_batches, 2); /* batches of the task context's batch_size (4): 4 + 2 */
  if (b.n_batches == 2) QL_CHECK_INT(b.batches[0].length, 4);
  int64_t v = 0;
  QL_CHECK(ql_batches_i64(&b, 0, 0, &v));
  QL_CHECK_INT(v, 576);
  ql_batches_free(&b);
  QL_CHECK_INT(pool_reserved(), 0);

  /* Limit pushdown, and every column with parity strings. */
  args = (struct ql_scan_args){sizeof args, -1, NULL, {NULL, 0, 0, NULL}, 5};
  struct ql_batches rows = {0};
  QL_CHECK_OK(ql_batches_scan(g_plugin, &tp, g_host, &args, &rows, &err), err);
  QL_CHECK_INT(rows.n_rows, 5);
  static const char *const parity[5] = {"even", "odd", "even", "odd", "even"};
  for (int64_t r = 0; r < rows.n_rows && r < 5; r++) {
    int64_t x = -1, sq = -1;
    const char *s = "";
    int64_t len = 0;
    QL_CHECK(ql_batches_i64(&rows, 0, r, &x) && ql_batches_i64(&rows, 1, r, &sq));
    QL_CHECK(ql_batches_str(&rows, 2, r, &s, &len));
    QL_CHECK_INT(x, 3 * r);
    QL_CHECK_INT(sq, 9 * r * r);
    QL_CHECK(len == (int64_t)strlen(parity[r]) && memcmp(s, parity[r], (size_t)len) == 0);
  }
  ql_batches_free(&rows);

  /* IN, BETWEEN, a flipped comparison; an UNSUPPORTED filter is ignored by the scan. */
  ql_expr_id in[1] = {roots[F_IN]};
  args = (struct ql_scan_args){sizeof args, 1, &value, {&view, 1, 0, in}, -1};
  static const int64_t want_in[] = {3, 99};
  check_list(got, scan_i64(&tp, &args, got, 64), want_in, 2);
  ql_expr_id between[2] = {roots[F_BETWEEN], roots[F_SQUARE]};
  args = (struct ql_scan_args){sizeof args, 1, &value, {&view, 2, 0, between}, -1};
  static const int64_t want_between[] = {51, 54, 57, 60};
  check_list(got, scan_i64(&tp, &args, got, 64), want_between, 4);
  ql_expr_id flipped[2] = {roots[F_FLIPPED], roots[F_GE10]};
  args = (struct ql_scan_args){sizeof args, 1, &value, {&view, 2, 0, flipped}, 3};
  static const int64_t want_flipped[] = {12, 15, 18};
  check_list(got, scan_i64(&tp, &args, got, 64), want_flipped, 3);

  /* A bad projection is an error. */
  int32_t bad = 3;
  args = (struct ql_scan_args){sizeof args, 1, &bad, {NULL, 0, 0, NULL}, -1};
  CALL(rc, tp.scan(&tp, ql_ref_host_session(g_host), &args, &plan, &err));
  QL_CHECK_INT(rc, QL_EINVAL);
  ql_error_release(&err);

  view.release(&view);
  DO(tp.release(&tp));
  QL_CHECK(tp.release == NULL);
}

static void test_negative_step_and_options(void) {
  static const char *const keys[] = {"start", "stop", "step"};
  static const char *const values[] = {"10", "-3", "-4"};
  struct ql_table_provider tp;
  struct ql_error err = {0};
  QL_CHECK_OK(open_series(keys, values, 3, &tp, &err), err);
  int64_t got[16];
  static const int64_t want[] = {10, 6, 2, -2};
  check_list(got, scan_i64(&tp, NULL, got, 16), want, 4);
  struct ql_statistics st = {0};
  int rc;
  CALL(rc, tp.get_statistics(&tp, &st, &err));
  QL_CHECK_OK(rc, err);
  QL_CHECK_INT(st.columns[1].min.value.i64, 4); /* (-2)^2 */
  QL_CHECK_INT(st.columns[1].max.value.i64, 100);
  DO(st.release(&st));
  DO(tp.release(&tp));

  /* Unknown, malformed and missing options: QL_EINVAL naming the option. */
  static const char *const k_unknown[] = {"stop", "sttep"};
  static const char *const v_unknown[] = {"10", "2"};
  QL_CHECK_INT(open_series(k_unknown, v_unknown, 2, &tp, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "sttep") != NULL);
  ql_error_release(&err);
  static const char *const k_bad[] = {"stop"};
  static const char *const v_bad[] = {"ten"};
  QL_CHECK_INT(open_series(k_bad, v_bad, 1, &tp, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "stop") != NULL);
  ql_error_release(&err);
  QL_CHECK_INT(open_series(NULL, NULL, 0, &tp, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "stop") != NULL);
  ql_error_release(&err);
  static const char *const k_zero[] = {"stop", "step"};
  static const char *const v_zero[] = {"10", "0"};
  QL_CHECK_INT(open_series(k_zero, v_zero, 2, &tp, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "step") != NULL);
  ql_error_release(&err);
  int rc2;
  CALL(rc2, g_plugin->table_provider_open(g_plugin, "nope", NULL, NULL, &tp, &err));
  QL_CHECK_INT(rc2, QL_ENOTFOUND);
  ql_error_release(&err);
}

/* Cancellation and the memory limit surface as stream errors with messages. */
static void test_stream_errors(void) {
  static const char *const keys[] = {"stop"};
  static const char *const values[] = {"1000"};
  struct ql_table_provider tp;
  struct ql_error err = {0};
  QL_CHECK_OK(open_series(keys, values, 1, &tp, &err), err);
  struct ql_execution_plan plan;
  struct ql_scan_args args = {sizeof args, -1, NULL, {NULL, 0, 0, NULL}, -1};
  int rc, code;
  CALL(rc, tp.scan(&tp, ql_ref_host_session(g_host), &args, &plan, &err));
  QL_CHECK_OK(rc, err);
  struct ql_task_context ctx;
  ql_ref_host_task_context(g_host, 0, &ctx);
  struct ArrowArrayStream s = {0};
  CALL(rc, plan.execute(&plan, 0, &ctx, &s, &err));
  QL_CHECK_OK(rc, err);
  ql_ref_host_cancel(g_host, 1);
  struct ArrowArray a = {0};
  CALL(code, s.get_next(&s, &a));
  QL_CHECK(code != 0);
  QL_CHECK(a.release == NULL);
  const char *msg;
  CALL(msg, s.get_last_error(&s));
  QL_CHECK(msg != NULL && strstr(msg, "cancelled") != NULL);
  DO(s.release(&s));
  ql_ref_host_cancel(g_host, 0);

  /* A host whose pool allows 64 bytes: the first batch does not fit. */
  struct ql_ref_host *small;
  struct ql_ref_host_options o = {512, 256, 1};
  QL_CHECK_OK(ql_ref_host_new(&o, &small, &err), err);
  ql_ref_host_task_context(small, 0, &ctx);
  CALL(rc, plan.execute(&plan, 0, &ctx, &s, &err));
  QL_CHECK_OK(rc, err);
  CALL(code, s.get_next(&s, &a));
  QL_CHECK_INT(code, ql_status_to_errno(QL_ERESOURCES));
  CALL(msg, s.get_last_error(&s));
  QL_CHECK(msg != NULL && strlen(msg) > 0);
  DO(s.release(&s));
  QL_CHECK_OK(ql_ref_host_free(small, &err), err);
  DO(plan.release(&plan));
  DO(tp.release(&tp));
}

/* ------------------------------------------------------------ functions */

/* A struct array of one int64 column; valid[i] == 0 marks NULL. */
static void int64_args(const int64_t *v, const int *valid, int64_t n, struct ArrowSchema *schema,
                       struct ArrowArray *array) {
  struct ql_error err = {0};
  QL_CHECK_OK(ql_schema_init_struct(schema, "", 1, &err), err);
  QL_CHECK_OK(ql_schema_init(schema->children[0], "l", "x", ARROW_FLAG_NULLABLE, &err), err);
  int64_t *data = malloc((size_t)n * sizeof *data);
  uint8_t *bits = calloc(1, (size_t)(n + 7) / 8);
  for (int64_t i = 0; i < n; i++) {
    data[i] = v[i];
    if (!valid || valid[i]) bits[i / 8] |= (uint8_t)(1u << (i % 8));
  }
  QL_CHECK_OK(ql_array_init_struct(array, n, 1, &err), err);
  QL_CHECK_OK(ql_array_init_fixed(array->children[0], n, -1, bits, data, &err), err);
}

static void check_i64_array(const struct ArrowArray *a, const int64_t *want, const int *valid, int64_t n) {
  QL_CHECK_INT(a->length, n);
  for (int64_t i = 0; i < n && i < a->length; i++) {
    int is_valid = ql_array_is_valid(a, i);
    QL_CHECK_INT(is_valid, valid ? valid[i] : 1);
    if (is_valid) QL_CHECK_INT(((const int64_t *)a->buffers[1])[a->offset + i], want[i]);
  }
}

static void test_add_one(void) {
  struct ql_scalar_function f;
  struct ql_error err = {0};
  int rc;
  CALL(rc, g_plugin->scalar_function_open(g_plugin, "add_one", &f, &err));
  QL_CHECK_OK(rc, err);
  QL_CHECK_INT(f.id.origin, QL_ORIGIN_USER);
  QL_CHECK_STR(f.id.library, "qlink_sample");
  QL_CHECK_INT(f.id.uid, 1);
  struct ArrowSchema s, rt;
  struct ArrowArray a, out;
  static const int64_t in[3] = {1, 0, 41}, want[3] = {2, 0, 42};
  static const int valid[3] = {1, 0, 1};
  int64_args(in, valid, 3, &s, &a);
  CALL(rc, f.return_type(&f, &s, &rt, &err));
  QL_CHECK_OK(rc, err);
  QL_CHECK_STR(rt.format, "l");
  ql_schema_release(&rt);
  CALL(rc, f.invoke(&f, &s, &a, 3, &out, &err));
  QL_CHECK_OK(rc, err);
  check_i64_array(&out, want, valid, 3);
  ql_array_release(&out);
  ql_array_release(&a);
  ql_schema_release(&s);
  static const int64_t max[1] = {INT64_MAX};
  int64_args(max, NULL, 1, &s, &a);
  CALL(rc, f.invoke(&f, &s, &a, 1, &out, &err));
  QL_CHECK_INT(rc, QL_EOVERFLOW);
  ql_error_release(&err);
  ql_array_release(&a);
  ql_schema_release(&s);
  DO(f.release(&f));
  QL_CHECK(f.release == NULL);
}

static void test_sum_sq(void) {
  struct ql_aggregate_function f;
  struct ql_error err = {0};
  int rc;
  CALL(rc, g_plugin->aggregate_function_open(g_plugin, "sum_sq", &f, &err));
  QL_CHECK_OK(rc, err);
  struct ArrowSchema s;
  struct ArrowArray a, b, state, out;
  static const int64_t in1[4] = {1, 2, 100, 3}, in2[1] = {4};
  static const int valid1[4] = {1, 1, 0, 1};
  int64_args(in1, valid1, 4, &s, &a);
  struct ql_accumulator acc1, acc2, empty;
  CALL(rc, f.accumulator_new(&f, &s, &acc1, &err));
  QL_CHECK_OK(rc, err);
  CALL(rc, f.accumulator_new(&f, &s, &acc2, &err));
  CALL(rc, f.accumulator_new(&f, &s, &empty, &err));
  CALL(rc, acc1.update(&acc1, &a, &err));
  QL_CHECK_OK(rc, err);
  struct ArrowSchema s2;
  int64_args(in2, NULL, 1, &s2, &b);
  ql_schema_release(&s2); /* same shape as s */
  CALL(rc, acc2.update(&acc2, &b, &err));
  CALL(rc, acc2.state(&acc2, &state, &err));
  QL_CHECK_OK(rc, err);
  static const int64_t sixteen[1] = {16};
  check_i64_array(state.children[0], sixteen, NULL, 1);
  CALL(rc, acc1.merge(&acc1, &state, &err));
  QL_CHECK_OK(rc, err);
  CALL(rc, acc1.evaluate(&acc1, &out, &err));
  static const int64_t thirty[1] = {30}; /* 1 + 4 + 9 + 16 */
  check_i64_array(&out, thirty, NULL, 1);
  ql_array_release(&out);
  CALL(rc, empty.evaluate(&empty, &out, &err));
  static const int null1[1] = {0};
  check_i64_array(&out, thirty, null1, 1);
  ql_array_release(&out);
  ql_array_release(&state);
  DO(acc1.release(&acc1));
  DO(acc2.release(&acc2));
  DO(empty.release(&empty));
  QL_CHECK(acc1.release == NULL && acc2.release == NULL && empty.release == NULL);

  /* Groups: rows 1, 2, NULL, 3 into groups 0, 1, 1, 0, then 4 into group 2. */
  struct ql_groups_accumulator g;
  CALL(rc, f.groups_accumulator_new(&f, &s, &g, &err));
  QL_CHECK_OK(rc, err);
  static const uint32_t groups1[4] = {0, 1, 1, 0}, groups2[1] = {2};
  CALL(rc, g.update(&g, &a, groups1, 2, &err));
  QL_CHECK_OK(rc, err);
  CALL(rc, g.update(&g, &b, groups2, 3, &err));
  QL_CHECK_OK(rc, err);
  CALL(rc, g.evaluate(&g, &out, &err));
  static const int64_t want_groups[3] = {10, 4, 16};
  check_i64_array(&out, want_groups, NULL, 3);
  ql_array_release(&out);
  CALL(rc, g.update(&g, &b, groups2, 2, &err)); /* group 2 >= total_groups 2 */
  QL_CHECK_INT(rc, QL_EINVAL);
  ql_error_release(&err);
  DO(g.release(&g));
  ql_array_release(&a);
  ql_array_release(&b);
  ql_schema_release(&s);
  DO(f.release(&f));
}

static void test_running_count(void) {
  struct ql_window_function f;
  struct ql_error err = {0};
  int rc;
  CALL(rc, g_plugin->window_function_open(g_plugin, "running_count", &f, &err));
  QL_CHECK_OK(rc, err);
  struct ArrowSchema s;
  QL_CHECK_OK(ql_schema_init_struct(&s, "", 0, &err), err);
  struct ql_partition_evaluator ev;
  CALL(rc, f.evaluator_new(&f, &s, &ev, &err));
  QL_CHECK_OK(rc, err);
  struct ArrowArray args, out;
  QL_CHECK_OK(ql_array_init_struct(&args, 5, 0, &err), err);
  CALL(rc, ev.evaluate_all(&ev, &args, 5, &out, &err));
  QL_CHECK_OK(rc, err);
  static const int64_t want[5] = {1, 2, 3, 4, 5};
  check_i64_array(&out, want, NULL, 5);
  ql_array_release(&out);
  ql_array_release(&args);
  ql_schema_release(&s);
  DO(ev.release(&ev));
  DO(f.release(&f));
}

/* ------------------------------------------------------------- planners */

/* Limit <- Filter(TRUE) <- Filter(TRUE) <- Filter(value > 3) <- TableScan t. */
static void build_plan(struct ql_plan_view *out, int with_true_filters) {
  struct ql_error err = {0};
  struct ArrowSchema schema;
  QL_CHECK_OK(ql_schema_init_struct(&schema, "", 1, &err), err);
  QL_CHECK_OK(ql_schema_init(schema.children[0], "l", "value", 0, &err), err);
  struct ql_ir_builder *b;
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  struct ql_table_ref table = {"t", &schema, NULL, NULL};
  struct ql_plan_node n;
  memset(&n, 0, sizeof n);
  n.kind = QL_NODE_TABLE_SCAN;
  n.schema = &schema;
  n.condition = -1;
  n.n_projection = -1;
  n.fetch = -1;
  n.name = "t";
  n.table = &table;
  ql_node_id below = ql_ir_node(b, &n);
  n.kind = QL_NODE_FILTER;
  n.table = NULL;
  n.name = NULL;
  n.n_inputs = 1;
  n.n_exprs = 1;
  ql_expr_id gt = ql_ir_binary(b, QL_OP_GT, ql_ir_column(b, "value", "t", 0), ql_ir_literal_i64(b, 3));
  n.inputs = &below;
  n.exprs = &gt;
  ql_node_id filter = ql_ir_node(b, &n);
  below = filter;
  for (int i = 0; with_true_filters && i < 2; i++) {
    struct ql_scalar t = {"b", 0, 0, {.i64 = 1}, NULL, NULL};
    ql_expr_id truth = ql_ir_literal(b, &t);
    ql_node_id in = below;
    n.inputs = &in;
    n.exprs = &truth;
    below = ql_ir_node(b, &n);
  }
  memset(&n, 0, sizeof n);
  n.kind = QL_NODE_LIMIT;
  n.schema = &schema;
  n.condition = -1;
  n.n_projection = -1;
  n.fetch = 5;
  n.n_inputs = 1;
  n.inputs = &below;
  ql_node_id root = ql_ir_node(b, &n);
  QL_CHECK_OK(ql_ir_builder_finish(b, root, out, &err), err);
  ql_ir_builder_free(b);
  ql_schema_release(&schema);
}

static int run_planner(const char *name, const struct ql_plan_view *view, struct ql_planner_result *result) {
  struct ql_planner p;
  struct ql_error err = {0};
  int rc;
  CALL(rc, g_plugin->planner_open(g_plugin, name, NULL, &p, &err));
  QL_CHECK_OK(rc, err);
  struct ql_planner_context ctx = {sizeof ctx, 0, ql_ref_host_session(g_host), view, NULL, NULL};
  memset(result, 0, sizeof *result);
  result->struct_size = sizeof *result;
  CALL(rc, p.plan(&p, &ctx, result, &err));
  QL_CHECK_OK(rc, err);
  DO(p.release(&p));
  return rc;
}

static void test_planners(void) {
  struct ql_plan_view with, without;
  build_plan(&with, 1);
  build_plan(&without, 0);
  struct ql_planner_result r;
  run_planner("decline_all", &with, &r);
  QL_CHECK_INT(r.action, QL_PLANNER_DECLINE);
  run_planner("drop_true_filters", &without, &r);
  QL_CHECK_INT(r.action, QL_PLANNER_DECLINE);
  run_planner("drop_true_filters", &with, &r);
  QL_CHECK_INT(r.action, QL_PLANNER_REWRITE);
  /* The outer Filter(TRUE) (the Limit's input) is replaced by Filter(value > 3) <- TableScan. */
  QL_CHECK_INT(r.node, with.nodes[with.root].inputs[0]);
  if (r.action == QL_PLANNER_REWRITE) {
    struct ql_error err = {0};
    QL_CHECK_OK(ql_ir_validate(&r.rewrite, &err), err);
    QL_CHECK_INT(r.rewrite.n_nodes, 2);
    const struct ql_plan_node *root = &r.rewrite.nodes[r.rewrite.root];
    QL_CHECK_INT(root->kind, QL_NODE_FILTER);
    char *text = NULL;
    QL_CHECK_OK(ql_ir_expr_to_string(&r.rewrite, root->exprs[0], &text, &err), err);
    QL_CHECK(text != NULL && strstr(text, "value") != NULL && strstr(text, "> 3") != NULL);
    free(text);
    QL_CHECK_INT(r.rewrite.nodes[root->inputs[0]].kind, QL_NODE_TABLE_SCAN);
    QL_CHECK_STR(r.rewrite.nodes[root->inputs[0]].table->name, "t");
    r.rewrite.release(&r.rewrite);
  }
  with.release(&with);
  without.release(&without);
}

int main(void) {
  struct smp_test_host t;
  if (smp_test_host_open(&t) != 0) QL_TEST_END();
  g_plugin = t.plugin;
  g_host = t.host;
  struct smp_hook_counts *counts = t.counts;
  int64_t enters_before = counts->enters;

  test_series();
  test_negative_step_and_options();
  test_stream_errors();
  test_add_one();
  test_sum_sq();
  test_running_count();
  test_planners();

  QL_CHECK(counts->enters - enters_before > 50);
  smp_test_host_close(&t);
  QL_TEST_END();
}
