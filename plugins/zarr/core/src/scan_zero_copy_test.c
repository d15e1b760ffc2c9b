/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: value columns handed to Arrow as views of the decoded
 * partition block (chunks spanning every inner dimension), with and without
 * a fill value masked by the validity bitmap alone; dimension columns as
 * views of one repeating pattern; batches that outlive their stream and
 * plan keep the block alive. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/test_util.h"
#include "store_put.h"

/* time(4) days; lat(3); m(time, lat) float32 fill 7 (masked), chunks 2x3;
 * u(time, lat) float32 fill NaN (its NaN cells masked), chunks 2x3. Cell
 * (t, l) holds 3t + l, except m(2, 1) = 7 and u(1, 1) = NaN. */
static void build_store(const struct ql_object_store *s) {
  put_text(s, "z.zarr/.zgroup", "{\"zarr_format\":2}");
  put_text(s, "z.zarr/.zattrs", "{}");
  put_text(s, "z.zarr/time/.zarray",
           "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[4],\"dtype\":\"<i8\",\"fill_value\":null,\"compressor\":null}");
  put_text(s, "z.zarr/time/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"time\"],\"units\":\"days since 2000-01-01\"}");
  int64_t days[4] = {0, 1, 2, 3};
  put(s, "z.zarr/time/0", days, sizeof(days));
  put_text(s, "z.zarr/lat/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<f8\",\"fill_value\":\"NaN\",\"compressor\":null}");
  put_text(s, "z.zarr/lat/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"lat\"]}");
  double lat[3] = {10, 20, 30};
  put(s, "z.zarr/lat/0", lat, sizeof(lat));
  const char *names[2] = {"m", "u"};
  for (int k = 0; k < 2; k++) {
    char path[64], meta[256];
    snprintf(path, sizeof(path), "z.zarr/%s/.zarray", names[k]);
    snprintf(meta, sizeof(meta),
             "{\"zarr_format\":2,\"shape\":[4,3],\"chunks\":[2,3],\"dtype\":\"<f4\",\"fill_value\":%s,"
             "\"compressor\":null}",
             k == 0 ? "7.0" : "\"NaN\"");
    put_text(s, path, meta);
    snprintf(path, sizeof(path), "z.zarr/%s/.zattrs", names[k]);
    put_text(s, path, "{\"_ARRAY_DIMENSIONS\":[\"time\",\"lat\"]}");
    for (int c = 0; c < 2; c++) {
      float cells[6];
      for (int i = 0; i < 6; i++) cells[i] = (float)(6 * c + i);
      if (k == 0 && c == 1) cells[1] = 7;   /* m(2, 1) */
      if (k == 1 && c == 0) cells[4] = NAN; /* u(1, 1) */
      snprintf(path, sizeof(path), "z.zarr/%s/%d.0", names[k], c);
      put(s, path, cells, sizeof(cells));
    }
  }
}

/* Scan columns m and u with batches of 4 rows; keep every batch, release
 * stream and plan first, then check the batches. */
