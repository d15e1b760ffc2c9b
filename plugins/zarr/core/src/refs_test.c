/* SPDX-License-Identifier: Apache-2.0 */
/* kerchunk reference sets (refs.h): parsing (versions 0 and 1, inline
 * text and base64, ranges, templates, relative urls) and every refusal
 * naming the key; the reference set as a store over the reference host's
 * memory:// store (ranged reads, a key never written, a missing target, a
 * short read, an offset past the end); and a table read end to end
 * through the plugin, its chunks inline and in ranges of one file. */
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/test_util.h"
#include "refs.h"
#include "store_put.h"

static int parse(const char *text, const char *url, struct zr_refs *out, struct ql_error *err) {
  return zr_refs_parse(text, strlen(text), url, out, err);
}

static void test_parse_v1(void) {
  struct ql_error err = {0};
  struct zr_refs r;
  const char *doc =
      "{\"version\":1,\"templates\":{\"u\":\"http://h:8000/data\"},\"refs\":{"
      "\".zgroup\":\"{\\\"zarr_format\\\":2}\",\"a/0\":\"base64:AAEC\",\"a/1\":\"x\\u0000y\","
      "\"a/.zattrs\":{\"k\":[1,2]},\"/b/0\":[\"{{u}}/f.nc\",10,20],\"b/1\":[\"{{ u }}/f.nc\",30,0],"
      "\"c/0\":[\"../sib/g.nc\"],\"c/1\":[\"file:///abs/h.nc\",0,4],\"c/2\":[\"/abs/h.nc\",4,4]}}";
  QL_CHECK_OK(parse(doc, "/data/refs/r.json", &r, &err), err);
  QL_CHECK_INT(r.version, 1);
  QL_CHECK_INT(r.n_refs, 9);
  const struct zr_ref *z = zr_refs_find(&r, ".zgroup");
  QL_CHECK(z && z->kind == ZR_REF_INLINE && z->size == 17 && memcmp(z->data, "{\"zarr_format\":2}", 17) == 0);
  z = zr_refs_find(&r, "a/0");
  QL_CHECK(z && z->size == 3 && z->data[0] == 0 && z->data[1] == 1 && z->data[2] == 2);
  z = zr_refs_find(&r, "a/1"); /* a NUL inside the text is a byte */
  QL_CHECK(z && z->size == 3 && memcmp(z->data, "x\0y", 3) == 0);
  z = zr_refs_find(&r, "a/.zattrs");
  QL_CHECK(z && z->size == 11 && memcmp(z->data, "{\"k\":[1,2]}", 11) == 0);
  z = zr_refs_find(&r, "b/0"); /* the leading '/' dropped, as kerchunk does */
  QL_CHECK(z && z->kind == ZR_REF_RANGE && z->offset == 10 && z->size == 20);
  if (z) QL_CHECK_STR(r.targets[z->target].url, "http://h:8000/data/f.nc");
  const struct zr_ref *z1 = zr_refs_find(&r, "b/1");
  QL_CHECK(z && z1 && z1->target == z->target && z1->size == 0); /* one target, templates with spaces */
  z = zr_refs_find(&r, "c/0");
  QL_CHECK(z && z->kind == ZR_REF_WHOLE);
  if (z) QL_CHECK_STR(r.targets[z->target].url, "file:///data/sib/g.nc");
  z = zr_refs_find(&r, "c/1");
  z1 = zr_refs_find(&r, "c/2");
  QL_CHECK(z && z1 && z->target == z1->target);
  if (z) QL_CHECK_STR(r.targets[z->target].path, "abs/h.nc");
  QL_CHECK_INT(r.n_targets, 3);
  QL_CHECK_INT(r.n_stores, 2);
  QL_CHECK(zr_refs_find(&r, "nope") == NULL);
  zr_refs_free(&r);
  /* version 0: the flat dict */
  QL_CHECK_OK(parse("{\".zgroup\":\"{}\",\"v/0\":[\"x.bin\",0,8]}", "memory:///r.json", &r, &err), err);
  QL_CHECK_INT(r.version, 0);
  QL_CHECK_INT(r.n_refs, 2);
  QL_CHECK_STR(r.targets[0].url, "memory:///x.bin");
  zr_refs_free(&r);
  ql_error_release(&err);
}

static void check_message(const struct ql_error *err, const char *want) {
  const char *msg = ql_error_message(err);
  QL_CHECK(msg && strstr(msg, want) != NULL);
  if (!msg || !strstr(msg, want)) fprintf(stderr, "  message: %s\n  wanted: %s\n", msg ? msg : "(none)", want);
}

