/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr statistics (stats.c) through the ABI, over an in-memory
 * store: byte sizes as the scan's Arrow buffers hold them (exact only
 * where no column can have a validity buffer), min/max of utf8 and binary
 * dimension columns (bytewise, per partition too), and the null count of a
 * string dimension whose fill value masks a cell. Each exact figure is
 * cross-checked against the batches the scan produces. */
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/test_util.h"
#include "store_put.h"

static void utf32(uint32_t *out, const char *text, size_t width) {
  memset(out, 0, width * sizeof(uint32_t));
  for (size_t k = 0; k < width && text[k]; k++) out[k] = (uint8_t)text[k];
}

/* time(4) days since 2000-01-01, lat(3) float64: b bool, u float64 without
 * fill, v int16 with fill -1 (float32, nullable); name(4) "<U2" with fill
 * "zz" masking its second value, h(name) int32; code(3) "|S2" (binary),
 * k(code) int8. */
static void build_store(const struct ql_object_store *s) {
  put_text(s, "s.zarr/.zgroup", "{\"zarr_format\":2}");
  put_text(s, "s.zarr/time/.zarray",
           "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"<i8\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "s.zarr/time/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"time\"],\"units\":\"days since 2000-01-01\"}");
  int64_t days[2][2] = {{0, 1}, {2, 3}};
  put(s, "s.zarr/time/0", days[0], sizeof(days[0]));
  put(s, "s.zarr/time/1", days[1], sizeof(days[1]));
  put_text(s, "s.zarr/lat/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<f8\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "s.zarr/lat/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"lat\"]}");
  double lat[3] = {10, 20, 30};
  put(s, "s.zarr/lat/0", lat, sizeof(lat));
  const char *grid = "{\"_ARRAY_DIMENSIONS\":[\"time\",\"lat\"]}";
  put_text(s, "s.zarr/b/.zarray",
           "{\"zarr_format\":2,\"shape\":[4,3],\"chunks\":[2,3],\"dtype\":\"|b1\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "s.zarr/b/.zattrs", grid);
  put_text(s, "s.zarr/u/.zarray",
           "{\"zarr_format\":2,\"shape\":[4,3],\"chunks\":[2,3],\"dtype\":\"<f8\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "s.zarr/u/.zattrs", grid);
  put_text(s, "s.zarr/v/.zarray",
           "{\"zarr_format\":2,\"shape\":[4,3],\"chunks\":[2,3],\"dtype\":\"<i2\",\"fill_value\":-1,\"compressor\":null}");
  put_text(s, "s.zarr/v/.zattrs", grid);
  uint8_t b[6] = {1, 0, 1, 0, 1, 0};
  double u[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
  int16_t v[6] = {1, -1, 3, 4, 5, 6};
  put(s, "s.zarr/b/0.0", b, sizeof(b));
  put(s, "s.zarr/b/1.0", b, sizeof(b));
  put(s, "s.zarr/u/0.0", u, sizeof(u));
  put(s, "s.zarr/u/1.0", u, sizeof(u));
  put(s, "s.zarr/v/0.0", v, sizeof(v));
  put(s, "s.zarr/v/1.0", v, sizeof(v));
  put_text(s, "s.zarr/name/.zarray",
           "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"<U2\",\"fill_value\":\"zz\",\"compressor\":null}");
  put_text(s, "s.zarr/name/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"name\"]}");
  uint32_t names[4][2];
  utf32(names[0], "b", 2);
  utf32(names[1], "zz", 2);
  utf32(names[2], "ab", 2);
  utf32(names[3], "c", 2);
  put(s, "s.zarr/name/0", names[0], 2 * sizeof(names[0]));
  put(s, "s.zarr/name/1", names[2], 2 * sizeof(names[0]));
  put_text(s, "s.zarr/h/.zarray",
           "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"<i4\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "s.zarr/h/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"name\"]}");
  int32_t h[2][2] = {{7, 8}, {9, 10}};
  put(s, "s.zarr/h/0", h[0], sizeof(h[0]));
  put(s, "s.zarr/h/1", h[1], sizeof(h[1]));
  put_text(s, "s.zarr/code/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"|S2\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "s.zarr/code/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"code\"]}");
  put(s, "s.zarr/code/0", "baa\0b\0", 6);
  put_text(s, "s.zarr/k/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"|i1\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "s.zarr/k/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"code\"]}");
  int8_t k[3] = {1, 2, 3};
  put(s, "s.zarr/k/0", k, sizeof(k));
}

struct fixture {
  struct ql_ref_host *host;
  struct ql_plugin plugin;
};

/* Table `table`, one block per chunk grid cell. */
static int open_table(struct fixture *f, const char *table, struct ql_table_provider *out, struct ql_error *err) {
  const char *keys[3] = {"path", "block_rows", "table"};
  const char *values[3] = {"memory:///s.zarr", "1", table};
  struct ql_options opts = {3, keys, values};
  return f->plugin.table_provider_open(&f->plugin, "table", &opts, ql_ref_host_session(f->host), out, err);
}

static struct ql_execution_plan scan(struct fixture *f, struct ql_table_provider *tp, int32_t n_proj,
                                     const int32_t *proj, int64_t limit) {
  struct ql_error err = {0};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), n_proj, proj, {NULL, 0, 0, NULL}, limit};
  struct ql_execution_plan plan;
  memset(&plan, 0, sizeof(plan));
  QL_CHECK_OK(tp->scan(tp, ql_ref_host_session(f->host), &args, &plan, &err), err);
  ql_error_release(&err);
  return plan;
}

/* What the batches hold: rows, and the columns (summed over batches)
 * that came with a validity buffer. */
struct held {
  int64_t rows, with_validity;
};

static void take_sizes(const struct ArrowArray *a, void *ctx) {
  struct held *h = ctx;
  h->rows += a->length;
  for (int64_t c = 0; c < a->n_children; c++) {
    const struct ArrowArray *col = a->children[c];
    h->with_validity += col->buffers[0] != NULL;
  }
}

static struct held run(struct fixture *f, const struct ql_execution_plan *plan) {
  struct ql_error err = {0};
  struct held h = {0, 0};
  QL_CHECK_OK(zr_test_each_batch(f->host, plan, take_sizes, &h, &err), err);
  ql_error_release(&err);
  return h;
}

static void check_bytes(const struct ql_scalar *s, const char *format, const char *want, int64_t size) {
  QL_CHECK_STR(s->format, format);
  QL_CHECK_INT(s->is_null, 0);
  QL_CHECK_INT(s->value.bytes.size, size);
  QL_CHECK(s->value.bytes.data && memcmp(s->value.bytes.data, want, (size_t)size) == 0);
}

/* Fixed-width columns without NULLs: exact bytes (rows x width, no
 * validity buffers); one that may hold NULLs, or a bool, makes the figure
 * an estimate of the values' bytes. */
static void test_total_bytes(struct fixture *f) {
  struct ql_error err = {0};
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(f, "time_lat", &tp, &err), err);
  struct ql_statistics st;
  QL_CHECK_OK(tp.get_statistics(&tp, &st, &err), err);
  /* time 8, lat 8, b (bits: 2 bytes for 12 rows), u 8, v float32 4 */
  QL_CHECK_INT(st.num_rows, 12);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_INEXACT);
  QL_CHECK_INT(st.total_bytes, 12 * 28 + 2);
  st.release(&st);
  /* time, lat, u: 24 bytes a row, no validity buffer in any batch */
  int32_t proj[3] = {0, 1, 3};
  struct ql_execution_plan plan = scan(f, &tp, 3, proj, -1);
  QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.total_bytes, 288);
  st.release(&st);
  QL_CHECK_OK(plan.get_statistics(&plan, 1, &st, &err), err); /* time rows 2..3 */
  QL_CHECK_INT(st.num_rows, 6);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.total_bytes, 144);
  st.release(&st);
  struct held h = run(f, &plan);
  QL_CHECK_INT(h.rows, 12);
  QL_CHECK_INT(h.with_validity, 0);
  plan.release(&plan);
  /* v may hold NULLs (its fill masks a cell): the values' bytes, inexact */
  int32_t proj_v[2] = {0, 4};
  plan = scan(f, &tp, 2, proj_v, -1);
  QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_INEXACT);
  QL_CHECK_INT(st.total_bytes, 12 * 12);
  st.release(&st);
  h = run(f, &plan);
  QL_CHECK_INT(h.with_validity, 2); /* v in the two blocks of time rows 0..1 and 2..3 */
  plan.release(&plan);
  /* no columns: no buffers */
  plan = scan(f, &tp, 0, proj, -1);
  QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
  QL_CHECK_INT(st.num_rows, 12);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.total_bytes, 0);
  st.release(&st);
  plan.release(&plan);
  tp.release(&tp);
  ql_error_release(&err);
}

