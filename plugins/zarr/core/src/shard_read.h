/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: reading part of a sharded Zarr v3 array.
 *
 * A shard (sharding_indexed, one stored object) holds a grid of inner
 * chunks and an index of (offset, nbytes) per inner chunk at its end or
 * start. A box that needs only some of a shard's inner chunks reads the
 * index (one ranged read; at the end, after a `head` for the shard's size)
 * and then only those inner chunks, byte ranges that touch or overlap
 * merged into one read. A shard whose every inner chunk is needed is read
 * whole, in one request. Index entries of all ones (and a shard never
 * written) read as the fill value.
 *
 * Thread-safety: as zr_read_box (model.h).
 */
#ifndef QLINK_ZARR_SHARD_READ_H
#define QLINK_ZARR_SHARD_READ_H

#include "qlink_zarr/model.h"

/* The sharding codec when array `a`'s shards can be read in part: its
 * codecs are sharding_indexed alone (no array -> array codec before it, no
 * bytes -> bytes codec after it, which would need the whole shard). NULL
 * otherwise. */
const struct zr_codec *zr_shard_partial(const struct zr_array *a);

/* The extents of what one read of `a` decodes: the inner chunk of a
 * partially readable sharded array, else a->chunks. Its chunk cache is
 * over this grid. */
const int64_t *zr_read_unit(const struct zr_array *a);

/* zr_read_box for an array with zr_shard_partial(a) == sc: same
 * arguments, results and errors (naming store, array and shard). *chunks
 * counts inner chunks; *bytes the index and inner-chunk bytes fetched. */
int zr_read_box_sharded(const struct zr_store *store, const struct zr_array *a, const struct zr_codec *sc,
                        struct zr_chunk_cache *cache, const int64_t *lo, const int64_t *count, uint8_t *out,
                        struct zr_heap *heap, struct zr_scratch *scratch, int64_t *chunks, int64_t *bytes,
                        struct ql_error *error);

#endif /* QLINK_ZARR_SHARD_READ_H */
