/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: the Zarr store as a dataset's chunk source (model.h): boxes
 * read chunk by chunk (chunk_read.c), sharded arrays through partial shard
 * reads (shard_read.c), small arrays' chunks cached; zr_dataset_open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "qlink_zarr/model.h"
#include "qlink_zarr/ndcopy.h"
#include "shard_read.h"

/* zr_read_chunk through the array's cache (NULL or not caching: straight
 * to the store). A chunk is copied in once decoded; two scans decoding the
 * same chunk at once both read it, and the first copy stays. Caching is an
 * optimisation: without memory for the copy the chunk is still read. */
static int read_chunk_cached(const struct zr_store *store, const struct zr_array *a, struct zr_chunk_cache *cache,
                             const int64_t *chunk, uint8_t *out, struct zr_heap *heap, struct zr_readbuf *stored,
                             int64_t *bytes_read, struct ql_error *error) {
  if (!cache || cache->n_chunks == 0) return zr_read_chunk(store, a, chunk, out, heap, stored, bytes_read, error);
  int64_t idx = 0;
  for (int32_t i = 0; i < a->ndim; i++) idx = idx * ((a->shape[i] + a->chunks[i] - 1) / a->chunks[i]) + chunk[i];
  if (zr_cache_get(cache, idx, out)) {
    *bytes_read = 0;
    return QL_OK;
  }
  QL_RETURN_NOT_OK(zr_read_chunk(store, a, chunk, out, heap, stored, bytes_read, error));
  zr_cache_put(cache, idx, out);
  return QL_OK;
}

int zr_read_box(const struct zr_store *store, const struct zr_array *a, struct zr_chunk_cache *cache,
                const int64_t *lo, const int64_t *count, uint8_t *out, struct zr_heap *heap,
                struct zr_scratch *scratch, int64_t *chunks, int64_t *bytes, struct ql_error *error) {
  const struct zr_codec *sharding = zr_shard_partial(a);
  if (sharding) {
    struct zr_scratch local = {NULL, 0, {NULL, 0}};
    int rc = zr_read_box_sharded(store, a, sharding, cache, lo, count, out, heap, scratch ? scratch : &local, chunks,
                                 bytes, error);
    zr_scratch_free(&local);
    return rc;
  }
  int32_t nd = a->ndim;
  int64_t c0[ZR_MAX_DIMS], c1[ZR_MAX_DIMS], c[ZR_MAX_DIMS];
  for (int32_t i = 0; i < nd; i++) {
    if (count[i] <= 0) return QL_OK;
    c0[i] = lo[i] / a->chunks[i];
    c1[i] = (lo[i] + count[i] - 1) / a->chunks[i];
    c[i] = c0[i];
  }
  int64_t chunk_n = zr_product(a->chunks, nd);
  if (chunk_n < 0) {
    /* zr_product is -1 when the chunk shape's product overflows int64 */
    return ql_error_set(error, QL_EDATA,
                        "zarr store %s: array '%s': chunk shape is too large (its element count overflows 64 bits)",
                        store->url, a->name);
  }
  if (chunk_n > ((int64_t)1 << 31) / (a->dtype.size ? a->dtype.size : 1)) {
    return ql_error_set(error, QL_EDATA,
                        "zarr store %s: array '%s': chunk of %lld elements (%lld bytes) is too large (limit 2 GiB)",
                        store->url, a->name, (long long)chunk_n, (long long)chunk_n * (a->dtype.size ? a->dtype.size : 1));
  }
  struct zr_scratch local = {NULL, 0, {NULL, 0}};
  if (!scratch) scratch = &local;
  int whole_chunk = 1; /* the box is one whole chunk: decode it in place */
  for (int32_t i = 0; i < nd; i++) {
    whole_chunk &= c0[i] == c1[i] && lo[i] == c0[i] * a->chunks[i] && count[i] == a->chunks[i];
  }
  if (whole_chunk) {
    int64_t got = 0;
    int rc = read_chunk_cached(store, a, cache, c, out, heap, &scratch->stored, &got, error);
    zr_scratch_free(&local);
    if (rc != QL_OK) return rc;
    (*chunks)++;
    *bytes += got;
    return QL_OK;
  }
  size_t need = (size_t)(chunk_n * a->dtype.size) + 1;
  if (scratch->cap < need) {
    free(scratch->data);
    scratch->data = malloc(need);
    scratch->cap = scratch->data ? need : 0;
    if (!scratch->data) {
      zr_scratch_free(&local);
      return ql_error_set(error, QL_ENOMEM, "out of memory reading array '%s'", a->name);
    }
  }
  uint8_t *buf = scratch->data;
  int rc = QL_OK;
  for (;;) {
    int64_t got = 0;
    rc = read_chunk_cached(store, a, cache, c, buf, heap, &scratch->stored, &got, error);
    if (rc != QL_OK) break;
    (*chunks)++;
    *bytes += got;
    int64_t dst_origin[ZR_MAX_DIMS], src_origin[ZR_MAX_DIMS], extent[ZR_MAX_DIMS];
    for (int32_t i = 0; i < nd; i++) {
      int64_t chunk_lo = c[i] * a->chunks[i];
      int64_t from = lo[i] > chunk_lo ? lo[i] : chunk_lo;
      int64_t to = lo[i] + count[i] < chunk_lo + a->chunks[i] ? lo[i] + count[i] : chunk_lo + a->chunks[i];
      dst_origin[i] = from - lo[i];
      src_origin[i] = from - chunk_lo;
      extent[i] = to - from;
    }
    zr_copy_box(out, count, dst_origin, buf, a->chunks, src_origin, extent, nd, a->dtype.size);
    int32_t ax = nd - 1;
    while (ax >= 0) {
      if (++c[ax] <= c1[ax]) break;
      c[ax] = c0[ax];
      ax--;
    }
    if (ax < 0) break;
  }
  zr_scratch_free(&local);
  return rc;
}


