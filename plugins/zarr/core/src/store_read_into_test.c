/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr's reads into its own buffer (store.h, zr_store_read): with a
 * store offering read_into, whole objects land in one grow-only buffer
 * (one call when it is large enough; a full buffer asks `head` and reads
 * the rest); without it (read_into NULL, or a struct_size that stops
 * before the member) the plugin falls back to get_range. A scan
 * through the reference registry's handle reads every chunk with
 * read_into and returns what the get_range path returns. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "counting_store.h"
#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/store.h"
#include "store_put.h"

int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

static void test_store_read(void) {
  struct ql_error err = {0};
  struct zr_store st;
  memset(&st, 0, sizeof(st));
  struct counting *c = counting_new(&st.os, 0);
  st.url = "memory:///r.zarr";
  st.root = "r.zarr";
  enum { BIG = 200000 };
  uint8_t *big = malloc(BIG);
  QL_CHECK(big != NULL);
  if (!big) return;
  for (int i = 0; i < BIG; i++) big[i] = (uint8_t)(i * 7 + 3);
  put(&c->inner, "r.zarr/big", big, BIG);
  put_text(&c->inner, "r.zarr/small", "0123456789");

  struct zr_readbuf buf = {NULL, 0};
  struct ql_bytes b;
  /* first use: at least 64 KiB; the 200,000-byte object fills it, so head, grow, read the rest */
  QL_CHECK_OK(zr_store_read(&st, "big", &buf, 1, &b, &err), err);
  QL_CHECK_INT(b.size, BIG);
  QL_CHECK(b.release == NULL && b.data == buf.data);
  QL_CHECK(memcmp(b.data, big, BIG) == 0);
  QL_CHECK_INT(atomic_load(&c->reads_into), 2);
  QL_CHECK_INT(atomic_load(&c->heads), 1);
  QL_CHECK_INT(buf.cap, BIG + BIG / 8 + 1);
  /* now large enough: one call, no head; the buffer is reused, not regrown */
  uint8_t *data = buf.data;
  QL_CHECK_OK(zr_store_read(&st, "big", &buf, 1, &b, &err), err);
  QL_CHECK_INT(b.size, BIG);
  QL_CHECK(memcmp(b.data, big, BIG) == 0 && buf.data == data);
  QL_CHECK_INT(atomic_load(&c->reads_into), 3);
  QL_CHECK_INT(atomic_load(&c->heads), 1);
  QL_CHECK_OK(zr_store_read(&st, "small", &buf, 1, &b, &err), err);
  QL_CHECK_INT(b.size, 10);
  QL_CHECK(memcmp(b.data, "0123456789", 10) == 0);
  /* an object exactly the buffer's size: full, so head, which says there is no more */
  int64_t cap = buf.cap;
  uint8_t *exact = calloc((size_t)cap, 1);
  QL_CHECK(exact != NULL);
  if (exact) {
    memcpy(exact, big, BIG);
    put(&c->inner, "r.zarr/exact", exact, (size_t)cap);
    long heads = atomic_load(&c->heads);
    QL_CHECK_OK(zr_store_read(&st, "exact", &buf, 1, &b, &err), err);
    QL_CHECK_INT(b.size, cap);
    QL_CHECK(memcmp(b.data, exact, (size_t)cap) == 0);
    QL_CHECK_INT(atomic_load(&c->heads), heads + 1);
    QL_CHECK_INT(buf.cap, cap);
    free(exact);
  }
  /* errors name the store and the key */
  QL_CHECK_INT(zr_store_read(&st, "nope", &buf, 1, &b, &err), QL_ENOTFOUND);
  QL_CHECK_STR(ql_error_message(&err), "zarr store memory:///r.zarr: no object 'nope'");
  QL_CHECK_INT(zr_store_read(&st, "../x", &buf, 1, &b, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "key '../x' lies outside the store") != NULL);
  /* no buffer: get_range, bytes owned by the caller */
  long ranges = atomic_load(&c->get_ranges);
  QL_CHECK_OK(zr_store_read(&st, "small", NULL, 1, &b, &err), err);
  QL_CHECK(b.release != NULL && b.size == 10);
  if (b.release) b.release(&b);
  QL_CHECK_INT(atomic_load(&c->get_ranges), ranges + 1);
  zr_readbuf_free(&buf);
  QL_CHECK(buf.data == NULL && buf.cap == 0);

  /* stores without read_into: get_range, whatever the read_into pointer holds past struct_size */
  for (int mode = 1; mode <= 2; mode++) {
    struct zr_store old;
    memset(&old, 0, sizeof(old));
    struct counting *o = counting_new(&old.os, mode);
    old.url = "memory:///r.zarr";
    old.root = "r.zarr";
    put(&o->inner, "r.zarr/big", big, BIG);
    QL_CHECK_OK(zr_store_read(&old, "big", &buf, 1, &b, &err), err);
    QL_CHECK(b.size == BIG && b.release != NULL && memcmp(b.data, big, BIG) == 0);
    if (b.release) b.release(&b);
    QL_CHECK_INT(atomic_load(&o->reads_into), 0);
    QL_CHECK_INT(atomic_load(&o->get_ranges), 1);
    QL_CHECK(buf.data == NULL);
    old.os.release(&old.os);
  }
  free(big);
  st.os.release(&st.os);
  ql_error_release(&err);
}

