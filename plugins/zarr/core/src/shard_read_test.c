/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr's partial reads of sharded v3 arrays (shard_read.h), end to
 * end through the ABI: a query needing one inner chunk reads the shard
 * index and that chunk only (bytes_read exact), adjacent inner chunks are
 * one ranged read, a missing inner chunk (index entry of all ones) reads
 * as fill, a shard every inner chunk of which is needed is one read, the
 * index may sit at the start, a cached inner chunk is not read again;
 * corrupt and truncated indexes fail naming store, array and shard. Over
 * a counting memory store and over file://. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "counting_store.h"
#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/codecs.h"
#include "qlink_zarr/test_util.h"
#include "store_put.h"

int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

/* v(t=8, x=8) and w(t, x) int32, one 8 x 8 shard each of 2 x 4 inner
 * chunks (a 4 x 2 grid; inner chunk k = 2 * (t / 2) + x / 4), raw bytes.
 * v: v[t][x] = 100 t + x, index at the end with crc32c, chunks stored in
 * C order at 32 k bytes except k = 5 (t 4..5, x 4..7), never written
 * (offset, nbytes all ones), so the later ones move up: 7 chunks (224
 * bytes), then the 132-byte index. w: -(100 t + x), index (128 bytes, no
 * checksum) at the start, all 8 chunks after it in reverse order. */
enum { INNER = 32, V_INDEX = 8 * 16 + 4, W_INDEX = 8 * 16, V_SIZE = 7 * INNER + V_INDEX, W_SIZE = W_INDEX + 8 * INNER };

static const char *GROUP = "{\"zarr_format\":3,\"node_type\":\"group\",\"attributes\":{}}";

static void array_meta(char *buf, size_t cap, const char *index_codecs, const char *location) {
  snprintf(buf, cap,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[8,8],\"data_type\":\"int32\","
           "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[8,8]}},"
           "\"chunk_key_encoding\":{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
           "\"fill_value\":-7,\"codecs\":[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2,4],"
           "\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}],\"index_codecs\":%s,"
           "\"index_location\":\"%s\"}}],\"dimension_names\":[\"t\",\"x\"],\"attributes\":{}}",
           index_codecs, location);
}

static void inner_chunk(int32_t *out, int k, int sign) {
  int t0 = 2 * (k / 2), x0 = 4 * (k % 2);
  for (int i = 0; i < 8; i++) out[i] = sign * (100 * (t0 + i / 4) + x0 + i % 4);
}

static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* The two shards' bytes. */
static void make_shards(uint8_t *v, uint8_t *w) {
  int32_t chunk[8];
  uint8_t *vindex = v + 7 * INNER;
  int at = 0;
  for (int k = 0; k < 8; k++) {
    if (k == 5) {
      put_u64(vindex + 16 * k, UINT64_MAX);
      put_u64(vindex + 16 * k + 8, UINT64_MAX);
      continue;
    }
    inner_chunk(chunk, k, 1);
    memcpy(v + at, chunk, INNER);
    put_u64(vindex + 16 * k, (uint64_t)at);
    put_u64(vindex + 16 * k + 8, INNER);
    at += INNER;
  }
  uint32_t crc = zr_crc32c(vindex, 8 * 16);
  memcpy(vindex + 8 * 16, &crc, 4);
  for (int k = 0; k < 8; k++) {
    uint64_t off = W_INDEX + (uint64_t)INNER * (uint64_t)(7 - k);
    inner_chunk(chunk, k, -1);
    memcpy(w + off, chunk, INNER);
    put_u64(w + 16 * k, off);
    put_u64(w + 16 * k + 8, INNER);
  }
}

/* Write object `key` of the store: into memory store `mem`, or as a file under `dir`. */
static void write_object(const struct ql_object_store *mem, const char *dir, const char *key, const void *data,
                         size_t n) {
  char path[1024];
  if (mem) {
    snprintf(path, sizeof path, "sh.zarr/%s", key);
    put(mem, path, data, n);
    return;
  }
  snprintf(path, sizeof path, "%s/sh.zarr/%s", dir, key);
  for (char *p = path + strlen(dir) + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(path, 0700);
    *p = '/';
  }
  FILE *f = fopen(path, "wb");
  QL_CHECK(f != NULL);
  if (!f) return;
  QL_CHECK_INT((int64_t)fwrite(data, 1, n, f), (int64_t)n);
  fclose(f);
}

