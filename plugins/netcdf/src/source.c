/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: the chunk source (model.h) over open netCDF files: boxes
 * read with nc_get_vara, split across the files of a multi-file dataset
 * along its record dimension. */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncf.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/ndcopy.h"

/* Append strings to the heap as {offset, length} elements. */
static int strings_to_heap(char **s, int64_t n, uint8_t *out, struct zr_heap *heap) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t len = s[i] ? strlen(s[i]) : 0, off = (uint64_t)heap->len;
    if (heap->len + (int64_t)len > heap->cap) {
      int64_t cap = heap->cap ? heap->cap : 256;
      while (cap < heap->len + (int64_t)len) cap *= 2;
      uint8_t *grown = realloc(heap->data, (size_t)cap);
      if (!grown) return QL_ENOMEM;
      heap->data = grown;
      heap->cap = cap;
    }
    if (len) memcpy(heap->data + heap->len, s[i], len);
    heap->len += (int64_t)len;
    memcpy(out + 16 * i, &off, 8);
    memcpy(out + 16 * i + 8, &len, 8);
  }
  return QL_OK;
}

/* The box [lo, lo + count) (array axes) of variable `v` in file `f`, into
 * `out` (C order). */
static int read_piece(const struct zr_dataset *ds, int32_t file, const struct ncf_var *v,
                      const struct zr_array *a, const int64_t *lo, const int64_t *count, uint8_t *out,
                      struct zr_heap *heap, struct ql_error *error) {
  const struct ncf_source *src = ds->source.ctx;
  const struct ncf_file *f = &src->files[file];
  int varid = v->varids[file];
  size_t start[NC_MAX_VAR_DIMS], cnt[NC_MAX_VAR_DIMS];
  for (int32_t i = 0; i < a->ndim; i++) {
    start[i] = (size_t)lo[i];
    cnt[i] = (size_t)count[i];
  }
  if (v->nc_ndim > a->ndim) { /* folded characters: every one */
    start[a->ndim] = 0;
    cnt[a->ndim] = (size_t)a->dtype.size;
  }
  int64_t n = zr_product(count, a->ndim);
  int st, rc = QL_OK;
  ncf_lock();
  if (ncf_exiting()) {
    st = NC_EINTERNAL;
  } else if (v->nc_type == NC_STRING) {
    char **s = calloc((size_t)(n ? n : 1), sizeof(*s));
    st = !s ? NC_ENOMEM : v->nc_ndim ? nc_get_vara_string(f->gid, varid, start, cnt, s) : nc_get_var_string(f->gid, varid, s);
    if (st == NC_NOERR) {
      rc = strings_to_heap(s, n, out, heap);
      nc_free_string((size_t)n, s);
    }
    free(s);
  } else {
    st = v->nc_ndim ? nc_get_vara(f->gid, varid, start, cnt, out) : nc_get_var(f->gid, varid, out);
  }
  ncf_unlock();
  if (rc != QL_OK) return ql_error_set(error, rc, "out of memory");
  if (st != NC_NOERR) {
    return ql_error_set(error, st == NC_ENOMEM ? QL_ENOMEM : QL_EDATA, "%s: file %s: variable '%s': reading failed: %s",
                        ds->label, f->label, a->name, nc_strerror(st));
  }
  ncf_rebase_apply(v, file, &a->dtype, out, n);
  return QL_OK;
}

/* Chunks of the array's grid that the box touches (chunks_read). */
static int64_t chunks_touched(const struct zr_array *a, const int64_t *lo, const int64_t *count) {
  int64_t n = 1;
  for (int32_t i = 0; i < a->ndim; i++) n *= (lo[i] + count[i] - 1) / a->chunks[i] - lo[i] / a->chunks[i] + 1;
  return n;
}

int ncf_read_box(const struct zr_dataset *ds, int64_t array, const int64_t *lo, const int64_t *count, uint8_t *out,
                 struct zr_heap *heap, struct zr_scratch *scratch, int64_t *chunks, int64_t *bytes,
                 struct ql_error *error) {
  const struct ncf_source *src = ds->source.ctx;
  const struct ncf_var *v = &src->vars[array];
  const struct zr_array *a = &ds->group.arrays[array];
  for (int32_t i = 0; i < a->ndim; i++) {
    if (count[i] <= 0) return QL_OK;
  }
  int32_t r = v->rec_axis;
  if (r < 0 || src->n_files == 1) {
    QL_RETURN_NOT_OK(read_piece(ds, 0, v, a, lo, count, out, heap, error));
  } else {
    int64_t size = a->dtype.size, n = zr_product(count, a->ndim);
    for (int32_t k = 0; k < src->n_files; k++) {
      const struct ncf_file *f = &src->files[k];
      int64_t from = lo[r] > f->rec_start ? lo[r] : f->rec_start;
      int64_t to = lo[r] + count[r] < f->rec_start + f->rec_len ? lo[r] + count[r] : f->rec_start + f->rec_len;
      if (from >= to) continue;
      int64_t plo[ZR_MAX_DIMS], pcount[ZR_MAX_DIMS], at[ZR_MAX_DIMS] = {0};
      memcpy(plo, lo, sizeof(int64_t) * (size_t)a->ndim);
      memcpy(pcount, count, sizeof(int64_t) * (size_t)a->ndim);
      plo[r] = from - f->rec_start;
      pcount[r] = to - from;
      at[r] = from - lo[r];
      /* a piece along the first axis is a slab of `out`; else read aside and placed */
      uint8_t *dst = out + (from - lo[r]) * (n / count[r]) * size, *aside = NULL;
      if (r > 0) {
        size_t need = (size_t)(zr_product(pcount, a->ndim) * size);
        if (scratch && scratch->cap < need) {
          uint8_t *grown = realloc(scratch->data, need);
          if (!grown) return ql_error_set(error, QL_ENOMEM, "out of memory");
          scratch->data = grown;
          scratch->cap = need;
        }
        dst = scratch ? scratch->data : (aside = malloc(need));
        if (!dst) return ql_error_set(error, QL_ENOMEM, "out of memory");
      }
      int rc = read_piece(ds, k, v, a, plo, pcount, dst, heap, error);
      int64_t zero[ZR_MAX_DIMS] = {0};
      if (rc == QL_OK && r > 0) zr_copy_box(out, count, at, dst, pcount, zero, pcount, a->ndim, size);
      free(aside);
      QL_RETURN_NOT_OK(rc);
    }
  }
  *chunks += chunks_touched(a, lo, count);
  *bytes += zr_product(count, a->ndim) * a->dtype.size;
  return QL_OK;
}