/* A "<U2" dimension whose fill value "zz" masks its second value: min/max
 * of the others, bytewise ("ab" < "b" < "c"), in every partition too; its
 * null count is not claimed to be 0. */
static void test_utf8_dimension(struct fixture *f) {
  struct ql_error err = {0};
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(f, "name", &tp, &err), err);
  struct ql_statistics st;
  QL_CHECK_OK(tp.get_statistics(&tp, &st, &err), err);
  QL_CHECK_INT(st.n_columns, 2);
  QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_EXACT);
  check_bytes(&st.columns[0].min, "u", "ab", 2);
  check_bytes(&st.columns[0].max, "u", "c", 1);
  QL_CHECK_INT(st.columns[0].null_count_precision, QL_PRECISION_ABSENT);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_ABSENT); /* strings: offsets and bytes per batch */
  st.release(&st);
  struct ql_execution_plan plan = scan(f, &tp, -1, NULL, -1);
  QL_CHECK_OK(plan.get_statistics(&plan, 0, &st, &err), err); /* "b", NULL */
  QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_EXACT);
  check_bytes(&st.columns[0].min, "u", "b", 1);
  check_bytes(&st.columns[0].max, "u", "b", 1);
  st.release(&st);
  QL_CHECK_OK(plan.get_statistics(&plan, 1, &st, &err), err); /* "ab", "c" */
  check_bytes(&st.columns[0].min, "u", "ab", 2);
  check_bytes(&st.columns[0].max, "u", "c", 1);
  st.release(&st);
  plan.release(&plan);
  /* h alone: int32 without fill, exact */
  int32_t proj[1] = {1};
  plan = scan(f, &tp, 1, proj, -1);
  QL_CHECK_OK(plan.get_statistics(&plan, -1, &st, &err), err);
  QL_CHECK_INT(st.total_bytes_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.total_bytes, 16);
  st.release(&st);
  struct held h = run(f, &plan);
  QL_CHECK_INT(h.rows, 4);
  QL_CHECK_INT(h.with_validity, 0);
  plan.release(&plan);
  /* the scan's own column: the masked cell is NULL */
  int32_t proj_name[1] = {0};
  plan = scan(f, &tp, 1, proj_name, -1);
  h = run(f, &plan);
  QL_CHECK_INT(h.with_validity, 1);
  plan.release(&plan);
  tp.release(&tp);
  ql_error_release(&err);
}

