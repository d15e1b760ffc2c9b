/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: building tables from a group. See model.h. */
#include "qlink_zarr/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/ndcopy.h"

/* ------------------------------------------------------------- reading */

void zr_scratch_free(struct zr_scratch *scratch) {
  free(scratch->data);
  scratch->data = NULL;
  scratch->cap = 0;
  zr_readbuf_free(&scratch->stored);
}


/* ----------------------------------------------------------- the model */

static void free_table(struct zr_table *t) {
  for (int32_t i = 0; i < t->n_columns; i++) free(t->columns[i].name);
  free(t->columns);
  free(t->name);
  free(t->default_name);
}

static void dataset_free(struct zr_dataset *ds) {
  if (ds->source.release) ds->source.release(ds);
  for (int32_t i = 0; i < ds->n_tables; i++) free_table(&ds->tables[i]);
  free(ds->tables);
  for (int32_t i = 0; i < ds->n_dims; i++) {
    free(ds->dims[i].name);
    free(ds->dims[i].raw);
    zr_heap_free(&ds->dims[i].heap);
    zr_colbuf_free(&ds->dims[i].text);
  }
  free(ds->dims);
  zr_group_free(&ds->group);
  free(ds->label);
  free(ds->origin);
  free(ds);
}

struct zr_dataset *zr_dataset_alloc(int64_t min_block_rows) {
  struct zr_dataset *ds = calloc(1, sizeof(*ds));
  if (!ds) return NULL;
  ds->min_block_rows = min_block_rows > 0 ? min_block_rows : 1;
  ds->cf = 1;
  ds->plan_name = "ZarrScanExec";
  atomic_init(&ds->refs, 1);
  return ds;
}

int zr_dataset_read_box(const struct zr_dataset *ds, int64_t array, const int64_t *lo, const int64_t *count,
                        uint8_t *out, struct zr_heap *heap, struct zr_scratch *scratch, int64_t *chunks,
                        int64_t *bytes, struct ql_error *error) {
  if (!ds->source.read_box) return ql_error_set(error, QL_EINVAL, "%s: no chunk source", ds->label);
  return ds->source.read_box(ds, array, lo, count, out, heap, scratch, chunks, bytes, error);
}

const uint8_t *zr_dataset_borrow_box(const struct zr_dataset *ds, int64_t array, const int64_t *lo,
                                     const int64_t *count, int64_t *chunks, int64_t *bytes) {
  return ds->source.borrow_box ? ds->source.borrow_box(ds, array, lo, count, chunks, bytes) : NULL;
}

static int column_decoder(const struct zr_dataset *ds, const struct zr_array *a, int32_t decode_times,
                          struct zr_decoder *out, struct ql_error *error) {
  if (ds->cf) {
    QL_RETURN_NOT_OK(zr_decoder_init(a, decode_times, out, error));
    if (ds->nan_fill == ZR_NAN_FILL_NAN && out->mask_nan) {
      /* NaN cells stay NaN, as xarray holds them: drop the NaN slot, keep the other masks */
      int32_t k = 0;
      for (int32_t j = 0; j < out->n_mask; j++) {
        if (out->mask_f[j] != out->mask_f[j]) continue;
        out->mask_f[k] = out->mask_f[j];
        out->mask_i[k] = out->mask_i[j];
        k++;
      }
      out->n_mask = k;
      out->mask_nan = 0;
    }
    return QL_OK;
  }
  /* values as they are: the decoder sees the element type alone (no
   * attributes, no fill value), so nothing is masked, scaled or converted */
  struct zr_array plain = *a;
  json_t *none = json_object();
  if (!none) return ql_error_set(error, QL_ENOMEM, "out of memory");
  plain.attrs = none;
  plain.fill_json = NULL;
  plain.fill_is_null = 1;
  plain.zarr_format = 3;
  int rc = zr_decoder_init(&plain, 0, out, error);
  json_decref(none);
  if (rc == QL_OK && a->fill_is_missing && (a->dtype.type == ZR_UNICODE || a->dtype.type == ZR_BYTES)) {
    out->string_mask = a->fill;
  }
  return rc;
}

int zr_column_decoder(const struct zr_dataset *ds, const struct zr_array *a, int32_t decode_times,
                      struct zr_decoder *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(column_decoder(ds, a, decode_times, out, error));
  if (ds->nan_fill == ZR_NAN_FILL_ALL) zr_decoder_mask_nan(out);
  return QL_OK;
}

struct zr_dataset *zr_dataset_ref(struct zr_dataset *ds) {
  atomic_fetch_add(&ds->refs, 1);
  return ds;
}

void zr_dataset_unref(struct zr_dataset *ds) {
  if (ds && atomic_fetch_sub(&ds->refs, 1) == 1) dataset_free(ds);
}

