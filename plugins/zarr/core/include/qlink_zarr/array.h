/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: one Zarr array's metadata (v2 .zarray + .zattrs, or v3
 * zarr.json), and the group of arrays a store holds.
 *
 * Sources: Zarr storage specification v2 (".zarray": shape, chunks, dtype,
 * compressor, fill_value, order, filters, dimension_separator; ".zattrs";
 * consolidated ".zmetadata" as zarr-python writes it) and v3 core
 * ("zarr.json": node_type, shape, data_type, chunk_grid, chunk_key_encoding,
 * fill_value, codecs, attributes, dimension_names; consolidated_metadata as
 * zarr-python 3 writes it inline in the root group's zarr.json). xarray
 * stores dimension names in the "_ARRAY_DIMENSIONS" attribute (v2) or
 * dimension_names (v3).
 */
#ifndef QLINK_ZARR_ARRAY_H
#define QLINK_ZARR_ARRAY_H

#include <jansson.h>
#include <stdint.h>

#include "qlink_zarr/codecs.h"
#include "qlink_zarr/dtype.h"
#include "qlink_zarr/store.h"

struct zr_array {
  char *name;          /* key of the array inside the group, e.g. "t2m" */
  int32_t zarr_format; /* 2 or 3 */
  int32_t ndim;
  int64_t shape[ZR_MAX_DIMS];
  int64_t chunks[ZR_MAX_DIMS]; /* extent of one stored object (a shard when sharded) */
  struct zr_dtype dtype;       /* byte order as stored (v3: from the bytes codec) */
  struct zr_pipeline codecs;
  uint8_t *fill;        /* dtype.size bytes, native order: what unwritten chunks read as */
  int32_t fill_is_null; /* v2 fill_value null (fill then holds zeros) */
  int32_t fill_is_missing; /* fixed-width strings: cells equal to fill are missing (SQL NULL) whether or
                              not CF decoding is on: a chunk source's own marker (qlink_ndarray's
                              null_cell), never set from metadata */
  char key_sep;         /* chunk key separator, '.' or '/' */
  int32_t key_c_prefix; /* v3 "default" chunk key encoding: "c" first */
  json_t *fill_json;    /* the metadata's fill_value (a reference), for CF decoding */
  json_t *attrs;        /* attributes (a reference; never NULL) */
  char *dims[ZR_MAX_DIMS]; /* dimension names; all NULL when the array has none */
  int32_t key_trailing_zeros; /* chunk indices 0 the stored keys carry past ndim: a netCDF character
                                 dimension folded into the dtype (group.c); zr_chunk_key appends them */
};

/* Parse v2 metadata. `zattrs` may be NULL. Messages name the problem; the
 * caller prefixes store and array. */
int zr_array_parse_v2(const char *name, const json_t *zarray, const json_t *zattrs, struct zr_array *out,
                      struct ql_error *error);
/* Parse a v3 array's zarr.json. */
int zr_array_parse_v3(const char *name, const json_t *meta, struct zr_array *out, struct ql_error *error);
void zr_array_free(struct zr_array *array);

/* Shared by both parsers: `ndim` extents (chunks: positive) from a JSON
 * list, and dimension names (left NULL when `list` is absent or null). */
int zr_parse_extents(const json_t *list, const char *what, int32_t ndim, int positive, int64_t *out,
                     struct ql_error *error);
int zr_parse_dim_names(const json_t *list, int32_t ndim, char **out, struct ql_error *error);

/* The store key of chunk `chunk` (grid coordinates, rank ndim), e.g.
 * "t2m/0.3.1" (v2) or "t2m/c/0/3/1" (v3). QL_EOVERFLOW if it does not fit. */
int zr_chunk_key(const struct zr_array *array, const int64_t *chunk, char *buf, size_t cap);

/* Parse a fill value (`json`, may be JSON null) for `dtype` into `out`
 * (dtype->size bytes, native order). `*is_null` is set for JSON null (out
 * then holds zeros). Accepts numbers, "NaN", "Infinity", "-Infinity",
 * "0x..." bit patterns for floats, booleans, "NaT", base64 (v2 bytes) or
 * plain strings. */
int zr_fill_parse(const json_t *json, const struct zr_dtype *dtype, int32_t zarr_format, uint8_t *out,
                  int32_t *is_null, struct ql_error *error);

/* 1 when `v` is a JSON string of the decimal digits of an integer above
 * INT64_MAX that fits uint64 (how zr_json_parse is to hand such literals,
 * which jansson cannot hold: a uint64 fill value such as netCDF's
 * 18446744073709551614); its value in *out. */
int zr_json_big_uint(const json_t *v, uint64_t *out);

/* Decode standard base64 (with or without padding) into a malloc'd buffer. */
int zr_base64_decode(const char *text, uint8_t **out, int64_t *n);

/* Every array of the group at the store's root. */
struct zr_group {
  int32_t zarr_format;
  int32_t consolidated; /* 1 if read from consolidated metadata */
  int64_t n_arrays;
  struct zr_array *arrays;
  json_t *attrs; /* the group's attributes (a reference; never NULL) */
  char *subgroups; /* child groups' names, ", "-joined (a DataTree's nodes; the first few, then "..."), or NULL */
  int32_t n_subgroups; /* child groups noted (those past the first few only counted) */
};

/* Read the group metadata: consolidated metadata where present, otherwise
 * the group document and a listing. Arrays without dimension names (not
 * part of an xarray Dataset) and arrays in sub-groups are left out.
 * Errors name the store and the array. */
int zr_group_load(const struct zr_store *store, struct zr_group *out, struct ql_error *error);
/* Same, from documents already in memory (used by the fuzz target):
 * `root` is the root zarr.json (v3) or .zmetadata (v2). */
int zr_group_from_consolidated(const char *what, const json_t *root, struct zr_group *out, struct ql_error *error);
void zr_group_free(struct zr_group *group);

#endif /* QLINK_ZARR_ARRAY_H */
