/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: the codec pipeline that turns a stored chunk into elements.
 *
 * Sources: Zarr v3 core specification, section "Codecs" (array -> array,
 * array -> bytes, bytes -> bytes; decoding applies them in reverse), the
 * "sharding_indexed", "transpose", "bytes", "crc32c", "blosc", "gzip", "zstd"
 * codec specifications; numcodecs 0.16 for the v2 compressors and the v3
 * "numcodecs.<id>" codecs zarr-python 3 writes (zarr.codecs.numcodecs):
 * "zlib", "gzip", "zstd", "blosc", "lz4" (a 4-byte little-endian size
 * header), "bz2" (bz2.decompress: one or more bzip2 streams), "lzma"
 * (lzma.decompress with format 1 = xz or 2 = lzma-alone; raw streams need
 * a filter chain and are refused), the checksums "crc32", "crc32c",
 * "adler32" (a 4-byte little-endian checksum at the "location", start or
 * end), "fletcher32" and "jenkins_lookup3" (HDF5's checksums, 4 bytes at
 * the end), and the filters numcodecs_filters.h decodes.
 *
 * Thread-safety: decoding touches only its arguments (blosc through its
 * context API), so chunks may be decoded from several threads at once.
 */
#ifndef QLINK_ZARR_CODECS_H
#define QLINK_ZARR_CODECS_H

#include <jansson.h>
#include <stdint.h>

#include "qlink/error.h"
#include "qlink_zarr/dtype.h"

#define ZR_MAX_DIMS 32

enum zr_codec_id {
  ZR_CODEC_BYTES = 1,     /* array -> bytes: element byte order */
  ZR_CODEC_TRANSPOSE = 2, /* array -> array: axis permutation (v2 order "F" too) */
  ZR_CODEC_SHARDING = 3,  /* array -> bytes: sharding_indexed */
  ZR_CODEC_BLOSC = 4,     /* bytes -> bytes */
  ZR_CODEC_ZSTD = 5,
  ZR_CODEC_ZLIB = 6,
  ZR_CODEC_GZIP = 7,
  ZR_CODEC_LZ4 = 8,
  ZR_CODEC_CRC32C = 9,
  ZR_CODEC_VLEN_UTF8 = 10, /* array -> bytes: numcodecs' VLenUTF8 (count, then length-prefixed items) */
  /* v2 numcodecs filters, bytes -> bytes stages between the bytes codec
   * and the compressor (numcodecs_filters.h) */
  ZR_CODEC_F_QUANTIZE = 11,
  ZR_CODEC_F_BITROUND = 12,
  ZR_CODEC_F_DELTA = 13,
  ZR_CODEC_F_FIXEDSCALEOFFSET = 14,
  ZR_CODEC_F_SHUFFLE = 15,
  ZR_CODEC_F_ASTYPE = 16,
  ZR_CODEC_BZ2 = 17,         /* bytes -> bytes, numcodecs "bz2" */
  ZR_CODEC_LZMA = 18,        /* bytes -> bytes, numcodecs "lzma" (xz or lzma-alone) */
  ZR_CODEC_CRC32 = 19,       /* bytes -> bytes checksums, numcodecs */
  ZR_CODEC_ADLER32 = 20,
  ZR_CODEC_FLETCHER32 = 21,
  ZR_CODEC_JENKINS = 22,     /* numcodecs "jenkins_lookup3" */
  ZR_CODEC_F_PACKBITS = 23   /* numcodecs filter: bools, 8 per byte */
};

/* Bytes of variable-length strings a decoded chunk or block refers to
 * (ZR_VLEN elements hold offsets into it). Owned by whoever holds the
 * elements; grows only. */
struct zr_heap {
  uint8_t *data;
  int64_t len, cap;
};
void zr_heap_free(struct zr_heap *heap);

struct zr_pipeline;

struct zr_codec {
  int32_t id;         /* enum zr_codec_id */
  int32_t big_endian; /* BYTES: 1 for "big" */
  int32_t n_order;    /* TRANSPOSE: rank; order[i] = source axis of encoded axis i */
  int32_t order[ZR_MAX_DIMS];
  /* SHARDING */
  int32_t index_at_end;
  int64_t inner_chunks[ZR_MAX_DIMS];
  struct zr_pipeline *inner; /* codecs of each inner chunk */
  struct zr_pipeline *index; /* codecs of the shard index */
  /* ZR_CODEC_F_*: decoded (dtype) and encoded (astype) element types,
   * fixedscaleoffset's scale and offset, shuffle's element size */
  struct zr_dtype f_dtype, f_astype;
  double f_scale, f_offset;
  int64_t f_elementsize;
  /* checksums: where the 4 bytes sit (numcodecs' "location"), and
   * jenkins_lookup3's "initval" */
  int32_t sum_at_start;
  uint32_t sum_initval;
  /* LZMA: numcodecs' "format" (1 xz, 2 lzma-alone) */
  int32_t lzma_format;
};

