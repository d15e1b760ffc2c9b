/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: v2 array metadata (.zarray + .zattrs). See array.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "qlink_zarr/array.h"

/* The largest extent along one dimension, and the largest element count of
 * an array or a chunk (2^48, some 2.8e14): row counts, chunk counts and
 * byte offsets computed from shapes then fit in int64 with room to spare. */
#define ZR_MAX_EXTENT ((int64_t)1 << 48)

/* Shape and chunks: lists of `ndim` non-negative (chunks: positive) ints,
 * each at most ZR_MAX_EXTENT and their product (the element count) too, so
 * row counts, chunk counts and offsets computed from them fit in int64. */
int zr_parse_extents(const json_t *list, const char *what, int32_t ndim, int positive, int64_t *out,
                     struct ql_error *error) {
  if (!json_is_array(list) || (int32_t)json_array_size(list) != ndim) {
    return ql_error_set(error, QL_EDATA, "%s must be a list of %d integers", what, (int)ndim);
  }
  int64_t elements = 1;
  for (int32_t i = 0; i < ndim; i++) {
    json_t *v = json_array_get(list, (size_t)i);
    if (!json_is_integer(v) || json_integer_value(v) < (positive ? 1 : 0)) {
      return ql_error_set(error, QL_EDATA, "%s[%d] is not a%s integer", what, (int)i,
                          positive ? " positive" : " non-negative");
    }
    out[i] = json_integer_value(v);
    if (out[i] > ZR_MAX_EXTENT) {
      return ql_error_set(error, QL_EDATA, "%s[%d] = %lld is too large (at most 2^48 = %lld)", what, (int)i,
                          (long long)out[i], (long long)ZR_MAX_EXTENT);
    }
    /* a zero extent makes the product 0: later extents cannot overflow it */
    if (out[i] > 0 && elements > ZR_MAX_EXTENT / out[i]) {
      return ql_error_set(error, QL_EDATA, "%s is too large: its %d extents multiply to more than 2^48 = %lld elements",
                          what, (int)ndim, (long long)ZR_MAX_EXTENT);
    }
    elements *= out[i];
  }
  return QL_OK;
}

/* Dimension names from a list of strings (xarray's _ARRAY_DIMENSIONS or
 * v3 dimension_names); leaves them NULL when absent. */
