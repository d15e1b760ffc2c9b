/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_ndarray end to end through the ABI, over arrays in this process:
 * the registration API reached through the descriptor, every dtype,
 * strided and non-contiguous buffers, NaN and NaT, chunk blocks, dimension
 * filters pruning and slicing, projection, limit, exact statistics, a lazy
 * variable's loader (and its failure), release called exactly once. */
#include <ctype.h>
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
#include "qlink_ndarray.h"
#include "qlink_zarr/test_util.h"

/* A dataset's handle (qlink_ndarray.h), by value. */
typedef struct {
  char hex[ND_HANDLE_HEX + 1];
} handle_t;

static int is_handle(handle_t h) {
  if (strlen(h.hex) != ND_HANDLE_HEX) return 0;
  for (int i = 0; i < ND_HANDLE_HEX; i++) {
    if (!strchr("0123456789abcdef", h.hex[i])) return 0;
  }
  return 1;
}

struct fixture {
  struct ql_ref_host *host;
  struct ql_plugin plugin;
  const struct nd_api *api;
};

static int released; /* release callbacks seen */
static void count_release(void *owner) {
  released++;
  QL_CHECK_STR((const char *)owner, "owner");
}

/* ---------------------------------------------------------- the data */

/* time(4) datetime64[ns], lat(3) float64 decreasing, v(time, lat) float64
 * held transposed (a Fortran-order buffer: strides 8, 32) with a NaN,
 * w(lat) int16 reversed in memory (negative stride), elev(lat) a
 * non-dimension coordinate, flag(time, lat) bool, name(lat) "<U3". */
static const int64_t times[4] = {946684800000000000LL, 946771200000000000LL, 946857600000000000LL,
                                 946944000000000000LL};
static const double lats[3] = {30.0, 20.0, 10.0};
static double v_fortran[12];           /* v[t][l] at [l * 4 + t] */
static const int16_t w_reversed[3] = {-3, -2, -1}; /* w[l] = -(l + 1): read from the end backwards */
static const float elev[3] = {1.5f, 2.5f, 3.5f};
static const uint8_t flag[12] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0};
static uint32_t names[3][3]; /* UTF-32 */

static double v_value(int t, int l) { return t == 1 && l == 1 ? NAN : 10.0 * t + l; }

static void fill_data(void) {
  for (int t = 0; t < 4; t++) {
    for (int l = 0; l < 3; l++) v_fortran[l * 4 + t] = v_value(t, l);
  }
  const char *text[3] = {"abc", "de", "f"};
  memset(names, 0, sizeof(names));
  for (int l = 0; l < 3; l++) {
    for (size_t k = 0; k < strlen(text[l]); k++) names[l][k] = (uint32_t)text[l][k];
  }
}

static const char *dims_t[1] = {"time"}, *dims_l[1] = {"lat"}, *dims_tl[2] = {"time", "lat"};
static const int64_t shape_t[1] = {4}, shape_l[1] = {3}, shape_tl[2] = {4, 3};
static const int64_t strides_fortran[2] = {8, 32}, strides_reversed[1] = {-2};
static const int64_t chunks_tl[2] = {2, 3};

static handle_t register_main(struct fixture *f, const int64_t *chunks, char *msg) {
  struct nd_variable vars[7];
  memset(vars, 0, sizeof(vars));
  vars[0] = (struct nd_variable){"time", 1, 1, dims_t, shape_t, "<M8[ns]", times, NULL, NULL, NULL, NULL, NULL, NULL};
  vars[1] = (struct nd_variable){"lat", 1, 1, dims_l, shape_l, "g", lats, NULL, NULL,
                                 "{\"units\":\"degrees_north\",\"valid_range\":[-90,90]}", NULL, NULL, NULL};
  vars[2] = (struct nd_variable){"v", 2, 0, dims_tl, shape_tl, "<f8", v_fortran, strides_fortran, chunks,
                                 "{\"units\":\"K\",\"_FillValue\":0.0,\"scale_factor\":2}", NULL, NULL, NULL};
  vars[3] = (struct nd_variable){"w", 1, 0, dims_l, shape_l, "<i2", w_reversed + 2, strides_reversed, NULL, NULL, NULL,
                                 NULL, NULL};
  vars[4] = (struct nd_variable){"elev", 1, 1, dims_l, shape_l, "<f4", elev, NULL, NULL, NULL, NULL, NULL, NULL};
  vars[5] = (struct nd_variable){"flag", 2, 0, dims_tl, shape_tl, "|b1", flag, NULL, chunks, NULL, NULL, NULL, NULL};
  vars[6] = (struct nd_variable){"name", 1, 0, dims_l, shape_l, "<U3", names, NULL, NULL, NULL, NULL, NULL, NULL};
  handle_t id;
  QL_CHECK_INT(f->api->register_dataset(vars, 7, "main", "owner", count_release, id.hex, msg, 256), 0);
  return id;
}

static int open_table(struct fixture *f, handle_t id, const char *table, const char *block_rows,
                      struct ql_table_provider *out, struct ql_error *err) {
  const char *keys[3] = {"id", "block_rows", "table"};
  const char *values[3] = {id.hex, block_rows ? block_rows : "65536", table};
  struct ql_options opts = {table ? 3 : 2, keys, values};
  return f->plugin.table_provider_open(&f->plugin, "dataset", &opts, ql_ref_host_session(f->host), out, err);
}

/* The same (the only table) with option nan_fill (NULL: not given). */
static int open_table_nan(struct fixture *f, handle_t id, const char *block_rows, const char *nan_fill,
                          struct ql_table_provider *out, struct ql_error *err) {
  const char *keys[3] = {"id", "block_rows", "nan_fill"};
  const char *values[3] = {id.hex, block_rows ? block_rows : "65536", nan_fill};
  struct ql_options opts = {nan_fill ? 3 : 2, keys, values};
  return f->plugin.table_provider_open(&f->plugin, "dataset", &opts, ql_ref_host_session(f->host), out, err);
}

/* Column `col` of every batch as doubles (see collect). */
struct doubles {
  int32_t col;
  const char *fmt;
  double *out;
  uint8_t *valid;
  int64_t cap, n;
};

static void take_doubles(const struct ArrowArray *a, void *ctx) {
  struct doubles *d = ctx;
  const char *fmt = d->fmt;
  const struct ArrowArray *c = a->children[d->col];
  for (int64_t r = 0; r < a->length && d->n < d->cap; r++, d->n++) {
    d->valid[d->n] = (uint8_t)ql_array_is_valid(c, r);
    int64_t i = r + c->offset;
    double x = NAN;
    if (strcmp(fmt, "g") == 0) x = ((const double *)c->buffers[1])[i];
    if (strcmp(fmt, "f") == 0) x = ((const float *)c->buffers[1])[i];
    if (strcmp(fmt, "s") == 0) x = ((const int16_t *)c->buffers[1])[i];
    if (strcmp(fmt, "l") == 0 || strncmp(fmt, "ts", 2) == 0 || strncmp(fmt, "tD", 2) == 0) {
      x = (double)((const int64_t *)c->buffers[1])[i];
    }
    if (strcmp(fmt, "b") == 0) x = (((const uint8_t *)c->buffers[1])[i / 8] >> (i % 8)) & 1;
    d->out[d->n] = d->valid[d->n] ? x : NAN;
  }
}

