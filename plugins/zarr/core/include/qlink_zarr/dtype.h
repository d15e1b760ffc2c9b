/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: the Zarr element types (v2 dtype strings, v3 data_type names).
 *
 * Sources: Zarr v2 storage specification ("dtype": NumPy typestr such as
 * "<f4", "|b1", "<M8[ns]", "<U10", "|S5"); Zarr v3 core specification and the
 * zarr-python 3 extension data types ("numpy.datetime64",
 * "numpy.timedelta64", "fixed_length_utf32", "null_terminated_bytes").
 */
#ifndef QLINK_ZARR_DTYPE_H
#define QLINK_ZARR_DTYPE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "qlink/error.h"

enum zr_type {
  ZR_BOOL = 1,
  ZR_INT = 2,       /* signed integer, size 1, 2, 4, 8 */
  ZR_UINT = 3,      /* unsigned integer, size 1, 2, 4, 8 */
  ZR_FLOAT = 4,     /* IEEE float, size 2, 4, 8 */
  ZR_DATETIME = 5,  /* numpy datetime64: int64 count of `unit_ns` since the epoch; INT64_MIN is NaT */
  ZR_TIMEDELTA = 6, /* numpy timedelta64: int64 count of `unit_ns`; INT64_MIN is NaT */
  ZR_BYTES = 7,     /* fixed-width bytes ("|S<n>"), trailing NULs stripped on read */
  ZR_UNICODE = 8,   /* fixed-width UTF-32 ("<U<n>"), `size` = 4 * n bytes */
  ZR_VLEN = 9       /* variable-length UTF-8 (v2 "|O" + vlen-utf8, v3 "string"): decoded
                       elements are {uint64 offset, uint64 length} into a zr_heap */
};

/* One element type. `size` is the element's byte width; `big_endian` is
 * the stored byte order (v2 dtype prefix; v3 sets it from the bytes codec). */
struct zr_dtype {
  int32_t type;       /* enum zr_type */
  int32_t size;       /* bytes per element */
  int32_t big_endian; /* 1: stored big-endian */
  int32_t swap_unit;  /* bytes swapped as one unit (1: none, 4 for UTF-32, else size) */
  int64_t unit_ns;    /* ZR_DATETIME / ZR_TIMEDELTA: nanoseconds per tick */
  char unit[4];       /* numpy unit as written: "ns", "s", "D" ... */
};

/* Parse a v2 dtype string. QL_ENOTSUP naming the dtype for structured,
 * object, complex or unsupported-unit types; QL_EDATA if malformed. */
int zr_dtype_parse_v2(const char *typestr, struct zr_dtype *out, struct ql_error *error);
/* Parse a v3 `data_type` (a name or {"name":..., "configuration":...}).
 * Byte order is little until the bytes codec says otherwise. */
int zr_dtype_parse_v3(const json_t *data_type, struct zr_dtype *out, struct ql_error *error);
/* A short description for messages ("float32", "<U10"); static or in buf. */
const char *zr_dtype_name(const struct zr_dtype *dtype, char *buf, size_t cap);

/* 1 when elements are stored in the host's byte order (no swap needed). */
int zr_dtype_is_native(const struct zr_dtype *dtype);
/* Swap `n` elements in place from stored to native byte order (no-op when
 * already native). */
void zr_dtype_to_native(const struct zr_dtype *dtype, uint8_t *data, int64_t n);

/* IEEE half to single precision (exact). */
float zr_half_to_float(uint16_t h);

#endif /* QLINK_ZARR_DTYPE_H */
