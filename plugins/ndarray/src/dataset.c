/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_ndarray: a registered dataset as a zr_dataset (model.h) whose
 * chunk source reads the caller's buffers in place or calls its loaders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_internal.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/ndcopy.h"

/* Copy the box [lo, lo + count) of an in-memory variable into `out` (C
 * order): a strided gather, whole inner rows with memcpy when they are
 * contiguous, then swapped to native order. */
static void copy_strided(const struct nd_var *v, const int64_t *lo, const int64_t *count, uint8_t *out) {
  int32_t nd = v->ndim;
  size_t size = (size_t)v->dtype.size;
  const uint8_t *base = v->data;
  for (int32_t i = 0; i < nd; i++) base += lo[i] * v->strides[i];
  if (nd == 0) {
    memcpy(out, base, size);
    return;
  }
  int64_t inner = count[nd - 1], step = v->strides[nd - 1];
  int contiguous = step == (int64_t)size;
  int64_t idx[ND_MAX_DIMS] = {0};
  uint8_t *o = out;
  for (;;) {
    const uint8_t *src = base;
    for (int32_t i = 0; i < nd - 1; i++) src += idx[i] * v->strides[i];
    if (contiguous) {
      memcpy(o, src, (size_t)inner * size);
      o += (size_t)inner * size;
    } else if (size == 8) {
      for (int64_t k = 0; k < inner; k++, o += 8) memcpy(o, src + k * step, 8);
    } else {
      for (int64_t k = 0; k < inner; k++, o += size) memcpy(o, src + k * step, size);
    }
    int32_t ax = nd - 2;
    while (ax >= 0 && ++idx[ax] == count[ax]) idx[ax--] = 0;
    if (ax < 0) break;
  }
  zr_dtype_to_native(&v->dtype, out, zr_product(count, nd));
}

/* Chunks of the variable's grid that the box touches (chunks_read). */
static int64_t chunks_touched(const struct nd_var *v, const int64_t *lo, const int64_t *count) {
  int64_t n = 1;
  for (int32_t i = 0; i < v->ndim; i++) n *= (lo[i] + count[i] - 1) / v->chunks[i] - lo[i] / v->chunks[i] + 1;
  return n;
}

static int nd_read_box(const struct zr_dataset *ds, int64_t array, const int64_t *lo, const int64_t *count,
                       uint8_t *out, struct zr_heap *heap, struct zr_scratch *scratch, int64_t *chunks, int64_t *bytes,
                       struct ql_error *error) {
  (void)heap;
  (void)scratch;
  const struct nd_registration *r = ds->source.ctx;
  const struct nd_var *v = &r->vars[array];
  for (int32_t i = 0; i < v->ndim; i++) {
    if (count[i] <= 0) return QL_OK;
  }
  if (v->load) {
    char message[512];
    message[0] = '\0';
    int rc = v->load(v->load_ctx, v->ndim, lo, count, out, message, sizeof(message));
    if (rc != 0) {
      message[sizeof(message) - 1] = '\0';
      return ql_error_set(error, QL_EDATA, "%s: variable '%s': loading a block failed: %s", ds->label, v->name,
                          message[0] ? message : "(the loader gave no reason)");
    }
  } else {
    copy_strided(v, lo, count, out);
  }
  *chunks += chunks_touched(v, lo, count);
  *bytes += zr_product(count, v->ndim) * v->dtype.size;
  return QL_OK;
}

/* The box in place (model.h: borrow_box) when the caller's buffer holds it
 * as read_box would write it: in memory, native byte order, aligned for
 * the element, and contiguous in C order over count (every axis after the
 * first one longer than 1 spans its whole extent, and the strides from
 * that axis in are C-contiguous; extent-1 axes may have any stride). */
static const uint8_t *nd_borrow_box(const struct zr_dataset *ds, int64_t array, const int64_t *lo,
                                    const int64_t *count, int64_t *chunks, int64_t *bytes) {
  const struct nd_registration *r = ds->source.ctx;
  const struct nd_var *v = &r->vars[array];
  const struct zr_dtype *d = &v->dtype;
  if (!v->data || v->load || d->type == ZR_VLEN || !zr_dtype_is_native(d)) {
    return NULL;
  }
  int32_t first = 0; /* the first axis the box is longer than 1 along */
  while (first < v->ndim && count[first] == 1) first++;
  int64_t want = d->size;
  for (int32_t i = v->ndim - 1; i >= first; i--) {
    if (i > first && count[i] != v->shape[i]) return NULL;
    if (v->shape[i] != 1 && v->strides[i] != want) return NULL;
    want *= v->shape[i];
  }
  const uint8_t *base = v->data;
  for (int32_t i = 0; i < v->ndim; i++) base += lo[i] * v->strides[i];
  uintptr_t align = (uintptr_t)(d->size & -d->size); /* the largest power of two dividing the size */
  if (align > 8) align = 8;
  if ((uintptr_t)base % align != 0) return NULL;
  *chunks += chunks_touched(v, lo, count);
  *bytes += zr_product(count, v->ndim) * d->size;
  return base;
}