/* Every partition's batches appended into one struct array per call
 * (rows of all partitions in partition order): returns the row count and
 * writes column `col` as doubles (NaN for null; bool 0/1; int16 and
 * timestamps as numbers; valid[] 0 for null). */
static int64_t collect(struct fixture *f, const struct ql_execution_plan *plan, int32_t col, double *out,
                       uint8_t *valid, int64_t cap) {
  struct ql_error err = {0};
  struct ArrowSchema schema;
  QL_CHECK_OK(plan->get_schema(plan, &schema, &err), err);
  struct doubles d = {col, schema.children[col]->format, out, valid, cap, 0};
  QL_CHECK_OK(zr_test_each_batch(f->host, plan, take_doubles, &d, &err), err);
  ql_schema_release(&schema);
  ql_error_release(&err);
  return d.n;
}

static struct ql_execution_plan scan(struct fixture *f, struct ql_table_provider *tp, int32_t n_proj,
                                     const int32_t *proj, struct ql_expr_list filters, int64_t limit) {
  struct ql_error err = {0};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), n_proj, proj, filters, limit};
  struct ql_execution_plan plan;
  memset(&plan, 0, sizeof(plan));
  QL_CHECK_OK(tp->scan(tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
  ql_error_release(&err);
  return plan;
}

/* ------------------------------------------------------------- tests */

static void test_schema_values_stats(struct fixture *f) {
  struct ql_error err = {0};
  char msg[256];
  handle_t id = register_main(f, chunks_tl, msg);
  QL_CHECK(is_handle(id));
  QL_CHECK_INT(f->api->live_count(), 1);
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(f, id, NULL, NULL, &tp, &err), err);
  struct ArrowSchema s;
  QL_CHECK_OK(tp.get_schema(&tp, &s, &err), err);
  /* dimensions, the coordinate over a subset, the variables in the order registered */
  QL_CHECK_INT(s.n_children, 5);
  const char *names_want[5] = {"time", "lat", "elev", "v", "flag"};
  const char *formats_want[5] = {"tsn:", "g", "f", "g", "b"};
  for (int i = 0; i < 5 && i < s.n_children; i++) {
    QL_CHECK_STR(s.children[i]->name, names_want[i]);
    QL_CHECK_STR(s.children[i]->format, formats_want[i]);
  }
  /* attributes are metadata, none consumed: the data are not decoded again */
  char *meta = NULL;
  QL_CHECK_INT(ql_schema_metadata_get(s.children[1], "valid_range", &meta), QL_OK);
  QL_CHECK_STR(meta, "[-90,90]");
  free(meta);
  QL_CHECK_INT(ql_schema_metadata_get(s.children[3], "_FillValue", &meta), QL_OK);
  QL_CHECK_STR(meta, "0.0");
  free(meta);
  ql_schema_release(&s);

  struct ql_statistics st;
  QL_CHECK_OK(tp.get_statistics(&tp, &st, &err), err);
  QL_CHECK_INT(st.num_rows, 12);
  QL_CHECK_INT(st.num_rows_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.columns[0].min.value.i64, times[0]);
  QL_CHECK_INT(st.columns[0].max.value.i64, times[3]);
  QL_CHECK(st.columns[1].min.value.f64 == 10.0 && st.columns[1].max.value.f64 == 30.0);
  st.release(&st);

  struct ql_expr_list none = {NULL, 0, 0, NULL};
  struct ql_execution_plan plan = scan(f, &tp, -1, NULL, none, -1);
  QL_CHECK_STR(plan.name(&plan), "NdarrayScanExec");
  QL_CHECK(strstr(plan.display(&plan), "dataset=") != NULL);
  double x[16];
  uint8_t ok[16];
  QL_CHECK_INT(collect(f, &plan, 3, x, ok, 16), 12);
  int good = 1;
  for (int t = 0; t < 4; t++) {
    for (int l = 0; l < 3; l++) {
      double want = v_value(t, l);
      /* NaN is NULL (a Dataset's missing values are NaN); the _FillValue attribute is metadata only */
      good &= isnan(want) ? ok[t * 3 + l] == 0 : ok[t * 3 + l] == 1 && x[t * 3 + l] == want;
    }
  }
  QL_CHECK(good);
  {
    /* nan_fill=nan: NaN is a value, as the buffer holds it */
    struct ql_table_provider keep;
    QL_CHECK_OK(open_table_nan(f, id, NULL, "nan", &keep, &err), err);
    struct ql_execution_plan kept = scan(f, &keep, -1, NULL, none, -1);
    QL_CHECK_INT(collect(f, &kept, 3, x, ok, 16), 12);
    QL_CHECK(ok[4] == 1 && isnan(x[4]) && ok[3] == 1 && x[3] == 10.0);
    kept.release(&kept);
    keep.release(&keep);
    QL_CHECK_INT(open_table_nan(f, id, NULL, "none", &keep, &err), QL_EINVAL);
    QL_CHECK_STR(ql_error_message(&err), "qlink_ndarray/dataset: option 'nan_fill' must be 'null' or 'nan' (got 'none')");
    ql_error_release(&err);
  }
  QL_CHECK_INT(collect(f, &plan, 0, x, ok, 16), 12);
  QL_CHECK(x[0] == (double)times[0] && x[3] == (double)times[1] && x[11] == (double)times[3]);
  QL_CHECK_INT(collect(f, &plan, 1, x, ok, 16), 12);
  QL_CHECK(x[0] == 30.0 && x[1] == 20.0 && x[2] == 10.0 && x[5] == 10.0);
  QL_CHECK_INT(collect(f, &plan, 2, x, ok, 16), 12);
  QL_CHECK(x[0] == 1.5 && x[4] == 2.5 && x[11] == 3.5);
  QL_CHECK_INT(collect(f, &plan, 4, x, ok, 16), 12);
  QL_CHECK(x[0] == 1 && x[1] == 0 && x[2] == 1 && x[11] == 0);
  /* partitions: time chunks of 2 at block_rows 65536 still grow to one block */
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan.get_properties(&plan, &props, &err), err);
  QL_CHECK_INT(props.partition_count, 1);
  plan.release(&plan);
  tp.release(&tp);

  /* the lat table's strings, through a projection */
  QL_CHECK_OK(open_table(f, id, "lat", NULL, &tp, &err), err);
  int32_t proj[1] = {3};
  plan = scan(f, &tp, 1, proj, none, -1);
  struct ql_task_context ctx;
  ql_ref_host_task_context(f->host, 0, &ctx);
  struct ArrowArrayStream stream;
  QL_CHECK_OK(plan.execute(&plan, 0, &ctx, &stream, &err), err);
  struct ArrowArray a;
  QL_CHECK_INT(stream.get_next(&stream, &a), 0);
  QL_CHECK_INT(a.length, 3);
  QL_CHECK_INT(a.n_children, 1);
  const int32_t *offs = a.children[0]->buffers[1];
  const char *chars = a.children[0]->buffers[2];
  QL_CHECK_INT(offs[1] - offs[0], 3);
  QL_CHECK(memcmp(chars + offs[0], "abc", 3) == 0);
  QL_CHECK_INT(offs[2] - offs[1], 2);
  QL_CHECK(memcmp(chars + offs[1], "de", 2) == 0);
  QL_CHECK_INT(offs[3] - offs[2], 1);
  QL_CHECK(memcmp(chars + offs[2], "f", 1) == 0);
  a.release(&a);
  stream.release(&stream);
  plan.release(&plan);
  tp.release(&tp);

  /* nothing open: unregistering releases the owner */
  QL_CHECK_INT(released, 0);
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  QL_CHECK_INT(released, 1);
  ql_error_release(&err);
}

