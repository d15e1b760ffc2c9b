/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_ndarray: one registration (struct nd_registration), from the
 * caller's description (qlink_ndarray.h: struct nd_variable) to its last
 * reference; the registry (registry.c) publishes it under a handle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_internal.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/ndcopy.h"

static atomic_llong live; /* published registrations not yet released */

/* Arrow formats the API takes, as numpy typestrs. */
static const char *const arrow_formats[][2] = {
    {"b", "|b1"},        {"c", "|i1"},      {"C", "|u1"},       {"s", "<i2"},        {"S", "<u2"},
    {"i", "<i4"},        {"I", "<u4"},      {"l", "<i8"},       {"L", "<u8"},        {"e", "<f2"},
    {"f", "<f4"},        {"g", "<f8"},      {"tss:", "<M8[s]"}, {"tsm:", "<M8[ms]"}, {"tsu:", "<M8[us]"},
    {"tsn:", "<M8[ns]"}, {"tDs", "<m8[s]"}, {"tDm", "<m8[ms]"}, {"tDu", "<m8[us]"},  {"tDn", "<m8[ns]"}};

int nd_dtype_parse(const char *text, struct zr_dtype *out, struct ql_error *error) {
  if (!text || !text[0]) return ql_error_set(error, QL_EINVAL, "no dtype");
  for (size_t i = 0; i < sizeof(arrow_formats) / sizeof(arrow_formats[0]); i++) {
    if (strcmp(text, arrow_formats[i][0]) == 0) return zr_dtype_parse_v2(arrow_formats[i][1], out, error);
  }
  char native[64];
  if (strlen(text) >= sizeof(native)) return ql_error_set(error, QL_EINVAL, "dtype '%.40s...' is too long", text);
  strcpy(native, text);
  if (native[0] == '=') native[0] = '<'; /* qlink targets little-endian hosts */
  return zr_dtype_parse_v2(native, out, error);
}

static void var_free(struct nd_var *v) {
  free(v->name);
  for (int32_t i = 0; i < ND_MAX_DIMS; i++) free(v->dims[i]);
  if (v->attrs) json_decref(v->attrs);
  free(v->null_cell);
}

void nd_registration_free(struct nd_registration *r) {
  if (!r) return;
  for (int32_t i = 0; i < r->n_vars; i++) var_free(&r->vars[i]);
  free(r->vars);
  free(r->name);
  free(r);
}

void nd_registration_unref(struct nd_registration *r) {
  if (!r || atomic_fetch_sub(&r->refs, 1) != 1) return;
  if (r->release) r->release(r->owner);
  nd_registration_free(r);
  atomic_fetch_sub(&live, 1);
}

/* Chunk extents when the caller gives none: whole extents from the
 * innermost axis out while a block stays within `target` elements, then
 * as many of the next axis as fit, single positions outside. */
static void default_chunks(struct nd_var *v, int64_t target) {
  int64_t inner = 1;
  int32_t k = v->ndim - 1;
  for (; k >= 0; k--) {
    int64_t ext = v->shape[k] > 0 ? v->shape[k] : 1;
    if (inner > target / ext) break;
    v->chunks[k] = ext;
    inner *= ext;
  }
  if (k >= 0) {
    int64_t fit = target / inner;
    v->chunks[k] = fit < 1 ? 1 : fit;
    for (int32_t i = 0; i < k; i++) v->chunks[i] = 1;
  }
}