static void refused(const char *doc, const char *url, int status, const char *words) {
  struct ql_error err = {0};
  struct zr_refs r;
  QL_CHECK_INT(parse(doc, url, &r, &err), status);
  QL_CHECK(r.n_refs == 0 && r.refs == NULL);
  check_message(&err, words);
  ql_error_release(&err);
}

static void test_parse_errors(void) {
  const char *u = "/d/r.json";
  refused("{\"version\":1,\"refs\":{", u, QL_EDATA, "kerchunk references /d/r.json: malformed JSON at line 1");
  refused("[1]", u, QL_EDATA, "the document is not a JSON object");
  refused("{\"version\":2,\"refs\":{}}", u, QL_EDATA, "unsupported version");
  refused("{\"version\":1}", u, QL_EDATA, "version 1 without a \"refs\" object");
  refused("{\"zarr_format\":3,\"node_type\":\"group\"}", u, QL_EDATA, "this is Zarr metadata");
  refused("{\"version\":1,\"refs\":{\"a/0\":\"base64:A*==\"}}", u, QL_EDATA, "key 'a/0': bad base64");
  refused("{\"version\":1,\"refs\":{\"a/0\":5}}", u, QL_EDATA, "key 'a/0': expected text");
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"f\",1]}}", u, QL_EDATA, "key 'a/0': a reference list must be");
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"f\",-1,4]}}", u, QL_EDATA,
          "key 'a/0' -> 'f': offset -1 and length 4 are out of range");
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"f\",0,4294967296]}}", u, QL_EDATA, "length 4294967296 are out of range");
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"f\",9223372036854775807,1]}}", u, QL_EDATA, "out of range");
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"f\",\"0\",4]}}", u, QL_EDATA, "offset and length must be integers");
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"\",0,4]}}", u, QL_EDATA, "key 'a/0': empty url");
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"../../../x\",0,4]}}", u, QL_EINVAL,
          "key 'a/0' -> '../../../x': path '/d/../../../x' climbs above its root with '..'");
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"../../x\",0,4]}}", "http://h/d/r.json", QL_EINVAL,
          "key 'a/0' -> '../../x': URL path 'd/../../x' climbs above its root");
  refused("{\"version\":1,\"refs\":{\"../a\":\"x\"}}", u, QL_EDATA, "key '../a' is not a valid Zarr key");
  refused("{\"version\":1,\"refs\":{\"a//b\":\"x\"}}", u, QL_EDATA, "key 'a//b' is not a valid Zarr key");
  refused("{\"version\":1,\"refs\":{\"a\":\"x\",\"/a\":\"y\"}}", u, QL_EDATA, "key 'a' appears twice");
  refused("{\"version\":1,\"templates\":{\"u\":\"x\"},\"refs\":{\"a/0\":[\"{{v}}/f\",0,4]}}", u, QL_EDATA,
          "url '{{v}}/f' uses template 'v', which templates does not define");
  refused("{\"version\":1,\"refs\":{},\"gen\":[{\"key\":\"k\"}]}", u, QL_ENOTSUP, "(\"gen\") are not supported");
  /* a remote reference file may not reach local files */
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"/etc/passwd\",0,4]}}", "https://h/r.json", QL_EINVAL,
          "key 'a/0' -> '/etc/passwd' is refused: a reference file read from https://h may not point at local files");
  refused("{\"version\":1,\"refs\":{\"a/0\":[\"file:///etc/passwd\"]}}", "s3://b/r.json", QL_EINVAL,
          "may not point at local files");
}

/* A reference host whose memory:// store holds `f.bin` (bytes 0..99) and
 * the reference file `doc` at r/refs.json. */
struct env {
  struct ql_ref_host *host;
  struct ql_plugin plugin;
  struct ql_object_store mem;
  const struct ql_object_store_registry *reg;
};

static void env_open(struct env *e) {
  struct ql_error err = {0};
  memset(e, 0, sizeof(*e));
  QL_CHECK_OK(zr_test_open(NULL, &e->host, &e->plugin, &err), err);
  e->reg = ql_ref_store_registry_view(ql_ref_host_stores(e->host));
  QL_CHECK_OK(e->reg->get_store(e->reg, "memory://", &e->mem, &err), err);
  uint8_t bytes[100];
  for (int i = 0; i < 100; i++) bytes[i] = (uint8_t)i;
  put(&e->mem, "r/f.bin", bytes, sizeof(bytes));
  ql_error_release(&err);
}

static void env_close(struct env *e) {
  struct ql_error err = {0};
  e->mem.release(&e->mem);
  QL_CHECK_OK(zr_test_close(e->host, &e->plugin, &err), err);
  ql_error_release(&err);
}