/* Bytes of the three zarr.json documents (what opening the store reads). */
static long long g_meta_bytes;

static void build_store(const struct ql_object_store *mem, const char *dir) {
  char meta[2048];
  uint8_t v[V_SIZE], w[W_SIZE];
  make_shards(v, w);
  write_object(mem, dir, "zarr.json", GROUP, strlen(GROUP));
  g_meta_bytes = (long long)strlen(GROUP);
  array_meta(meta, sizeof meta, "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}]",
             "end");
  write_object(mem, dir, "v/zarr.json", meta, strlen(meta));
  g_meta_bytes += (long long)strlen(meta);
  write_object(mem, dir, "v/c/0/0", v, sizeof v);
  array_meta(meta, sizeof meta, "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]", "start");
  write_object(mem, dir, "w/zarr.json", meta, strlen(meta));
  g_meta_bytes += (long long)strlen(meta);
  write_object(mem, dir, "w/c/0/0", w, sizeof w);
}

/* A query: column `column` (v or w) where t BETWEEN t0 AND t1 and x
 * BETWEEN x0 AND x1 (-1: no filter on it), over a table opened for it
 * (so no chunk is cached yet). `out` receives the values in stream order
 * as text "a,b,..."; *bytes_read and *chunks_read the scan's metrics. */
struct query {
  const char *column;
  int64_t t0, t1, x0, x1;
};

static ql_expr_id between(struct ql_ir_builder *b, const char *col, int32_t index, int64_t lo, int64_t hi) {
  struct ql_expr e = {0};
  ql_expr_id args[3] = {ql_ir_column(b, col, NULL, index), ql_ir_literal_i64(b, lo), ql_ir_literal_i64(b, hi)};
  e.kind = QL_EXPR_BETWEEN;
  e.n_args = 3;
  e.args = args;
  e.column_index = -1;
  e.filter = -1;
  return ql_ir_expr(b, &e);
}

static int scan_table(struct ql_ref_host *host, struct ql_table_provider *tp, const struct query *q, char *out,
                      size_t cap, int64_t *bytes_read, int64_t *chunks_read, struct ql_error *err);

static int run(struct ql_ref_host *host, struct ql_plugin *plugin, const char *url, const struct query *q, char *out,
               size_t cap, int64_t *bytes_read, int64_t *chunks_read, struct ql_error *err) {
  const char *keys[2] = {"path", "block_rows"};
  const char *values[2] = {url, "1"};
  struct ql_options opts = {2, keys, values};
  struct ql_table_provider tp;
  QL_RETURN_NOT_OK(plugin->table_provider_open(plugin, "table", &opts, ql_ref_host_session(host), &tp, err));
  int rc = scan_table(host, &tp, q, out, cap, bytes_read, chunks_read, err);
  tp.release(&tp);
  return rc;
}