static void nd_release(struct zr_dataset *ds) { nd_registration_unref(ds->source.ctx); }

/* The registration's variables as the group's arrays (model.h reads their
 * shape, chunks, dtype, dimension names and attributes); the group's
 * `coordinates` attribute lists the coordinates that are not dimension
 * coordinates, as xarray writes it. */
static int build_group(const struct nd_registration *r, struct zr_group *g, struct ql_error *error) {
  g->zarr_format = 3;
  g->arrays = calloc((size_t)(r->n_vars ? r->n_vars : 1), sizeof(*g->arrays));
  g->attrs = json_object();
  if (!g->arrays || !g->attrs) return ql_error_set(error, QL_ENOMEM, "out of memory");
  size_t coords_len = 1;
  for (int32_t i = 0; i < r->n_vars; i++) coords_len += strlen(r->vars[i].name) + 1;
  char *coords = calloc(coords_len, 1);
  if (!coords) return ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int32_t i = 0; i < r->n_vars; i++) {
    const struct nd_var *v = &r->vars[i];
    struct zr_array *a = &g->arrays[i];
    g->n_arrays = i + 1;
    a->name = strdup(v->name);
    a->zarr_format = 3;
    a->ndim = v->ndim;
    a->dtype = v->dtype;
    a->fill = calloc(1, (size_t)v->dtype.size + 1);
    a->fill_is_null = 1;
    if (a->fill && v->null_cell) {
      memcpy(a->fill, v->null_cell, (size_t)v->dtype.size);
      a->fill_is_missing = 1;
    }
    a->key_sep = '/';
    a->attrs = json_incref(v->attrs);
    if (!a->name || !a->fill) {
      free(coords);
      return ql_error_set(error, QL_ENOMEM, "out of memory");
    }
    for (int32_t k = 0; k < v->ndim; k++) {
      a->shape[k] = v->shape[k];
      a->chunks[k] = v->chunks[k];
      a->dims[k] = strdup(v->dims[k]);
      if (!a->dims[k]) {
        free(coords);
        return ql_error_set(error, QL_ENOMEM, "out of memory");
      }
    }
    int dim_coord = v->ndim == 1 && strcmp(v->name, v->dims[0]) == 0;
    if (v->is_coord && !dim_coord) {
      if (coords[0]) strcat(coords, " ");
      strcat(coords, v->name);
    }
  }
  int rc = coords[0] && json_object_set_new(g->attrs, "coordinates", json_string(coords)) != 0
               ? ql_error_set(error, QL_ENOMEM, "out of memory")
               : QL_OK;
  free(coords);
  return rc;
}

int nd_dataset_open(struct nd_registration *r, const char *renames, int64_t min_block_rows, int32_t nan_fill,
                    struct zr_dataset **out, struct ql_error *error) {
  *out = NULL;
  struct zr_dataset *ds = zr_dataset_alloc(min_block_rows);
  if (!ds) return ql_error_set(error, QL_ENOMEM, "out of memory");
  atomic_fetch_add(&r->refs, 1);
  ds->source.ctx = r;
  ds->source.read_box = nd_read_box;
  ds->source.borrow_box = nd_borrow_box;
  ds->source.release = nd_release;
  ds->cf = 0;
  ds->nan_fill = nan_fill;
  ds->plan_name = "NdarrayScanExec";
  size_t n = strlen(r->name) + 48;
  ds->label = malloc(n);
  ds->origin = malloc(n);
  int rc = ds->label && ds->origin ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) {
    snprintf(ds->label, n, "dataset %lld (%s)", (long long)r->serial, r->name);
    snprintf(ds->origin, n, "dataset=%lld name=%s", (long long)r->serial, r->name);
    rc = build_group(r, &ds->group, error);
  }
  if (rc == QL_OK) rc = zr_dataset_build(ds, renames, error);
  if (rc == QL_OK && ds->n_tables == 0) {
    rc = ql_error_set(error, QL_ENOTFOUND, "%s has no variables", ds->label);
  }
  if (rc != QL_OK) {
    zr_dataset_unref(ds);
    return rc;
  }
  *out = ds;
  return QL_OK;
}
