/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: the numcodecs filters of Zarr v2 arrays (`.zarray` "filters").
 *
 * A v2 chunk is encoded as: the array's elements (in their dtype and
 * order), each filter's encode in list order, then the compressor; decoding
 * runs the compressor, then each filter's decode in reverse list order,
 * and the result is the chunk's elements. Supported, with numcodecs 0.16's
 * decode semantics (numcodecs/quantize.py, bitround.py, delta.py,
 * fixedscaleoffset.py, shuffle.py, astype.py):
 *
 *   quantize {digits, dtype, astype}   elements of astype cast to dtype
 *                                      (lossy on encode, a cast on decode)
 *   bitround {keepbits}                identity (lossy on encode only)
 *   delta {dtype, astype}              cumulative sum of astype elements,
 *                                      accumulated in dtype (integers wrap)
 *   fixedscaleoffset {offset, scale, dtype, astype}
 *                                      astype elements / scale + offset in
 *                                      float64, cast to dtype
 *   shuffle {elementsize}              byte un-transposition by elementsize
 *   astype {encode_dtype, decode_dtype} elements cast from encode_dtype
 *   packbits                           bools from bits (a padding-count
 *                                      byte, then 8 bools a byte, MSB first)
 *
 * Zarr v3 (zarr-python 3's "numcodecs.<id>" codecs) lists them as array ->
 * array codecs before the bytes codec, shuffle as bytes -> bytes. There
 * zarr-python views the bytes codec's output in the filter's own dtype, so
 * decoding sees the same bytes as in v2 and codecs.c calls the same
 * functions, on the bytes, after the bytes -> bytes stages.
 *
 * Filter dtypes are integer (1-8 bytes) or float32/float64, either byte
 * order, written as NumPy takes them ("<f4", "f4", "float32"; no byte
 * order means little-endian, the hosts' native order). Casts follow NumPy's astype: float to float rounds to nearest,
 * integer to float rounds to nearest, float to integer truncates toward
 * zero (a NaN or out-of-range value is a QL_EDATA error rather than
 * NumPy's unspecified result), integer to integer wraps.
 *
 * Thread-safety: parsing and decoding touch only their arguments.
 */
#ifndef QLINK_ZARR_NUMCODECS_FILTERS_H
#define QLINK_ZARR_NUMCODECS_FILTERS_H

#include <jansson.h>
#include <stdint.h>

#include "qlink_zarr/codecs.h"

/* 1 when `id` (a v2 filter's "id") is one of the filters above. */
int zr_filter_known(const char *id);
/* 1 for a ZR_CODEC_F_* stage that is an array -> array codec in Zarr v3
 * (all but shuffle), 0 for any other codec id. */
int zr_filter_is_array_codec(int32_t codec);
/* The dtype a filter decodes to (packbits: bool), or NULL for those that
 * keep the bytes' type (bitround, shuffle). Points into `c`. */
const struct zr_dtype *zr_filter_decoded_dtype(const struct zr_codec *c);
/* The numcodecs id of a ZR_CODEC_F_* stage ("delta"), or "?" for any other
 * codec id (static strings). */
const char *zr_filter_name(int32_t codec);

/* Parse one v2 filter object ({"id": ..., parameters}) into `c` (its id
 * becomes one of the ZR_CODEC_F_* bytes->bytes stages). QL_ENOTSUP naming
 * the filter for an unknown id or an unsupported dtype; QL_EDATA naming the
 * parameter when one is missing or malformed. */
int zr_filter_parse(const json_t *filter, struct zr_codec *c, struct ql_error *error);

/* Decode `n` bytes `in` through filter `c` into a new buffer (*out, *out_n;
 * the caller frees it), or set *out = NULL when the output is `in` itself
 * (bitround, a cast to the same type). QL_EDATA when `n` is not a whole
 * number of elements or a value cannot be cast; QL_ENOMEM. The message names
 * the filter; the caller prefixes store, array and chunk. */
int zr_filter_decode(const struct zr_codec *c, const uint8_t *in, int64_t n, uint8_t **out, int64_t *out_n,
                     struct ql_error *error);

#endif /* QLINK_ZARR_NUMCODECS_FILTERS_H */