static void test_views(struct ql_ref_host *host, struct ql_table_provider *tp) {
  struct ql_error err = {0};
  /* columns: time, lat, m, u */
  int32_t proj[3] = {2, 3, 1};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), 3, proj, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(tp->scan(tp, ql_ref_host_session(host), &args, &plan, &err), err);
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan.get_properties(&plan, &props, &err), err);
  QL_CHECK_INT(props.partition_count, 2);
  struct ArrowArray batches[8];
  int64_t n_batches = 0;
  for (int64_t p = 0; p < props.partition_count; p++) {
    struct ql_task_context ctx;
    ql_ref_host_task_context(host, p, &ctx);
    ctx.batch_size = 4;
    struct ArrowArrayStream st;
    QL_CHECK_OK(plan.execute(&plan, p, &ctx, &st, &err), err);
    for (;;) {
      struct ArrowArray a;
      QL_CHECK_INT(st.get_next(&st, &a), 0);
      if (!a.release) break;
      if (n_batches < 8) {
        batches[n_batches++] = a;
      } else {
        a.release(&a);
      }
    }
    st.release(&st);
  }
  plan.release(&plan);
  QL_CHECK_INT(n_batches, 4); /* 6 rows per partition: 4 + 2 */
  int64_t row = 0;
  for (int64_t b = 0; b < n_batches; b++) {
    const struct ArrowArray *a = &batches[b];
    QL_CHECK_INT(a->length, b % 2 == 0 ? 4 : 2);
    const struct ArrowArray *m = a->children[0], *u = a->children[1], *lat = a->children[2];
    QL_CHECK_INT(u->null_count, b == 1 ? 1 : 0);
    QL_CHECK(b == 1 || u->buffers[0] == NULL);
    QL_CHECK_INT(m->null_count, b == 2 ? 1 : 0);
    for (int64_t r = 0; r < a->length; r++, row++) {
      float expect = (float)row;
      if (row == 4) {
        /* masked by the bitmap alone: the viewed slot still holds the NaN */
        QL_CHECK(!ql_array_is_valid(u, r));
        QL_CHECK(isnan(((const float *)u->buffers[1])[r]));
      } else {
        QL_CHECK(((const float *)u->buffers[1])[r] == expect);
        QL_CHECK(ql_array_is_valid(u, r));
      }
      QL_CHECK(((const double *)lat->buffers[1])[r] == 10.0 * (double)(row % 3 + 1));
      if (row == 7) {
        QL_CHECK(!ql_array_is_valid(m, r));
      } else {
        QL_CHECK(ql_array_is_valid(m, r));
        QL_CHECK(((const float *)m->buffers[1])[r] == expect);
      }
    }
  }
  QL_CHECK_INT(row, 12);
  /* lat repeats every 3 rows: every batch views one shared pattern (batch 1 of a block starts at row 4, 4 % 3 = 1) */
  const double *lat0 = batches[0].children[2]->buffers[1], *lat1 = batches[1].children[2]->buffers[1];
  QL_CHECK(lat1 == lat0 + 1);
  const double *lat2 = batches[2].children[2]->buffers[1], *lat3 = batches[3].children[2]->buffers[1];
  QL_CHECK(lat3 == lat2 + 1); /* partition 1: its stream's own pattern */
  for (int64_t b = 0; b < n_batches; b++) batches[b].release(&batches[b]);
  ql_error_release(&err);
}

/* A host batch size far beyond the table (1 << 40 rows): one batch per
 * block, and the dimension patterns stay the size of the block, not of the
 * batch size. */
static void test_huge_batch_size(struct ql_ref_host *host, struct ql_table_provider *tp) {
  struct ql_error err = {0};
  int32_t proj[2] = {1, 3};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), 2, proj, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(tp->scan(tp, ql_ref_host_session(host), &args, &plan, &err), err);
  int64_t row = 0;
  for (int64_t p = 0; p < 2; p++) {
    struct ql_task_context ctx;
    ql_ref_host_task_context(host, p, &ctx);
    ctx.batch_size = (int64_t)1 << 40;
    struct ArrowArrayStream st;
    QL_CHECK_OK(plan.execute(&plan, p, &ctx, &st, &err), err);
    struct ArrowArray a;
    QL_CHECK_INT(st.get_next(&st, &a), 0);
    QL_CHECK_INT(a.length, 6);
    for (int64_t r = 0; r < a.length; r++, row++) {
      QL_CHECK(((const double *)a.children[0]->buffers[1])[r] == 10.0 * (double)(row % 3 + 1));
      if (row == 4) {
        QL_CHECK(!ql_array_is_valid(a.children[1], r)); /* u(1, 1): NaN, u's fill */
      } else {
        QL_CHECK(((const float *)a.children[1]->buffers[1])[r] == (float)row);
      }
    }
    a.release(&a);
    QL_CHECK_INT(st.get_next(&st, &a), 0);
    QL_CHECK(a.release == NULL);
    st.release(&st);
  }
  QL_CHECK_INT(row, 12);
  plan.release(&plan);
  ql_error_release(&err);
}

int main(void) {
  struct ql_error err = {0};
  struct ql_ref_host_options ho = {-1, 0, 2};
  struct ql_ref_host *host = NULL;
  struct ql_plugin plugin;
  QL_CHECK_OK(zr_test_open(&ho, &host, &plugin, &err), err);
  QL_CHECK_OK(zr_test_build_store(host, build_store, &err), err);
  const char *keys[2] = {"path", "block_rows"};
  const char *values[2] = {"memory:///z.zarr", "1"};
  struct ql_options opts = {2, keys, values};
  struct ql_table_provider tp;
  QL_CHECK_OK(plugin.table_provider_open(&plugin, "table", &opts, ql_ref_host_session(host), &tp, &err), err);
  test_views(host, &tp);
  test_huge_batch_size(host, &tp);
  tp.release(&tp);
  QL_CHECK_OK(zr_test_close(host, &plugin, &err), err);
  ql_error_release(&err);
  QL_TEST_END();
}