/* Chunk blocks, filters that prune blocks and slice inside them, limit. */
static void test_blocks_filters_limit(struct fixture *f) {
  struct ql_error err = {0};
  char msg[256];
  handle_t id = register_main(f, chunks_tl, msg);
  QL_CHECK(is_handle(id));
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(f, id, "time_lat", "1", &tp, &err), err);
  struct ql_ir_builder *b = NULL;
  QL_CHECK_OK(ql_ir_builder_new(&b, &err), err);
  /* time >= 2000-01-03 (ns) and lat < 25 (20, 10) ; v > 0 (no dimension: unsupported) */
  struct ql_scalar t2 = {0};
  t2.format = "tsn:";
  t2.value.i64 = times[2];
  ql_expr_id e0 = ql_ir_binary(b, QL_OP_GE, ql_ir_column(b, "time", NULL, 0), ql_ir_literal(b, &t2));
  ql_expr_id e1 = ql_ir_binary(b, QL_OP_LT, ql_ir_column(b, "lat", NULL, 1), ql_ir_literal_f64(b, 25.0));
  ql_expr_id e2 = ql_ir_binary(b, QL_OP_GT, ql_ir_column(b, "v", NULL, 3), ql_ir_literal_i64(b, 0));
  struct ql_plan_view view;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &view, &err), err);
  ql_ir_builder_free(b);
  ql_expr_id roots[3] = {e0, e1, e2};
  struct ql_expr_list list = {&view, 3, 0, roots};
  int32_t answers[3] = {-1, -1, -1};
  QL_CHECK_OK(tp.supports_filters(&tp, &list, answers, &err), err);
  QL_CHECK_INT(answers[0], QL_PUSHDOWN_EXACT);
  QL_CHECK_INT(answers[1], QL_PUSHDOWN_EXACT);
  QL_CHECK_INT(answers[2], QL_PUSHDOWN_UNSUPPORTED);
  struct ql_expr_list pushed = {&view, 2, 0, roots};
  int32_t proj[3] = {3, 0, 1};
  struct ql_execution_plan plan = scan(f, &tp, 3, proj, pushed, -1);
  /* blocks of 2 time steps x 3 latitudes: the first is pruned */
  QL_CHECK(strstr(plan.display(&plan), "blocks=1/2") != NULL);
  double x[16];
  uint8_t ok[16];
  QL_CHECK_INT(collect(f, &plan, 0, x, ok, 16), 4);
  QL_CHECK(x[0] == 21 && x[1] == 22 && x[2] == 31 && x[3] == 32);
  QL_CHECK_INT(collect(f, &plan, 2, x, ok, 16), 4);
  QL_CHECK(x[0] == 20 && x[1] == 10 && x[2] == 20 && x[3] == 10);
  struct ql_statistics st;
  QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
  QL_CHECK_INT(st.num_rows, 4);
  QL_CHECK_INT(st.columns[1].min.value.i64, times[2]);
  QL_CHECK_INT(st.columns[1].max.value.i64, times[3]);
  QL_CHECK(st.columns[2].min.value.f64 == 10.0 && st.columns[2].max.value.f64 == 20.0);
  st.release(&st);
  struct ql_metrics m;
  QL_CHECK_OK(plan.get_metrics(&plan, &m, &err), err);
  QL_CHECK_STR(m.items[0].name, "output_rows");
  QL_CHECK_INT(m.items[0].value, 8); /* two collect() runs */
  QL_CHECK_STR(m.items[6].name, "blocks_pruned");
  QL_CHECK_INT(m.items[6].value, 1);
  m.release(&m);
  plan.release(&plan);
  /* without filters: 2 blocks, 2 partitions (the host's target), a limit per partition */
  struct ql_expr_list none = {NULL, 0, 0, NULL};
  plan = scan(f, &tp, 3, proj, none, 1);
  QL_CHECK(strstr(plan.display(&plan), "blocks=2/2 partitions=2") != NULL);
  QL_CHECK_INT(collect(f, &plan, 0, x, ok, 16), 2);
  QL_CHECK(x[0] == 0 && x[1] == 20);
  plan.release(&plan);
  view.release(&view);
  tp.release(&tp);
  /* the lat table: w reversed in memory, elev */
  QL_CHECK_OK(open_table(f, id, "lat", NULL, &tp, &err), err);
  plan = scan(f, &tp, -1, NULL, none, -1);
  struct ArrowSchema s;
  QL_CHECK_OK(plan.get_schema(&plan, &s, &err), err);
  QL_CHECK_INT(s.n_children, 4);
  QL_CHECK_STR(s.children[2]->name, "w");
  ql_schema_release(&s);
  QL_CHECK_INT(collect(f, &plan, 2, x, ok, 16), 3);
  QL_CHECK(x[0] == -1 && x[1] == -2 && x[2] == -3);
  plan.release(&plan);
  tp.release(&tp);
  /* unregistered while a provider is open: release waits for it */
  QL_CHECK_OK(open_table(f, id, "lat", NULL, &tp, &err), err);
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), -1);
  int before = released;
  struct ql_table_provider gone;
  QL_CHECK_INT(open_table(f, id, NULL, NULL, &gone, &err), QL_ENOTFOUND);
  ql_error_release(&err);
  plan = scan(f, &tp, -1, NULL, none, -1);
  QL_CHECK_INT(collect(f, &plan, 1, x, ok, 16), 3);
  QL_CHECK_INT(released, before);
  tp.release(&tp);
  QL_CHECK_INT(released, before); /* the plan still holds the dataset */
  plan.release(&plan);
  QL_CHECK_INT(released, before + 1);
  QL_CHECK_INT(f->api->live_count(), 0);
  ql_error_release(&err);
}