/* The query over an opened table `tp` (its chunk cache as earlier scans left it). */
static int scan_table(struct ql_ref_host *host, struct ql_table_provider *tp, const struct query *q, char *out,
                      size_t cap, int64_t *bytes_read, int64_t *chunks_read, struct ql_error *err) {
  struct ql_ir_builder *b = NULL;
  QL_CHECK_OK(ql_ir_builder_new(&b, err), *err);
  ql_expr_id roots[2];
  int32_t n = 0;
  if (q->t0 >= 0) roots[n++] = between(b, "t", 0, q->t0, q->t1);
  if (q->x0 >= 0) roots[n++] = between(b, "x", 1, q->x0, q->x1);
  struct ql_plan_view view;
  QL_CHECK_OK(ql_ir_builder_finish(b, -1, &view, err), *err);
  ql_ir_builder_free(b);
  struct ql_expr_list list = {&view, n, 0, roots};
  int32_t answers[2] = {-1, -1};
  QL_CHECK_OK(tp->supports_filters(tp, &list, answers, err), *err);
  for (int32_t i = 0; i < n; i++) QL_CHECK_INT(answers[i], QL_PUSHDOWN_EXACT);
  int32_t proj[1] = {strcmp(q->column, "v") == 0 ? 2 : 3};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), 1, proj, list, -1};
  struct ql_execution_plan plan;
  int rc = tp->scan(tp, ql_ref_host_session(host), &args, &plan, err);
  view.release(&view);
  if (rc != QL_OK) return rc;
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  QL_CHECK_OK(plan.get_properties(&plan, &props, err), *err);
  size_t used = 0;
  out[0] = '\0';
  for (int64_t p = 0; p < props.partition_count && rc == QL_OK; p++) {
    struct ql_task_context ctx;
    ql_ref_host_task_context(host, p, &ctx);
    struct ArrowArrayStream st;
    QL_CHECK_OK(plan.execute(&plan, p, &ctx, &st, err), *err);
    struct ArrowArray a;
    while ((rc = st.get_next(&st, &a)) == 0 && a.release) {
      const struct ArrowArray *c = a.children[0];
      for (int64_t r = 0; r < a.length; r++) {
        int w = ql_array_is_valid(c, r)
                    ? snprintf(out + used, cap - used, "%s%d", used ? "," : "", ((const int32_t *)c->buffers[1])[c->offset + r])
                    : snprintf(out + used, cap - used, "%snull", used ? "," : "");
        if (w > 0 && (size_t)w < cap - used) used += (size_t)w;
      }
      a.release(&a);
    }
    if (rc != 0) {
      const char *msg = st.get_last_error(&st);
      ql_error_set(err, QL_EDATA, "%s", msg ? msg : "stream failed");
      rc = QL_EDATA;
    }
    st.release(&st);
  }
  *bytes_read = zr_test_metric(&plan, "bytes_read");
  *chunks_read = zr_test_metric(&plan, "chunks_read");
  plan.release(&plan);
  return rc;
}

struct expect {
  struct query q;
  const char *rows;
  int64_t bytes, chunks;
  long heads, reads; /* requests to the store (memory store only) */
};

static const struct expect CASES[] = {
    /* one inner chunk (k = 4), one of its cells: the index (at the end: head, then a ranged read) and 32 bytes */
    {{"v", 5, 5, 1, 1}, "501", V_INDEX + INNER, 1, 1, 2},
    /* the missing inner chunk k = 5: its index entry only, the fill value */
    {{"v", 4, 4, 5, 5}, "-7", V_INDEX, 1, 1, 1},
    /* inner chunks 0..3 lie back to back: one ranged read of 128 bytes after the index */
    {{"v", 1, 2, 3, 4}, "103,104,203,204", V_INDEX + 4 * INNER, 4, 1, 2},
    /* x = 6 in every row: chunks 1, 3, 7 (and 5, missing) are not adjacent: three reads */
    {{"v", 0, 7, 6, 6}, "6,106,206,306,-7,-7,606,706", V_INDEX + 3 * INNER, 4, 1, 4},
    /* every inner chunk: the whole shard in one read, no head */
    {{"v", -1, -1, -1, -1}, NULL, V_SIZE, 8, 0, 1},
    /* index at the start: no head; chunks stored in reverse order */
    {{"w", 5, 5, 1, 1}, "-501", W_INDEX + INNER, 1, 0, 2},
    {{"w", 0, 3, 0, 7}, NULL, W_INDEX + 4 * INNER, 4, 0, 2},
};