/* A "|S2" dimension (binary, trailing NULs stripped): "a" < "b" < "ba". */
static void test_binary_dimension(struct fixture *f) {
  struct ql_error err = {0};
  struct ql_table_provider tp;
  QL_CHECK_OK(open_table(f, "code", &tp, &err), err);
  struct ql_statistics st;
  QL_CHECK_OK(tp.get_statistics(&tp, &st, &err), err);
  QL_CHECK_INT(st.columns[0].min_max_precision, QL_PRECISION_EXACT);
  check_bytes(&st.columns[0].min, "z", "a", 1);
  check_bytes(&st.columns[0].max, "z", "ba", 2);
  QL_CHECK_INT(st.columns[0].null_count_precision, QL_PRECISION_EXACT);
  QL_CHECK_INT(st.columns[0].null_count, 0);
  st.release(&st);
  tp.release(&tp);
  ql_error_release(&err);
}

int main(void) {
  struct ql_error err = {0};
  struct fixture f;
  memset(&f, 0, sizeof(f));
  struct ql_ref_host_options ho = {-1, 0, 2};
  QL_CHECK_OK(zr_test_open(&ho, &f.host, &f.plugin, &err), err);
  QL_CHECK_OK(zr_test_build_store(f.host, build_store, &err), err);
  test_total_bytes(&f);
  test_utf8_dimension(&f);
  test_binary_dimension(&f);
  QL_CHECK_OK(zr_test_close(f.host, &f.plugin, &err), err);
  ql_error_release(&err);
  QL_TEST_END();
}
