/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr's small-array chunk cache (model.h, ZR_CACHE_ARRAY_BYTES): a
 * second scan of a small array fetches nothing from the store and returns
 * what the first read; chunks enter the cache only as scans read them;
 * reopening the table reads the store again; an array over the size limit
 * is read from the store by every scan. */
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "store_put.h"

int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

enum { NX = 70000 }; /* b: 4 x NX float32 = 1.12 MB, over the 1 MiB cache limit */

/* t(4) without coordinate; s(t) int32 in chunks of 2; b(t, x) float32 in
 * chunks of 2 x NX (a second table). */
static void build_store(const struct ql_object_store *m) {
  put_text(m, "c.zarr/.zgroup", "{\"zarr_format\":2}");
  put_text(m, "c.zarr/s/.zarray",
           "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"<i4\",\"fill_value\":null,\"compressor\":null}");
  put_text(m, "c.zarr/s/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"t\"]}");
  int32_t s0[2] = {10, 11}, s1[2] = {12, 13};
  put(m, "c.zarr/s/0", s0, sizeof(s0));
  put(m, "c.zarr/s/1", s1, sizeof(s1));
  char meta[256];
  snprintf(meta, sizeof(meta),
           "{\"zarr_format\":2,\"shape\":[4,%d],\"chunks\":[2,%d],\"dtype\":\"<f4\",\"fill_value\":null,"
           "\"compressor\":null}",
           NX, NX);
  put_text(m, "c.zarr/b/.zarray", meta);
  put_text(m, "c.zarr/b/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"t\",\"x\"]}");
  float *b = calloc(2 * NX, sizeof(float));
  QL_CHECK(b != NULL);
  if (!b) return;
  for (int i = 0; i < 2 * NX; i++) b[i] = (float)(i % 7);
  put(m, "c.zarr/b/0.0", b, 2 * NX * sizeof(float));
  put(m, "c.zarr/b/1.0", b, 2 * NX * sizeof(float));
  free(b);
}

struct env {
  struct ql_ref_host *host;
  struct ql_plugin plugin;
  struct ql_object_store mem;
};

/* block_rows=1: one block (and partition) per chunk. */
static void open_table(struct env *e, const char *table, struct ql_table_provider *tp) {
  struct ql_error err = {0};
  const char *keys[3] = {"path", "table", "block_rows"};
  const char *values[3] = {"memory:///c.zarr", table, "1"};
  struct ql_options opts = {3, keys, values};
  QL_CHECK_OK(e->plugin.table_provider_open(&e->plugin, "table", &opts, ql_ref_host_session(e->host), tp, &err), err);
  ql_error_release(&err);
}

/* Scan partitions [first, last) of column `col` (-1: every partition);
 * sum the int32 (table t) or float32 (table t_x) values of that column;
 * return the scan's chunks_read and bytes_read metrics. */
static double scan(struct env *e, struct ql_table_provider *tp, int32_t col, int is_int, int64_t first, int64_t last,
                   int64_t *chunks, int64_t *bytes) {
  struct ql_error err = {0};
  int32_t proj[1] = {col};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), 1, proj, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(tp->scan(tp, ql_ref_host_session(e->host), &args, &plan, &err), err);
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan.get_properties(&plan, &props, &err), err);
  if (last < 0) last = props.partition_count;
  double sum = 0;
  for (int64_t p = first; p < last; p++) {
    struct ql_task_context ctx;
    ql_ref_host_task_context(e->host, p, &ctx);
    struct ArrowArrayStream st;
    QL_CHECK_OK(plan.execute(&plan, p, &ctx, &st, &err), err);
    for (;;) {
      struct ArrowArray a;
      QL_CHECK_INT(st.get_next(&st, &a), 0);
      if (!a.release) break;
      const struct ArrowArray *c = a.children[0];
      for (int64_t r = 0; r < a.length; r++) {
        sum += is_int ? ((const int32_t *)c->buffers[1])[r] : ((const float *)c->buffers[1])[r];
      }
      a.release(&a);
    }
    st.release(&st);
  }
  struct ql_metrics m;
  QL_CHECK_OK(plan.get_metrics(&plan, &m, &err), err);
  QL_CHECK_STR(m.items[1].name, "chunks_read");
  QL_CHECK_STR(m.items[2].name, "bytes_read");
  *chunks = m.items[1].value;
  *bytes = m.items[2].value;
  m.release(&m);
  plan.release(&plan);
  ql_error_release(&err);
  return sum;
}