static void caches_free(struct zr_dataset *ds) {
  if (!ds->caches) return;
  for (int64_t k = 0; k < ds->group.n_arrays; k++) {
    struct zr_chunk_cache *c = &ds->caches[k];
    for (int64_t i = 0; i < c->n_chunks; i++) free(atomic_load_explicit(&c->chunks[i], memory_order_relaxed));
    free((void *)c->chunks);
  }
  free(ds->caches);
  ds->caches = NULL;
}

/* Choose the arrays whose chunks are cached (see ZR_CACHE_ARRAY_BYTES),
 * in group order until the dataset's budget is spent. */
static int caches_init(struct zr_dataset *ds, struct ql_error *error) {
  ds->caches = calloc((size_t)(ds->group.n_arrays ? ds->group.n_arrays : 1), sizeof(*ds->caches));
  if (!ds->caches) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int64_t budget = ZR_CACHE_DATASET_BYTES;
  for (int64_t k = 0; k < ds->group.n_arrays; k++) {
    const struct zr_array *a = &ds->group.arrays[k];
    if (a->dtype.type == ZR_VLEN || a->ndim == 0) continue;
    const int64_t *unit = zr_read_unit(a); /* a sharded array caches inner chunks */
    int64_t chunk = zr_product(unit, a->ndim);
    if (a->dtype.size <= 0 || chunk <= 0 || chunk > ZR_CACHE_ARRAY_BYTES / a->dtype.size) continue;
    int64_t chunk_bytes = chunk * a->dtype.size, most = ZR_CACHE_ARRAY_BYTES / chunk_bytes, n = 1;
    for (int32_t i = 0; i < a->ndim && n > 0; i++) {
      int64_t along = (a->shape[i] + unit[i] - 1) / unit[i];
      n = along == 0 ? 0 : n > most / along ? -1 : n * along; /* -1: too many chunks */
    }
    if (n <= 0 || n * chunk_bytes > budget) continue;
    ds->caches[k].chunks = calloc((size_t)n, sizeof(*ds->caches[k].chunks));
    if (!ds->caches[k].chunks) return ql_error_set(error, QL_ENOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) atomic_init(&ds->caches[k].chunks[i], NULL);
    ds->caches[k].n_chunks = n;
    ds->caches[k].chunk_bytes = chunk_bytes;
    budget -= n * chunk_bytes;
  }
  return QL_OK;
}



/* ------------------------------------------------- the chunk source */

static int store_read_box(const struct zr_dataset *ds, int64_t array, const int64_t *lo, const int64_t *count,
                          uint8_t *out, struct zr_heap *heap, struct zr_scratch *scratch, int64_t *chunks,
                          int64_t *bytes, struct ql_error *error) {
  struct zr_chunk_cache *cache = ds->caches ? &ds->caches[array] : NULL;
  return zr_read_box(&ds->store, &ds->group.arrays[array], cache, lo, count, out, heap, scratch, chunks, bytes,
                     error);
}

static void store_release(struct zr_dataset *ds) {
  caches_free(ds);
  zr_store_close(&ds->store);
}

/* Messages say "zarr store URL", EXPLAIN "store=URL". */
static int label_store(struct zr_dataset *ds, const char *url, struct ql_error *error) {
  size_t n = strlen(url) + 16;
  ds->label = malloc(n);
  ds->origin = malloc(n);
  if (!ds->label || !ds->origin) return ql_error_set(error, QL_ENOMEM, "out of memory");
  snprintf(ds->label, n, "zarr store %s", url);
  snprintf(ds->origin, n, "store=%s", url);
  return QL_OK;
}

int zr_dataset_open(const struct ql_object_store_registry *registry, const char *url, const char *renames,
                    int64_t min_block_rows, int32_t nan_fill, struct zr_dataset **out, struct ql_error *error) {
  *out = NULL;
  struct zr_dataset *ds = zr_dataset_alloc(min_block_rows);
  if (!ds) return ql_error_set(error, QL_ENOMEM, "out of memory");
  ds->nan_fill = nan_fill;
  ds->source.read_box = store_read_box;
  ds->source.release = store_release;
  int rc = label_store(ds, url, error);
  if (rc == QL_OK) rc = zr_store_open(registry, url, &ds->store, error);
  if (rc == QL_OK) rc = zr_group_load(&ds->store, &ds->group, error);
  if (rc == QL_OK) rc = zr_dataset_build(ds, renames, error);
  if (rc == QL_OK) rc = caches_init(ds, error);
  if (rc == QL_OK && ds->n_tables == 0 && ds->group.subgroups) {
    /* a DataTree's root: its datasets are the groups below */
    const char *first = ds->group.subgroups;
    size_t first_len = strcspn(first, ",");
    rc = ql_error_set(error, QL_ENOTFOUND,
                      "zarr store %s has no arrays of its own; it holds the groups %s (a DataTree?): point path at "
                      "one of them, e.g. %s/%.*s",
                      url, ds->group.subgroups, url, (int)first_len, first);
  } else if (rc == QL_OK && ds->n_tables == 0) {
    rc = ql_error_set(error, QL_ENOTFOUND,
                      "zarr store %s has no arrays with dimensions (xarray's _ARRAY_DIMENSIONS or v3 dimension_names)",
                      url);
  }
  if (rc != QL_OK) {
    zr_dataset_unref(ds);
    return rc;
  }
  *out = ds;
  return QL_OK;
}
