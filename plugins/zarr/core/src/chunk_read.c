/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: one chunk read through the host's object store and decoded
 * by the codec pipeline (a chunk never written is the fill value), and the
 * chunk cache's two operations (model.h). Below both store_source.c and
 * shard_read.c, which read boxes from chunks. */
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "qlink_zarr/model.h"
#include "qlink_zarr/ndcopy.h"

int zr_read_chunk(const struct zr_store *store, const struct zr_array *a, const int64_t *chunk, uint8_t *out,
                  struct zr_heap *heap, struct zr_readbuf *stored, int64_t *bytes_read, struct ql_error *error) {
  char key[2048];
  *bytes_read = 0;
  if (zr_chunk_key(a, chunk, key, sizeof(key)) != QL_OK) {
    return ql_error_set(error, QL_EOVERFLOW, "zarr store %s: array '%s': chunk key too long", store->url, a->name);
  }
  int64_t n = zr_product(a->chunks, a->ndim);
  struct ql_bytes bytes;
  memset(&bytes, 0, sizeof(bytes));
  /* Stored chunks are rarely larger than decoded ones (incompressible data
   * grows by a few header bytes): that size, plus slack, reads most chunks
   * in one call. */
  int64_t hint = n > 0 && a->dtype.size > 0 && n <= INT64_MAX / 2 / a->dtype.size ? n * a->dtype.size : 0;
  int rc = zr_store_read(store, key, stored, hint + hint / 64 + 4096, &bytes, error);
  if (rc == QL_ENOTFOUND) {
    /* never written: the array's fill value */
    ql_error_release(error);
    zr_fill_elements(out, n, a->fill, a->dtype.size);
    return QL_OK;
  }
  if (rc != QL_OK) return ql_error_prefix(error, "array '%s'", a->name);
  *bytes_read = bytes.size;
  rc = zr_chunk_decode(&a->codecs, &a->dtype, a->ndim, a->chunks, a->fill, bytes.data, bytes.size, out, heap, error);
  if (bytes.release) bytes.release(&bytes);
  if (rc != QL_OK) return ql_error_prefix(error, "zarr store %s: array '%s' chunk '%s'", store->url, a->name, key);
  return QL_OK;
}

int zr_cache_get(struct zr_chunk_cache *cache, int64_t idx, uint8_t *out) {
  uint8_t *hit = atomic_load_explicit(&cache->chunks[idx], memory_order_acquire);
  if (hit) memcpy(out, hit, (size_t)cache->chunk_bytes);
  return hit != NULL;
}

void zr_cache_put(struct zr_chunk_cache *cache, int64_t idx, const uint8_t *data) {
  uint8_t *copy = malloc((size_t)cache->chunk_bytes);
  if (!copy) return;
  memcpy(copy, data, (size_t)cache->chunk_bytes);
  uint8_t *none = NULL;
  if (!atomic_compare_exchange_strong_explicit(&cache->chunks[idx], &none, copy, memory_order_acq_rel,
                                               memory_order_acquire)) {
    free(copy);
  }
}
