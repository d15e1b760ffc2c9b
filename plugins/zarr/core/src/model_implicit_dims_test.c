/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: a dimension without coordinate array (a CF observation
 * store's `obs`) of 2^31 + 7 positions. Its values are the positions, so
 * opening the store holds nothing per position (it held 40 bytes per
 * position, 80 GiB here); statistics are exact ranges; filters on it prune
 * blocks and slice by arithmetic, whatever the literal (negative, float,
 * out of range, IN lists); scans generate the values.
 *
 * The store is metadata plus two chunks: a chunk never written reads as the
 * fill value, so the 32769-chunk grid needs no data. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/model.h"
#include "qlink_zarr/test_util.h"
#include "store_put.h"

#define N_OBS (((int64_t)1 << 31) + 7)
#define CHUNK 65536
#define N_BLOCKS 32769 /* ceil(N_OBS / CHUNK) */
#define LAST_CHUNK (N_BLOCKS - 1)
#define LAST_START ((int64_t)LAST_CHUNK * CHUNK) /* 2^31 */

/* v(obs) int16, fill 0 (read as NULL): chunk 0 holds v[i] = i % 1000 + 1,
 * the last chunk (7 positions in the array) v = 1..7; every other chunk
 * was never written. */
static void build_store(const struct ql_object_store *s) {
  put_text(s, "obs.zarr/.zgroup", "{\"zarr_format\":2}");
  put_text(s, "obs.zarr/.zattrs", "{\"featureType\":\"point\"}");
  char meta[256];
  snprintf(meta, sizeof(meta),
           "{\"zarr_format\":2,\"shape\":[%lld],\"chunks\":[%d],\"dtype\":\"<i2\",\"fill_value\":0,\"order\":\"C\","
           "\"compressor\":null,\"filters\":null}",
           (long long)N_OBS, CHUNK);
  put_text(s, "obs.zarr/v/.zarray", meta);
  put_text(s, "obs.zarr/v/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"obs\"]}");
  int16_t *chunk = calloc(CHUNK, sizeof(int16_t));
  for (int i = 0; i < CHUNK; i++) chunk[i] = (int16_t)(i % 1000 + 1);
  put(s, "obs.zarr/v/0", chunk, CHUNK * sizeof(int16_t));
  memset(chunk, 0, CHUNK * sizeof(int16_t));
  for (int i = 0; i < 7; i++) chunk[i] = (int16_t)(i + 1);
  char key[64];
  snprintf(key, sizeof(key), "obs.zarr/v/%d", LAST_CHUNK);
  put(s, key, chunk, CHUNK * sizeof(int16_t));
  free(chunk);
}

static long max_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

struct fixture {
  struct ql_ref_host *host;
  struct ql_plugin plugin;
  struct ql_table_provider tp;
};

/* What a scan produced: row count, the first and last rows (obs, and v as
 * a float, NaN for NULL), and the sum of obs. */
struct rows {
  int64_t n, first_obs, last_obs, sum_obs;
  double first_v, last_v;
};

static void take_rows(const struct ArrowArray *a, void *ctx) {
  struct rows *out = ctx;
  const struct ArrowArray *obs = a->children[0], *v = a->children[1];
  QL_CHECK_INT(obs->null_count, 0);
  for (int64_t r = 0; r < a->length; r++) {
    int64_t o = ((const int64_t *)obs->buffers[1])[r];
    double x = ql_array_is_valid(v, r) ? ((const float *)v->buffers[1])[r] : NAN;
    if (out->n == 0) {
      out->first_obs = o;
      out->first_v = x;
    } else if (o <= out->last_obs) {
      QL_CHECK(o > out->last_obs); /* ascending across partitions too */
    }
    out->last_obs = o;
    out->last_v = x;
    out->sum_obs += o;
    out->n++;
  }
}

static void collect(struct fixture *f, const struct ql_execution_plan *plan, struct rows *out) {
  struct ql_error err = {0};
  memset(out, 0, sizeof(*out));
  QL_CHECK_OK(zr_test_each_batch(f->host, plan, take_rows, out, &err), err);
  ql_error_release(&err);
}

/* Opening holds no per-position buffer: the dimension is implicit, and
 * the process grows by far less than one byte per position. */
static void test_open_memory(struct fixture *f) {
  struct ql_error err = {0};
  long before = max_rss_kb();
  struct zr_dataset *ds = NULL;
  const struct ql_object_store_registry *reg = ql_ref_store_registry_view(ql_ref_host_stores(f->host));
  QL_CHECK_OK(zr_dataset_open(reg, "memory:///obs.zarr", NULL, ZR_DEFAULT_BLOCK_ROWS, ZR_NAN_FILL_NULL, &ds, &err), err);
  long grown_kb = max_rss_kb() - before;
  if (!ds) return;
  QL_CHECK(grown_kb < 64 * 1024); /* 64 MiB; it was 80 GiB (or a failed open) */
  QL_CHECK_INT(ds->n_dims, 1);
  QL_CHECK_STR(ds->dims[0].name, "obs");
  QL_CHECK_INT(ds->dims[0].size, N_OBS);
  QL_CHECK_INT(ds->dims[0].coord, -1);
  QL_CHECK(ds->dims[0].raw == NULL);
  QL_CHECK_INT(ds->dims[0].direction, 1);
  QL_CHECK_INT(ds->n_tables, 1);
  QL_CHECK_INT(ds->tables[0].n_rows, N_OBS);
  QL_CHECK_INT(ds->tables[0].step[0], CHUNK);
  zr_dataset_unref(ds);
  ql_error_release(&err);
}

static void test_table_statistics(struct fixture *f) {
  struct ql_error err = {0};
  struct ql_statistics st;
  QL_CHECK_OK(f->tp.get_statistics(&f->tp, &st, &err), err);
  QL_CHECK_INT(st.num_rows, N_OBS);
  QL_CHECK_INT(st.num_rows_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.n_columns, 2);
  QL_CHECK_STR(st.columns[0].min.format, "l");
  QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.columns[0].min.value.i64, 0);
  QL_CHECK_INT(st.columns[0].max.value.i64, N_OBS - 1);
  QL_CHECK_INT(st.columns[0].null_count_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.columns[0].null_count, 0);
  QL_CHECK_INT(st.columns[1].min_max_precision, QL_PRECISION_ABSENT);
  st.release(&st);
  struct ArrowSchema schema;
  QL_CHECK_OK(f->tp.get_schema(&f->tp, &schema, &err), err);
  QL_CHECK_STR(schema.children[0]->name, "obs");
  QL_CHECK_STR(schema.children[0]->format, "l");
  QL_CHECK_STR(schema.children[1]->format, "f");
  ql_schema_release(&schema);
  ql_error_release(&err);
}

