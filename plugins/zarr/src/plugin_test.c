/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr end to end through the ABI, over an in-memory store: schema,
 * statistics, the pushdown handshake (filters built with libqlink's IR
 * builder), partitions, batches, limit, cancellation, metrics. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/test_util.h"
#include "store_put.h"

/* time(4): days since 2000-01-01; lat(3) = 10, 20, 30; v(time, lat) int16
 * fill -1 in 2x2 chunks, chunk (1,1) never written; w(lat) float64. */
static void build_store(const struct ql_object_store *s) {
  put_text(s, "t.zarr/.zgroup", "{\"zarr_format\":2}");
  put_text(s, "t.zarr/.zattrs", "{}");
  put_text(s, "t.zarr/time/.zarray",
           "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[4],\"dtype\":\"<i8\",\"fill_value\":null,\"order\":\"C\","
           "\"compressor\":null,\"filters\":null}");
  put_text(s, "t.zarr/time/.zattrs",
           "{\"_ARRAY_DIMENSIONS\":[\"time\"],\"units\":\"days since 2000-01-01\",\"calendar\":\"standard\"}");
  int64_t days[4] = {0, 1, 2, 3};
  put(s, "t.zarr/time/0", days, sizeof(days));
  put_text(s, "t.zarr/lat/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<f8\",\"fill_value\":\"NaN\",\"compressor\":null}");
  put_text(s, "t.zarr/lat/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"lat\"],\"units\":\"degrees_north\"}");
  double lat[3] = {10, 20, 30};
  put(s, "t.zarr/lat/0", lat, sizeof(lat));
  put_text(s, "t.zarr/v/.zarray",
           "{\"zarr_format\":2,\"shape\":[4,3],\"chunks\":[2,2],\"dtype\":\"<i2\",\"fill_value\":-1,\"compressor\":null}");
  put_text(s, "t.zarr/v/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"time\",\"lat\"],\"long_name\":\"V\"}");
  /* v[t][l] = 10 * t + l, except v[1][1] = -1 (masked) */
  int16_t c00[4] = {0, 1, 10, -1}, c01[4] = {2, -1, 12, -1}, c10[4] = {20, 21, 30, 31};
  put(s, "t.zarr/v/0.0", c00, sizeof(c00));
  put(s, "t.zarr/v/0.1", c01, sizeof(c01));
  put(s, "t.zarr/v/1.0", c10, sizeof(c10));
  put_text(s, "t.zarr/w/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<f8\",\"fill_value\":\"NaN\",\"compressor\":null}");
  put_text(s, "t.zarr/w/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"lat\"]}");
  double w[3] = {0.5, NAN, 1.5};
  put(s, "t.zarr/w/0", w, sizeof(w));
  /* n.zarr: u(x) float64 with NaN and no fill value */
  put_text(s, "n.zarr/.zgroup", "{\"zarr_format\":2}");
  put_text(s, "n.zarr/x/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<i8\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "n.zarr/x/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"x\"]}");
  int64_t x[3] = {1, 2, 3};
  put(s, "n.zarr/x/0", x, sizeof(x));
  put_text(s, "n.zarr/u/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<f8\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "n.zarr/u/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"x\"]}");
  double u[3] = {NAN, 2, 3};
  put(s, "n.zarr/u/0", u, sizeof(u));
}

struct fixture {
  struct ql_ref_host *host;
  struct ql_plugin plugin;
  struct ql_table_provider tp;
};

/* Blocks of one chunk grid cell (block_rows=1), so the small store spans
 * several blocks. */
static int open_table(struct fixture *f, const char *table, struct ql_error *err) {
  const char *keys[3] = {"path", "block_rows", "table"};
  const char *values[3] = {"memory:///t.zarr", "1", table};
  struct ql_options opts = {table ? 3 : 2, keys, values};
  return f->plugin.table_provider_open(&f->plugin, "table", &opts, ql_ref_host_session(f->host), &f->tp, err);
}

/* Float values of projected column `col` (NaN for NULL), up to cap rows,
 * and the batches seen. */
