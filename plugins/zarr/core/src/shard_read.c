/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: partial reads of sharded arrays. See shard_read.h. */
#include "shard_read.h"

#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "qlink_zarr/ndcopy.h"

const struct zr_codec *zr_shard_partial(const struct zr_array *a) {
  if (a->codecs.n != 1 || a->codecs.codecs[0].id != ZR_CODEC_SHARDING) return NULL;
  return &a->codecs.codecs[0];
}

const int64_t *zr_read_unit(const struct zr_array *a) {
  const struct zr_codec *sc = zr_shard_partial(a);
  return sc ? sc->inner_chunks : a->chunks;
}

/* One call's state: the box, the shard geometry, the buffers. */
struct box_read {
  const struct zr_store *store;
  const struct zr_array *a;
  const struct zr_codec *sc;
  struct zr_chunk_cache *cache;
  const int64_t *lo, *count;
  uint8_t *out;
  struct zr_heap *heap;
  struct zr_scratch *scratch;
  int64_t *chunks, *bytes;
  int64_t grid[ZR_MAX_DIMS + 1]; /* inner chunks per shard along each axis (and 2) */
  int64_t n_inner, index_bytes;
  int64_t along[ZR_MAX_DIMS]; /* inner chunks along each axis of the whole array (the cache's grid) */
  int64_t inner_n;            /* elements of an inner chunk */
  uint8_t *dec;               /* one decoded inner chunk */
  uint64_t *index;            /* the current shard's index */
  char key[2048];             /* the current shard's key */
};

/* A stored inner chunk the box needs: its index entry and its position
 * (C order) inside the shard. */
struct inner_ref {
  uint64_t off, nb;
  int64_t k;
};

static int by_offset(const void *x, const void *y) {
  const struct inner_ref *a = x, *b = y;
  return (a->off > b->off) - (a->off < b->off);
}

/* Position p (within shard s) of inner chunk k. */
static void unravel(const struct box_read *r, int64_t k, int64_t *p) {
  for (int32_t i = r->a->ndim - 1; i >= 0; i--) {
    p[i] = k % r->grid[i];
    k /= r->grid[i];
  }
}

static int64_t cache_index(const struct box_read *r, const int64_t *s, const int64_t *p) {
  int64_t idx = 0;
  for (int32_t i = 0; i < r->a->ndim; i++) idx = idx * r->along[i] + s[i] * r->grid[i] + p[i];
  return idx;
}

static int caching(const struct box_read *r) { return r->cache && r->cache->n_chunks > 0; }

/* Copy the part of decoded inner chunk p of shard s that lies in the box
 * into the output, and into the cache. */
static void place(struct box_read *r, const int64_t *s, const int64_t *p, const uint8_t *dec) {
  const struct zr_array *a = r->a;
  const int64_t *inner = r->sc->inner_chunks;
  int64_t dst[ZR_MAX_DIMS], src[ZR_MAX_DIMS], ext[ZR_MAX_DIMS];
  for (int32_t i = 0; i < a->ndim; i++) {
    int64_t o = s[i] * a->chunks[i] + p[i] * inner[i];
    int64_t from = r->lo[i] > o ? r->lo[i] : o;
    int64_t to = r->lo[i] + r->count[i] < o + inner[i] ? r->lo[i] + r->count[i] : o + inner[i];
    dst[i] = from - r->lo[i];
    src[i] = from - o;
    ext[i] = to - from;
  }
  zr_copy_box(r->out, r->count, dst, dec, inner, src, ext, a->ndim, a->dtype.size);
  if (caching(r)) zr_cache_put(r->cache, cache_index(r, s, p), dec);
  (*r->chunks)++;
}

static int shard_error(struct box_read *r, struct ql_error *error) {
  return ql_error_prefix(error, "zarr store %s: array '%s' shard '%s'", r->store->url, r->a->name, r->key);
}

/* Read the whole shard s (every inner chunk it holds is needed): one
 * request, decoded as a chunk, then copied into the box. */
