/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: v3 array metadata (zarr.json). See array.h. */
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "qlink_zarr/array.h"


static int parse_key_encoding(const json_t *enc, struct zr_array *out, struct ql_error *error) {
  const char *name = json_string_value(json_object_get(enc, "name"));
  const char *sep = json_string_value(json_object_get(json_object_get(enc, "configuration"), "separator"));
  if (!name) return ql_error_set(error, QL_EDATA, "chunk_key_encoding without a name");
  if (strcmp(name, "default") == 0) {
    out->key_c_prefix = 1;
    out->key_sep = '/';
  } else if (strcmp(name, "v2") == 0) {
    out->key_sep = '.';
  } else {
    return ql_error_set(error, QL_ENOTSUP, "unsupported chunk_key_encoding '%s'", name);
  }
  if (sep) {
    if (strcmp(sep, "/") != 0 && strcmp(sep, ".") != 0) {
      return ql_error_set(error, QL_EDATA, "chunk key separator '%s' is not '.' or '/'", sep);
    }
    out->key_sep = sep[0];
  }
  return QL_OK;
}

/* The bytes codec decides the stored byte order of a v3 array. */
static void apply_endianness(struct zr_array *out) {
  for (int32_t i = 0; i < out->codecs.n; i++) {
    if (out->codecs.codecs[i].id == ZR_CODEC_BYTES) out->dtype.big_endian = out->codecs.codecs[i].big_endian;
  }
}

int zr_array_parse_v3(const char *name, const json_t *meta, struct zr_array *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  out->zarr_format = 3;
  out->name = strdup(name);
  json_t *attrs = json_object_get(meta, "attributes");
  out->attrs = json_is_object(attrs) ? json_incref(attrs) : json_object();
  if (!out->name || !out->attrs) return ql_error_set(error, QL_ENOMEM, "out of memory");
  if (!json_is_object(meta)) return ql_error_set(error, QL_EDATA, "zarr.json is not a JSON object");
  json_t *fmt = json_object_get(meta, "zarr_format");
  if (!json_is_integer(fmt) || json_integer_value(fmt) != 3) {
    return ql_error_set(error, QL_EDATA, "zarr.json zarr_format is not 3");
  }
  json_t *transformers = json_object_get(meta, "storage_transformers");
  if (json_is_array(transformers) && json_array_size(transformers) > 0) {
    return ql_error_set(error, QL_ENOTSUP, "storage_transformers are not supported");
  }
  json_t *shape = json_object_get(meta, "shape");
  if (!json_is_array(shape) || json_array_size(shape) > ZR_MAX_DIMS) {
    return ql_error_set(error, QL_EDATA, "shape must be a list of at most %d integers", ZR_MAX_DIMS);
  }
  out->ndim = (int32_t)json_array_size(shape);
  QL_RETURN_NOT_OK(zr_parse_extents(shape, "shape", out->ndim, 0, out->shape, error));
  json_t *grid = json_object_get(meta, "chunk_grid");
  const char *grid_name = json_string_value(json_object_get(grid, "name"));
  if (!grid_name || strcmp(grid_name, "regular") != 0) {
    return ql_error_set(error, QL_ENOTSUP, "unsupported chunk_grid '%s' (only regular)", grid_name ? grid_name : "?");
  }
  QL_RETURN_NOT_OK(zr_parse_extents(json_object_get(json_object_get(grid, "configuration"), "chunk_shape"),
                                    "chunk_shape", out->ndim, 1, out->chunks, error));
  QL_RETURN_NOT_OK(zr_dtype_parse_v3(json_object_get(meta, "data_type"), &out->dtype, error));
  QL_RETURN_NOT_OK(parse_key_encoding(json_object_get(meta, "chunk_key_encoding"), out, error));
  QL_RETURN_NOT_OK(zr_pipeline_parse_v3(json_object_get(meta, "codecs"), out->ndim, &out->codecs, error));
  QL_RETURN_NOT_OK(zr_pipeline_check_dtype(&out->codecs, &out->dtype, error));
  apply_endianness(out);
  out->fill = calloc(1, (size_t)out->dtype.size);
  if (!out->fill) return ql_error_set(error, QL_ENOMEM, "out of memory");
  out->fill_json = json_object_get(meta, "fill_value");
  if (!out->fill_json) return ql_error_set(error, QL_EDATA, "zarr.json has no fill_value");
  json_incref(out->fill_json);
  QL_RETURN_NOT_OK(zr_fill_parse(out->fill_json, &out->dtype, 3, out->fill, &out->fill_is_null, error));
  json_t *names = json_object_get(meta, "dimension_names");
  if (!names || json_is_null(names)) names = json_object_get(out->attrs, "_ARRAY_DIMENSIONS");
  return zr_parse_dim_names(names, out->ndim, out->dims, error);
}