struct floats {
  int64_t col, cap, n, batches;
  double *out;
};

static void take_floats(const struct ArrowArray *a, void *ctx) {
  struct floats *x = ctx;
  x->batches++;
  const struct ArrowArray *c = a->children[x->col];
  for (int64_t r = 0; r < a->length && x->n < x->cap; r++) {
    x->out[x->n++] = ql_array_is_valid(c, r) ? ((const float *)c->buffers[1])[r] : NAN;
  }
}

/* Run every partition; return the rows (up to cap) of projected int column
 * `col` as float values in out, NaN for NULL. */
static int64_t collect(struct fixture *f, const struct ql_execution_plan *plan, int64_t col, double *out, int64_t cap,
                       int64_t *batches) {
  struct ql_error err = {0};
  struct floats x = {col, cap, 0, 0, out};
  QL_CHECK_OK(zr_test_each_batch(f->host, plan, take_floats, &x, &err), err);
  *batches += x.batches;
  ql_error_release(&err);
  return x.n;
}

static void test_schema_and_stats(struct fixture *f) {
  struct ql_error err = {0};
  QL_CHECK_OK(open_table(f, NULL, &err), err);
  struct ArrowSchema schema;
  QL_CHECK_OK(f->tp.get_schema(&f->tp, &schema, &err), err);
  QL_CHECK_INT(schema.n_children, 3);
  QL_CHECK_STR(schema.children[0]->name, "time");
  QL_CHECK_STR(schema.children[0]->format, "tsn:");
  QL_CHECK_STR(schema.children[1]->format, "g");
  QL_CHECK_STR(schema.children[2]->name, "v");
  QL_CHECK_STR(schema.children[2]->format, "f");
  char *units = NULL;
  QL_CHECK_INT(ql_schema_metadata_get(schema.children[1], "units", &units), QL_OK);
  QL_CHECK_STR(units, "degrees_north");
  free(units);
  ql_schema_release(&schema);
  struct ql_statistics st;
  QL_CHECK_OK(f->tp.get_statistics(&f->tp, &st, &err), err);
  QL_CHECK_INT(st.num_rows, 12);
  QL_CHECK_INT(st.num_rows_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.columns[0].min.value.i64, 946684800000000000LL);
  QL_CHECK_INT(st.columns[0].max.value.i64, 946684800000000000LL + 3 * 86400000000000LL);
  QL_CHECK(st.columns[1].min.value.f64 == 10 && st.columns[1].max.value.f64 == 30);
  QL_CHECK_INT(st.columns[2].min_max_precision, QL_PRECISION_ABSENT);
  st.release(&st);
  QL_CHECK(st.release == NULL);
  f->tp.release(&f->tp);
  QL_CHECK(f->tp.release == NULL);
  ql_error_release(&err);
}