static int read_whole_shard(struct box_read *r, const int64_t *s, const int64_t *l0, const int64_t *l1,
                            uint8_t **shard_buf, struct ql_error *error) {
  const struct zr_array *a = r->a;
  int direct = !caching(r);
  for (int32_t i = 0; i < a->ndim; i++) direct &= r->lo[i] == s[i] * a->chunks[i] && r->count[i] == a->chunks[i];
  uint8_t *target = r->out;
  if (!direct) {
    if (!*shard_buf) *shard_buf = malloc((size_t)(zr_product(a->chunks, a->ndim) * a->dtype.size) + 1);
    if (!*shard_buf) return ql_error_set(error, QL_ENOMEM, "out of memory reading array '%s'", a->name);
    target = *shard_buf;
  }
  int64_t got = 0;
  QL_RETURN_NOT_OK(zr_read_chunk(r->store, a, s, target, r->heap, &r->scratch->stored, &got, error));
  *r->bytes += got;
  int64_t n = 1;
  for (int32_t i = 0; i < a->ndim; i++) n *= l1[i] - l0[i] + 1;
  if (direct) {
    *r->chunks += n;
    return QL_OK;
  }
  /* each needed inner chunk out of the decoded shard */
  int64_t p[ZR_MAX_DIMS], zero[ZR_MAX_DIMS] = {0}, src[ZR_MAX_DIMS];
  memcpy(p, l0, sizeof(int64_t) * (size_t)a->ndim);
  for (int64_t k = 0; k < n; k++) {
    for (int32_t i = 0; i < a->ndim; i++) src[i] = p[i] * r->sc->inner_chunks[i];
    zr_copy_box(r->dec, r->sc->inner_chunks, zero, target, a->chunks, src, r->sc->inner_chunks, a->ndim,
                a->dtype.size);
    place(r, s, p, r->dec);
    for (int32_t ax = a->ndim - 1; ax >= 0; ax--) {
      if (++p[ax] <= l1[ax]) break;
      p[ax] = l0[ax];
    }
  }
  return QL_OK;
}

/* Read shard s's index into r->index. *absent: the shard was never
 * written (every inner chunk is fill). *shard_size: its size when known
 * (index at the end), else -1. */
static int read_index(struct box_read *r, int *absent, int64_t *shard_size, struct ql_error *error) {
  *absent = 0;
  *shard_size = -1;
  int64_t at = 0;
  int rc;
  if (r->sc->index_at_end) {
    rc = zr_store_size(r->store, r->key, shard_size, error);
    if (rc == QL_ENOTFOUND) {
      ql_error_release(error);
      *absent = 1;
      return QL_OK;
    }
    if (rc != QL_OK) return ql_error_prefix(error, "array '%s'", r->a->name);
    if (*shard_size < r->index_bytes) {
      return ql_error_set(error, QL_EDATA,
                          "zarr store %s: array '%s' shard '%s': sharding_indexed: shard of %lld bytes is shorter "
                          "than its index (%lld)",
                          r->store->url, r->a->name, r->key, (long long)*shard_size, (long long)r->index_bytes);
    }
    at = *shard_size - r->index_bytes;
  }
  struct ql_bytes b;
  rc = zr_store_read_range(r->store, r->key, at, r->index_bytes, &r->scratch->stored, &b, error);
  if (rc == QL_ENOTFOUND) {
    ql_error_release(error);
    *absent = 1;
    return QL_OK;
  }
  if (rc != QL_OK) return ql_error_prefix(error, "array '%s'", r->a->name);
  *r->bytes += b.size;
  if (b.size < r->index_bytes) {
    rc = ql_error_set(error, QL_EDATA,
                      "zarr store %s: array '%s' shard '%s': sharding_indexed: shard of %lld bytes is shorter than "
                      "its index (%lld)",
                      r->store->url, r->a->name, r->key, (long long)b.size, (long long)r->index_bytes);
  } else {
    rc = zr_shard_index_decode(r->sc, r->a->ndim, r->grid, b.data, r->index_bytes, r->index, error);
    if (rc != QL_OK) shard_error(r, error);
  }
  if (b.release) b.release(&b);
  return rc;
}

/* Read the byte range [start, end) of the shard holding refs[0..n) and
 * decode each of them. */
