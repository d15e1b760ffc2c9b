/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: the XQL table model over a Zarr group (an xarray Dataset).
 *
 * One table per set of data variables sharing the same dimensions (in
 * order). Columns: the dimensions first (values of the coordinate array
 * named like the dimension, or int64 positions 0..n-1 where there is none,
 * generated on the fly), then non-dimension coordinates whose dimensions are
 * a subset of the table's, then the data variables, each group sorted by
 * name. One row per
 * coordinate tuple. A table's default name is its dimension names joined by
 * '_' (made unique by name_tables in model.c: README "Table names"); the
 * `tables` option ("time_lat_lon=era5,lat_lon=static") renames. The 0-d
 * data variables (a station's elevation, a `crs` grid mapping) make one
 * one-row table, ZR_SCALARS_TABLE, with the scalar coordinates first.
 *
 * Ownership: a zr_dataset is reference-counted (zr_dataset_ref/unref) and
 * immutable once opened, so providers, plans and streams share it across
 * threads.
 */
#ifndef QLINK_ZARR_MODEL_H
#define QLINK_ZARR_MODEL_H

#include <stdatomic.h>
#include <string.h>

#include "qlink_zarr/array.h"
#include "qlink_zarr/cf.h"
#include "qlink_zarr/store.h"

enum zr_role { ZR_ROLE_DIM = 1, ZR_ROLE_COORD = 2, ZR_ROLE_VAR = 3 };

/* A dimension of the store. Its coordinate's elements are held as stored
 * (dtype bytes per position, decoded on demand by zr_dim_value); without a
 * coordinate its values are its positions 0..size-1 and nothing is held
 * per position (an observation store's `obs` dimension may have 1e9 of
 * them): raw is NULL. */
struct zr_dim {
  char *name;
  int64_t size;
  int32_t coord;    /* index into group.arrays of the dimension coordinate, or -1 */
  uint8_t *raw;     /* the coordinate's elements (native); NULL without coordinate */
  struct zr_heap heap; /* string bytes of a variable-length string coordinate */
  struct zr_decoder dec; /* the coordinate's decoder; int64 ("l") without coordinate */
  int32_t comparable;      /* values are numbers / ticks (not strings) */
  struct zr_colbuf text;   /* a string coordinate's values (utf8 or binary) decoded as the scan decodes its
                              column, for statistics; text.data NULL when not held (numbers, no coordinate, or
                              a value that does not decode) */
  int32_t has_nulls;       /* some value is NULL, or (strings not held) it is not known that none is */
  int32_t has_nan;
  int32_t direction;       /* values strictly increase (1), strictly decrease (-1), or neither /
                              not comparable as hosts compare them (0): the scan's output ordering */
  int32_t has_extremes;    /* min/max hold the extremes of the non-NULL values (comparable or text held,
                              some non-NULL value) */
  struct zr_value min, max; /* each the first of its value in position order, as a pass over them finds */
};

/* The order of statistics: a < b by a's kind (NaN is neither less nor
 * greater than anything; strings bytewise, a prefix first, as hosts order
 * utf8 and binary). */
static inline int zr_value_less(const struct zr_value *a, const struct zr_value *b) {
  if (a->kind == 1) return a->u < b->u;
  if (a->kind == 2) return a->f < b->f;
  if (a->kind == ZR_VALUE_BYTES) {
    int64_t n = a->len < b->len ? a->len : b->len;
    int c = n > 0 ? memcmp(a->s, b->s, (size_t)n) : 0;
    return c < 0 || (c == 0 && a->len < b->len);
  }
  return a->i < b->i;
}

/* 1 when dimension `d` has no coordinate: value == position. */
static inline int zr_dim_implicit(const struct zr_dim *d) { return d->coord < 0; }

/* The decoded value at position i (0 <= i < d->size) of a comparable
 * dimension: i itself without coordinate, else its coordinate element
 * decoded (every one decoded once at open, so this cannot fail). */
static inline struct zr_value zr_dim_value(const struct zr_dim *d, int64_t i) {
  struct zr_value v = {0, 0, i, 0, 0.0, NULL, 0};
  if (!zr_dim_implicit(d)) zr_decode_value(&d->dec, d->raw + i * d->dec.in.size, &v);
  return v;
}

/* 1 when dimension `d` has values statistics can order: numbers, or
 * strings held in d->text. */
static inline int zr_dim_ordered(const struct zr_dim *d) { return d->comparable || d->text.data != NULL; }

/* The value at position i of an ordered dimension: zr_dim_value's, or its
 * string (kind ZR_VALUE_BYTES, borrowed from d->text; is_null for NULL). */
static inline struct zr_value zr_dim_stat_value(const struct zr_dim *d, int64_t i) {
  if (!d->text.data) return zr_dim_value(d, i);
  struct zr_value v;
  memset(&v, 0, sizeof(v));
  v.kind = ZR_VALUE_BYTES;
  v.is_null = d->text.valid && !d->text.valid[i];
  v.s = d->text.data + d->text.offsets[i];
  v.len = d->text.offsets[i + 1] - d->text.offsets[i];
  return v;
}

/* Default name of the table of a store's 0-d data variables (ndim 0, one
 * row; only when the store has some). */
#define ZR_SCALARS_TABLE "scalars"

struct zr_column {
  char *name;
  int32_t role;  /* enum zr_role */
  int32_t dim;   /* ROLE_DIM: table dimension */
  int32_t array; /* index into group.arrays (-1 for a dimension without coordinate) */
  int32_t n_axes;
  int32_t axes[ZR_MAX_DIMS]; /* table dimension of each array axis */
  struct zr_decoder dec;
};

struct zr_table {
  char *name;         /* as exposed (after renaming) */
  char *default_name; /* dimension names joined by '_' (or "__", "_2" where they clash); ZR_SCALARS_TABLE */
  int32_t ndim;       /* 0: the scalars table */
  int32_t dims[ZR_MAX_DIMS]; /* indices into dataset.dims */
  int64_t n_rows;
  int64_t step[ZR_MAX_DIMS]; /* partition extent along each dimension: a common multiple of every chunk extent */
  int32_t n_columns;
  struct zr_column *columns;
};

/* Blocks smaller than this many rows are grown (whole multiples of the
 * chunk grid, innermost dimensions first): tiny chunks would otherwise
 * make tiny batches and a block per chunk. */
#define ZR_DEFAULT_BLOCK_ROWS 65536
/* Largest accepted block_rows option: 2^40 rows (a block of one-byte cells
 * would already be a terabyte); larger values are a typo, not a plan. */
#define ZR_MAX_BLOCK_ROWS ((int64_t)1 << 40)

/* Small arrays keep their chunks once decoded, for the life of the opened
 * dataset, as xarray's default `cache=True` keeps a variable it loaded: a
 * scan of a small store then costs no store round trip per chunk (which,
 * through a host's object store, costs more than decoding a small chunk).
 * An array is cached when its chunk grid holds at most ZR_CACHE_ARRAY_BYTES
 * decoded bytes and the dataset's cached arrays together stay within
 * ZR_CACHE_DATASET_BYTES; variable-length strings are not cached. Chunks
 * enter the cache as scans read them (a pruned scan caches only what it
 * read). A chunk rewritten in the store after it was cached is not seen
 * until the table is opened again, like the metadata and coordinates, which
 * are read once at open. */
#define ZR_CACHE_ARRAY_BYTES ((int64_t)1 << 20)
#define ZR_CACHE_DATASET_BYTES ((int64_t)16 << 20)

struct zr_chunk_cache {
  int64_t n_chunks;           /* read units (chunks; a sharded array's inner chunks, shard_read.h) in the
                                 array's grid; 0: the array is not cached */
  int64_t chunk_bytes;        /* decoded bytes of one read unit */
  _Atomic(uint8_t *) *chunks; /* per chunk (C order over the grid): its decoded elements once read, or NULL */
};

/* Read unit `idx` of a cached array (C order over its grid): copied
 * into `out` (chunk_bytes) and 1 when cached, else 0. Thread-safe. */
int zr_cache_get(struct zr_chunk_cache *cache, int64_t idx, uint8_t *out);
/* Cache a copy of read unit `idx` (the first copy stays; without memory
 * nothing is cached). Thread-safe. */
void zr_cache_put(struct zr_chunk_cache *cache, int64_t idx, const uint8_t *data);

struct zr_dataset;
struct zr_scratch;

/* Where a dataset's cells come from: the table model, the filters, the
 * statistics and the scan (scan.h) read every array through this, so they
 * serve a Zarr store (store_source.c: the object store and the codec
 * pipeline) and arrays in memory (plugins/ndarray) alike.
 *
 * read_box: the box [lo, lo + count) of group array `array` (rank
 * arrays[array].ndim; every count > 0 inside the shape) into `out`, C order
 * over count, native byte order, one element of the array's dtype per cell
 * (ZR_VLEN: {offset, length} pairs into `heap`, which then is non-NULL).
 * `scratch` (may be NULL) is the caller's reusable buffers. *chunks and
 * *bytes are incremented by the chunks used and the bytes fetched (the
 * scan's chunks_read / bytes_read). Errors name the dataset (ds->label),
 * the array and the problem. Called from any thread, concurrently.
 * borrow_box (may be NULL): the same box without a copy, when the source
 * holds its cells exactly as read_box would write them (fixed-size dtype,
 * native byte order, contiguous in C order over count, aligned for the
 * dtype): a pointer that stays valid and unchanged until the dataset is
 * released, with *chunks and *bytes incremented as read_box would; NULL
 * (nothing counted) when the box must be read. Never fails.
 * release: once, when the dataset is freed (may be NULL). ctx: the source's
 * own state. */
struct zr_chunk_source {
  int (*read_box)(const struct zr_dataset *ds, int64_t array, const int64_t *lo, const int64_t *count, uint8_t *out,
                  struct zr_heap *heap, struct zr_scratch *scratch, int64_t *chunks, int64_t *bytes,
                  struct ql_error *error);
  const uint8_t *(*borrow_box)(const struct zr_dataset *ds, int64_t array, const int64_t *lo, const int64_t *count,
                               int64_t *chunks, int64_t *bytes);
  void (*release)(struct zr_dataset *ds);
  void *ctx;
};

struct zr_dataset {
  atomic_int refs;
  int64_t min_block_rows; /* the `block_rows` option */
  struct zr_chunk_source source;
  char *label;            /* names the dataset in messages: "zarr store URL" (owned) */
  char *origin;           /* names it in EXPLAIN: "store=URL" (owned) */
  const char *plan_name;  /* the scan's plan name (static): "ZarrScanExec" */
  int32_t cf;             /* 1: cells decoded by CF rules from the attributes (cf.h); 0: served as stored,
                             every attribute (but `coordinates`) field metadata */
  int32_t nan_fill;       /* how float variables serve their NaN cells (enum zr_nan_fill; the
                             `nan_fill` option) */
  struct zr_store store;  /* the Zarr source's store (zeroed for other sources) */
  struct zr_group group;  /* the arrays: metadata, dimension names, attributes */
  int32_t n_dims;
  struct zr_dim *dims;
  int32_t n_tables;
  struct zr_table *tables;
  struct zr_chunk_cache *caches; /* the Zarr source's: per group array (group.n_arrays), or NULL */
};

/* How float variables serve their NaN cells (the `nan_fill` option):
 * - ZR_NAN_FILL_NULL: a CF-decoded variable whose _FillValue or
 *   missing_value is NaN (xarray writes `_FillValue: NaN` for every float
 *   variable) has its NaN cells NULL (cf.h); qlink_zarr's default;
 * - ZR_NAN_FILL_NAN: NaN stays NaN, the values xarray holds once it
 *   opened the store; other fill values mask as before;
 * - ZR_NAN_FILL_ALL: every NaN cell of every float variable is NULL, fill
 *   value or not: an xarray Dataset's missing values are NaN, and
 *   xarray-sql and pandas take them as missing (qlink_ndarray's default,
 *   its `null`; qlink.xarray's zarr route, for the same rows). */
enum zr_nan_fill { ZR_NAN_FILL_NULL = 0, ZR_NAN_FILL_NAN = 1, ZR_NAN_FILL_ALL = 2 };

/* A dataset with no arrays yet (refs 1, cf 1, nan_fill NULL, plan_name "ZarrScanExec"):
 * its creator fills group, source, label and origin, then calls
 * zr_dataset_build; on any failure zr_dataset_unref frees what is there
 * (source.release included). NULL without memory. */
struct zr_dataset *zr_dataset_alloc(int64_t min_block_rows);
/* Build the dimensions (reading every coordinate through the source) and
 * the tables from ds->group; `renames` as zr_dataset_open's. A dataset
 * with no table is not an error here (its creator says why). */
int zr_dataset_build(struct zr_dataset *ds, const char *renames, struct ql_error *error);
/* ds->source.read_box, for group array `array`. */
int zr_dataset_read_box(const struct zr_dataset *ds, int64_t array, const int64_t *lo, const int64_t *count,
                        uint8_t *out, struct zr_heap *heap, struct zr_scratch *scratch, int64_t *chunks,
                        int64_t *bytes, struct ql_error *error);
/* ds->source.borrow_box (NULL when the source has none). */
const uint8_t *zr_dataset_borrow_box(const struct zr_dataset *ds, int64_t array, const int64_t *lo,
                                     const int64_t *count, int64_t *chunks, int64_t *bytes);
/* The decoder of a column over array `a` of `ds`: zr_decoder_init when
 * ds->cf (less its NaN mask with ZR_NAN_FILL_NAN), else the element type's own values (no mask, no scaling, no CF
 * times; NaT is null); with ZR_NAN_FILL_ALL either way every NaN is null. */
int zr_column_decoder(const struct zr_dataset *ds, const struct zr_array *a, int32_t decode_times,
                      struct zr_decoder *out, struct ql_error *error);

/* Open the store at `url` through `registry`, read its metadata and
 * coordinates, build the tables. `renames` is the `tables` option or NULL;
 * `min_block_rows` (>= 1) the rows a block grows to at least (1: one block
 * per chunk of the common grid); `nan_fill` an enum zr_nan_fill. Errors
 * name the store, the array and the problem. */
int zr_dataset_open(const struct ql_object_store_registry *registry, const char *url, const char *renames,
                    int64_t min_block_rows, int32_t nan_fill, struct zr_dataset **out, struct ql_error *error);
struct zr_dataset *zr_dataset_ref(struct zr_dataset *ds);
void zr_dataset_unref(struct zr_dataset *ds);

/* The table named `name` (new or default name); NULL name: the only table,
 * or the one with most rows. -1 if absent. */
int32_t zr_dataset_find_table(const struct zr_dataset *ds, const char *name);

/* "name (dim x dim), ..., scalars (0-d variables)" for messages, into buf
 * (cap > 4; cut with "..." when it does not fit). Returns buf. */
const char *zr_dataset_table_list(const struct zr_dataset *ds, char *buf, size_t cap);

/* Read and decode one whole chunk of array `a` at grid position `chunk`
 * into `out` (prod(a->chunks) elements): a chunk that was never written
 * reads as the fill value. *bytes_read receives the stored size. `stored`
 * (may be NULL) receives the stored bytes when the store can read into a
 * caller's buffer (zr_store_read). */
int zr_read_chunk(const struct zr_store *store, const struct zr_array *a, const int64_t *chunk, uint8_t *out,
                  struct zr_heap *heap, struct zr_readbuf *stored, int64_t *bytes_read, struct ql_error *error);

/* Reusable buffers of a reader (its owner frees them with
 * zr_scratch_free): `data` decodes chunks that only partly fall in a box,
 * `stored` receives each chunk's stored bytes. Reusing them keeps a scan
 * from mapping, faulting in and unmapping fresh chunk-sized buffers per
 * chunk. */
struct zr_scratch {
  uint8_t *data;
  size_t cap;
  struct zr_readbuf stored;
};
void zr_scratch_free(struct zr_scratch *scratch);

/* Read the box [lo, lo+count) of array `a` into `out` (C order over count),
 * chunk by chunk. *chunks (chunks used) and *bytes (bytes fetched from the
 * store: 0 for a chunk served by `cache`) are incremented. Variable-length
 * strings go to `heap` (NULL for other types). `scratch` (may be NULL:
 * buffers per call) holds chunks that only partly fall in the box and the
 * stored bytes of every chunk read. `cache`
 * (may be NULL) is the array's chunk cache: chunks are served from it and
 * added to it; thread-safe. */
int zr_read_box(const struct zr_store *store, const struct zr_array *a, struct zr_chunk_cache *cache,
                const int64_t *lo, const int64_t *count, uint8_t *out, struct zr_heap *heap,
                struct zr_scratch *scratch, int64_t *chunks, int64_t *bytes, struct ql_error *error);

/* Arrow schema of table `t` (a struct), with CF attributes as field
 * metadata. */
int zr_table_schema(const struct zr_dataset *ds, const struct zr_table *t, struct ArrowSchema *out,
                    struct ql_error *error);

#endif /* QLINK_ZARR_MODEL_H */