/* Every element type, through one table over dimension x(3). */
static void test_dtypes(struct fixture *f) {
  struct ql_error err = {0};
  static const int8_t i1[3] = {-128, 0, 127};
  static const uint8_t u1[3] = {0, 1, 255};
  static const int16_t i2[3] = {-32768, 1, 32767};
  static const uint16_t u2[3] = {0, 2, 65535};
  static const int32_t i4[3] = {INT32_MIN, 3, INT32_MAX};
  static const uint32_t u4[3] = {0, 4, UINT32_MAX};
  static const int64_t i8[3] = {INT64_MIN + 1, 5, INT64_MAX};
  static const uint64_t u8[3] = {0, 6, UINT64_MAX};
  static const uint16_t f2[3] = {0x3C00, 0xC000, 0x7E00}; /* 1.0, -2.0, NaN */
  static const float f4[3] = {0.5f, NAN, -1.0f};
  static const int64_t days[3] = {0, 1, INT64_MIN};     /* datetime64[D] with NaT */
  static const int64_t secs[3] = {86400, INT64_MIN, 0};  /* datetime64[s] with NaT */
  static const int64_t ms[3] = {1, 2, 3};               /* datetime64[ms] */
  static const int64_t dur[3] = {60, INT64_MIN, -60};    /* timedelta64[s] with NaT */
  static const uint8_t be[3 * 8] = {0x3F, 0xF0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0,
                                    0xC0, 0x08, 0, 0, 0, 0, 0, 0}; /* >f8: 1, 2, -3 */
  static const char bytes[3][2] = {{'a', 'b'}, {'c', 0}, {0, 0}};
  const char *dims[1] = {"x"};
  const int64_t shape[1] = {3};
  struct {
    const char *name, *dtype;
    const void *data;
    const char *format;
  } cols[] = {{"i1", "|i1", i1, "c"},       {"u1", "C", u1, "C"},         {"i2", "<i2", i2, "s"},
              {"u2", "<u2", u2, "S"},       {"i4", "=i4", i4, "i"},       {"u4", "<u4", u4, "I"},
              {"i8", "l", i8, "l"},         {"u8", "<u8", u8, "L"},       {"f2", "<f2", f2, "f"},
              {"f4", "f", f4, "f"},         {"dd", "<M8[D]", days, "tss:"}, {"ds", "<M8[s]", secs, "tss:"},
              {"dm", "tsm:", ms, "tsm:"},   {"td", "<m8[s]", dur, "tDs"}, {"be", ">f8", be, "g"},
              {"by", "|S2", bytes, "z"}};
  enum { N = sizeof(cols) / sizeof(cols[0]) };
  struct nd_variable vars[N];
  memset(vars, 0, sizeof(vars));
  for (int i = 0; i < N; i++) {
    vars[i] = (struct nd_variable){cols[i].name, 1, 0, dims, shape, cols[i].dtype, cols[i].data, NULL, NULL, NULL,
                                   NULL, NULL, NULL};
  }
  char msg[256];
  handle_t id;
  QL_CHECK_INT(f->api->register_dataset(vars, N, "dtypes", NULL, NULL, id.hex, msg, sizeof(msg)), 0);
  QL_CHECK(is_handle(id));
  if (!is_handle(id)) fprintf(stderr, "register: %s\n", msg);
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(f, id, NULL, NULL, &tp, &err), err);
  struct ql_expr_list none = {NULL, 0, 0, NULL};
  struct ql_execution_plan plan = scan(f, &tp, -1, NULL, none, -1);
  struct ql_task_context ctx;
  ql_ref_host_task_context(f->host, 0, &ctx);
  struct ArrowArrayStream stream;
  QL_CHECK_OK(plan.execute(&plan, 0, &ctx, &stream, &err), err);
  struct ArrowSchema s;
  QL_CHECK_INT(stream.get_schema(&stream, &s), 0);
  QL_CHECK_INT(s.n_children, N + 1);
  for (int i = 0; i < N && i + 1 < s.n_children; i++) QL_CHECK_STR(s.children[i + 1]->format, cols[i].format);
  ql_schema_release(&s);
  struct ArrowArray a;
  QL_CHECK_INT(stream.get_next(&stream, &a), 0);
  QL_CHECK_INT(a.length, 3);
#define COL(i) a.children[(i) + 1]
#define VAL(i, T, r) (((const T *)COL(i)->buffers[1])[r])
  QL_CHECK(VAL(0, int8_t, 0) == -128 && VAL(0, int8_t, 2) == 127);
  QL_CHECK(VAL(1, uint8_t, 2) == 255);
  QL_CHECK(VAL(2, int16_t, 0) == -32768 && VAL(3, uint16_t, 2) == 65535);
  QL_CHECK(VAL(4, int32_t, 0) == INT32_MIN && VAL(5, uint32_t, 2) == UINT32_MAX);
  QL_CHECK(VAL(6, int64_t, 2) == INT64_MAX && VAL(7, uint64_t, 2) == UINT64_MAX);
  QL_CHECK(VAL(8, float, 0) == 1.0f && VAL(8, float, 1) == -2.0f);
  QL_CHECK_INT(ql_array_is_valid(COL(8), 2), 0); /* NaN is NULL (test_schema_values_stats: nan_fill=nan) */
  QL_CHECK(VAL(9, float, 0) == 0.5f && VAL(9, float, 2) == -1.0f);
  QL_CHECK_INT(ql_array_is_valid(COL(9), 1), 0);
  /* datetime64[D] becomes seconds (Arrow has no day timestamps); NaT is NULL */
  QL_CHECK_INT(VAL(10, int64_t, 1), 86400);
  QL_CHECK_INT(ql_array_is_valid(COL(10), 2), 0);
  QL_CHECK_INT(VAL(11, int64_t, 0), 86400);
  QL_CHECK_INT(ql_array_is_valid(COL(11), 1), 0);
  QL_CHECK_INT(COL(11)->null_count, 1);
  QL_CHECK_INT(VAL(12, int64_t, 2), 3);
  QL_CHECK_INT(VAL(13, int64_t, 2), -60);
  QL_CHECK_INT(ql_array_is_valid(COL(13), 1), 0);
  QL_CHECK(VAL(14, double, 0) == 1.0 && VAL(14, double, 1) == 2.0 && VAL(14, double, 2) == -3.0);
  const int32_t *bo = COL(15)->buffers[1];
  QL_CHECK_INT(bo[1] - bo[0], 2);
  QL_CHECK_INT(bo[2] - bo[1], 1); /* trailing NULs stripped */
  QL_CHECK_INT(bo[3] - bo[2], 0);
#undef VAL
#undef COL
  a.release(&a);
  stream.release(&stream);
  plan.release(&plan);
  tp.release(&tp);
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  ql_error_release(&err);
}

/* A lazy variable: one loader call per block (the bounding box of the
 * selected rows), and a failing loader's reason in the query's error. */
struct loader {
  int calls;
  int fail_at; /* the call that fails (1-based); 0: never */
  int64_t starts[8], counts[8];
};

static int load_v(void *ctx, int32_t ndim, const int64_t *start, const int64_t *count, void *out, char *message,
                  size_t cap) {
  struct loader *l = ctx;
  QL_CHECK_INT(ndim, 2);
  l->calls++;
  if (l->calls <= 8) {
    l->starts[l->calls - 1] = start[0];
    l->counts[l->calls - 1] = count[0];
  }
  if (l->calls == l->fail_at) {
    snprintf(message, cap, "backend array: HDF error reading block at time=%lld", (long long)start[0]);
    return 1;
  }
  double *o = out;
  for (int64_t t = 0; t < count[0]; t++) {
    for (int64_t k = 0; k < count[1]; k++) o[t * count[1] + k] = v_value((int)(start[0] + t), (int)(start[1] + k));
  }
  return 0;
}