/* One filter case: the plan's kept blocks, its exact statistics and the
 * rows it produces. */
struct want {
  const char *blocks; /* "blocks=K/N " in the plan's display */
  int64_t rows, min, max, sum;
  double first_v, last_v; /* NaN: NULL */
};

static int same_v(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void check_scan(struct fixture *f, const struct ql_plan_view *view, ql_expr_id filter, const struct want *w,
                       const char *what) {
  struct ql_error err = {0};
  ql_expr_id roots[1] = {filter};
  struct ql_expr_list list = {view, 1, 0, roots};
  int32_t answers[1] = {-1};
  QL_CHECK_OK(f->tp.supports_filters(&f->tp, &list, answers, &err), err);
  QL_CHECK_INT(answers[0], QL_PUSHDOWN_EXACT);
  int32_t proj[2] = {0, 1};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), 2, proj, list, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(f->tp.scan(&f->tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
  if (!plan.release) return;
  if (!strstr(plan.display(&plan), w->blocks)) {
    fprintf(stderr, "%s: display '%s' lacks '%s'\n", what, plan.display(&plan), w->blocks);
    QL_CHECK(0);
  }
  struct ql_statistics st;
  QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
  QL_CHECK_INT(st.num_rows, w->rows);
  QL_CHECK_INT(st.num_rows_precision, QL_PRECISION_EXACT);
  if (w->rows > 0) {
    QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_EXACT);
    QL_CHECK_INT(st.columns[0].min.value.i64, w->min);
    QL_CHECK_INT(st.columns[0].max.value.i64, w->max);
  } else {
    QL_CHECK(st.columns[0].min.is_null && st.columns[0].max.is_null);
  }
  st.release(&st);
  /* the partitions' statistics add up to the plan's */
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan.get_properties(&plan, &props, &err), err);
  QL_CHECK_INT(props.n_ordering, 1); /* obs ascending */
  int64_t total = 0;
  for (int64_t p = 0; p < props.partition_count; p++) {
    QL_CHECK_OK(plan.get_statistics(&plan, p, &st, &err), err);
    total += st.num_rows;
    st.release(&st);
  }
  QL_CHECK_INT(total, w->rows);
  struct rows got;
  collect(f, &plan, &got);
  QL_CHECK_INT(got.n, w->rows);
  if (got.n != w->rows) fprintf(stderr, "  in case %s\n", what);
  if (w->rows > 0) {
    QL_CHECK_INT(got.first_obs, w->min);
    QL_CHECK_INT(got.last_obs, w->max);
    QL_CHECK_INT(got.sum_obs, w->sum);
    QL_CHECK(same_v(got.first_v, w->first_v));
    QL_CHECK(same_v(got.last_v, w->last_v));
  }
  plan.release(&plan);
  ql_error_release(&err);
}