static int32_t find_dim(const struct zr_dataset *ds, const char *name) {
  for (int32_t i = 0; i < ds->n_dims; i++) {
    if (strcmp(ds->dims[i].name, name) == 0) return i;
  }
  return -1;
}

static int collect_dims(struct zr_dataset *ds, struct ql_error *error) {
  const char *first_array[1024] = {0};
  for (int64_t k = 0; k < ds->group.n_arrays; k++) {
    const struct zr_array *a = &ds->group.arrays[k];
    for (int32_t i = 0; i < a->ndim; i++) {
      int32_t d = find_dim(ds, a->dims[i]);
      if (d >= 0) {
        if (ds->dims[d].size != a->shape[i]) {
          return ql_error_set(error, QL_EDATA,
                              "%s: array '%s' has dimension '%s' of size %lld, but array '%s' has %lld",
                              ds->label, a->name, a->dims[i], (long long)a->shape[i],
                              d < 1024 && first_array[d] ? first_array[d] : "?", (long long)ds->dims[d].size);
        }
        continue;
      }
      struct zr_dim *grown = realloc(ds->dims, sizeof(*grown) * (size_t)(ds->n_dims + 1));
      if (!grown) return ql_error_set(error, QL_ENOMEM, "out of memory");
      ds->dims = grown;
      struct zr_dim *nd = &ds->dims[ds->n_dims];
      memset(nd, 0, sizeof(*nd));
      nd->name = strdup(a->dims[i]);
      nd->size = a->shape[i];
      nd->coord = -1;
      if (!nd->name) return ql_error_set(error, QL_ENOMEM, "out of memory");
      if (ds->n_dims < 1024) first_array[ds->n_dims] = a->name;
      ds->n_dims++;
    }
  }
  return QL_OK;
}

/* Does the whitespace-separated list `list` contain `name`? */
static int list_has(const char *list, const char *name) {
  if (!list) return 0;
  size_t n = strlen(name);
  const char *p = list;
  while (*p) {
    while (*p == ' ') p++;
    const char *e = p;
    while (*e && *e != ' ') e++;
    if ((size_t)(e - p) == n && strncmp(p, name, n) == 0) return 1;
    p = e;
  }
  return 0;
}

static int is_coordinate(const struct zr_dataset *ds, const struct zr_array *a) {
  if (list_has(json_string_value(json_object_get(ds->group.attrs, "coordinates")), a->name)) return 1;
  for (int64_t k = 0; k < ds->group.n_arrays; k++) {
    const json_t *c = json_object_get(ds->group.arrays[k].attrs, "coordinates");
    if (list_has(json_string_value(c), a->name)) return 1;
  }
  return 0;
}

/* 1 when a < b, -1 when a > b, 0 when equal or of different kinds. */
static int step_of(const struct zr_value *a, const struct zr_value *b) {
  if (a->kind != b->kind) return 0;
  return a->kind == 0   ? (a->i < b->i) - (a->i > b->i)
         : a->kind == 1 ? (a->u < b->u) - (a->u > b->u)
         : a->kind == 2 ? (a->f < b->f) - (a->f > b->f)
                        : 0;
}

/* One pass over a comparable coordinate at open: every value decodes (so
 * zr_dim_value's decodes later cannot fail), whether any is NULL or NaN,
 * and the direction: 1 strictly increasing, -1 strictly decreasing, 0
 * neither (or with NULLs or NaNs, which hosts do not order as numbers).
 * One value counts as increasing. Nothing is kept per position. */
static int survey_dim_values(struct zr_dim *d) {
  d->has_nulls = 0;
  d->has_nan = 0;
  d->has_extremes = 0;
  int dir = 1;
  struct zr_value prev, cur;
  memset(&prev, 0, sizeof(prev));
  for (int64_t i = 0; i < d->size; i++) {
    QL_RETURN_NOT_OK(zr_decode_value(&d->dec, d->raw + i * d->dec.in.size, &cur));
    d->has_nulls |= cur.is_null;
    d->has_nan |= cur.kind == 2 && cur.f != cur.f;
    if (!cur.is_null) {
      if (!d->has_extremes || zr_value_less(&cur, &d->min)) d->min = cur;
      if (!d->has_extremes || zr_value_less(&d->max, &cur)) d->max = cur;
      d->has_extremes = 1;
    }
    if (i > 0 && dir != 0) {
      int c = step_of(&prev, &cur);
      dir = c == 0 || (i > 1 && c != dir) ? 0 : c;
    }
    prev = cur;
  }
  d->direction = d->has_nulls || d->has_nan ? 0 : dir;
  return QL_OK;
}