/* Codecs in encoding order, as metadata lists them. */
struct zr_pipeline {
  int32_t n;
  struct zr_codec *codecs;
};

/* Parse a v3 `codecs` list for an array of rank `ndim`. numcodecs filters
 * ("numcodecs.delta" ...) are array -> array codecs there and decode with
 * the v2 filters' implementation: zarr-python hands them the bytes codec's
 * output, which they reinterpret in their own dtype, so on decoding they
 * see the same bytes as in v2 (numcodecs_filters.h). They cannot be mixed
 * with transpose or stand before sharding_indexed (QL_ENOTSUP). */
int zr_pipeline_parse_v3(const json_t *codecs, int32_t ndim, struct zr_pipeline *out, struct ql_error *error);
/* Build the pipeline of a v2 array: [transpose if order F] bytes(endian)
 * [filters, in list order] [compressor]. `filters` is null, empty, the
 * vlen-utf8 filter of object arrays, or numcodecs filters that
 * numcodecs_filters.h decodes (QL_ENOTSUP naming any other). */
int zr_pipeline_from_v2(const json_t *compressor, const json_t *filters, int32_t ndim, int32_t order_f,
                        int32_t big_endian, struct zr_pipeline *out, struct ql_error *error);
/* QL_OK when the pipeline and the element type agree on variable-length
 * strings (ZR_VLEN exactly when the array->bytes codec is vlen-utf8), and
 * the first v3 numcodecs filter that names a decoded dtype decodes to the
 * array's type and width (zarr-python would cast its values; QL_ENOTSUP). */
int zr_pipeline_check_dtype(const struct zr_pipeline *p, const struct zr_dtype *dtype, struct ql_error *error);
void zr_pipeline_free(struct zr_pipeline *p);
/* "blosc(lz4)+bytes" style summary for messages and EXPLAIN; into buf. */
const char *zr_pipeline_describe(const struct zr_pipeline *p, char *buf, size_t cap);

/* Decode one stored chunk (`in`, `in_size` bytes) of shape `shape` (rank
 * `ndim`) into `out`: prod(shape) elements of `dtype`, native byte order,
 * C order. `fill` (dtype->size bytes) fills inner chunks a shard does not
 * store. ZR_VLEN arrays append their string bytes to `heap` (required for
 * them, ignored otherwise). Errors: QL_EDATA for a corrupt or truncated chunk (sizes,
 * checksums, decompressor errors), QL_ENOTSUP for a codec combination that
 * cannot apply. The message names the codec and the problem; the caller
 * prefixes the store, array and chunk. */
int zr_chunk_decode(const struct zr_pipeline *p, const struct zr_dtype *dtype, int32_t ndim, const int64_t *shape,
                    const uint8_t *fill, const uint8_t *in, int64_t in_size, uint8_t *out, struct zr_heap *heap,
                    struct ql_error *error);

/* Shards of sharding_indexed codec `c` (shard extents `shape`, rank
 * `ndim`): `grid` receives the inner chunks per shard along each axis,
 * and grid[ndim] = 2 (the index's last axis: offset, nbytes); *n_inner
 * their product; *index_bytes the stored index's size (16 bytes per inner
 * chunk, 4 more per crc32c index codec). QL_EDATA when an extent is no
 * multiple of the inner chunk's. */
int zr_shard_grid(const struct zr_codec *c, int32_t ndim, const int64_t *shape, int64_t *grid, int64_t *n_inner,
                  int64_t *index_bytes, struct ql_error *error);
/* Decode a stored shard index (`in`, index_bytes bytes, checksum
 * verified) into `index`: 2 * n_inner uint64 (offset, nbytes of each inner
 * chunk, C order over grid; both UINT64_MAX: not stored). QL_EDATA naming
 * "sharding_indexed index" and the problem (a checksum mismatch). */
int zr_shard_index_decode(const struct zr_codec *c, int32_t ndim, const int64_t *grid, const uint8_t *in,
                          int64_t index_bytes, uint64_t *index, struct ql_error *error);

/* CRC-32C (Castagnoli), as the crc32c codec stores it. */
uint32_t zr_crc32c(const uint8_t *data, int64_t n);
/* HDF5's Fletcher-32 (numcodecs' fletcher32 codec). */
uint32_t zr_fletcher32(const uint8_t *data, int64_t n);
/* Bob Jenkins' lookup3 hashlittle with seed `initval` (numcodecs'
 * jenkins_lookup3 codec, HDF5's H5_checksum_lookup3). */
uint32_t zr_jenkins_lookup3(const uint8_t *data, int64_t n, uint32_t initval);

#endif /* QLINK_ZARR_CODECS_H */