static int var_init(const struct nd_variable *in, int32_t index, struct nd_var *v, struct ql_error *error) {
  if (!in->name || !in->name[0]) return ql_error_set(error, QL_EINVAL, "variable %d has no name", (int)index);
  v->name = strdup(in->name);
  if (!v->name) return ql_error_set(error, QL_ENOMEM, "out of memory");
  if (in->ndim < 0 || in->ndim > ND_MAX_DIMS) {
    return ql_error_set(error, QL_EINVAL, "variable '%s': %d dimensions (0 .. %d)", in->name, (int)in->ndim,
                        ND_MAX_DIMS);
  }
  v->ndim = in->ndim;
  v->is_coord = in->is_coord != 0;
  if (v->ndim > 0 && (!in->dims || !in->shape)) {
    return ql_error_set(error, QL_EINVAL, "variable '%s': dims and shape are required", in->name);
  }
  for (int32_t i = 0; i < v->ndim; i++) {
    if (!in->dims[i] || !in->dims[i][0]) {
      return ql_error_set(error, QL_EINVAL, "variable '%s': dimension %d has no name", in->name, (int)i);
    }
    for (int32_t j = 0; j < i; j++) {
      if (strcmp(in->dims[i], in->dims[j]) == 0) {
        return ql_error_set(error, QL_EINVAL, "variable '%s': dimension '%s' appears twice", in->name, in->dims[i]);
      }
    }
    if (in->shape[i] < 0) {
      return ql_error_set(error, QL_EINVAL, "variable '%s': negative extent %lld along '%s'", in->name,
                          (long long)in->shape[i], in->dims[i]);
    }
    v->dims[i] = strdup(in->dims[i]);
    if (!v->dims[i]) return ql_error_set(error, QL_ENOMEM, "out of memory");
    v->shape[i] = in->shape[i];
  }
  if (zr_product(v->shape, v->ndim) < 0) {
    return ql_error_set(error, QL_EINVAL, "variable '%s': its element count overflows 64 bits", in->name);
  }
  if (nd_dtype_parse(in->dtype, &v->dtype, error) != QL_OK) return ql_error_prefix(error, "variable '%s'", in->name);
  if (v->dtype.type == ZR_VLEN) {
    return ql_error_set(error, QL_ENOTSUP, "variable '%s': variable-length strings are not supported (pass '<U<n>')",
                        in->name);
  }
  if ((in->data == NULL) == (in->load == NULL)) {
    return ql_error_set(error, QL_EINVAL, "variable '%s': give either data (in memory) or load (lazy), not %s",
                        in->name, in->data ? "both" : "neither");
  }
  v->data = in->data;
  v->load = in->load;
  v->load_ctx = in->load_ctx;
  if (v->load) {
    if (in->strides)
      return ql_error_set(error, QL_EINVAL, "variable '%s': strides given for a lazy variable", in->name);
    v->dtype.big_endian = 0; /* loaders write native order */
  }
  int64_t stride = v->dtype.size;
  for (int32_t i = v->ndim - 1; i >= 0; i--) {
    v->strides[i] = in->strides ? in->strides[i] : stride;
    stride *= v->shape[i] > 0 ? v->shape[i] : 1;
  }
  if (in->chunks) {
    for (int32_t i = 0; i < v->ndim; i++) {
      if (in->chunks[i] < 1) {
        return ql_error_set(error, QL_EINVAL, "variable '%s': chunk extent %lld along '%s' (must be >= 1)", in->name,
                            (long long)in->chunks[i], v->dims[i]);
      }
      v->chunks[i] = in->chunks[i] < v->shape[i] || v->shape[i] == 0 ? in->chunks[i] : v->shape[i];
    }
  } else {
    default_chunks(v, ZR_DEFAULT_BLOCK_ROWS);
  }
  if (in->attrs_json && in->attrs_json[0]) {
    json_error_t jerr;
    v->attrs = json_loads(in->attrs_json, JSON_DECODE_ANY, &jerr);
    if (!v->attrs || !json_is_object(v->attrs)) {
      return ql_error_set(error, QL_EINVAL, "variable '%s': attrs_json is not a JSON object (%s)", in->name,
                          v->attrs ? "another JSON value" : jerr.text);
    }
  } else {
    v->attrs = json_object();
    if (!v->attrs) return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  if (in->null_cell) {
    if (v->dtype.type != ZR_UNICODE && v->dtype.type != ZR_BYTES) {
      return ql_error_set(error, QL_EINVAL, "variable '%s': null_cell is given, but '%s' is not a fixed-width string",
                          in->name, in->dtype);
    }
    v->null_cell = malloc((size_t)v->dtype.size);
    if (!v->null_cell) return ql_error_set(error, QL_ENOMEM, "out of memory");
    memcpy(v->null_cell, in->null_cell, (size_t)v->dtype.size);
  }
  return QL_OK;
}

int nd_registration_new(const struct nd_variable *vars, int32_t n_vars, const char *name, struct nd_registration **out,
                        struct ql_error *error) {
  *out = NULL;
  struct nd_registration *r = calloc(1, sizeof(*r));
  if (!r) return ql_error_set(error, QL_ENOMEM, "out of memory");
  atomic_init(&r->refs, 1);
  r->vars = calloc((size_t)(n_vars ? n_vars : 1), sizeof(*r->vars));
  r->name = strdup(name && name[0] ? name : "dataset");
  int rc = r->vars && r->name ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int32_t i = 0; rc == QL_OK && i < n_vars; i++) {
    r->n_vars = i + 1;
    rc = var_init(&vars[i], i, &r->vars[i], error);
    for (int32_t j = 0; rc == QL_OK && j < i; j++) {
      if (strcmp(r->vars[j].name, r->vars[i].name) == 0) {
        rc = ql_error_set(error, QL_EINVAL, "two variables named '%s'", r->vars[i].name);
      }
    }
  }
  if (rc != QL_OK) {
    nd_registration_free(r);
    return rc;
  }
  *out = r;
  return QL_OK;
}

void nd_registration_publish(struct nd_registration *r, void *owner, void (*release)(void *owner)) {
  r->owner = owner;
  r->release = release;
  atomic_fetch_add(&live, 1);
}

int64_t nd_live_count(void) { return atomic_load(&live); }