static void test_scan_with_filters(struct fixture *f) {
  struct ql_error err = {0};
  QL_CHECK_OK(open_table(f, "time_lat", &err), err);
  struct ql_ir_builder *b = NULL;
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  /* 15.0 < lat ; v > 0 (not a dimension) ; time between 2000-01-02 and 2000-01-03 (dates) */
  ql_expr_id f0 = ql_ir_binary(b, QL_OP_LT, ql_ir_literal_f64(b, 15.0), ql_ir_column(b, "lat", NULL, 1));
  ql_expr_id f1 = ql_ir_binary(b, QL_OP_GT, ql_ir_column(b, "v", NULL, 2), ql_ir_literal_i64(b, 0));
  struct ql_scalar d1 = {0}, d2 = {0};
  d1.format = "tdD";
  d1.value.i64 = 10958; /* 2000-01-02 */
  d2.format = "tdD";
  d2.value.i64 = 10959;
  struct ql_expr between = {0};
  ql_expr_id bargs[3] = {ql_ir_column(b, "time", NULL, 0), ql_ir_literal(b, &d1), ql_ir_literal(b, &d2)};
  between.kind = QL_EXPR_BETWEEN;
  between.n_args = 3;
  between.args = bargs;
  between.column_index = -1;
  between.filter = -1;
  ql_expr_id f2 = ql_ir_expr(b, &between);
  struct ql_plan_view view;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &view, &err), err);
  ql_ir_builder_free(b);
  ql_expr_id roots[3] = {f0, f1, f2};
  struct ql_expr_list list = {&view, 3, 0, roots};
  int32_t answers[3] = {-1, -1, -1};
  QL_CHECK_OK(f->tp.supports_filters(&f->tp, &list, answers, &err), err);
  QL_CHECK_INT(answers[0], QL_PUSHDOWN_EXACT);
  QL_CHECK_INT(answers[1], QL_PUSHDOWN_UNSUPPORTED);
  QL_CHECK_INT(answers[2], QL_PUSHDOWN_EXACT);
  int32_t proj[2] = {2, 0};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), 2, proj, list, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(f->tp.scan(&f->tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
  QL_CHECK_STR(plan.name(&plan), "ZarrScanExec");
  QL_CHECK(strstr(plan.display(&plan), "arrays=[v]") != NULL);
  /* time rows 1..2 and lat 20, 30: blocks (0..1, 2..3) x (0..1, 2) -> 4 blocks, all kept, one row each;
   * the host's 2 target partitions take two blocks each */
  QL_CHECK(strstr(plan.display(&plan), "blocks=4/4 partitions=2") != NULL);
  {
    /* a host built against the first layout (ending at `ordering`) gets nothing written past it */
    union {
      struct ql_plan_properties p;
      unsigned char raw[sizeof(struct ql_plan_properties) + 16];
    } old;
    memset(&old, 0xAB, sizeof(old));
    size_t first = offsetof(struct ql_plan_properties, ordering) + sizeof(old.p.ordering);
    old.p.struct_size = (uint32_t)first;
    QL_CHECK_OK(plan.get_properties(&plan, &old.p, &err), err);
    QL_CHECK_INT(old.p.struct_size, (int64_t)first);
    QL_CHECK_INT(old.p.partition_count, 2);
    QL_CHECK_INT(old.raw[first], 0xAB);
  }
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan.get_properties(&plan, &props, &err), err);
  QL_CHECK_INT(props.partition_count, 2);
  double vals[16];
  int64_t batches = 0;
  int64_t n = collect(f, &plan, 0, vals, 16, &batches);
  QL_CHECK_INT(n, 4);
  /* partition order: (t0-1,l0-1): v[1][1] masked; (t0-1,l2): v[1][2]=12; (t2-3,l0-1): v[2][1]=21; (t2-3,l2): fill */
  QL_CHECK(isnan(vals[0]));
  QL_CHECK(vals[1] == 12);
  QL_CHECK(vals[2] == 21);
  QL_CHECK(isnan(vals[3]));
  struct ql_statistics st;
  QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
  QL_CHECK_INT(st.num_rows, 4);
  QL_CHECK_INT(st.n_columns, 2);
  QL_CHECK_INT(st.columns[1].min.value.i64, 946771200000000000LL);
  st.release(&st);
  /* partition 0: blocks (t0-1, l0-1) and (t0-1, l2): time row 1 only */
  QL_CHECK_OK(plan.get_statistics(&plan, 0, &st, &err), err);
  QL_CHECK_INT(st.num_rows, 2);
  QL_CHECK_INT(st.columns[1].min_max_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.columns[1].min.value.i64, 946771200000000000LL);
  QL_CHECK_INT(st.columns[1].max.value.i64, 946771200000000000LL);
  st.release(&st);
  QL_CHECK_OK(plan.get_statistics(&plan, 1, &st, &err), err);
  QL_CHECK_INT(st.num_rows, 2);
  QL_CHECK_INT(st.columns[1].min.value.i64, 946857600000000000LL);
  QL_CHECK_INT(st.columns[1].max.value.i64, 946857600000000000LL);
  st.release(&st);
  QL_CHECK_INT(plan.get_statistics(&plan, 2, &st, &err), QL_EINVAL);
  /* asked again, each answer is the same, served from the plan's cache */
  for (int rep = 0; rep < 3; rep++) {
    QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
    QL_CHECK_INT(st.num_rows, 4);
    QL_CHECK_INT(st.columns[1].min.value.i64, 946771200000000000LL);
    st.release(&st);
    QL_CHECK_OK(plan.get_statistics(&plan, 1, &st, &err), err);
    QL_CHECK_INT(st.num_rows, 2);
    QL_CHECK_INT(st.columns[1].max.value.i64, 946857600000000000LL);
    st.release(&st);
  }
  struct ql_metrics m;
  QL_CHECK_OK(plan.get_metrics(&plan, &m, &err), err);
  QL_CHECK_STR(m.items[0].name, "output_rows");
  QL_CHECK_INT(m.items[0].value, 4);
  QL_CHECK_STR(m.items[1].name, "chunks_read");
  QL_CHECK_INT(m.items[1].value, 4);
  /* three partition arguments (-1, 0, 1) computed once each, whatever the asks */
  QL_CHECK_INT(m.count, 9);
  QL_CHECK_STR(m.items[8].name, "statistics_computed");
  QL_CHECK_INT(m.items[8].value, 3);
  m.release(&m);
  /* a copy without children; children are refused */
  struct ql_execution_plan copy;
  QL_CHECK_OK(plan.with_new_children(&plan, NULL, 0, &copy, &err), err);
  QL_CHECK_STR(copy.name(&copy), "ZarrScanExec");
  copy.release(&copy);
  struct ql_task_context ctx;
  ql_ref_host_task_context(f->host, 0, &ctx);
  struct ArrowArrayStream stream;
  QL_CHECK_INT(plan.execute(&plan, 9, &ctx, &stream, &err), QL_EINVAL);
  /* a stream outlives its plan */
  QL_CHECK_OK(plan.execute(&plan, 1, &ctx, &stream, &err), err);
  plan.release(&plan);
  QL_CHECK(plan.release == NULL);
  struct ArrowArray a;
  QL_CHECK_INT(stream.get_next(&stream, &a), 0); /* batches never cross blocks */
  QL_CHECK_INT(a.length, 1);
  a.release(&a);
  QL_CHECK_INT(stream.get_next(&stream, &a), 0);
  QL_CHECK_INT(a.length, 1);
  a.release(&a);
  QL_CHECK_INT(stream.get_next(&stream, &a), 0);
  QL_CHECK(a.release == NULL);
  stream.release(&stream);
  view.release(&view);
  f->tp.release(&f->tp);
  ql_error_release(&err);
}