static void test_store_reads(struct env *e) {
  struct ql_error err = {0};
  put_text(&e->mem, "r/refs.json",
           "{\"version\":1,\"refs\":{\".zgroup\":\"{\\\"zarr_format\\\":2}\",\"v/0\":[\"f.bin\",10,8],"
           "\"v/1\":[\"f.bin\",96,8],\"v/2\":[\"f.bin\",200,4],\"v/3\":[\"gone.bin\",0,4],\"w\":[\"f.bin\"],"
           "\"s/0\":[\"s3://bucket/x.nc\",0,4]}}");
  struct zr_store st;
  QL_CHECK_OK(zr_store_open(e->reg, "memory:///r/refs.json", &st, &err), err);
  struct ql_bytes b;
  QL_CHECK_OK(zr_store_get(&st, "v/0", &b, &err), err);
  QL_CHECK(b.size == 8 && b.data[0] == 10 && b.data[7] == 17);
  if (b.release) b.release(&b);
  struct zr_readbuf buf = {NULL, 0};
  QL_CHECK_OK(zr_store_read(&st, "v/0", &buf, 8, &b, &err), err); /* read_into */
  QL_CHECK(b.size == 8 && b.data[0] == 10 && b.data[7] == 17);
  QL_CHECK_OK(zr_store_read_range(&st, "v/0", 2, 3, &buf, &b, &err), err);
  QL_CHECK(b.size == 3 && b.data[0] == 12 && b.data[2] == 14);
  int64_t size = 0;
  QL_CHECK_OK(zr_store_size(&st, "w", &size, &err), err);
  QL_CHECK_INT(size, 100);
  QL_CHECK_OK(zr_store_read(&st, "w", &buf, 1, &b, &err), err);
  QL_CHECK(b.size == 100 && b.data[99] == 99);
  QL_CHECK_OK(zr_store_get(&st, ".zgroup", &b, &err), err);
  QL_CHECK(b.size == 17 && memcmp(b.data, "{\"zarr_format\":2}", 17) == 0);
  if (b.release) b.release(&b);
  /* a key never written: not found (a chunk reads as the fill value) */
  QL_CHECK_INT(zr_store_get(&st, "v/9", &b, &err), QL_ENOTFOUND);
  /* a short read, an offset past the end, a missing target, a store nobody serves: named */
  QL_CHECK_INT(zr_store_read(&st, "v/1", &buf, 8, &b, &err), QL_EDATA);
  check_message(&err, "kerchunk references memory:///r/refs.json: key 'v/1' -> 'memory:///r/f.bin' bytes 96..104: "
                      "the target ends first (short read: 4 of 8 bytes)");
  QL_CHECK_INT(zr_store_get(&st, "v/1", &b, &err), QL_EDATA);
  check_message(&err, "short read: 4 of 8 bytes");
  QL_CHECK(zr_store_read(&st, "v/2", &buf, 4, &b, &err) != QL_OK);
  check_message(&err, "key 'v/2' -> 'memory:///r/f.bin' bytes 200..204");
  QL_CHECK(zr_store_get(&st, "v/2", &b, &err) != QL_OK);
  check_message(&err, "key 'v/2' -> 'memory:///r/f.bin' bytes 200..204");
  QL_CHECK_INT(zr_store_read(&st, "v/3", &buf, 4, &b, &err), QL_EIO);
  check_message(&err, "key 'v/3' -> 'memory:///r/gone.bin': the target does not exist");
  QL_CHECK_INT(zr_store_get(&st, "s/0", &b, &err), QL_EIO);
  check_message(&err, "key 's/0' -> 's3://bucket/x.nc': ");
  QL_CHECK_INT(zr_store_read_range(&st, "v/0", 9, 1, NULL, &b, &err), QL_EINVAL);
  check_message(&err, "key 'v/0': offset 9 lies past its 8 bytes");
  char **keys = NULL;
  int64_t n = 0;
  QL_CHECK_OK(zr_store_list(&st, &keys, &n, &err), err);
  QL_CHECK_INT(n, 7);
  if (n == 7) QL_CHECK_STR(keys[0], ".zgroup");
  zr_store_list_free(keys, n);
  zr_readbuf_free(&buf);
  zr_store_close(&st);
  ql_error_release(&err);
}