static void test_lazy(struct fixture *f) {
  struct ql_error err = {0};
  struct loader l;
  memset(&l, 0, sizeof(l));
  static const int64_t chunks1[2] = {1, 3};
  struct nd_variable vars[3];
  memset(vars, 0, sizeof(vars));
  vars[0] = (struct nd_variable){"time", 1, 1, dims_t, shape_t, "<M8[ns]", times, NULL, NULL, NULL, NULL, NULL, NULL};
  vars[1] = (struct nd_variable){"lat", 1, 1, dims_l, shape_l, "<f8", lats, NULL, NULL, NULL, NULL, NULL, NULL};
  vars[2] = (struct nd_variable){"v", 2, 0, dims_tl, shape_tl, "<f8", NULL, NULL, chunks1, NULL, load_v, &l, NULL};
  char msg[256];
  handle_t id;
  QL_CHECK_INT(f->api->register_dataset(vars, 3, "lazy", "owner", count_release, id.hex, msg, sizeof(msg)), 0);
  QL_CHECK(is_handle(id));
  QL_CHECK_INT(l.calls, 0); /* registering reads coordinates only */
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(f, id, NULL, "1", &tp, &err), err);
  struct ql_expr_list none = {NULL, 0, 0, NULL};
  int32_t proj[1] = {2};
  struct ql_execution_plan plan = scan(f, &tp, 1, proj, none, -1);
  double x[16];
  uint8_t ok[16];
  QL_CHECK_INT(collect(f, &plan, 0, x, ok, 16), 12);
  QL_CHECK_INT(l.calls, 4); /* one per block of one time step */
  QL_CHECK(x[0] == 0 && isnan(x[4]) && x[11] == 32);
  QL_CHECK_INT(l.starts[3], 3);
  QL_CHECK_INT(l.counts[3], 1);
  /* only the dimension columns: the loader is not called */
  int32_t dims_only[1] = {0};
  struct ql_execution_plan p2 = scan(f, &tp, 1, dims_only, none, -1);
  QL_CHECK_INT(collect(f, &p2, 0, x, ok, 16), 12);
  QL_CHECK_INT(l.calls, 4);
  p2.release(&p2);
  /* the third block fails: the stream reports the loader's reason, naming the dataset and variable */
  l.calls = 0;
  l.fail_at = 3;
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan.get_properties(&plan, &props, &err), err);
  int failed = 0;
  for (int64_t p = 0; p < props.partition_count; p++) {
    struct ql_task_context ctx;
    ql_ref_host_task_context(f->host, p, &ctx);
    struct ArrowArrayStream st;
    QL_CHECK_OK(plan.execute(&plan, p, &ctx, &st, &err), err);
    for (;;) {
      struct ArrowArray a;
      int rc = st.get_next(&st, &a);
      if (rc != 0) {
        failed++;
        QL_CHECK_STR(st.get_last_error(&st),
                     "dataset 3 (lazy): variable 'v': loading a block failed: backend array: HDF error reading block "
                     "at time=2");
        QL_CHECK(st.get_next(&st, &a) != 0); /* and stays failed */
        break;
      }
      if (!a.release) break;
      a.release(&a);
    }
    st.release(&st);
  }
  QL_CHECK_INT(failed, 1);
  plan.release(&plan);
  tp.release(&tp);
  int before = released;
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  QL_CHECK_INT(released, before + 1);
  ql_error_release(&err);
}

/* Bad registrations are refused with the reason, and never released. */
static void test_register_errors(struct fixture *f) {
  char msg[256];
  int before = released;
  static const double d[3] = {1, 2, 3};
  static const int64_t shape4[1] = {4}, zero_chunk[1] = {0};
  struct nd_variable v[2];
  handle_t bad;
  memset(v, 0, sizeof(v));
  v[0] = (struct nd_variable){"a", 1, 0, dims_l, shape_l, "<c16", d, NULL, NULL, NULL, NULL, NULL, NULL};
  QL_CHECK_INT(f->api->register_dataset(v, 1, "bad", "owner", count_release, bad.hex, msg, sizeof(msg)), -1);
  QL_CHECK(strstr(msg, "variable 'a'") != NULL);
  v[0].dtype = "<f8";
  v[0].attrs_json = "[1]";
  QL_CHECK_INT(f->api->register_dataset(v, 1, "bad", "owner", count_release, bad.hex, msg, sizeof(msg)), -1);
  QL_CHECK_STR(msg, "variable 'a': attrs_json is not a JSON object (another JSON value)");
  v[0].attrs_json = NULL;
  v[1] = (struct nd_variable){"b", 1, 0, dims_l, shape4, "<f8", d, NULL, NULL, NULL, NULL, NULL, NULL};
  QL_CHECK_INT(f->api->register_dataset(v, 2, "bad", "owner", count_release, bad.hex, msg, sizeof(msg)), -1);
  QL_CHECK_STR(msg, "dataset 4 (bad): array 'b' has dimension 'lat' of size 4, but array 'a' has 3");
  v[1] = (struct nd_variable){"a", 1, 0, dims_l, shape_l, "<f8", d, NULL, NULL, NULL, NULL, NULL, NULL};
  QL_CHECK_INT(f->api->register_dataset(v, 2, "bad", "owner", count_release, bad.hex, msg, sizeof(msg)), -1);
  QL_CHECK_STR(msg, "two variables named 'a'");
  v[0].data = NULL;
  QL_CHECK_INT(f->api->register_dataset(v, 1, "bad", "owner", count_release, bad.hex, msg, sizeof(msg)), -1);
  QL_CHECK_STR(msg, "variable 'a': give either data (in memory) or load (lazy), not neither");
  v[0].data = d;
  v[0].chunks = zero_chunk;
  QL_CHECK_INT(f->api->register_dataset(v, 1, "bad", "owner", count_release, bad.hex, msg, sizeof(msg)), -1);
  QL_CHECK_STR(msg, "variable 'a': chunk extent 0 along 'lat' (must be >= 1)");
  QL_CHECK_INT(released, before);
  QL_CHECK_INT(f->api->live_count(), 0);
  QL_CHECK_STR(bad.hex, ""); /* no handle for a refused registration */
  QL_CHECK_INT(f->api->register_dataset(v, 1, "bad", NULL, NULL, NULL, msg, sizeof(msg)), -1);
  QL_CHECK_STR(msg, "nd_register: no buffer for the handle");
}

/* Handles: 128 random bits as 32 lowercase hex digits, the only key a spec
 * can name a dataset by. Serial numbers, old small ids, guessed, stale and
 * malformed handles all get one answer and no table, and the handle is
 * shown nowhere (EXPLAIN and messages use the serial number). */