/* A string coordinate (utf8 or binary) at open: its values decoded into
 * d->text exactly as the scan builds its dimension column (variable-length
 * strings unmasked, fixed-width ones through the decoder and its fill
 * mask), whether any is NULL, and its extremes in bytewise order. Without
 * memory, or with a value that does not decode (which the scan reports when
 * it reads the column), nothing is held and nothing is claimed: no
 * extremes, has_nulls set (not known to have none). Opening never fails
 * here. */
static void survey_dim_text(struct zr_dim *d) {
  d->has_nulls = 1;
  d->has_nan = 0;
  d->has_extremes = 0;
  d->direction = 0; /* filters order numbers only */
  int64_t n = d->size;
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  struct zr_colbuf b;
  int rc = offs ? zr_colbuf_init(&b, d->dec.out, n) : QL_ENOMEM;
  if (rc != QL_OK) {
    free(offs);
    return;
  }
  for (int64_t i = 0; i < n; i++) offs[i] = i;
  rc = d->dec.in.type == ZR_VLEN ? zr_colbuf_append_vlen(&b, &d->heap, d->raw, offs, n)
                                 : zr_colbuf_append_many(&b, &d->dec, d->raw, offs, n);
  free(offs);
  if (rc != QL_OK) {
    zr_colbuf_free(&b);
    return;
  }
  d->text = b;
  d->has_nulls = b.null_count > 0;
  for (int64_t i = 0; i < n; i++) {
    struct zr_value v = zr_dim_stat_value(d, i);
    if (v.is_null) continue;
    if (!d->has_extremes || zr_value_less(&v, &d->min)) d->min = v;
    if (!d->has_extremes || zr_value_less(&d->max, &v)) d->max = v;
    d->has_extremes = 1;
  }
}

/* A coordinate's elements are held in memory (for statistics, filter
 * pruning and the scan's dimension columns): one that does not fit is named
 * with its size. */
static int dim_too_large(const struct zr_dataset *ds, const struct zr_dim *d, struct ql_error *error) {
  return ql_error_set(error, QL_ENOMEM,
                      "%s: dimension '%s' has %lld positions; its coordinate values do not fit in memory",
                      ds->label, d->name, (long long)d->size);
}

/* A dimension without coordinate: values are positions, held nowhere;
 * they strictly increase, are never null or NaN. */
static void init_implicit_dim(struct zr_dim *d) {
  d->raw = NULL;
  memset(&d->dec, 0, sizeof(d->dec));
  d->dec.in.type = ZR_INT;
  d->dec.in.size = 8;
  d->dec.in.swap_unit = 8;
  d->dec.out = ZR_OUT_I64;
  snprintf(d->dec.format, sizeof(d->dec.format), "l");
  d->comparable = 1;
  d->has_nulls = 0;
  d->has_nan = 0;
  d->direction = 1;
  d->has_extremes = d->size > 0;
  d->min = zr_dim_value(d, 0);
  d->max = zr_dim_value(d, d->size > 0 ? d->size - 1 : 0);
}