static int read_run(struct box_read *r, const int64_t *s, const struct inner_ref *refs, int64_t n, uint64_t start,
                    uint64_t end, struct ql_error *error) {
  const struct zr_array *a = r->a;
  struct ql_bytes b;
  int rc = zr_store_read_range(r->store, r->key, (int64_t)start, (int64_t)(end - start), &r->scratch->stored, &b,
                               error);
  if (rc == QL_ENOTFOUND) {
    return ql_error_set(error, QL_EDATA, "zarr store %s: array '%s' shard '%s' vanished while it was read",
                        r->store->url, a->name, r->key);
  }
  if (rc != QL_OK) return ql_error_prefix(error, "array '%s'", a->name);
  *r->bytes += b.size;
  int64_t p[ZR_MAX_DIMS];
  for (int64_t j = 0; j < n && rc == QL_OK; j++) {
    uint64_t from = refs[j].off - start;
    if (from + refs[j].nb > (uint64_t)b.size) {
      rc = ql_error_set(error, QL_EDATA,
                        "zarr store %s: array '%s' shard '%s': sharding_indexed: inner chunk %lld at %llu+%llu lies "
                        "past the end of the shard (%llu bytes)",
                        r->store->url, a->name, r->key, (long long)refs[j].k, (unsigned long long)refs[j].off,
                        (unsigned long long)refs[j].nb, (unsigned long long)(start + (uint64_t)b.size));
      break;
    }
    rc = zr_chunk_decode(r->sc->inner, &a->dtype, a->ndim, r->sc->inner_chunks, a->fill, b.data + from,
                         (int64_t)refs[j].nb, r->dec, r->heap, error);
    if (rc != QL_OK) {
      ql_error_prefix(error, "zarr store %s: array '%s' shard '%s' inner chunk %lld", r->store->url, a->name, r->key,
                      (long long)refs[j].k);
      break;
    }
    unravel(r, refs[j].k, p);
    place(r, s, p, r->dec);
  }
  if (b.release) b.release(&b);
  return rc;
}

/* The inner chunks `want` (positions k in shard s) through the index:
 * absent ones are fill, stored ones read in merged byte ranges. */
static int read_part(struct box_read *r, const int64_t *s, struct inner_ref *want, int64_t n_want,
                     struct ql_error *error) {
  const struct zr_array *a = r->a;
  int absent = 0;
  int64_t shard_size = -1;
  QL_RETURN_NOT_OK(read_index(r, &absent, &shard_size, error));
  int64_t p[ZR_MAX_DIMS], n_stored = 0;
  for (int64_t j = 0; j < n_want; j++) {
    uint64_t off = absent ? UINT64_MAX : r->index[2 * want[j].k], nb = absent ? UINT64_MAX : r->index[2 * want[j].k + 1];
    if (off == UINT64_MAX && nb == UINT64_MAX) {
      zr_fill_elements(r->dec, r->inner_n, a->fill, a->dtype.size);
      unravel(r, want[j].k, p);
      place(r, s, p, r->dec);
      continue;
    }
    if (off > UINT64_MAX - nb || (shard_size >= 0 && off + nb > (uint64_t)shard_size)) {
      return ql_error_set(error, QL_EDATA,
                          "zarr store %s: array '%s' shard '%s': sharding_indexed: inner chunk %lld at %llu+%llu lies "
                          "outside the shard (%lld bytes)",
                          r->store->url, a->name, r->key, (long long)want[j].k, (unsigned long long)off,
                          (unsigned long long)nb, (long long)shard_size);
    }
    want[n_stored].off = off;
    want[n_stored].nb = nb;
    want[n_stored].k = want[j].k;
    n_stored++;
  }
  qsort(want, (size_t)n_stored, sizeof(*want), by_offset);
  int64_t first = 0;
  for (int64_t j = 0; j < n_stored; j++) {
    uint64_t start = want[first].off, end = start;
    for (int64_t i = first; i <= j; i++) end = want[i].off + want[i].nb > end ? want[i].off + want[i].nb : end;
    /* the next inner chunk starts where this run ends (or inside it): one read */
    if (j + 1 < n_stored && want[j + 1].off <= end) continue;
    QL_RETURN_NOT_OK(read_run(r, s, want + first, j - first + 1, start, end, error));
    first = j + 1;
  }
  return QL_OK;
}