static void test_cases(const char *url, struct counting *c, struct ql_ref_host *host, struct ql_plugin *plugin) {
  struct ql_error err = {0};
  for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
    const struct expect *e = &CASES[i];
    char rows[4096];
    int64_t bytes = -1, chunks = -1;
    long h0 = c ? atomic_load(&c->heads) : 0, r0 = c ? atomic_load(&c->reads_into) : 0;
    long long b0 = c ? atomic_load(&c->bytes) : 0, g0 = c ? atomic_load(&c->get_ranges) : 0;
    QL_CHECK_OK(run(host, plugin, url, &e->q, rows, sizeof rows, &bytes, &chunks, &err), err);
    if (e->rows) QL_CHECK_STR(rows, e->rows);
    QL_CHECK_INT(bytes, e->bytes);
    QL_CHECK_INT(chunks, e->chunks);
    if (c) {
      /* the open lists the store and reads the three zarr.json with get_range; the scan reads
       * with read_into only, and bytes_read is what the store returned */
      QL_CHECK_INT(atomic_load(&c->heads) - h0, e->heads);
      QL_CHECK_INT(atomic_load(&c->reads_into) - r0, e->reads);
      QL_CHECK(atomic_load(&c->get_ranges) - g0 >= 3);
      QL_CHECK_INT(atomic_load(&c->bytes) - b0, g_meta_bytes + e->bytes);
    }
  }
  ql_error_release(&err);
}

/* v is small, so its inner chunks stay cached once read: a second query
 * of the same inner chunk reads nothing, another inner chunk reads the
 * index again and that chunk. */
static void test_cache(const char *url, struct ql_ref_host *host, struct ql_plugin *plugin) {
  struct ql_error err = {0};
  const char *keys[2] = {"path", "block_rows"};
  const char *values[2] = {url, "1"};
  struct ql_options opts = {2, keys, values};
  struct ql_table_provider tp;
  QL_CHECK_OK(plugin->table_provider_open(plugin, "table", &opts, ql_ref_host_session(host), &tp, &err), err);
  const struct query q[4] = {{"v", 5, 5, 1, 1}, {"v", 5, 5, 1, 1}, {"v", 4, 4, 2, 3}, {"v", 0, 0, 0, 0}};
  const char *rows[4] = {"501", "501", "402,403", "0"};
  const int64_t want[4] = {V_INDEX + INNER, 0, 0, V_INDEX + INNER};
  for (int i = 0; i < 4; i++) {
    char got[256];
    int64_t bytes = -1, chunks = -1;
    QL_CHECK_OK(scan_table(host, &tp, &q[i], got, sizeof got, &bytes, &chunks, &err), err);
    QL_CHECK_STR(got, rows[i]);
    QL_CHECK_INT(bytes, want[i]);
    QL_CHECK_INT(chunks, 1);
  }
  tp.release(&tp);
  ql_error_release(&err);
}

/* Whole scans of v and w give every value. */
static void test_full_values(const char *url, struct ql_ref_host *host, struct ql_plugin *plugin) {
  struct ql_error err = {0};
  for (int sign = 1; sign >= -1; sign -= 2) {
    struct query q = {sign > 0 ? "v" : "w", -1, -1, -1, -1};
    char rows[4096], want[4096];
    int64_t bytes, chunks;
    QL_CHECK_OK(run(host, plugin, url, &q, rows, sizeof rows, &bytes, &chunks, &err), err);
    size_t used = 0;
    for (int t = 0; t < 8; t++) {
      for (int x = 0; x < 8; x++) {
        int missing = sign > 0 && t >= 4 && t < 6 && x >= 4;
        used += (size_t)snprintf(want + used, sizeof want - used, "%s%d", used ? "," : "",
                                 missing ? -7 : sign * (100 * t + x));
      }
    }
    QL_CHECK_STR(rows, want);
  }
  ql_error_release(&err);
}

/* A damaged shard: `mutate` edits v's bytes (size *n, may shrink it); the
 * one-chunk query fails with a message holding `want`. */