static void test_handles(struct fixture *f) {
  struct ql_error err = {0};
  char msg[256];
  handle_t a = register_main(f, NULL, msg), b = register_main(f, NULL, msg);
  QL_CHECK(is_handle(a) && is_handle(b));
  QL_CHECK(strcmp(a.hex, b.hex) != 0);
  QL_CHECK_INT(f->api->live_count(), 2);
  struct ql_table_provider tp;
  handle_t upper = a;
  for (int i = 0; i < ND_HANDLE_HEX; i++) upper.hex[i] = (char)toupper((unsigned char)upper.hex[i]);
  QL_CHECK_OK(open_table(f, upper, NULL, NULL, &tp, &err), err); /* hex digits in either case */
  struct ql_expr_list none = {NULL, 0, 0, NULL};
  struct ql_execution_plan plan = scan(f, &tp, -1, NULL, none, -1);
  QL_CHECK(strstr(plan.display(&plan), a.hex) == NULL);
  QL_CHECK(strstr(plan.display(&plan), "dataset=") != NULL);
  plan.release(&plan);
  tp.release(&tp);
  handle_t wrong[8];
  const char *texts[6] = {"1", "2", "0", "999", "-1", "x1"};
  for (int i = 0; i < 6; i++) snprintf(wrong[i].hex, sizeof(wrong[i].hex), "%s", texts[i]);
  wrong[6] = a;
  wrong[6].hex[ND_HANDLE_HEX - 1] = a.hex[ND_HANDLE_HEX - 1] == '0' ? '1' : '0'; /* one bit off */
  snprintf(wrong[7].hex, sizeof(wrong[7].hex), "%.31s", a.hex);                    /* one digit short */
  for (int i = 0; i < 8; i++) {
    QL_CHECK_INT(open_table(f, wrong[i], NULL, NULL, &tp, &err), QL_ENOTFOUND);
    const char *m = ql_error_message(&err);
    QL_CHECK(strstr(m, "qlink_ndarray/dataset: no registered Dataset with this handle (") == m);
    QL_CHECK(strstr(m, i == 6 ? "unknown or released" : "malformed") != NULL);
    QL_CHECK(i < 6 || strstr(m, a.hex) == NULL);
    ql_error_release(&err);
    QL_CHECK_INT(f->api->unregister_dataset(wrong[i].hex), -1);
  }
  QL_CHECK_INT(f->api->unregister_dataset(NULL), -1);
  QL_CHECK_INT(f->api->live_count(), 2);
  /* a stale handle: unregistered, then named again */
  QL_CHECK_INT(f->api->unregister_dataset(a.hex), 0);
  QL_CHECK_INT(open_table(f, a, NULL, NULL, &tp, &err), QL_ENOTFOUND);
  QL_CHECK(strstr(ql_error_message(&err), "no registered Dataset with this handle") != NULL);
  ql_error_release(&err);
  QL_CHECK_OK(open_table(f, b, NULL, NULL, &tp, &err), err);
  tp.release(&tp);
  QL_CHECK_INT(f->api->unregister_dataset(b.hex), 0);
  QL_CHECK_INT(f->api->live_count(), 0);
  ql_error_release(&err);
}

/* The statistics xarray-sql's test_stats.py pins, through one dataset per
 * case: value(x) int64 over a coordinate x of 4 values in blocks of 2. */
static handle_t register_x(struct fixture *f, const char *dtype, const void *x, char *msg) {
  static const char *dims_x[1] = {"x"};
  static const int64_t shape_x[1] = {4}, chunks_x[1] = {2};
  static const int64_t values[4] = {0, 1, 2, 3};
  struct nd_variable vars[2];
  memset(vars, 0, sizeof(vars));
  vars[0] = (struct nd_variable){"x", 1, 1, dims_x, shape_x, dtype, x, NULL, chunks_x, NULL, NULL, NULL, NULL};
  vars[1] = (struct nd_variable){"value", 1, 0, dims_x, shape_x, "<i8", values, NULL, chunks_x, NULL, NULL, NULL, NULL};
  handle_t id;
  QL_CHECK_INT(f->api->register_dataset(vars, 2, "x", NULL, NULL, id.hex, msg, 256), 0);
  return id;
}

/* The plan's statistics over every column (partition -1, or one), with
 * option nan_fill (NULL: the default). */
static void plan_stats_nan(struct fixture *f, handle_t id, int64_t partition, const char *nan_fill,
                           struct ql_statistics *st) {
  struct ql_error err = {0};
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table_nan(f, id, "1", nan_fill, &tp, &err), err);
  struct ql_expr_list none = {NULL, 0, 0, NULL};
  struct ql_execution_plan plan = scan(f, &tp, -1, NULL, none, -1);
  QL_CHECK_OK(plan.get_statistics(&plan, partition, st, &err), err);
  plan.release(&plan);
  tp.release(&tp);
  ql_error_release(&err);
}

static void plan_stats(struct fixture *f, handle_t id, int64_t partition, struct ql_statistics *st) {
  plan_stats_nan(f, id, partition, NULL, st);
}

static void test_xarray_sql_stats(struct fixture *f) {
  char msg[256];
  struct ql_statistics st;
  /* np.asarray(list("abcd")) as "<U1", here out of order: min "a", max "d"; per block too */
  static uint32_t text[4] = {'b', 'a', 'd', 'c'};
  handle_t id = register_x(f, "<U1", text, msg);
  QL_CHECK(is_handle(id));
  plan_stats(f, id, -1, &st);
  QL_CHECK_INT(st.num_rows, 4);
  QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_EXACT);
  QL_CHECK_STR(st.columns[0].min.format, "u");
  QL_CHECK_INT(st.columns[0].min.value.bytes.size, 1);
  QL_CHECK(st.columns[0].min.value.bytes.data[0] == 'a');
  QL_CHECK_INT(st.columns[0].max.value.bytes.size, 1);
  QL_CHECK(st.columns[0].max.value.bytes.data[0] == 'd');
  QL_CHECK_INT(st.columns[0].null_count_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.columns[0].null_count, 0);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_ABSENT);
  st.release(&st);
  plan_stats(f, id, 1, &st); /* "d", "c" */
  QL_CHECK(st.columns[0].min.value.bytes.data[0] == 'c' && st.columns[0].max.value.bytes.data[0] == 'd');
  st.release(&st);
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  /* np.arange(4).astype("timedelta64[us]"): durations 0..3 us */
  static const int64_t us[4] = {0, 1, 2, 3};
  id = register_x(f, "<m8[us]", us, msg);
  QL_CHECK(is_handle(id));
  plan_stats(f, id, -1, &st);
  QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_EXACT);
  QL_CHECK_STR(st.columns[0].min.format, "tDu");
  QL_CHECK_INT(st.columns[0].min.value.i64, 0);
  QL_CHECK_INT(st.columns[0].max.value.i64, 3);
  QL_CHECK_INT(st.columns[0].null_count, 0);
  /* int64 durations and int64 values, no NULL possible: 16 bytes a row */
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.total_bytes, 64);
  st.release(&st);
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  /* x = [0, 1, NaN, 3]: NaN is NULL (a Dataset's missing value), so the null count is not known to
   * be 0 (xarray-sql's test_missing_partition_bound_removes_global_coordinate_statistics) and
   * min / max are the numbers' */
  static const double with_nan[4] = {0, 1, NAN, 3};
  id = register_x(f, "<f8", with_nan, msg);
  QL_CHECK(is_handle(id));
  plan_stats(f, id, -1, &st);
  QL_CHECK_INT(st.columns[0].null_count_precision, QL_PRECISION_ABSENT);
  QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_EXACT);
  QL_CHECK(st.columns[0].min.value.f64 == 0.0 && st.columns[0].max.value.f64 == 3.0);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_INEXACT);
  st.release(&st);
  /* with nan_fill=nan NaN is a value: no NULL (exactly), and no min/max (hosts order NaN above
   * every number) */
  plan_stats_nan(f, id, -1, "nan", &st);
  QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_ABSENT);
  QL_CHECK_INT(st.columns[0].null_count_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.columns[0].null_count, 0);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.total_bytes, 64);
  st.release(&st);
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
}