int zr_read_box_sharded(const struct zr_store *store, const struct zr_array *a, const struct zr_codec *sc,
                        struct zr_chunk_cache *cache, const int64_t *lo, const int64_t *count, uint8_t *out,
                        struct zr_heap *heap, struct zr_scratch *scratch, int64_t *chunks, int64_t *bytes,
                        struct ql_error *error) {
  int32_t nd = a->ndim;
  for (int32_t i = 0; i < nd; i++) {
    if (count[i] <= 0) return QL_OK;
  }
  struct box_read *r = calloc(1, sizeof(*r));
  if (!r) return ql_error_set(error, QL_ENOMEM, "out of memory reading array '%s'", a->name);
  *r = (struct box_read){.store = store, .a = a, .sc = sc, .cache = cache, .lo = lo, .count = count, .out = out,
                         .heap = heap, .scratch = scratch, .chunks = chunks, .bytes = bytes};
  int64_t s0[ZR_MAX_DIMS], s1[ZR_MAX_DIMS], s[ZR_MAX_DIMS];
  for (int32_t i = 0; i < nd; i++) {
    s0[i] = lo[i] / a->chunks[i];
    s1[i] = (lo[i] + count[i] - 1) / a->chunks[i];
    s[i] = s0[i];
    r->along[i] = (a->shape[i] + sc->inner_chunks[i] - 1) / sc->inner_chunks[i];
  }
  int rc = zr_shard_grid(sc, nd, a->chunks, r->grid, &r->n_inner, &r->index_bytes, error);
  if (rc != QL_OK) {
    zr_chunk_key(a, s0, r->key, sizeof(r->key));
    shard_error(r, error);
    free(r);
    return rc;
  }
  r->inner_n = zr_product(sc->inner_chunks, nd);
  if (r->inner_n < 0 || r->inner_n > ((int64_t)1 << 31) / (a->dtype.size ? a->dtype.size : 1)) {
    free(r);
    return ql_error_set(error, QL_EDATA, "zarr store %s: array '%s': inner chunk is too large (limit 2 GiB)",
                        store->url, a->name);
  }
  size_t need = (size_t)(r->inner_n * a->dtype.size) + 1;
  if (scratch->cap < need) {
    free(scratch->data);
    scratch->data = malloc(need);
    scratch->cap = scratch->data ? need : 0;
  }
  r->dec = scratch->data;
  r->index = malloc((size_t)(r->n_inner * 16) + 1);
  struct inner_ref *want = malloc(sizeof(*want) * (size_t)(r->n_inner ? r->n_inner : 1));
  if (!r->dec || !r->index || !want) rc = ql_error_set(error, QL_ENOMEM, "out of memory reading array '%s'", a->name);
  uint8_t *shard_buf = NULL;
  while (rc == QL_OK) {
    /* the inner chunks of shard s the box needs: positions l0..l1; the shard's within the array: 0..last */
    int64_t l0[ZR_MAX_DIMS], l1[ZR_MAX_DIMS], p[ZR_MAX_DIMS];
    int all = 1;
    for (int32_t i = 0; i < nd; i++) {
      int64_t base = s[i] * a->chunks[i], end = base + a->chunks[i];
      int64_t from = lo[i] > base ? lo[i] : base, to = lo[i] + count[i] < end ? lo[i] + count[i] : end;
      int64_t array_end = a->shape[i] < end ? a->shape[i] : end;
      l0[i] = (from - base) / sc->inner_chunks[i];
      l1[i] = (to - 1 - base) / sc->inner_chunks[i];
      all &= l0[i] == 0 && l1[i] == (array_end - 1 - base) / sc->inner_chunks[i];
      p[i] = l0[i];
    }
    zr_chunk_key(a, s, r->key, sizeof(r->key));
    int64_t n_want = 0, n_box = 0;
    for (;;) {
      int64_t k = 0;
      for (int32_t i = 0; i < nd; i++) k = k * r->grid[i] + p[i];
      n_box++;
      if (caching(r) && zr_cache_get(cache, cache_index(r, s, p), r->dec)) {
        place(r, s, p, r->dec);
      } else {
        want[n_want++].k = k;
      }
      int32_t ax = nd - 1;
      for (; ax >= 0; ax--) {
        if (++p[ax] <= l1[ax]) break;
        p[ax] = l0[ax];
      }
      if (ax < 0) break;
    }
    int64_t shard_n = zr_product(a->chunks, nd);
    int small = shard_n >= 0 && shard_n <= ((int64_t)1 << 31) / (a->dtype.size ? a->dtype.size : 1);
    if (n_want > 0 && all && n_want == n_box && small) {
      rc = read_whole_shard(r, s, l0, l1, &shard_buf, error);
    } else if (n_want > 0) {
      rc = read_part(r, s, want, n_want, error);
    }
    int32_t ax = nd - 1;
    for (; ax >= 0; ax--) {
      if (++s[ax] <= s1[ax]) break;
      s[ax] = s0[ax];
    }
    if (ax < 0) break;
  }
  free(shard_buf);
  free(want);
  free(r->index);
  free(r);
  return rc;
}