static void test_damage(struct ql_plugin *plugin, void (*mutate)(uint8_t *, size_t *), const char *want) {
  struct ql_error err = {0};
  struct ql_ref_host *host = NULL;
  struct ql_ref_host_options ho = {-1, 0, 2};
  QL_CHECK_OK(ql_ref_host_new(&ho, &host, &err), err);
  struct ql_object_store mem;
  const struct ql_object_store_registry *reg = ql_ref_store_registry_view(ql_ref_host_stores(host));
  QL_CHECK_OK(reg->get_store(reg, "memory://", &mem, &err), err);
  build_store(&mem, NULL);
  uint8_t v[V_SIZE], w[W_SIZE];
  make_shards(v, w);
  size_t n = sizeof v;
  mutate(v, &n);
  put(&mem, "sh.zarr/v/c/0/0", v, n);
  mem.release(&mem);
  struct query q = {"v", 5, 5, 1, 1};
  char rows[256];
  int64_t bytes, chunks;
  int rc = run(host, plugin, "memory:///sh.zarr", &q, rows, sizeof rows, &bytes, &chunks, &err);
  QL_CHECK(rc != QL_OK);
  const char *msg = ql_error_message(&err);
  if (!strstr(msg, "zarr store memory:///sh.zarr: array 'v' shard 'v/c/0/0'") || !strstr(msg, want)) {
    fprintf(stderr, "unexpected message: %s (want '%s')\n", msg, want);
    QL_CHECK(0);
  }
  ql_error_release(&err);
  QL_CHECK_OK(ql_ref_host_free(host, &err), err);
}

static void flip_checksum(uint8_t *v, size_t *n) { v[*n - 1] ^= 0x55; }
static void flip_index(uint8_t *v, size_t *n) { v[*n - V_INDEX + 3] ^= 1; }
static void truncate_index(uint8_t *v, size_t *n) {
  (void)v;
  *n = V_INDEX - 10;
}
/* inner chunk 4's offset past the shard, its checksum updated */
static void point_outside(uint8_t *v, size_t *n) {
  uint8_t *index = v + *n - V_INDEX;
  put_u64(index + 16 * 4, 100000);
  uint32_t crc = zr_crc32c(index, 8 * 16);
  memcpy(index + 8 * 16, &crc, 4);
}

int main(void) {
  struct ql_error err = {0};
  struct ql_plugin plugin;
  QL_CHECK_OK(qlink_plugin_init(QL_ABI_VERSION, &plugin, &err), err);

  /* over a counting memory store */
  struct ql_ref_host *host = NULL;
  struct ql_ref_host_options ho = {-1, 0, 2};
  QL_CHECK_OK(ql_ref_host_new(&ho, &host, &err), err);
  struct ql_object_store store;
  struct counting *c = counting_new(&store, 0);
  build_store(&c->inner, NULL);
  QL_CHECK_OK(ql_ref_store_registry_register(ql_ref_host_stores(host), "memory://", &store, &err), err);
  test_cases("memory:///sh.zarr", c, host, &plugin);
  test_full_values("memory:///sh.zarr", host, &plugin);
  test_cache("memory:///sh.zarr", host, &plugin);
  QL_CHECK_OK(ql_ref_host_free(host, &err), err);

  /* over file:// */
  char dir[] = "/tmp/zarr_shard_testXXXXXX";
  QL_CHECK(mkdtemp(dir) != NULL);
  build_store(NULL, dir);
  QL_CHECK_OK(ql_ref_host_new(&ho, &host, &err), err);
  char url[256];
  snprintf(url, sizeof url, "file://%s/sh.zarr", dir);
  test_cases(url, NULL, host, &plugin);
  test_full_values(url, host, &plugin);
  QL_CHECK_OK(ql_ref_host_free(host, &err), err);
  const char *files[] = {"v/c/0/0", "v/c/0", "v/c", "v/zarr.json", "v", "w/c/0/0", "w/c/0", "w/c", "w/zarr.json", "w",
                         "zarr.json", ""};
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    char p[512];
    snprintf(p, sizeof p, "%s/sh.zarr/%s", dir, files[i]);
    QL_CHECK_INT(remove(p), 0);
  }
  QL_CHECK_INT(rmdir(dir), 0);

  test_damage(&plugin, flip_checksum, "sharding_indexed index: ");
  test_damage(&plugin, flip_index, "sharding_indexed index: ");
  test_damage(&plugin, truncate_index, "shard of 122 bytes is shorter than its index (132)");
  test_damage(&plugin, point_outside, "inner chunk 4 at 100000+32 lies outside the shard (356 bytes)");
  plugin.release(&plugin);
  ql_error_release(&err);
  QL_TEST_END();
}