/* t(6) int32 coordinate in chunks of 4 (an edge chunk of 2); v(t, x=3) float32 in chunks of 4 x 2,
 * zstd-free (raw) so the test needs no codec; chunk v/1.1 never written (fill value NaN -> NULL). */
static void build_store(const struct ql_object_store *m) {
  put_text(m, "s.zarr/.zgroup", "{\"zarr_format\":2}");
  put_text(m, "s.zarr/t/.zarray",
           "{\"zarr_format\":2,\"shape\":[6],\"chunks\":[4],\"dtype\":\"<i4\",\"fill_value\":null,\"compressor\":null}");
  put_text(m, "s.zarr/t/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"t\"]}");
  int32_t t0[4] = {10, 11, 12, 13}, t1[4] = {14, 15, 0, 0};
  put(m, "s.zarr/t/0", t0, sizeof(t0));
  put(m, "s.zarr/t/1", t1, sizeof(t1));
  put_text(m, "s.zarr/v/.zarray",
           "{\"zarr_format\":2,\"shape\":[6,3],\"chunks\":[4,2],\"dtype\":\"<f4\",\"fill_value\":\"NaN\","
           "\"compressor\":null}");
  put_text(m, "s.zarr/v/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"t\",\"x\"]}");
  float v00[8], v01[8], v10[8];
  for (int i = 0; i < 8; i++) {
    v00[i] = (float)i;
    v01[i] = 100.0f + (float)i;
    v10[i] = 200.0f + (float)i;
  }
  put(m, "s.zarr/v/0.0", v00, sizeof(v00));
  put(m, "s.zarr/v/0.1", v01, sizeof(v01));
  put(m, "s.zarr/v/1.0", v10, sizeof(v10));
}

static void open_table(struct ql_ref_host *host, struct ql_plugin *plugin, struct ql_table_provider *tp) {
  struct ql_error err = {0};
  const char *keys[2] = {"path", "block_rows"};
  const char *values[2] = {"memory:///s.zarr", "1"};
  struct ql_options opts = {2, keys, values};
  QL_CHECK_OK(plugin->table_provider_open(plugin, "table", &opts, ql_ref_host_session(host), tp, &err), err);
  ql_error_release(&err);
}

