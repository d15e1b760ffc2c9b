/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: kerchunk reference files (refs.h). The input is the
 * reference file, memory:///d/r.json, opened as a Zarr store over the
 * reference registry's memory:// store, which also holds d/f.bin (64
 * bytes); then every key is read whole, through read_into and in a
 * range, the keys are listed and the group's metadata loaded. Byte 0 of the input also decides
 * whether it is parsed again as if read from https:// (where local
 * targets are refused). Must never crash, leak, hang or read out of
 * bounds; bad input is an error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/array.h"
#include "qlink_zarr/store.h"
#include "refs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ql_ref_store_registry *registry;
static struct ql_object_store mem;

static void setup(void) {
  struct ql_error err = {0};
  struct ql_object_store m = {0};
  if (ql_ref_store_registry_new(&registry, &err) != QL_OK || ql_memory_store_new(&m, &err) != QL_OK ||
      ql_ref_store_registry_register(registry, "memory://", &m, &err) != QL_OK) {
    abort();
  }
  const struct ql_object_store_registry *view = ql_ref_store_registry_view(registry);
  if (view->get_store(view, "memory://", &mem, &err) != QL_OK) abort();
  uint8_t bytes[64];
  for (int i = 0; i < 64; i++) bytes[i] = (uint8_t)(i * 37);
  if (ql_memory_store_put(&mem, "d/f.bin", bytes, sizeof(bytes), &err) != QL_OK) abort();
}

static void read_every_key(const struct zr_store *st) {
  struct ql_error err = {0};
  char **keys = NULL;
  int64_t n = 0;
  if (zr_store_list(st, &keys, &n, &err) != QL_OK) {
    ql_error_release(&err);
    return;
  }
  struct zr_readbuf buf = {NULL, 0};
  for (int64_t i = 0; i < n; i++) {
    struct ql_bytes b;
    if (zr_store_get(st, keys[i], &b, &err) == QL_OK && b.release) b.release(&b);
    zr_store_read(st, keys[i], &buf, 16, &b, &err);
    if (zr_store_read_range(st, keys[i], 1, 3, NULL, &b, &err) == QL_OK && b.release) b.release(&b);
    zr_store_read_range(st, keys[i], 2, 5, &buf, &b, &err);
    int64_t sz = 0;
    zr_store_size(st, keys[i], &sz, &err);
  }
  ql_error_release(&err);
  zr_readbuf_free(&buf);
  zr_store_list_free(keys, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!registry) setup();
  struct ql_error err = {0};
  if (size > 0 && data[0] % 4 == 0) {
    struct zr_refs refs;
    if (zr_refs_parse((const char *)data, size, "https://h:8443/a/r.json", &refs, &err) == QL_OK) zr_refs_free(&refs);
    ql_error_release(&err);
  }
  if (ql_memory_store_put(&mem, "d/r.json", data, (int64_t)size, &err) != QL_OK) abort();
  struct zr_store st;
  if (zr_store_open(ql_ref_store_registry_view(registry), "memory:///d/r.json", &st, &err) == QL_OK) {
    read_every_key(&st);
    struct zr_group g;
    zr_group_load(&st, &g, &err);
    zr_group_free(&g);
    zr_store_close(&st);
  }
  ql_error_release(&err);
  return 0;
}