static int load_dim_values(struct zr_dataset *ds, struct zr_dim *d, struct ql_error *error) {
  int64_t n = d->size;
  if (zr_dim_implicit(d)) {
    init_implicit_dim(d);
    return QL_OK;
  }
  const struct zr_array *a = &ds->group.arrays[d->coord];
  if (a->dtype.size > 0 && n > (INT64_MAX - 1) / a->dtype.size) return dim_too_large(ds, d, error);
  d->raw = malloc((size_t)(n * a->dtype.size) + 1);
  if (!d->raw) return ql_error_set(error, QL_ENOMEM, "out of memory reading coordinate '%s'", a->name);
  int64_t chunks = 0, bytes = 0, lo = 0;
  QL_RETURN_NOT_OK(zr_dataset_read_box(ds, d->coord, &lo, &n, d->raw, &d->heap, NULL, &chunks, &bytes, error));
  if (zr_column_decoder(ds, a, 1, &d->dec, error) != QL_OK) {
    return ql_error_prefix(error, "%s: array '%s'", ds->label, a->name);
  }
  d->comparable = d->dec.out != ZR_OUT_UTF8 && d->dec.out != ZR_OUT_BINARY;
  if (!d->comparable) {
    survey_dim_text(d);
    return QL_OK;
  }
  int rc = survey_dim_values(d);
  if (rc == QL_EOVERFLOW && d->dec.cf_time) {
    /* xarray falls back to cftime objects here: keep the numbers */
    QL_RETURN_NOT_OK(zr_column_decoder(ds, &ds->group.arrays[d->coord], 0, &d->dec, error));
    rc = survey_dim_values(d);
  }
  if (rc != QL_OK) {
    return ql_error_set(error, QL_EDATA, "%s: coordinate '%s' cannot be decoded", ds->label, d->name);
  }
  return QL_OK;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static int add_column(struct zr_table *t, const char *name, int32_t role, struct zr_column **out) {
  struct zr_column *grown = realloc(t->columns, sizeof(*grown) * (size_t)(t->n_columns + 1));
  if (!grown) return QL_ENOMEM;
  t->columns = grown;
  struct zr_column *c = &t->columns[t->n_columns++];
  memset(c, 0, sizeof(*c));
  c->name = strdup(name);
  c->role = role;
  c->array = -1;
  *out = c;
  return c->name ? QL_OK : QL_ENOMEM;
}

/* Map the axes of array `a` onto table dimensions; 0 if one is missing. */
static int map_axes(const struct zr_dataset *ds, const struct zr_table *t, const struct zr_array *a,
                    struct zr_column *c) {
  c->n_axes = a->ndim;
  for (int32_t i = 0; i < a->ndim; i++) {
    int32_t d = find_dim(ds, a->dims[i]);
    int32_t found = -1;
    for (int32_t k = 0; k < t->ndim; k++) {
      if (t->dims[k] == d) found = k;
    }
    if (found < 0) return 0;
    c->axes[i] = found;
  }
  return 1;
}

static int same_dims(const struct zr_array *a, const struct zr_array *b) {
  if (a->ndim != b->ndim) return 0;
  for (int32_t i = 0; i < a->ndim; i++) {
    if (strcmp(a->dims[i], b->dims[i]) != 0) return 0;
  }
  return 1;
}

/* 1 when the first or the last element of CF time array `a` lies outside
 * timestamp[ns] (xarray's _decode_cf_datetime_dtype decodes those two to
 * choose the variable's dtype, and falls back to cftime objects, which stay
 * numbers here). An element that cannot be read counts as in range: the
 * query that reads its chunk reports the problem. */
static int cf_time_ends_out_of_range(const struct zr_dataset *ds, int64_t k, const struct zr_decoder *dec) {
  const struct zr_array *a = &ds->group.arrays[k];
  if (a->dtype.size <= 0 || a->dtype.size > 16 || dec->in.type == ZR_VLEN) return 0;
  int64_t lo[ZR_MAX_DIMS], one[ZR_MAX_DIMS];
  for (int pass = 0; pass < 2; pass++) {
    for (int32_t i = 0; i < a->ndim; i++) {
      if (a->shape[i] <= 0) return 0;
      lo[i] = pass ? a->shape[i] - 1 : 0;
      one[i] = 1;
    }
    uint8_t elem[16];
    int64_t chunks = 0, bytes = 0;
    struct ql_error ignored;
    memset(&ignored, 0, sizeof(ignored));
    int rc = zr_dataset_read_box(ds, k, lo, one, elem, NULL, NULL, &chunks, &bytes, &ignored);
    ql_error_release(&ignored);
    struct zr_value v;
    if (rc == QL_OK && zr_decode_value(dec, elem, &v) == QL_EOVERFLOW) return 1;
  }
  return 0;
}

static int add_array_column(struct zr_dataset *ds, struct zr_table *t, int64_t k, int32_t role,
                            struct ql_error *error) {
  const struct zr_array *a = &ds->group.arrays[k];
  struct zr_column *c;
  if (add_column(t, a->name, role, &c) != QL_OK) return ql_error_set(error, QL_ENOMEM, "out of memory");
  c->array = (int32_t)k;
  map_axes(ds, t, a, c);
  int rc = zr_column_decoder(ds, a, 1, &c->dec, error);
  if (rc == QL_OK && c->dec.cf_time && cf_time_ends_out_of_range(ds, k, &c->dec)) {
    rc = zr_column_decoder(ds, a, 0, &c->dec, error);
  }
  if (rc != QL_OK) return ql_error_prefix(error, "%s: array '%s'", ds->label, a->name);
  return QL_OK;
}

/* Grow blocks of fewer than ds->min_block_rows rows by whole multiples of
 * their extents, innermost dimension first (a block stays a box of whole
 * grid cells, and its rows stay runs of C order): batches never cross a
 * block, so tiny chunks would otherwise mean tiny batches. */
static void grow_blocks(const struct zr_dataset *ds, struct zr_table *t) {
  int64_t rows = 1;
  for (int32_t i = 0; i < t->ndim; i++) rows *= t->step[i];
  for (int32_t i = t->ndim - 1; i >= 0 && rows > 0 && rows < ds->min_block_rows; i--) {
    int64_t size = ds->dims[t->dims[i]].size;
    if (t->step[i] >= size) continue;
    int64_t factor = (ds->min_block_rows + rows - 1) / rows;
    int64_t grown = factor > (size + t->step[i] - 1) / t->step[i] ? size : t->step[i] * factor;
    if (grown > size) grown = size;
    rows = rows / t->step[i] * grown;
    t->step[i] = grown;
  }
}

/* `n` names joined by `sep` (malloc'd), or NULL without memory. */
static char *join_dims(char *const *names, int32_t n, const char *sep) {
  size_t len = 1;
  for (int32_t i = 0; i < n; i++) len += strlen(names[i]) + strlen(sep);
  char *out = malloc(len);
  if (!out) return NULL;
  out[0] = '\0';
  for (int32_t i = 0; i < n; i++) {
    if (i) strcat(out, sep);
    strcat(out, names[i]);
  }
  return out;
}

static int build_table(struct zr_dataset *ds, const struct zr_array *proto, uint8_t *used, struct ql_error *error) {
  struct zr_table *grown = realloc(ds->tables, sizeof(*grown) * (size_t)(ds->n_tables + 1));
  if (!grown) return ql_error_set(error, QL_ENOMEM, "out of memory");
  ds->tables = grown;
  struct zr_table *t = &ds->tables[ds->n_tables++];
  memset(t, 0, sizeof(*t));
  t->ndim = proto->ndim;
  t->n_rows = 1;
  for (int32_t i = 0; i < t->ndim; i++) {
    t->dims[i] = find_dim(ds, proto->dims[i]);
    int64_t size = ds->dims[t->dims[i]].size;
    /* An array's own shape is capped when parsed; a coordinates-only table
     * spans every dimension of the store, whose sizes can multiply past it. */
    if (size > 0 && t->n_rows > INT64_MAX / size) {
      return ql_error_set(error, QL_EDATA,
                          "%s: the table of its coordinates is too large: with dimension '%s' (size %lld) "
                          "its row count passes 2^63",
                          ds->label, proto->dims[i], (long long)size);
    }
    t->n_rows *= size;
  }
  t->default_name = t->ndim == 0 ? strdup(ZR_SCALARS_TABLE) : join_dims(proto->dims, t->ndim, "_");
  if (!t->default_name) return ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int32_t i = 0; i < t->ndim; i++) {
    struct zr_dim *d = &ds->dims[t->dims[i]];
    struct zr_column *c;
    if (add_column(t, d->name, ZR_ROLE_DIM, &c) != QL_OK) return ql_error_set(error, QL_ENOMEM, "out of memory");
    c->dim = i;
    c->array = d->coord;
    c->dec = d->dec;
  }
  /* Non-dimension coordinates over a subset of the dimensions. */
  for (int64_t k = 0; k < ds->group.n_arrays; k++) {
    const struct zr_array *a = &ds->group.arrays[k];
    struct zr_column probe;
    if (used[k] != 2 || !map_axes(ds, t, a, &probe)) continue;
    QL_RETURN_NOT_OK(add_array_column(ds, t, k, ZR_ROLE_COORD, error));
  }
  for (int64_t k = 0; k < ds->group.n_arrays; k++) {
    const struct zr_array *a = &ds->group.arrays[k];
    if (used[k] != 0 || !same_dims(a, proto)) continue;
    used[k] = 3;
    QL_RETURN_NOT_OK(add_array_column(ds, t, k, ZR_ROLE_VAR, error));
  }
  /* Block extents: a common multiple of every array's chunk extent, so a
   * block decodes whole chunks. Where that multiple would be far larger
   * than any chunk (extents 1000 and 999: 999000), blocks would hold
   * thousands of chunks (memory, and too few blocks to run in parallel):
   * the largest chunk extent is used instead, and the chunks that straddle
   * a block edge are decoded by both blocks. */
  for (int32_t i = 0; i < t->ndim; i++) {
    int64_t size = ds->dims[t->dims[i]].size, step = 1, largest = 1;
    int spanned = 0;
    for (int32_t c = 0; c < t->n_columns; c++) {
      const struct zr_column *col = &t->columns[c];
      if (col->role == ZR_ROLE_DIM) continue;
      const struct zr_array *a = &ds->group.arrays[col->array];
      for (int32_t ax = 0; ax < col->n_axes; ax++) {
        if (col->axes[ax] != i) continue;
        int64_t ch = a->chunks[ax] < size ? a->chunks[ax] : size;
        if (ch < 1) continue;
        spanned = 1;
        if (ch > largest) largest = ch;
        int64_t g = gcd64(step, ch);
        step = step / g >= (size + ch - 1) / ch ? size : step / g * ch; /* no overflow: capped at size */
        if (step >= size) step = size;
      }
    }
    if (step > 8 * largest) step = largest;
    /* no array is chunked along it (a coordinates-only table): one block */
    if (!spanned) step = size;
    t->step[i] = step < 1 ? 1 : (step > size ? size : step);
    if (size == 0) t->step[i] = 1;
  }
  grow_blocks(ds, t);
  return QL_OK;
}