static void test_limit_batches_cancel(struct fixture *f) {
  struct ql_error err = {0};
  QL_CHECK_OK(open_table(f, NULL, &err), err);
  struct ql_scan_args args = {sizeof(struct ql_scan_args), -1, NULL, {NULL, 0, 0, NULL}, 1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(f->tp.scan(&f->tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
  double vals[16];
  int64_t batches = 0;
  QL_CHECK_INT(collect(f, &plan, 2, vals, 16, &batches), 2); /* one row per partition */
  QL_CHECK(vals[0] == 0);
  plan.release(&plan);
  args.limit = -1;
  QL_CHECK_OK(f->tp.scan(&f->tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
  struct ql_task_context ctx;
  ql_ref_host_task_context(f->host, 0, &ctx);
  ctx.batch_size = 3;
  struct ArrowArrayStream st;
  QL_CHECK_OK(plan.execute(&plan, 0, &ctx, &st, &err), err);
  struct ArrowArray a;
  QL_CHECK_INT(st.get_next(&st, &a), 0);
  QL_CHECK_INT(a.length, 3);
  a.release(&a);
  ql_ref_host_cancel(f->host, 1);
  QL_CHECK_INT(st.get_next(&st, &a), ECANCELED);
  QL_CHECK(strstr(st.get_last_error(&st), "cancelled") != NULL);
  ql_ref_host_cancel(f->host, 0);
  st.release(&st);
  plan.release(&plan);
  f->tp.release(&f->tp);
  ql_error_release(&err);
}

/* The host's target partition count groups kept blocks into contiguous
 * runs (C order); unknown or 0: one partition per block. Rows, their order
 * and the statistics do not depend on it. */
static void test_partition_targets(struct fixture *f) {
  struct ql_error err = {0};
  const char *targets[4] = {"1", "3", "0", "64"};
  const int64_t want_parts[4] = {1, 3, 4, 4};
  const int64_t want_rows[4][4] = {{12}, {6, 4, 2}, {4, 2, 4, 2}, {4, 2, 4, 2}};
  for (int i = 0; i < 4; i++) {
    QL_CHECK_OK(ql_ref_host_config_set(f->host, "qlink.execution.target_partitions", targets[i], &err), err);
    QL_CHECK_OK(open_table(f, NULL, &err), err);
    struct ql_scan_args args = {sizeof(struct ql_scan_args), -1, NULL, {NULL, 0, 0, NULL}, -1};
    struct ql_execution_plan plan;
    QL_CHECK_OK(f->tp.scan(&f->tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
    struct ql_plan_properties props;
    memset(&props, 0, sizeof(props));
    props.struct_size = sizeof(props);
    QL_CHECK_OK(plan.get_properties(&plan, &props, &err), err);
    QL_CHECK_INT(props.partition_count, want_parts[i]);
    for (int64_t p = 0; p < props.partition_count; p++) {
      struct ql_statistics st;
      QL_CHECK_OK(plan.get_statistics(&plan, p, &st, &err), err);
      QL_CHECK_INT(st.num_rows, want_rows[i][p]);
      st.release(&st);
    }
    double vals[16];
    int64_t batches = 0;
    QL_CHECK_INT(collect(f, &plan, 2, vals, 16, &batches), 12);
    QL_CHECK_INT(batches, 4); /* one per block */
    /* block (t0-1, l0-1) first: v[0][0], v[0][1], v[1][0], v[1][1] (masked), then (t0-1, l2) */
    QL_CHECK(vals[0] == 0 && vals[1] == 1 && vals[2] == 10 && isnan(vals[3]));
    QL_CHECK(vals[4] == 2 && vals[5] == 12);
    QL_CHECK(vals[6] == 20 && vals[7] == 21 && vals[8] == 30 && vals[9] == 31);
    QL_CHECK(isnan(vals[10]) && isnan(vals[11])); /* chunk (1,1) never written */
    plan.release(&plan);
    f->tp.release(&f->tp);
  }
  QL_CHECK_OK(ql_ref_host_config_set(f->host, "qlink.execution.target_partitions", "2", &err), err);
  ql_error_release(&err);
}

/* block_rows grows blocks of tiny chunks by whole grid cells, innermost
 * dimension first; a malformed value is refused naming the option. */
static void test_block_rows(struct fixture *f) {
  struct ql_error err = {0};
  const char *rows[3] = {NULL, "6", "1"};
  const char *want[3] = {"blocks=1/1 partitions=1", "blocks=2/2 partitions=2", "blocks=4/4 partitions=2"};
  for (int i = 0; i < 3; i++) {
    const char *keys[2] = {"path", "block_rows"};
    const char *values[2] = {"memory:///t.zarr", rows[i]};
    struct ql_options opts = {rows[i] ? 2 : 1, keys, values};
    QL_CHECK_OK(f->plugin.table_provider_open(&f->plugin, "table", &opts, ql_ref_host_session(f->host), &f->tp, &err),
                err);
    struct ql_scan_args args = {sizeof(struct ql_scan_args), -1, NULL, {NULL, 0, 0, NULL}, -1};
    struct ql_execution_plan plan;
    QL_CHECK_OK(f->tp.scan(&f->tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
    QL_CHECK(strstr(plan.display(&plan), want[i]) != NULL);
    double vals[16];
    int64_t batches = 0;
    QL_CHECK_INT(collect(f, &plan, 2, vals, 16, &batches), 12);
    if (i == 0) {
      /* one block: C order of the whole table */
      for (int r = 0; r < 12; r++) {
        int t = r / 3, l = r % 3;
        if ((t == 1 && l == 1) || (t >= 2 && l == 2)) {
          QL_CHECK(isnan(vals[r]));
        } else {
          QL_CHECK(vals[r] == 10 * t + l);
        }
      }
    }
    plan.release(&plan);
    f->tp.release(&f->tp);
  }
  const char *bad[3] = {"0", "x", "-4"};
  for (int i = 0; i < 3; i++) {
    const char *keys[2] = {"path", "block_rows"};
    const char *values[2] = {"memory:///t.zarr", bad[i]};
    struct ql_options opts = {2, keys, values};
    QL_CHECK_INT(f->plugin.table_provider_open(&f->plugin, "table", &opts, ql_ref_host_session(f->host), &f->tp, &err),
                 QL_EINVAL);
    QL_CHECK(strstr(ql_error_message(&err), "block_rows") != NULL);
  }
  ql_error_release(&err);
}

static void test_errors(struct fixture *f) {
  struct ql_error err = {0};
  QL_CHECK_INT(open_table(f, "nope", &err), QL_ENOTFOUND);
  QL_CHECK(strstr(ql_error_message(&err), "no table 'nope'") != NULL);
  const char *keys[1] = {"pth"}, *values[1] = {"x"};
  struct ql_options bad = {1, keys, values};
  QL_CHECK_INT(f->plugin.table_provider_open(&f->plugin, "table", &bad, ql_ref_host_session(f->host), &f->tp, &err),
               QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "pth") != NULL);
  const char *k2[1] = {"path"}, *v2[1] = {"memory:///missing.zarr"};
  struct ql_options missing = {1, k2, v2};
  QL_CHECK_INT(f->plugin.table_provider_open(&f->plugin, "table", &missing, ql_ref_host_session(f->host), &f->tp, &err),
               QL_ENOTFOUND);
  QL_CHECK(strstr(ql_error_message(&err), "missing.zarr") != NULL);
  struct ql_schema_provider sp;
  QL_CHECK_INT(f->plugin.schema_provider_open(&f->plugin, "nope", &missing, ql_ref_host_session(f->host), &sp, &err),
               QL_ENOTFOUND);
  ql_error_release(&err);
}

static void test_schema_provider(struct fixture *f) {
  struct ql_error err = {0};
  const char *keys[2] = {"path", "tables"}, *values[2] = {"memory:///t.zarr", "time_lat=grid"};
  struct ql_options opts = {2, keys, values};
  struct ql_schema_provider sp;
  QL_CHECK_OK(f->plugin.schema_provider_open(&f->plugin, "store", &opts, ql_ref_host_session(f->host), &sp, &err), err);
  QL_CHECK_INT(sp.table_count(&sp), 2);
  QL_CHECK_STR(sp.table_name(&sp, 0), "grid");
  QL_CHECK_STR(sp.table_name(&sp, 1), "lat");
  struct ql_table_provider tp;
  QL_CHECK_OK(sp.table(&sp, "lat", &tp, &err), err);
  sp.release(&sp); /* the table keeps the dataset alive */
  struct ArrowSchema schema;
  QL_CHECK_OK(tp.get_schema(&tp, &schema, &err), err);
  QL_CHECK_INT(schema.n_children, 2);
  QL_CHECK_STR(schema.children[1]->name, "w");
  ql_schema_release(&schema);
  tp.release(&tp);
  ql_error_release(&err);
}

/* Float column `col`'s NULL and NaN (valid) cells, its valid values up to cap. */
struct nan_cells {
  int64_t col, cap, n, nulls, nans;
  int wide; /* "g", else "f" */
  double *vals;
};

static void take_nan_cells(const struct ArrowArray *a, void *ctx) {
  struct nan_cells *x = ctx;
  const struct ArrowArray *c = a->children[x->col];
  for (int64_t r = 0; r < a->length; r++) {
    if (!ql_array_is_valid(c, r)) {
      x->nulls++;
      continue;
    }
    double v = x->wide ? ((const double *)c->buffers[1])[c->offset + r] : ((const float *)c->buffers[1])[c->offset + r];
    if (isnan(v)) x->nans++;
    if (x->n < x->cap) x->vals[x->n] = v;
    x->n++;
  }
}

/* Count the NULL and the NaN (valid) cells of float column `col` ("f" or
 * "g") of `table` of the store at `path` opened with nan_fill `mode`
 * (NULL: the default), every partition; the valid cells' values go to
 * vals (up to cap). */
static int64_t nan_fill_scan(struct fixture *f, const char *path, const char *table, const char *mode, int64_t col,
                             int64_t *nulls, int64_t *nans, double *vals, int64_t cap) {
  struct ql_error err = {0};
  const char *keys[4] = {"path", "block_rows"};
  const char *values[4] = {path, "1"};
  int32_t n = 2;
  if (table) {
    keys[n] = "table";
    values[n++] = table;
  }
  if (mode) {
    keys[n] = "nan_fill";
    values[n++] = mode;
  }
  struct ql_options opts = {n, keys, values};
  QL_CHECK_OK(f->plugin.table_provider_open(&f->plugin, "table", &opts, ql_ref_host_session(f->host), &f->tp, &err),
              err);
  struct ql_scan_args args = {sizeof(struct ql_scan_args), -1, NULL, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(f->tp.scan(&f->tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
  struct ArrowSchema schema;
  QL_CHECK_OK(plan.get_schema(&plan, &schema, &err), err);
  struct nan_cells x = {col, cap, 0, 0, 0, strcmp(schema.children[col]->format, "g") == 0, vals};
  schema.release(&schema);
  QL_CHECK_OK(zr_test_each_batch(f->host, &plan, take_nan_cells, &x, &err), err);
  *nulls = x.nulls;
  *nans = x.nans;
  plan.release(&plan);
  f->tp.release(&f->tp);
  ql_error_release(&err);
  return x.n;
}

/* nan_fill=nan keeps the NaN cells of a NaN-filled float variable (w) NaN,
 * as xarray holds them; other fill values (v's -1, int16 -> float32)
 * still mask to NULL; a bad value is refused naming the option. */
static void test_nan_fill(struct fixture *f) {
  int64_t nulls, nans;
  double vals[16];
  /* lat: lat, w = 0.5, NaN, 1.5 */
  QL_CHECK_INT(nan_fill_scan(f, "memory:///t.zarr", "lat", NULL, 1, &nulls, &nans, vals, 16), 2);
  QL_CHECK_INT(nulls, 1);
  QL_CHECK_INT(nans, 0);
  QL_CHECK_INT(nan_fill_scan(f, "memory:///t.zarr", "lat", "null", 1, &nulls, &nans, vals, 16), 2);
  QL_CHECK_INT(nulls, 1);
  QL_CHECK_INT(nan_fill_scan(f, "memory:///t.zarr", "lat", "nan", 1, &nulls, &nans, vals, 16), 3);
  QL_CHECK_INT(nulls, 0);
  QL_CHECK_INT(nans, 1);
  QL_CHECK(vals[0] == 0.5 && isnan(vals[1]) && vals[2] == 1.5);
  /* time_lat: v's masked cells (v[1][1] = -1 and the unwritten chunk's two: 3 of 12) stay NULL */
  QL_CHECK_INT(nan_fill_scan(f, "memory:///t.zarr", "time_lat", "nan", 2, &nulls, &nans, vals, 16), 9);
  QL_CHECK_INT(nulls, 3);
  QL_CHECK_INT(nans, 0);
  /* nan_fill=all: every NaN is NULL, here u's, whose fill value is null (the default keeps it NaN) */
  QL_CHECK_INT(nan_fill_scan(f, "memory:///t.zarr", "lat", "all", 1, &nulls, &nans, vals, 16), 2);
  QL_CHECK_INT(nulls, 1);
  QL_CHECK_INT(nan_fill_scan(f, "memory:///n.zarr", NULL, NULL, 1, &nulls, &nans, vals, 16), 3);
  QL_CHECK_INT(nans, 1);
  QL_CHECK_INT(nan_fill_scan(f, "memory:///n.zarr", NULL, "all", 1, &nulls, &nans, vals, 16), 2);
  QL_CHECK_INT(nulls, 1);
  QL_CHECK_INT(nans, 0);
  QL_CHECK(vals[0] == 2.0 && vals[1] == 3.0);
  struct ql_error err = {0};
  const char *keys[2] = {"path", "nan_fill"}, *values[2] = {"memory:///t.zarr", "NaN"};
  struct ql_options opts = {2, keys, values};
  QL_CHECK_INT(f->plugin.table_provider_open(&f->plugin, "table", &opts, ql_ref_host_session(f->host), &f->tp, &err),
               QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "option 'nan_fill' must be 'null', 'nan' or 'all' (got 'NaN')") != NULL);
  struct ql_schema_provider sp;
  QL_CHECK_INT(f->plugin.schema_provider_open(&f->plugin, "store", &opts, ql_ref_host_session(f->host), &sp, &err),
               QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "qlink_zarr/store: option 'nan_fill'") != NULL);
  ql_error_release(&err);
}

/* A session memory limit applies to the partition blocks. */
static void test_memory_limit(void) {
  struct ql_error err = {0};
  struct fixture f;
  memset(&f, 0, sizeof(f));
  struct ql_ref_host_options ho = {4, 0, 1}; /* partition 0 needs 16 bytes */
  QL_CHECK_OK(zr_test_open(&ho, &f.host, &f.plugin, &err), err);
  QL_CHECK_OK(zr_test_build_store(f.host, build_store, &err), err);
  QL_CHECK_OK(open_table(&f, NULL, &err), err);
  struct ql_scan_args args = {sizeof(struct ql_scan_args), -1, NULL, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(f.tp.scan(&f.tp, ql_ref_host_session(f.host), &args, &plan, &err), err);
  struct ql_task_context ctx;
  ql_ref_host_task_context(f.host, 0, &ctx);
  struct ArrowArrayStream st;
  QL_CHECK_OK(plan.execute(&plan, 0, &ctx, &st, &err), err);
  struct ArrowArray a;
  QL_CHECK(st.get_next(&st, &a) != 0);
  const char *msg = st.get_last_error(&st);
  QL_CHECK(msg && strstr(msg, "partition 0: its chunk block needs 16 bytes, beyond the memory limit (each running "
                             "partition holds one decoded block: raise the limit, or lower "
                             "qlink.execution.target_partitions): ") != NULL);
  /* a failed stream stays failed (its half-loaded block is never read) */
  QL_CHECK(st.get_next(&st, &a) != 0);
  QL_CHECK(a.release == NULL);
  st.release(&st);
  plan.release(&plan);
  f.tp.release(&f.tp);
  QL_CHECK_OK(zr_test_close(f.host, &f.plugin, &err), err);
  ql_error_release(&err);
}

int main(void) {
  test_memory_limit();
  struct ql_error err = {0};
  struct fixture f;
  memset(&f, 0, sizeof(f));
  struct ql_ref_host_options ho = {-1, 0, 2};
  QL_CHECK_OK(zr_test_open(&ho, &f.host, &f.plugin, &err), err);
  QL_CHECK_INT(qlink_plugin_init(QL_ABI_VERSION_MAKE(9, 0), &f.plugin, &err), QL_EVERSION);
  QL_CHECK_OK(qlink_plugin_init(QL_ABI_VERSION, &f.plugin, &err), err);
  QL_CHECK_OK(zr_test_build_store(f.host, build_store, &err), err);
  test_schema_and_stats(&f);
  test_scan_with_filters(&f);
  test_limit_batches_cancel(&f);
  test_partition_targets(&f);
  test_block_rows(&f);
  test_errors(&f);
  test_schema_provider(&f);
  test_nan_fill(&f);
  QL_CHECK_OK(zr_test_close(f.host, &f.plugin, &err), err);
  ql_error_release(&err);
  QL_TEST_END();
}