/* Missing strings: cells equal to a variable's null_cell are NULL, in a
 * dimension coordinate (its values then hold nulls: no null_count
 * statistic) and in data variables, text and bytes; an empty string
 * stays an empty string; null_cell on another type is refused. */
static void test_null_cells(struct fixture *f) {
  struct ql_error err = {0};
  enum { MARK = 0xFFFFFFFFu }; /* no code point: no real string holds it */
  static const uint32_t x[3] = {'p', MARK, 'q'}, x_null[1] = {MARK};
  static const uint32_t name[3][2] = {{'a', 'b'}, {MARK, 0}, {0, 0}}, name_null[2] = {MARK, 0};
  static const char raw[3][2] = {{'a', 'b'}, {0, 1}, {0, 0}}, raw_null[2] = {0, 1};
  const char *dims[1] = {"x"};
  const int64_t shape[1] = {3};
  struct nd_variable vars[3];
  memset(vars, 0, sizeof(vars));
  vars[0] = (struct nd_variable){"x", 1, 1, dims, shape, "<U1", x, NULL, NULL, NULL, NULL, NULL, x_null};
  vars[1] = (struct nd_variable){"name", 1, 0, dims, shape, "<U2", name, NULL, NULL, NULL, NULL, NULL, name_null};
  vars[2] = (struct nd_variable){"raw", 1, 0, dims, shape, "|S2", raw, NULL, NULL, NULL, NULL, NULL, raw_null};
  char msg[256];
  handle_t id;
  QL_CHECK_INT(f->api->register_dataset(vars, 3, "nulls", NULL, NULL, id.hex, msg, sizeof(msg)), 0);
  QL_CHECK(is_handle(id));
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(f, id, NULL, NULL, &tp, &err), err);
  struct ql_expr_list none = {NULL, 0, 0, NULL};
  struct ql_execution_plan plan = scan(f, &tp, -1, NULL, none, -1);
  struct ql_statistics st;
  QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
  QL_CHECK_INT(st.columns[0].null_count_precision, QL_PRECISION_ABSENT);
  st.release(&st);
  struct ql_task_context ctx;
  ql_ref_host_task_context(f->host, 0, &ctx);
  struct ArrowArrayStream stream;
  QL_CHECK_OK(plan.execute(&plan, 0, &ctx, &stream, &err), err);
  struct ArrowArray a;
  int got = stream.get_next(&stream, &a);
  QL_CHECK_INT(got, 0);
  if (got != 0) fprintf(stderr, "get_next: %s\n", stream.get_last_error(&stream));
  QL_CHECK_INT(got == 0 ? a.length : -1, 3);
  for (int c = 0; got == 0 && c < 3; c++) {
    const struct ArrowArray *col = a.children[c];
    const int32_t *offs = col->buffers[1];
    const char *chars = col->buffers[2];
    QL_CHECK_INT(col->null_count, 1);
    QL_CHECK_INT(ql_array_is_valid(col, 0), 1);
    QL_CHECK_INT(ql_array_is_valid(col, 1), 0);
    QL_CHECK_INT(ql_array_is_valid(col, 2), 1);
    QL_CHECK_INT(offs[2] - offs[1], 0);
    if (c == 0) {
      QL_CHECK(offs[1] - offs[0] == 1 && chars[offs[0]] == 'p' && offs[3] - offs[2] == 1 && chars[offs[2]] == 'q');
    } else {
      QL_CHECK(offs[1] - offs[0] == 2 && memcmp(chars + offs[0], "ab", 2) == 0);
      QL_CHECK_INT(offs[3] - offs[2], 0); /* "" / b"": a value, not NULL */
    }
  }
  if (got == 0) a.release(&a);
  stream.release(&stream);
  plan.release(&plan);
  tp.release(&tp);
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  static const double d[3] = {1, 2, 3};
  static const double d_null = 0;
  vars[1] = (struct nd_variable){"v", 1, 0, dims, shape, "<f8", d, NULL, NULL, NULL, NULL, NULL, &d_null};
  handle_t bad;
  QL_CHECK_INT(f->api->register_dataset(vars, 2, "nulls", NULL, NULL, bad.hex, msg, sizeof(msg)), -1);
  QL_CHECK_STR(bad.hex, "");
  QL_CHECK_STR(msg, "variable 'v': null_cell is given, but '<f8' is not a fixed-width string");
  ql_error_release(&err);
}

/* Blocks the caller's buffer holds contiguously are served in place (the
 * value column's Arrow buffer points into it); the others are copied (a
 * block cut along the inner axis, a big-endian or misaligned buffer), with
 * the same values and the same metrics. A batch keeps the buffer's owner
 * alive after the dataset is unregistered and every plan released. */
struct held {
  struct ArrowArray batch[4];
  const double *cells[4];
  int64_t n;
};

static void take_batches(struct fixture *f, const struct ql_execution_plan *plan, struct held *h) {
  struct ql_error err = {0};
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan->get_properties(plan, &props, &err), err);
  h->n = 0;
  for (int64_t p = 0; p < props.partition_count; p++) {
    struct ql_task_context ctx;
    ql_ref_host_task_context(f->host, p, &ctx);
    struct ArrowArrayStream st;
    QL_CHECK_OK(plan->execute(plan, p, &ctx, &st, &err), err);
    for (;;) {
      struct ArrowArray a;
      QL_CHECK_INT(st.get_next(&st, &a), 0);
      if (!a.release) break;
      QL_CHECK(h->n < 4);
      const struct ArrowArray *c = a.children[0];
      h->cells[h->n] = (const double *)c->buffers[1] + c->offset;
      h->batch[h->n++] = a;
    }
    st.release(&st);
  }
  ql_error_release(&err);
}

static void release_batches(struct held *h) {
  for (int64_t i = 0; i < h->n; i++) h->batch[i].release(&h->batch[i]);
  h->n = 0;
}

static handle_t register_grid(struct fixture *f, const char *dtype, const void *data, const int64_t *chunks,
                             const char *owner) {
  static const char *dims_ab[2] = {"a", "b"};
  static const int64_t shape_ab[2] = {4, 3};
  char msg[256];
  struct nd_variable var = {"x", 2, 0, dims_ab, shape_ab, dtype, data, NULL, chunks, NULL, NULL, NULL, NULL};
  handle_t id;
  QL_CHECK_INT(f->api->register_dataset(&var, 1, "grid", (void *)owner, owner ? count_release : NULL, id.hex, msg, 256), 0);
  QL_CHECK(is_handle(id));
  return id;
}