/* A store of coordinates only (a grid definition, say): as xarray's
 * Dataset.to_dataframe() does, one table over every dimension, with the
 * non-dimension coordinates as columns. */
static int build_coordinate_table(struct zr_dataset *ds, uint8_t *used, struct ql_error *error) {
  if (ds->n_dims == 0 || ds->n_dims > ZR_MAX_DIMS) return QL_OK;
  struct zr_array proto;
  memset(&proto, 0, sizeof(proto));
  proto.ndim = ds->n_dims;
  for (int32_t i = 0; i < ds->n_dims; i++) proto.dims[i] = ds->dims[i].name;
  return build_table(ds, &proto, used, error);
}

/* Order of tables for naming: the scalars table first, then by dimension
 * names (element by element; a prefix first). Depends on the tables'
 * dimensions only, never on the order or number of their variables. */
static int table_order(const struct zr_dataset *ds, const struct zr_table *a, const struct zr_table *b) {
  for (int32_t i = 0; i < a->ndim && i < b->ndim; i++) {
    int c = strcmp(ds->dims[a->dims[i]].name, ds->dims[b->dims[i]].name);
    if (c) return c;
  }
  return (a->ndim > b->ndim) - (a->ndim < b->ndim);
}

static int name_taken(const struct zr_dataset *ds, const int32_t *order, int32_t before, const char *name) {
  for (int32_t j = 0; j < before; j++) {
    if (strcmp(ds->tables[order[j]].default_name, name) == 0) return 1;
  }
  return 0;
}