static void test_open_errors(struct env *e) {
  struct ql_error err = {0};
  struct zr_store st;
  QL_CHECK_INT(zr_store_open(e->reg, "memory:///r/none.json", &st, &err), QL_ENOTFOUND);
  check_message(&err, "kerchunk references memory:///r/none.json: the file does not exist");
  put_text(&e->mem, "r/nogroup.json", "{\"version\":1,\"refs\":{\"v/0\":\"x\"}}");
  QL_CHECK_INT(zr_store_open(e->reg, "memory:///r/nogroup.json", &st, &err), QL_EDATA);
  check_message(&err, "no Zarr group (no key .zgroup, .zmetadata or zarr.json)");
  QL_CHECK_INT(zr_store_open(e->reg, "memory:///r/refs.parq", &st, &err), QL_ENOTSUP);
  check_message(&err, "Parquet references are not supported");
  put_text(&e->mem, "r/bad.JSON", "{\"version\":1,\"refs\":{\"v/0\":\"base64:@@@@\"}}");
  QL_CHECK_INT(zr_store_open(e->reg, "memory:///r/bad.JSON", &st, &err), QL_EDATA);
  check_message(&err, "key 'v/0': bad base64");
  QL_CHECK_INT(zr_refs_detect("/x/refs.json/"), 1);
  QL_CHECK_INT(zr_refs_detect("/x/refs.parquet"), 2);
  QL_CHECK_INT(zr_refs_detect("/x/store.zarr"), 0);
  ql_error_release(&err);
}

/* The rows of (time int64, t float32) scanned: values, NaN for NULL. */
struct rows {
  int64_t n;
  int64_t time[8];
  float t[8];
};

static void collect(const struct ArrowArray *batch, void *ctx) {
  struct rows *r = ctx;
  const struct ArrowArray *time = batch->children[0], *t = batch->children[1];
  const int64_t *tv = time->buffers[1];
  const float *v = t->buffers[1];
  const uint8_t *valid = t->buffers[0];
  for (int64_t i = 0; i < t->length && r->n < 8; i++, r->n++) {
    int64_t j = t->offset + i;
    r->time[r->n] = tv[time->offset + i];
    r->t[r->n] = valid && !(valid[j / 8] >> (j % 8) & 1) ? -1.0f : v[j];
  }
}

/* t(time=4) float32 in chunks of 2, fill NaN: chunk 0 a range of
 * data.bin, chunk 1 inline base64 {4.0, NaN}; read through the plugin. */
static void test_table(struct env *e) {
  struct ql_error err = {0};
  float t0[2] = {1.5f, 2.5f};
  uint8_t blob[16];
  memcpy(blob, "HEADER..", 8);
  memcpy(blob + 8, t0, 8);
  put(&e->mem, "r/data.bin", blob, sizeof(blob));
  /* chunk 1 = {4.0f, fill}: bytes 00 00 80 40 00 00 c0 7f, base64 "AACAQAAAwH8=" */
  put_text(&e->mem, "r/t.json",
           "{\"version\":1,\"refs\":{\".zgroup\":\"{\\\"zarr_format\\\":2}\",\".zattrs\":\"{}\","
           "\"t/.zarray\":\"{\\\"zarr_format\\\":2,\\\"shape\\\":[4],\\\"chunks\\\":[2],\\\"dtype\\\":\\\"<f4\\\","
           "\\\"fill_value\\\":\\\"NaN\\\",\\\"compressor\\\":null,\\\"filters\\\":null,\\\"order\\\":\\\"C\\\"}\","
           "\"t/.zattrs\":\"{\\\"_ARRAY_DIMENSIONS\\\":[\\\"time\\\"]}\","
           "\"t/0\":[\"data.bin\",8,8],\"t/1\":\"base64:AACAQAAAwH8=\"}}");
  const char *keys[1] = {"path"};
  const char *values[1] = {"memory:///r/t.json"};
  struct ql_options opts = {1, keys, values};
  struct ql_table_provider tp;
  QL_CHECK_OK(e->plugin.table_provider_open(&e->plugin, "table", &opts, ql_ref_host_session(e->host), &tp, &err),
              err);
  int32_t proj[2] = {0, 1};
  struct ql_scan_args args = {sizeof(struct ql_scan_args), 2, proj, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  QL_CHECK_OK(tp.scan(&tp, ql_ref_host_session(e->host), &args, &plan, &err), err);
  struct rows rows;
  memset(&rows, 0, sizeof(rows));
  QL_CHECK_OK(zr_test_each_batch(e->host, &plan, collect, &rows, &err), err);
  QL_CHECK_INT(rows.n, 4);
  for (int i = 0; i < 4; i++) QL_CHECK_INT(rows.time[i], i);
  QL_CHECK(rows.t[0] == 1.5f && rows.t[1] == 2.5f && rows.t[2] == 4.0f && rows.t[3] == -1.0f); /* -1: NULL */
  QL_CHECK_INT(zr_test_metric(&plan, "chunks_read"), 2);
  QL_CHECK_INT(zr_test_metric(&plan, "bytes_read"), 16);
  plan.release(&plan);
  tp.release(&tp);
  ql_error_release(&err);
}

int main(void) {
  test_parse_v1();
  test_parse_errors();
  struct env e;
  env_open(&e);
  test_store_reads(&e);
  test_open_errors(&e);
  test_table(&e);
  env_close(&e);
  QL_TEST_END();
}