static ql_expr_id obs_col(struct ql_ir_builder *b) { return ql_ir_column(b, "obs", NULL, 0); }

static ql_expr_id between(struct ql_ir_builder *b, int64_t lo, int64_t hi, int negated) {
  struct ql_expr e = {0};
  ql_expr_id args[3] = {obs_col(b), ql_ir_literal_i64(b, lo), ql_ir_literal_i64(b, hi)};
  e.kind = QL_EXPR_BETWEEN;
  e.flags = negated ? QL_EXPR_NEGATED : 0;
  e.n_args = 3;
  e.args = args;
  e.column_index = -1;
  e.filter = -1;
  return ql_ir_expr(b, &e);
}

static ql_expr_id in_list(struct ql_ir_builder *b, const int64_t *values, int32_t n, int negated) {
  struct ql_expr e = {0};
  ql_expr_id args[16];
  args[0] = obs_col(b);
  for (int32_t i = 0; i < n; i++) args[i + 1] = ql_ir_literal_i64(b, values[i]);
  e.kind = QL_EXPR_IN_LIST;
  e.flags = negated ? QL_EXPR_NEGATED : 0;
  e.n_args = n + 1;
  e.args = args;
  e.column_index = -1;
  e.filter = -1;
  return ql_ir_expr(b, &e);
}