/* Make default names unique (README, "Table names"): dimension groups
 * whose names joined by '_' are equal (a_b x c and a x b_c: a_b_c) are
 * each named by their dimensions joined by "__" (a_b__c, a__b_c); a name
 * still taken by a table earlier in table_order (the scalars table, a
 * dimension named "scalars", pathological underscores) gets "_2", "_3", ...
 * Then every table's name is its default name. */
static int name_tables(struct zr_dataset *ds, struct ql_error *error) {
  int32_t n = ds->n_tables;
  int32_t *order = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  uint8_t *clash = calloc((size_t)(n ? n : 1), 1);
  int rc = order && clash ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int32_t i = 0; rc == QL_OK && i < n; i++) {
    for (int32_t j = 0; j < n; j++) {
      if (j != i && ds->tables[i].ndim > 0 && ds->tables[j].ndim > 0 &&
          strcmp(ds->tables[i].default_name, ds->tables[j].default_name) == 0) {
        clash[i] = 1;
      }
    }
  }
  for (int32_t i = 0; rc == QL_OK && i < n; i++) {
    if (!clash[i]) continue;
    char *names[ZR_MAX_DIMS];
    for (int32_t k = 0; k < ds->tables[i].ndim; k++) names[k] = ds->dims[ds->tables[i].dims[k]].name;
    char *joined = join_dims(names, ds->tables[i].ndim, "__");
    if (!joined) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
    if (!joined) break;
    free(ds->tables[i].default_name);
    ds->tables[i].default_name = joined;
  }
  /* insertion sort: a store has few tables */
  for (int32_t i = 0; rc == QL_OK && i < n; i++) {
    int32_t k = i;
    order[k] = i;
    while (k > 0 && table_order(ds, &ds->tables[order[k - 1]], &ds->tables[i]) > 0) {
      order[k] = order[k - 1];
      order[--k] = i;
    }
  }
  for (int32_t i = 0; rc == QL_OK && i < n; i++) {
    struct zr_table *t = &ds->tables[order[i]];
    if (name_taken(ds, order, i, t->default_name)) {
      size_t len = strlen(t->default_name) + 24;
      char *unique = malloc(len);
      if (!unique) {
        rc = ql_error_set(error, QL_ENOMEM, "out of memory");
        break;
      }
      for (int32_t suffix = 2;; suffix++) {
        snprintf(unique, len, "%s_%d", t->default_name, (int)suffix);
        if (!name_taken(ds, order, i, unique)) break;
      }
      free(t->default_name);
      t->default_name = unique;
    }
  }
  for (int32_t i = 0; rc == QL_OK && i < n; i++) {
    ds->tables[i].name = strdup(ds->tables[i].default_name);
    if (!ds->tables[i].name) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  free(order);
  free(clash);
  return rc;
}

