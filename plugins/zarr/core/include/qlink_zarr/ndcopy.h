/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: copying boxes between C-order n-dimensional buffers. */
#ifndef QLINK_ZARR_NDCOPY_H
#define QLINK_ZARR_NDCOPY_H

#include <stdint.h>

/* Copy the box of extent `count` (rank `ndim`) from `src` (C order, shape
 * `src_shape`) at `src_origin` to `dst` (shape `dst_shape`) at `dst_origin`.
 * Elements are `elsize` bytes. The caller guarantees the box lies inside
 * both buffers. Rank 0 copies one element. */
void zr_copy_box(uint8_t *dst, const int64_t *dst_shape, const int64_t *dst_origin, const uint8_t *src,
                 const int64_t *src_shape, const int64_t *src_origin, const int64_t *count, int32_t ndim,
                 int64_t elsize);

/* Product of `n` extents; -1 if it overflows int64 or one is negative. */
int64_t zr_product(const int64_t *extents, int32_t n);

/* Fill `n` elements of `elsize` bytes with the element `value`. */
void zr_fill_elements(uint8_t *dst, int64_t n, const uint8_t *value, int64_t elsize);

#endif /* QLINK_ZARR_NDCOPY_H */