static void test_small_array_cached(struct env *e) {
  struct ql_table_provider tp;
  int64_t chunks = 0, bytes = 0;
  open_table(e, "t", &tp);
  /* column 1 is s (column 0 the dimension t) */
  QL_CHECK(scan(e, &tp, 1, 1, 0, -1, &chunks, &bytes) == 46);
  QL_CHECK_INT(chunks, 2);
  QL_CHECK_INT(bytes, 16);
  /* the store changes; the open table keeps what it read */
  int32_t s0[2] = {100, 101};
  put(&e->mem, "c.zarr/s/0", s0, sizeof(s0));
  QL_CHECK(scan(e, &tp, 1, 1, 0, -1, &chunks, &bytes) == 46);
  QL_CHECK_INT(chunks, 2);
  QL_CHECK_INT(bytes, 0);
  tp.release(&tp);
  /* reopened: the new chunk */
  open_table(e, "t", &tp);
  QL_CHECK(scan(e, &tp, 1, 1, 0, -1, &chunks, &bytes) == 226);
  QL_CHECK_INT(bytes, 16);
  tp.release(&tp);
}

static void test_only_read_chunks_cached(struct env *e) {
  struct ql_table_provider tp;
  int64_t chunks = 0, bytes = 0;
  open_table(e, "t", &tp);
  /* partition 1 alone (chunk s/1: 12 + 13), then every partition: only s/0 is fetched */
  QL_CHECK(scan(e, &tp, 1, 1, 1, 2, &chunks, &bytes) == 25);
  QL_CHECK_INT(chunks, 1);
  QL_CHECK_INT(bytes, 8);
  QL_CHECK(scan(e, &tp, 1, 1, 0, -1, &chunks, &bytes) == 226);
  QL_CHECK_INT(chunks, 2);
  QL_CHECK_INT(bytes, 8);
  tp.release(&tp);
}

static void test_large_array_not_cached(struct env *e) {
  struct ql_table_provider tp;
  int64_t chunks = 0, bytes = 0;
  open_table(e, "t_x", &tp);
  /* column 2 is b (after the dimensions t and x); both chunks hold the same cells */
  double want = 0;
  for (int i = 0; i < 2 * NX; i++) want += (double)(i % 7);
  want *= 2;
  QL_CHECK(scan(e, &tp, 2, 0, 0, -1, &chunks, &bytes) == want);
  QL_CHECK_INT(bytes, 2 * 2 * NX * 4);
  QL_CHECK(scan(e, &tp, 2, 0, 0, -1, &chunks, &bytes) == want);
  QL_CHECK_INT(chunks, 2);
  QL_CHECK_INT(bytes, 2 * 2 * NX * 4);
  tp.release(&tp);
}

int main(void) {
  struct ql_error err = {0};
  struct env e;
  memset(&e, 0, sizeof(e));
  struct ql_ref_host_options ho = {-1, 0, 2};
  QL_CHECK_OK(ql_ref_host_new(&ho, &e.host, &err), err);
  QL_CHECK_OK(qlink_plugin_init(QL_ABI_VERSION, &e.plugin, &err), err);
  const struct ql_object_store_registry *reg = ql_ref_store_registry_view(ql_ref_host_stores(e.host));
  QL_CHECK_OK(reg->get_store(reg, "memory://", &e.mem, &err), err);
  build_store(&e.mem);
  test_small_array_cached(&e);
  test_only_read_chunks_cached(&e);
  test_large_array_not_cached(&e);
  e.mem.release(&e.mem);
  e.plugin.release(&e.plugin);
  QL_CHECK_OK(ql_ref_host_free(e.host, &err), err);
  ql_error_release(&err);
  QL_TEST_END();
}