static int apply_renames(struct zr_dataset *ds, const char *renames, struct ql_error *error) {
  if (!renames || !renames[0]) return QL_OK;
  char *copy = strdup(renames);
  if (!copy) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int rc = QL_OK;
  char *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item && rc == QL_OK; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (!eq || eq == item || !eq[1]) {
      rc = ql_error_set(error, QL_EINVAL, "option 'tables': '%s' is not OLD=NEW", item);
      break;
    }
    *eq = '\0';
    int32_t found = -1;
    for (int32_t i = 0; i < ds->n_tables; i++) {
      if (strcmp(ds->tables[i].default_name, item) == 0) found = i;
    }
    if (found < 0) {
      char list[1024];
      rc = ql_error_set(error, QL_EINVAL, "option 'tables': %s has no table '%s' (tables: %s)",
                        ds->label, item, zr_dataset_table_list(ds, list, sizeof(list)));
      break;
    }
    char *name = strdup(eq + 1);
    if (!name) {
      rc = ql_error_set(error, QL_ENOMEM, "out of memory");
      break;
    }
    free(ds->tables[found].name);
    ds->tables[found].name = name;
  }
  free(copy);
  for (int32_t i = 0; rc == QL_OK && i < ds->n_tables; i++) {
    for (int32_t j = i + 1; j < ds->n_tables; j++) {
      if (strcmp(ds->tables[i].name, ds->tables[j].name) == 0) {
        rc = ql_error_set(error, QL_EINVAL, "option 'tables': two tables named '%s'", ds->tables[i].name);
        break;
      }
    }
  }
  return rc;
}

/* As xarray's _update_bounds_attributes: the bounds of a time variable
 * (named by its "bounds" attribute; CMIP's time_bnds) take its units and
 * calendar when they have none, so they decode to timestamps as it does.
 * The bounds' attributes are replaced by an amended copy. */
static int inherit_bounds_units(struct zr_group *g, struct ql_error *error) {
  for (int64_t k = 0; k < g->n_arrays; k++) {
    const json_t *attrs = g->arrays[k].attrs;
    json_t *units = json_object_get(attrs, "units"), *calendar = json_object_get(attrs, "calendar");
    const char *bounds = json_string_value(json_object_get(attrs, "bounds"));
    if (!json_is_string(units) || !strstr(json_string_value(units), "since") || !bounds) continue;
    for (int64_t j = 0; j < g->n_arrays; j++) {
      if (j == k || strcmp(g->arrays[j].name, bounds) != 0) continue;
      json_t *battrs = g->arrays[j].attrs;
      int need_units = json_object_get(battrs, "units") == NULL;
      int need_calendar = calendar && json_object_get(battrs, "calendar") == NULL;
      if (!need_units && !need_calendar) continue;
      json_t *copy = json_copy(battrs);
      if (!copy || (need_units && json_object_set(copy, "units", units) != 0) ||
          (need_calendar && json_object_set(copy, "calendar", calendar) != 0)) {
        if (copy) json_decref(copy);
        return ql_error_set(error, QL_ENOMEM, "out of memory");
      }
      json_decref(battrs);
      g->arrays[j].attrs = copy;
    }
  }
  return QL_OK;
}

int zr_dataset_build(struct zr_dataset *ds, const char *renames, struct ql_error *error) {
  if (ds->cf) QL_RETURN_NOT_OK(inherit_bounds_units(&ds->group, error));
  QL_RETURN_NOT_OK(collect_dims(ds, error));
  int64_t n = ds->group.n_arrays;
  /* used[k]: 0 data variable, 1 dimension coordinate, 2 other coordinate, 3 placed */
  uint8_t *used = calloc((size_t)(n ? n : 1), 1);
  if (!used) return ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int64_t k = 0; k < n; k++) {
    const struct zr_array *a = &ds->group.arrays[k];
    if (a->ndim == 1 && strcmp(a->name, a->dims[0]) == 0) {
      ds->dims[find_dim(ds, a->dims[0])].coord = (int32_t)k;
      used[k] = 1;
    } else if (is_coordinate(ds, a)) {
      used[k] = 2; /* a scalar one (no dimensions, a subset of any) joins every table */
    }
  }
  int rc = QL_OK;
  int scalars = 0; /* 0-d data variables (used 0, ndim 0): the scalars table, built last */
  for (int32_t i = 0; i < ds->n_dims && rc == QL_OK; i++) rc = load_dim_values(ds, &ds->dims[i], error);
  for (int64_t k = 0; k < n && rc == QL_OK; k++) {
    if (used[k] == 0 && ds->group.arrays[k].ndim == 0) scalars = 1;
    if (used[k] == 0 && ds->group.arrays[k].ndim > 0) rc = build_table(ds, &ds->group.arrays[k], used, error);
  }
  if (rc == QL_OK && ds->n_tables == 0) rc = build_coordinate_table(ds, used, error);
  if (rc == QL_OK && scalars) {
    struct zr_array proto;
    memset(&proto, 0, sizeof(proto));
    rc = build_table(ds, &proto, used, error);
  }
  free(used);
  if (rc == QL_OK) rc = name_tables(ds, error);
  if (rc == QL_OK) rc = apply_renames(ds, renames, error);
  return rc;
}