static void test_filters(struct fixture *f) {
  struct ql_error err = {0};
  struct ql_ir_builder *b = NULL;
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  const int64_t big = (int64_t)1 << 40;
  enum { N_CASES = 11 };
  ql_expr_id e[N_CASES];
  /* the last 7 positions: the last block only */
  e[0] = ql_ir_binary(b, QL_OP_GE, obs_col(b), ql_ir_literal_i64(b, LAST_START));
  /* a float literal, on the left */
  e[1] = ql_ir_binary(b, QL_OP_GT, ql_ir_literal_f64(b, 2.5), obs_col(b));
  /* out-of-range and negative members match nothing */
  const int64_t members[4] = {LAST_START + 2, 5, -1, big};
  e[2] = in_list(b, members, 4, 0);
  /* NOT BETWEEN: both ends */
  e[3] = between(b, 3, LAST_START + 2, 1);
  /* AND across the first chunk boundary */
  e[4] = ql_ir_binary(b, QL_OP_AND, ql_ir_binary(b, QL_OP_NE, obs_col(b), ql_ir_literal_i64(b, 0)),
                      ql_ir_binary(b, QL_OP_LE, obs_col(b), ql_ir_literal_f64(b, 65536.0)));
  /* empty: beyond the end, before the start */
  e[5] = ql_ir_binary(b, QL_OP_GT, obs_col(b), ql_ir_literal_i64(b, big));
  e[6] = ql_ir_binary(b, QL_OP_LE, obs_col(b), ql_ir_literal_i64(b, -1));
  /* OR of two equalities, NOT of a comparison */
  e[7] = ql_ir_binary(b, QL_OP_OR, ql_ir_binary(b, QL_OP_EQ, obs_col(b), ql_ir_literal_i64(b, N_OBS - 1)),
                      ql_ir_binary(b, QL_OP_EQ, obs_col(b), ql_ir_literal_i64(b, 999)));
  e[8] = ql_ir_unary(b, QL_EXPR_NOT, ql_ir_binary(b, QL_OP_LT, obs_col(b), ql_ir_literal_f64(b, (double)N_OBS - 1.5)));
  /* NOT IN: every position but 3; its statistics are the whole range */
  const int64_t one[1] = {3};
  e[9] = in_list(b, one, 1, 1);
  /* a window in the middle (never-written chunks: NULL v) */
  e[10] = between(b, 1000000000, 1000000004, 0);
  struct ql_plan_view view;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &view, &err), err);
  ql_ir_builder_free(b);
  const double null = NAN;
  const int64_t last = N_OBS - 1;
  const struct want want[N_CASES] = {
      {"blocks=1/32769 ", 7, LAST_START, last, 7 * LAST_START + 21, 1, 7},
      {"blocks=1/32769 ", 3, 0, 2, 3, 1, 3},
      {"blocks=2/32769 ", 2, 5, LAST_START + 2, LAST_START + 7, 6, 3},
      {"blocks=2/32769 ", 7, 0, last, 3 + (LAST_START + 3) * 4 + 6, 1, 7},
      {"blocks=2/32769 ", 65536, 1, 65536, (int64_t)65536 * 65537 / 2, 2, null},
      {"blocks=0/32769 ", 0, 0, 0, 0, 0, 0},
      {"blocks=0/32769 ", 0, 0, 0, 0, 0, 0},
      {"blocks=2/32769 ", 2, 999, last, 999 + last, 1000, 7},
      {"blocks=1/32769 ", 1, last, last, last, 7, 7},
      {"blocks=32769/32769 ", N_OBS - 1, 0, last, 0, 1, 7},
      {"blocks=1/32769 ", 5, 1000000000, 1000000004, 5000000010LL, null, null},
  };
  for (int i = 0; i < N_CASES; i++) {
    char what[32];
    snprintf(what, sizeof(what), "filter %d", i);
    struct want w = want[i];
    /* NOT IN over 2^31 rows: its sum is checked by formula, not by reading them all */
    if (i == 9) continue;
    check_scan(f, &view, e[i], &w, what);
  }
  /* NOT IN (3): planned and counted exactly, without scanning 2^31 rows */
  {
    ql_expr_id roots[1] = {e[9]};
    struct ql_expr_list list = {&view, 1, 0, roots};
    int32_t proj[2] = {0, 1};
    struct ql_scan_args args = {sizeof(struct ql_scan_args), 2, proj, list, -1};
    struct ql_execution_plan plan;
    QL_CHECK_OK(f->tp.scan(&f->tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
    QL_CHECK(strstr(plan.display(&plan), want[9].blocks) != NULL);
    struct ql_statistics st;
    QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
    QL_CHECK_INT(st.num_rows, N_OBS - 1);
    QL_CHECK_INT(st.columns[0].min.value.i64, 0);
    QL_CHECK_INT(st.columns[0].max.value.i64, last);
    st.release(&st);
    /* partition 0 starts with chunk 0 and its rows 0, 1, 2, 4, 5 */
    struct ql_task_context ctx;
    ql_ref_host_task_context(f->host, 0, &ctx);
    ctx.batch_size = 5;
    struct ArrowArrayStream s;
    QL_CHECK_OK(plan.execute(&plan, 0, &ctx, &s, &err), err);
    struct ArrowArray a;
    QL_CHECK_INT(s.get_next(&s, &a), 0);
    QL_CHECK_INT(a.length, 5);
    if (a.release) {
      const int64_t *o = a.children[0]->buffers[1];
      QL_CHECK(o[0] == 0 && o[1] == 1 && o[2] == 2 && o[3] == 4 && o[4] == 5);
      a.release(&a);
    }
    s.release(&s);
    plan.release(&plan);
  }
  view.release(&view);
  ql_error_release(&err);
}

/* LIMIT over the whole table: the first rows, generated. */
static void test_limit(struct fixture *f) {
  struct ql_error err = {0};
  int32_t proj[2] = {0, 1};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), 2, proj, {NULL, 0, 0, NULL}, 3};
  QL_CHECK_OK(ql_ref_host_config_set(f->host, "qlink.execution.target_partitions", "1", &err), err);
  struct ql_execution_plan plan;
  QL_CHECK_OK(f->tp.scan(&f->tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
  struct rows got;
  collect(f, &plan, &got);
  QL_CHECK_INT(got.n, 3);
  QL_CHECK_INT(got.first_obs, 0);
  QL_CHECK_INT(got.last_obs, 2);
  QL_CHECK(got.first_v == 1 && got.last_v == 3);
  plan.release(&plan);
  QL_CHECK_OK(ql_ref_host_config_set(f->host, "qlink.execution.target_partitions", "2", &err), err);
  ql_error_release(&err);
}

int main(void) {
  struct ql_error err = {0};
  struct fixture f;
  memset(&f, 0, sizeof(f));
  struct ql_ref_host_options ho = {-1, 0, 2};
  QL_CHECK_OK(zr_test_open(&ho, &f.host, &f.plugin, &err), err);
  QL_CHECK_OK(zr_test_build_store(f.host, build_store, &err), err);
  test_open_memory(&f);
  const char *keys[1] = {"path"};
  const char *values[1] = {"memory:///obs.zarr"};
  struct ql_options opts = {1, keys, values};
  QL_CHECK_OK(f.plugin.table_provider_open(&f.plugin, "table", &opts, ql_ref_host_session(f.host), &f.tp, &err), err);
  if (f.tp.release) {
    test_table_statistics(&f);
    test_filters(&f);
    test_limit(&f);
    f.tp.release(&f.tp);
  }
  QL_CHECK_OK(zr_test_close(f.host, &f.plugin, &err), err);
  ql_error_release(&err);
  QL_TEST_END();
}