int zr_parse_dim_names(const json_t *list, int32_t ndim, char **out, struct ql_error *error) {
  if (!list || json_is_null(list)) return QL_OK;
  if (!json_is_array(list) || (int32_t)json_array_size(list) != ndim) {
    return ql_error_set(error, QL_EDATA, "dimension names must list %d names", (int)ndim);
  }
  for (int32_t i = 0; i < ndim; i++) {
    const char *s = json_string_value(json_array_get(list, (size_t)i));
    if (!s || !s[0]) {
      /* one unnamed dimension: xarray cannot open it either */
      for (int32_t k = 0; k < i; k++) {
        free(out[k]);
        out[k] = NULL;
      }
      return json_is_null(json_array_get(list, (size_t)i))
                 ? QL_OK
                 : ql_error_set(error, QL_EDATA, "dimension name %d is not a non-empty string", (int)i);
    }
    for (int32_t k = 0; k < i; k++) {
      /* One name for two axes would make the table's two dimension columns
       * the same column, read along one axis only (wrong values). */
      if (strcmp(out[k], s) == 0) {
        return ql_error_set(error, QL_EDATA,
                            "dimension name '%s' is given twice (axes %d and %d); each axis needs its own name "
                            "(xarray does not support repeated dimension names either: it warns on open and cannot "
                            "make a dataframe of the array)",
                            s, (int)k, (int)i);
      }
    }
    out[i] = strdup(s);
    if (!out[i]) return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  return QL_OK;
}

int zr_array_parse_v2(const char *name, const json_t *zarray, const json_t *zattrs, struct zr_array *out,
                      struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  out->zarr_format = 2;
  out->name = strdup(name);
  out->attrs = json_is_object(zattrs) ? json_incref((json_t *)zattrs) : json_object();
  if (!out->name || !out->attrs) return ql_error_set(error, QL_ENOMEM, "out of memory");
  if (!json_is_object(zarray)) return ql_error_set(error, QL_EDATA, ".zarray is not a JSON object");
  json_t *fmt = json_object_get(zarray, "zarr_format");
  if (!json_is_integer(fmt) || json_integer_value(fmt) != 2) {
    return ql_error_set(error, QL_EDATA, ".zarray zarr_format is not 2");
  }
  json_t *shape = json_object_get(zarray, "shape");
  if (!json_is_array(shape) || json_array_size(shape) > ZR_MAX_DIMS) {
    return ql_error_set(error, QL_EDATA, "shape must be a list of at most %d integers", ZR_MAX_DIMS);
  }
  out->ndim = (int32_t)json_array_size(shape);
  QL_RETURN_NOT_OK(zr_parse_extents(shape, "shape", out->ndim, 0, out->shape, error));
  QL_RETURN_NOT_OK(zr_parse_extents(json_object_get(zarray, "chunks"), "chunks", out->ndim, 1, out->chunks, error));
  const char *dtype = json_string_value(json_object_get(zarray, "dtype"));
  if (!dtype) {
    return ql_error_set(error, json_object_get(zarray, "dtype") ? QL_ENOTSUP : QL_EDATA,
                        "dtype must be a string (structured dtypes are not supported)");
  }
  QL_RETURN_NOT_OK(zr_dtype_parse_v2(dtype, &out->dtype, error));
  const char *order = json_string_value(json_object_get(zarray, "order"));
  if (order && strcmp(order, "C") != 0 && strcmp(order, "F") != 0) {
    return ql_error_set(error, QL_EDATA, "order '%s' is not C or F", order);
  }
  QL_RETURN_NOT_OK(zr_pipeline_from_v2(json_object_get(zarray, "compressor"), json_object_get(zarray, "filters"),
                                       out->ndim, order && order[0] == 'F', out->dtype.big_endian, &out->codecs,
                                       error));
  QL_RETURN_NOT_OK(zr_pipeline_check_dtype(&out->codecs, &out->dtype, error));
  const char *sep = json_string_value(json_object_get(zarray, "dimension_separator"));
  out->key_sep = sep && strcmp(sep, "/") == 0 ? '/' : '.';
  if (sep && strcmp(sep, "/") != 0 && strcmp(sep, ".") != 0) {
    return ql_error_set(error, QL_EDATA, "dimension_separator '%s' is not '.' or '/'", sep);
  }
  out->fill = calloc(1, (size_t)out->dtype.size);
  if (!out->fill) return ql_error_set(error, QL_ENOMEM, "out of memory");
  out->fill_json = json_object_get(zarray, "fill_value");
  if (out->fill_json) json_incref(out->fill_json);
  QL_RETURN_NOT_OK(zr_fill_parse(out->fill_json, &out->dtype, 2, out->fill, &out->fill_is_null, error));
  return zr_parse_dim_names(json_object_get(out->attrs, "_ARRAY_DIMENSIONS"), out->ndim, out->dims, error);
}

void zr_array_free(struct zr_array *a) {
  if (!a) return;
  free(a->name);
  zr_pipeline_free(&a->codecs);
  free(a->fill);
  if (a->fill_json) json_decref(a->fill_json);
  if (a->attrs) json_decref(a->attrs);
  for (int32_t i = 0; i < ZR_MAX_DIMS; i++) free(a->dims[i]);
  memset(a, 0, sizeof(*a));
}

int zr_chunk_key(const struct zr_array *a, const int64_t *chunk, char *buf, size_t cap) {
  size_t used = 0;
  int w = snprintf(buf, cap, "%s/%s", a->name, a->key_c_prefix ? "c" : "");
  if (w < 0 || (size_t)w >= cap) return QL_EOVERFLOW;
  used = (size_t)w;
  if (a->ndim == 0) {
    /* v2 and the v3 "v2" encoding name a scalar's only chunk "0" */
    if (!a->key_c_prefix) {
      w = snprintf(buf + used, cap - used, "0");
      if (w < 0 || (size_t)w >= cap - used) return QL_EOVERFLOW;
    }
    return QL_OK;
  }
  for (int32_t i = 0; i < a->ndim; i++) {
    if (i > 0 || a->key_c_prefix) {
      if (used + 1 >= cap) return QL_EOVERFLOW;
      buf[used++] = a->key_sep;
      buf[used] = '\0';
    }
    w = snprintf(buf + used, cap - used, "%lld", (long long)chunk[i]);
    if (w < 0 || (size_t)w >= cap - used) return QL_EOVERFLOW;
    used += (size_t)w;
  }
  /* a folded netCDF character dimension: its one chunk index is still in the stored key */
  for (int32_t i = 0; i < a->key_trailing_zeros; i++) {
    if (used + 2 >= cap) return QL_EOVERFLOW;
    buf[used++] = a->key_sep;
    buf[used++] = '0';
    buf[used] = '\0';
  }
  return QL_OK;
}