const char *zr_dataset_table_list(const struct zr_dataset *ds, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = '\0';
  for (int32_t i = 0; i < ds->n_tables && at < cap; i++) {
    const struct zr_table *t = &ds->tables[i];
    int w = snprintf(buf + at, cap - at, "%s%s (", i ? ", " : "", t->name);
    at += w > 0 ? (size_t)w : 0;
    for (int32_t k = 0; k < t->ndim && at < cap; k++) {
      w = snprintf(buf + at, cap - at, "%s%s", k ? " x " : "", ds->dims[t->dims[k]].name);
      at += w > 0 ? (size_t)w : 0;
    }
    if (at < cap) {
      w = snprintf(buf + at, cap - at, "%s)", t->ndim ? "" : "0-d variables");
      at += w > 0 ? (size_t)w : 0;
    }
  }
  if (at >= cap && cap > 4) strcpy(buf + cap - 4, "...");
  return buf;
}

int32_t zr_dataset_find_table(const struct zr_dataset *ds, const char *name) {
  if (!name || !name[0]) {
    int32_t best = -1;
    for (int32_t i = 0; i < ds->n_tables; i++) {
      if (best < 0 || ds->tables[i].n_rows > ds->tables[best].n_rows) best = i;
    }
    return best;
  }
  for (int32_t i = 0; i < ds->n_tables; i++) {
    if (strcmp(ds->tables[i].name, name) == 0) return i;
  }
  for (int32_t i = 0; i < ds->n_tables; i++) {
    if (strcmp(ds->tables[i].default_name, name) == 0) return i;
  }
  return -1;
}

/* ------------------------------------------------------------- schema */

static int consumed_attr(const char *key, const struct zr_decoder *d) {
  static const char *always[] = {"_FillValue", "missing_value", "scale_factor", "add_offset",
                                 "_ARRAY_DIMENSIONS", "coordinates", "_Unsigned"};
  for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++) {
    if (strcmp(key, always[i]) == 0) return 1;
  }
  if (strcmp(key, "dtype") == 0) return d->bool_from_int || d->cf_duration;
  if (strcmp(key, "_Encoding") == 0) return d->bytes_encoding != 0;
  if (strcmp(key, "units") == 0 || strcmp(key, "calendar") == 0) return d->cf_time || d->cf_duration;
  return 0;
}

/* An attribute's metadata value: a string as it is, any other JSON value
 * as compact JSON text whose numbers are the shortest that read back the
 * same (298.257223563, as Python and the metadata show it, not jansson's
 * 17 digits 298.25722356300003). malloc'd; NULL without memory. */
static char *attr_text(const json_t *v) {
  if (json_is_string(v)) return strdup(json_string_value(v));
  for (int p = 1; p <= 17; p++) {
    size_t flags = JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(p);
    char *text = json_dumps(v, flags);
    if (!text || p == 17) return text;
    json_t *back = json_loads(text, JSON_DECODE_ANY, NULL);
    int same = back && json_equal(back, (json_t *)v);
    json_decref(back);
    if (same) return text;
    free(text);
  }
  return NULL;
}

static int field_metadata(struct ArrowSchema *f, const json_t *attrs, const struct zr_decoder *d, int32_t cf,
                          struct ql_error *error) {
  size_t n = json_object_size(attrs);
  if (n == 0) return QL_OK;
  const char **keys = calloc(n, sizeof(char *));
  char **values = calloc(n, sizeof(char *));
  int64_t k = 0;
  int rc = keys && values ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)attrs, key, v) {
    if (rc != QL_OK) break;
    if (cf ? consumed_attr(key, d) : strcmp(key, "coordinates") == 0) continue;
    char *text = attr_text(v);
    if (!text) continue;
    keys[k] = key;
    values[k] = text;
    k++;
  }
  if (rc == QL_OK && k > 0) rc = ql_schema_set_metadata(f, k, keys, (const char *const *)values, error);
  for (int64_t i = 0; i < k; i++) free(values[i]);
  free(keys);
  free(values);
  return rc;
}

int zr_table_schema(const struct zr_dataset *ds, const struct zr_table *t, struct ArrowSchema *out,
                    struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_schema_init_struct(out, "", t->n_columns, error));
  for (int32_t i = 0; i < t->n_columns; i++) {
    const struct zr_column *c = &t->columns[i];
    int rc = ql_schema_init(out->children[i], c->dec.format, c->name, ARROW_FLAG_NULLABLE, error);
    if (rc == QL_OK && c->array >= 0) rc = field_metadata(out->children[i], ds->group.arrays[c->array].attrs, &c->dec, ds->cf, error);
    if (rc != QL_OK) {
      ql_schema_release(out);
      return rc;
    }
  }
  return QL_OK;
}
