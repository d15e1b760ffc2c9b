/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: n-dimensional box copies. See ndcopy.h. */
#include "qlink_zarr/ndcopy.h"

#include <string.h>

#include "qlink_zarr/codecs.h"

int64_t zr_product(const int64_t *extents, int32_t n) {
  int64_t p = 1;
  for (int32_t i = 0; i < n; i++) {
    if (extents[i] < 0) return -1;
    if (extents[i] != 0 && p > INT64_MAX / extents[i]) return -1;
    p *= extents[i];
  }
  return p;
}

void zr_fill_elements(uint8_t *dst, int64_t n, const uint8_t *value, int64_t elsize) {
  int all_zero = 1;
  for (int64_t i = 0; i < elsize; i++) all_zero &= value[i] == 0;
  if (all_zero) {
    memset(dst, 0, (size_t)(n * elsize));
    return;
  }
  for (int64_t i = 0; i < n; i++) memcpy(dst + i * elsize, value, (size_t)elsize);
}

void zr_copy_box(uint8_t *dst, const int64_t *dst_shape, const int64_t *dst_origin, const uint8_t *src,
                 const int64_t *src_shape, const int64_t *src_origin, const int64_t *count, int32_t ndim,
                 int64_t elsize) {
  if (ndim == 0) {
    memcpy(dst, src, (size_t)elsize);
    return;
  }
  for (int32_t i = 0; i < ndim; i++) {
    if (count[i] <= 0) return;
  }
  int64_t dst_stride[ZR_MAX_DIMS], src_stride[ZR_MAX_DIMS];
  dst_stride[ndim - 1] = elsize;
  src_stride[ndim - 1] = elsize;
  for (int32_t i = ndim - 2; i >= 0; i--) {
    dst_stride[i] = dst_stride[i + 1] * dst_shape[i + 1];
    src_stride[i] = src_stride[i + 1] * src_shape[i + 1];
  }
  /* The innermost axis is one contiguous run; iterate the outer axes. */
  int64_t run = count[ndim - 1] * elsize;
  int64_t idx[ZR_MAX_DIMS] = {0};
  for (;;) {
    int64_t doff = 0, soff = 0;
    for (int32_t i = 0; i < ndim; i++) {
      doff += (dst_origin[i] + idx[i]) * dst_stride[i];
      soff += (src_origin[i] + idx[i]) * src_stride[i];
    }
    memcpy(dst + doff, src + soff, (size_t)run);
    int32_t ax = ndim - 2;
    while (ax >= 0) {
      if (++idx[ax] < count[ax]) break;
      idx[ax] = 0;
      ax--;
    }
    if (ax < 0) break;
  }
}