static void test_borrowed_blocks(struct fixture *f) {
  struct ql_error err = {0};
  struct ql_expr_list none = {NULL, 0, 0, NULL};
  int32_t proj[1] = {2};
  static double grid[12], swapped[12];
  static uint64_t unaligned_store[13];
  for (int i = 0; i < 12; i++) grid[i] = 1.5 * i;
  for (int i = 0; i < 12; i++) {
    uint64_t u;
    memcpy(&u, &grid[i], 8);
    u = __builtin_bswap64(u);
    memcpy(&swapped[i], &u, 8);
  }
  uint8_t *unaligned = (uint8_t *)unaligned_store + 4;
  memcpy(unaligned, grid, sizeof(grid));
  static const int64_t rows2[2] = {2, 3}, cols2[2] = {4, 2};
  struct {
    const char *dtype;
    const void *data;
    const int64_t *chunks;
    int borrowed;
  } cases[4] = {{"<f8", grid, rows2, 1}, {"<f8", grid, cols2, 0}, {">f8", swapped, rows2, 0}, {"<f8", unaligned, rows2, 0}};
  for (int k = 0; k < 4; k++) {
    handle_t id = register_grid(f, cases[k].dtype, cases[k].data, cases[k].chunks, NULL);
    struct ql_table_provider tp;
    QL_CHECK_OK(open_table(f, id, NULL, "1", &tp, &err), err);
    struct ql_execution_plan plan = scan(f, &tp, 1, proj, none, -1);
    struct held h;
    take_batches(f, &plan, &h);
    QL_CHECK_INT(h.n, 2);
    int64_t at = 0;
    for (int64_t i = 0; i < h.n; i++) {
      int64_t len = h.batch[i].length;
      int inside = h.cells[i] >= grid && h.cells[i] < grid + 12;
      QL_CHECK_INT(inside, cases[k].borrowed);
      if (cases[k].borrowed) QL_CHECK(h.cells[i] == grid + at);
      for (int64_t r = 0; r < len; r++) {
        /* cols2 blocks: rows in the block's C order, b in [0, 2) then [2, 3) */
        int64_t cell = cases[k].chunks == cols2 ? (i == 0 ? (r / 2) * 3 + r % 2 : r * 3 + 2) : at + r;
        QL_CHECK(h.cells[i][r] == grid[cell]);
      }
      at += len;
    }
    QL_CHECK_INT(at, 12);
    QL_CHECK_INT(zr_test_metric(&plan, "bytes_read"), 96);
    QL_CHECK_INT(zr_test_metric(&plan, "chunks_read"), 2);
    release_batches(&h);
    plan.release(&plan);
    tp.release(&tp);
    QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  }
  /* the owner is released with the last batch, not before */
  handle_t id = register_grid(f, "<f8", grid, rows2, "owner");
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(f, id, NULL, "1", &tp, &err), err);
  struct ql_execution_plan plan = scan(f, &tp, 1, proj, none, -1);
  struct held h;
  take_batches(f, &plan, &h);
  plan.release(&plan);
  tp.release(&tp);
  int before = released;
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  QL_CHECK_INT(released, before);
  QL_CHECK(h.cells[1] == grid + 6 && h.cells[1][5] == 1.5 * 11);
  release_batches(&h);
  QL_CHECK_INT(released, before + 1);
  ql_error_release(&err);
}

/* The schema provider: every table, by the model's names. */
static void test_schema_provider(struct fixture *f) {
  struct ql_error err = {0};
  char msg[256];
  handle_t id = register_main(f, NULL, msg);
  QL_CHECK(is_handle(id));
  const char *keys[2] = {"id", "tables"};
  const char *values[2] = {id.hex, "lat=stations"};
  struct ql_options opts = {2, keys, values};
  struct ql_schema_provider sp;
  QL_CHECK_OK(f->plugin.schema_provider_open(&f->plugin, "dataset", &opts, ql_ref_host_session(f->host), &sp, &err),
              err);
  QL_CHECK_INT(sp.table_count(&sp), 2);
  QL_CHECK_STR(sp.table_name(&sp, 0), "time_lat");
  QL_CHECK_STR(sp.table_name(&sp, 1), "stations");
  struct ql_table_provider tp;
  QL_CHECK_INT(sp.table(&sp, "nope", &tp, &err), QL_ENOTFOUND);
  QL_CHECK(strstr(ql_error_message(&err), "has no table 'nope' (tables: time_lat (time x lat), stations (lat))") != NULL);
  ql_error_release(&err);
  QL_CHECK_OK(sp.table(&sp, "stations", &tp, &err), err);
  tp.release(&tp);
  sp.release(&sp);
  QL_CHECK_INT(f->api->unregister_dataset(id.hex), 0);
  ql_error_release(&err);
}

/* The layout table mirrors check themselves against: sizes and offsets
 * as compiled, every member of nd_variable listed once. */
static void test_layout(const struct nd_api *api) {
  QL_CHECK(api->layout != NULL);
  int members = 0, structs = 0;
  for (const struct nd_layout_entry *e = api->layout; e->type; e++) {
    if (!e->member) {
      structs++;
      if (strcmp(e->type, "nd_variable") == 0) QL_CHECK_INT(e->size, sizeof(struct nd_variable));
      if (strcmp(e->type, "nd_api") == 0) QL_CHECK_INT(e->size, sizeof(struct nd_api));
      continue;
    }
    if (strcmp(e->type, "nd_variable") == 0) members++;
    if (strcmp(e->type, "nd_variable") == 0 && strcmp(e->member, "null_cell") == 0) {
      QL_CHECK_INT(e->offset, offsetof(struct nd_variable, null_cell));
      QL_CHECK_INT(e->size, sizeof(void *));
    }
    if (strcmp(e->type, "nd_api") == 0 && strcmp(e->member, "layout") == 0) {
      QL_CHECK_INT(e->offset, offsetof(struct nd_api, layout));
    }
  }
  QL_CHECK_INT(structs, 3);
  QL_CHECK_INT(members, 13);
}

int main(void) {
  fill_data();
  struct ql_error err = {0};
  struct fixture f;
  memset(&f, 0, sizeof(f));
  struct ql_ref_host_options ho = {-1, 0, 2};
  QL_CHECK_OK(zr_test_open(&ho, &f.host, &f.plugin, &err), err);
  /* the registration API is the descriptor's last member */
  f.api = *(const struct nd_api *const *)((const char *)&f.plugin + f.plugin.struct_size - sizeof(void *));
  QL_CHECK(f.api == f.plugin.private_data);
  QL_CHECK_INT(f.api->magic, ND_API_MAGIC);
  QL_CHECK_INT(f.api->struct_size, sizeof(struct nd_api));
  test_layout(f.api);
  test_schema_values_stats(&f);  /* dataset 1 */
  test_blocks_filters_limit(&f); /* dataset 2 */
  test_lazy(&f);                 /* dataset 3 */
  test_register_errors(&f);      /* serial numbers 4.. */
  test_handles(&f);
  test_dtypes(&f);
  test_schema_provider(&f);
  test_xarray_sql_stats(&f);
  test_borrowed_blocks(&f);
  test_null_cells(&f);
  QL_CHECK_INT(f.api->live_count(), 0);
  QL_CHECK_OK(zr_test_close(f.host, &f.plugin, &err), err);
  ql_error_release(&err);
  QL_TEST_END();
}