/* Every row of the table (t, x, v) as text "t,x,v;" in stream order. */
static void scan_text(struct ql_ref_host *host, struct ql_table_provider *tp, char *out, size_t cap) {
  struct ql_error err = {0};
  out[0] = '\0';
  struct ql_scan_args args = {sizeof(struct ql_scan_args), -1, NULL, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(tp->scan(tp, ql_ref_host_session(host), &args, &plan, &err), err);
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan.get_properties(&plan, &props, &err), err);
  size_t used = 0;
  for (int64_t p = 0; p < props.partition_count; p++) {
    struct ql_task_context ctx;
    ql_ref_host_task_context(host, p, &ctx);
    struct ArrowArrayStream st;
    QL_CHECK_OK(plan.execute(&plan, p, &ctx, &st, &err), err);
    struct ArrowArray a;
    while (st.get_next(&st, &a) == 0 && a.release) {
      const int32_t *tv = (const int32_t *)a.children[0]->buffers[1] + a.children[0]->offset;
      const int64_t *xv = (const int64_t *)a.children[1]->buffers[1] + a.children[1]->offset;
      const struct ArrowArray *vc = a.children[2];
      const float *vv = (const float *)vc->buffers[1] + vc->offset;
      const uint8_t *valid = vc->buffers[0];
      for (int64_t r = 0; r < a.length; r++) {
        int64_t bit = vc->offset + r;
        int null = vc->null_count > 0 && valid && !(valid[bit / 8] & (1 << (bit % 8)));
        int w = null ? snprintf(out + used, cap - used, "%d,%lld,null;", tv[r], (long long)xv[r])
                     : snprintf(out + used, cap - used, "%d,%lld,%g;", tv[r], (long long)xv[r], (double)vv[r]);
        if (w > 0 && (size_t)w < cap - used) used += (size_t)w;
      }
      a.release(&a);
    }
    st.release(&st);
  }
  plan.release(&plan);
  ql_error_release(&err);
}

/* The same table through a store with read_into (mode 0) and without
 * (modes 1, 2): identical rows; only mode 0 calls read_into. */
static void test_scan_through_registry(void) {
  struct ql_error err = {0};
  char got[3][4096];
  long reads_into[3], get_ranges[3];
  for (int mode = 0; mode < 3; mode++) {
    struct ql_ref_host *host = NULL;
    struct ql_ref_host_options ho = {-1, 0, 2};
    QL_CHECK_OK(ql_ref_host_new(&ho, &host, &err), err);
    struct ql_plugin plugin;
    QL_CHECK_OK(qlink_plugin_init(QL_ABI_VERSION, &plugin, &err), err);
    struct ql_object_store store;
    struct counting *c = counting_new(&store, mode);
    build_store(&c->inner);
    QL_CHECK_OK(ql_ref_store_registry_register(ql_ref_host_stores(host), "memory://", &store, &err), err);
    /* the registry's handle offers read_into exactly when the registered store has it */
    struct ql_object_store h;
    const struct ql_object_store_registry *reg = ql_ref_store_registry_view(ql_ref_host_stores(host));
    QL_CHECK_OK(reg->get_store(reg, "memory:///s.zarr", &h, &err), err);
    QL_CHECK_INT(h.read_into != NULL, mode == 0);
    h.release(&h);
    struct ql_table_provider tp;
    open_table(host, &plugin, &tp);
    long r0 = atomic_load(&c->reads_into), g0 = atomic_load(&c->get_ranges);
    scan_text(host, &tp, got[mode], sizeof(got[mode]));
    reads_into[mode] = atomic_load(&c->reads_into) - r0;
    get_ranges[mode] = atomic_load(&c->get_ranges) - g0;
    tp.release(&tp);
    plugin.release(&plugin);
    QL_CHECK_OK(ql_ref_host_free(host, &err), err);
  }
  /* block_rows=1: one block per 4 x 2 chunk, each in C order, blocks in C order */
  QL_CHECK_STR(got[0],
               "10,0,0;10,1,1;11,0,2;11,1,3;12,0,4;12,1,5;13,0,6;13,1,7;10,2,100;11,2,102;12,2,104;13,2,106;"
               "14,0,200;14,1,201;15,0,202;15,1,203;14,2,null;15,2,null;");
  QL_CHECK_STR(got[1], got[0]);
  QL_CHECK_STR(got[2], got[0]);
  /* the scan reads v's 4 chunks (0.0, 0.1, 1.0, and 1.1, never written: a not-found answer) */
  QL_CHECK_INT(reads_into[0], 4);
  QL_CHECK_INT(reads_into[1], 0);
  QL_CHECK_INT(reads_into[2], 0);
  QL_CHECK_INT(get_ranges[1], 4);
  QL_CHECK_INT(get_ranges[2], 4);
  QL_CHECK_INT(get_ranges[0], 0);
  ql_error_release(&err);
}

int main(void) {
  test_store_read();
  test_scan_through_registry();
  QL_TEST_END();
}
