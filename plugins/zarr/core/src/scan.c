/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: ZarrScanExec and its partition streams. See scan.h. */
#include "scan.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/ndcopy.h"

/* A partition's decoded box of one array, reference-counted so record
 * batches can point into it (zero-copy value columns): the stream holds one
 * reference, every Arrow array viewing it another. The last release returns
 * it to its scan's pool. */
struct zr_block {
  atomic_int refs;
  struct zr_scan *scan; /* a reference */
  size_t cap;           /* bytes of buf */
  uint8_t *buf;         /* owned storage; NULL for a borrowed block */
  const uint8_t *data;  /* the cells: buf, or the source's own memory (borrow_box, model.h), which the
                           scan's reference keeps alive */
};

/* Decoded boxes kept for the next block, so a scan does not map and unmap
 * (and page-fault) megabytes per chunk. */
#define ZR_POOL_SIZE 8

/* What the plan and its streams share.
 *
 * The table's block grid (extents t->step) is pruned per dimension: a block
 * is kept when each of its dimension ranges holds a selected position, so
 * the kept blocks are a grid too (n_kept[k] blocks along dimension k, their
 * indices in kept[k]), numbered in C order. Partition p reads the kept
 * blocks [part_first[p], part_first[p + 1]) one after the other. Nothing is
 * stored per block, so tiny chunks cost planning time and memory in
 * proportion to the dimensions' lengths, not to the number of blocks. */
struct zr_scan {
  atomic_int refs;
  struct zr_dataset *ds;
  int32_t table;
  int32_t n_proj;
  int32_t *proj; /* column indices into the table */
  struct zr_selection sel;
  int64_t limit;
  int64_t n_blocks; /* before pruning */
  int64_t n_kept[ZR_MAX_DIMS];
  int64_t *kept[ZR_MAX_DIMS];
  int64_t n_kept_blocks;
  int64_t n_parts; /* 0 when every block is pruned (one empty partition is reported) */
  int64_t *part_first;
  char *display;
  int64_t n_ordering; /* the rows' order within each partition (plan_ordering) */
  struct ql_sort_key ordering[ZR_MAX_DIMS];
  atomic_llong output_rows, chunks_read, bytes_read, elapsed_ns, blocks_read;
  pthread_mutex_t pool_lock;
  int32_t n_pool;
  struct zr_block *pool[ZR_POOL_SIZE];
  /* Statistics, computed once per partition argument and kept (a plan's
   * statistics never change, and an optimizer asks for them again and
   * again): slot 0 is the whole scan (-1), slot p + 1 partition p, or one
   * slot for a scan of one partition (its statistics are the whole scan's).
   * Under stats_lock; stats_computed counts the computations (a metric). */
  pthread_mutex_t stats_lock;
  struct zr_stats_acc *stats_acc; /* allocated on first use */
  uint8_t *stats_done;
  int64_t stats_limit_rows; /* slot 0 under a limit: the sum of each partition's capped rows */
  atomic_llong stats_computed;
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct zr_scan *scan_ref(struct zr_scan *s) {
  atomic_fetch_add(&s->refs, 1);
  return s;
}

static void scan_unref(struct zr_scan *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (int32_t i = 0; i < s->n_pool; i++) {
    free(s->pool[i]->buf);
    free(s->pool[i]);
  }
  pthread_mutex_destroy(&s->pool_lock);
  pthread_mutex_destroy(&s->stats_lock);
  free(s->stats_acc);
  free(s->stats_done);
  zr_selection_free(&s->sel);
  for (int32_t k = 0; k < ZR_MAX_DIMS; k++) free(s->kept[k]);
  free(s->part_first);
  free(s->proj);
  free(s->display);
  zr_dataset_unref(s->ds);
  free(s);
}

static const struct zr_table *scan_table(const struct zr_scan *s) { return &s->ds->tables[s->table]; }

/* The box [start, start + count) of kept block `idx` (C order over the kept
 * grid). */
static void kept_block_box(const struct zr_scan *s, int64_t idx, int64_t *start, int64_t *count) {
  const struct zr_table *t = scan_table(s);
  for (int32_t k = t->ndim - 1; k >= 0; k--) {
    int64_t b = s->kept[k][idx % s->n_kept[k]];
    idx /= s->n_kept[k];
    int64_t size = s->ds->dims[t->dims[k]].size;
    start[k] = b * t->step[k];
    count[k] = start[k] + t->step[k] <= size ? t->step[k] : size - start[k];
  }
}

/* A block of at least `size` bytes (contents undefined), from the pool when
 * one fits (the smallest that does, so small requests leave the big blocks
 * to big ones); NULL when out of memory. */
static struct zr_block *block_acquire(struct zr_scan *s, size_t size) {
  struct zr_block *b = NULL;
  pthread_mutex_lock(&s->pool_lock);
  int32_t best = -1;
  for (int32_t i = 0; i < s->n_pool; i++) {
    if (s->pool[i]->cap >= size && (best < 0 || s->pool[i]->cap < s->pool[best]->cap)) best = i;
  }
  if (best >= 0) {
    b = s->pool[best];
    s->pool[best] = s->pool[--s->n_pool];
  }
  pthread_mutex_unlock(&s->pool_lock);
  if (!b) {
    b = calloc(1, sizeof(*b));
    if (!b) return NULL;
    b->buf = malloc(size + 1);
    if (!b->buf) {
      free(b);
      return NULL;
    }
    b->cap = size;
  }
  b->data = b->buf;
  atomic_init(&b->refs, 1);
  b->scan = scan_ref(s);
  return b;
}

/* A block over cells the source holds (no copy); NULL when out of memory. */
static struct zr_block *block_borrow(struct zr_scan *s, const uint8_t *cells) {
  struct zr_block *b = calloc(1, sizeof(*b));
  if (!b) return NULL;
  b->data = cells;
  atomic_init(&b->refs, 1);
  b->scan = scan_ref(s);
  return b;
}

/* Back to the pool; when it is full, the smallest block makes room (edge
 * blocks are smaller than the rest and would fit fewer requests). */
static void block_unref(struct zr_block *b) {
  if (!b || atomic_fetch_sub(&b->refs, 1) != 1) return;
  struct zr_scan *s = b->scan;
  b->scan = NULL;
  if (!b->buf) {
    free(b);
    scan_unref(s);
    return;
  }
  struct zr_block *drop = b;
  pthread_mutex_lock(&s->pool_lock);
  if (s->n_pool < ZR_POOL_SIZE) {
    s->pool[s->n_pool++] = b;
    drop = NULL;
  } else {
    int32_t smallest = 0;
    for (int32_t i = 1; i < s->n_pool; i++) {
      if (s->pool[i]->cap < s->pool[smallest]->cap) smallest = i;
    }
    if (s->pool[smallest]->cap < b->cap) {
      drop = s->pool[smallest];
      s->pool[smallest] = b;
    }
  }
  pthread_mutex_unlock(&s->pool_lock);
  if (drop) {
    free(drop->buf);
    free(drop);
  }
  scan_unref(s);
}

/* ------------------------------------------------------------- stream */

/* One partition's stream: its kept blocks in turn, each decoded whole
 * (the projected arrays' boxes), then cut into batches that never cross a
 * block. */
struct zr_stream {
  struct zr_scan *scan;
  const struct ql_task_context *ctx;
  int64_t next_block, end_block; /* kept blocks still to read */
  int64_t remaining;             /* rows the limit still allows; -1: no limit */
  int loaded;                    /* a block is loaded */
  int failed;                    /* a call failed: every later call fails with last_error */
  int64_t start[ZR_MAX_DIMS], count[ZR_MAX_DIMS]; /* its box */
  int64_t *sel[ZR_MAX_DIMS]; /* selected absolute positions per dimension (capacity: the block extent) */
  int64_t nsel[ZR_MAX_DIMS];
  int64_t lo[ZR_MAX_DIMS], extent[ZR_MAX_DIMS]; /* bounding box of the selection */
  struct zr_block **blocks;                     /* per projected column: its box, or NULL */
  uint8_t *zero_copy;                           /* per projected column: batches view its block */
  int64_t period[ZR_MAX_DIMS];                  /* rows per step of each dimension (C order) */
  struct zr_heap *heaps;                        /* per projected column: its strings (vlen) */
  int64_t (*strides)[ZR_MAX_DIMS];              /* element strides of each block's axes */
  int64_t emitted, total;                       /* rows of the loaded block */
  struct zr_scratch scratch;                    /* chunks partly in the box; every chunk's stored bytes */
  struct zr_block **patterns;                   /* per projected dimension column: its repeating values, or NULL */
  int64_t (*pattern_key)[4];                    /* block start, count, row period and rows of each pattern */
  uint8_t *pattern_off;                         /* per projected column: its values hold nulls (no pattern) */
  struct ql_memory_reservation reservation;     /* the loaded blocks, counted against the host's pool */
  char *last_error;
};

static void stream_set_error(struct zr_stream *st, struct ql_error *err) {
  free(st->last_error);
  st->last_error = strdup(ql_error_message(err)[0] ? ql_error_message(err) : "scan failed");
}

/* Bytes of the boxes (and one chunk buffer per array) a loaded block
 * holds, and the stream's buffer of stored chunk bytes. */
static int64_t block_bytes(const struct zr_stream *st) {
  const struct zr_scan *s = st->scan;
  const struct zr_table *t = scan_table(s);
  int64_t total = 0;
  for (int32_t j = 0; j < s->n_proj; j++) {
    const struct zr_column *c = &t->columns[s->proj[j]];
    if (c->role == ZR_ROLE_DIM) continue;
    const struct zr_array *a = &s->ds->group.arrays[c->array];
    int64_t n = a->dtype.size;
    for (int32_t ax = 0; ax < c->n_axes; ax++) n *= st->extent[c->axes[ax]];
    total += n + zr_product(a->chunks, a->ndim) * a->dtype.size;
  }
  return total + st->scratch.stored.cap;
}

/* Count the loaded block's memory against the host's memory pool (gap G5),
 * so a session memory limit applies to Zarr scans too: the reservation
 * follows the block size as blocks come and go. */
static int reserve_blocks(struct zr_stream *st, struct ql_error *error) {
  const struct ql_task_context *ctx = st->ctx;
  const struct ql_memory_pool *pool = ctx && ctx->runtime_env ? ctx->runtime_env->memory_pool : NULL;
  if (!pool || !pool->reservation_new) return QL_OK;
  if (!st->reservation.release) {
    char name[64];
    snprintf(name, sizeof(name), "%s[%lld]", st->scan->ds->plan_name, (long long)ctx->partition);
    QL_RETURN_NOT_OK(pool->reservation_new(pool, name, 0, &st->reservation, error));
  }
  int64_t want = block_bytes(st), held = st->reservation.size(&st->reservation);
  if (want <= held) {
    st->reservation.shrink(&st->reservation, held - want);
    return QL_OK;
  }
  int rc = st->reservation.try_grow(&st->reservation, want - held, error);
  if (rc != QL_OK) {
    /* The floor of a Zarr scan's memory: say what it is and what helps
     * before the host's own account of the pool. */
    char size[32];
    if (want < (1 << 20)) {
      snprintf(size, sizeof(size), "%lld bytes", (long long)want);
    } else {
      snprintf(size, sizeof(size), "%.1f MiB", (double)want / (1024.0 * 1024.0));
    }
    ql_error_prefix(error,
                    "%s: partition %lld: its chunk block needs %s, beyond the memory limit (each "
                    "running partition holds one decoded block: raise the limit, or lower "
                    QL_CONFIG_TARGET_PARTITIONS ")",
                    st->scan->ds->label, (long long)ctx->partition, size);
  }
  return rc;
}

/* Can batches of column `c` point into its block? When its decoded cells
 * are the stored bytes (float32 / float64 fill values masked by the validity bitmap
 * alone: a null slot then holds the fill value, not 0) and the block's C
 * order is the rows' order: the
 * array spans every table dimension in order and the selection has no gaps
 * (the block is then exactly the partition's rows). */
static int column_is_zero_copy(const struct zr_stream *st, const struct zr_column *c) {
  const struct zr_table *t = scan_table(st->scan);
  if (!(zr_decoder_is_identity(&c->dec) || zr_decoder_is_masked_f32(&c->dec) || zr_decoder_is_masked_f64(&c->dec)) ||
      c->n_axes != t->ndim) {
    return 0;
  }
  for (int32_t ax = 0; ax < c->n_axes; ax++) {
    if (c->axes[ax] != ax || st->nsel[ax] != st->extent[ax]) return 0;
  }
  return 1;
}

/* Drop the loaded block (batches viewing it keep its boxes alive). */
static void stream_unload(struct zr_stream *st) {
  if (!st->loaded) return;
  st->loaded = 0;
  for (int32_t j = 0; j < st->scan->n_proj; j++) {
    block_unref(st->blocks[j]);
    st->blocks[j] = NULL;
    zr_heap_free(&st->heaps[j]);
    memset(&st->heaps[j], 0, sizeof(st->heaps[j]));
  }
}

/* The per-stream buffers, sized for the largest block. */
static int stream_alloc(struct zr_stream *st, struct ql_error *error) {
  const struct zr_scan *s = st->scan;
  const struct zr_table *t = scan_table(s);
  for (int32_t k = 0; k < t->ndim; k++) {
    st->sel[k] = malloc(sizeof(int64_t) * (size_t)(t->step[k] > 0 ? t->step[k] : 1));
    if (!st->sel[k]) return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  size_t n = (size_t)(s->n_proj ? s->n_proj : 1);
  st->blocks = calloc(n, sizeof(*st->blocks));
  st->zero_copy = calloc(n, 1);
  st->strides = calloc(n, sizeof(*st->strides));
  st->heaps = calloc(n, sizeof(*st->heaps));
  st->patterns = calloc(n, sizeof(*st->patterns));
  st->pattern_key = calloc(n, sizeof(*st->pattern_key));
  st->pattern_off = calloc(n, 1);
  if (!st->blocks || !st->zero_copy || !st->strides || !st->heaps || !st->patterns || !st->pattern_key ||
      !st->pattern_off) {
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  return QL_OK;
}

/* Decode kept block `idx`: the projected arrays' boxes around its selected
 * positions. */
static int stream_load(struct zr_stream *st, int64_t idx, struct ql_error *error) {
  const struct zr_scan *s = st->scan;
  const struct zr_table *t = scan_table(s);
  kept_block_box(s, idx, st->start, st->count);
  st->loaded = 1;
  st->emitted = 0;
  st->total = 1;
  for (int32_t k = 0; k < t->ndim; k++) {
    int64_t n = 0, lo, hi, end = st->start[k] + st->count[k];
    for (int64_t at = st->start[k]; zr_selection_run(&s->sel, k, at, end, &lo, &hi); at = hi) {
      for (int64_t i = lo; i < hi; i++) st->sel[k][n++] = i;
    }
    st->nsel[k] = n;
    st->lo[k] = n ? st->sel[k][0] : 0;
    st->extent[k] = n ? st->sel[k][n - 1] - st->sel[k][0] + 1 : 0;
    st->total *= n;
  }
  /* A limit that ends inside this block needs only its first rows, a
   * prefix along the outermost dimension (rows are in C order): the read
   * box shrinks to the positions those rows use, so LIMIT 3 over a block of
   * thousands of tiny chunks reads one or a few of them. */
  if (st->remaining > 0 && st->remaining < st->total && t->ndim > 0) {
    int64_t inner = st->total / st->nsel[0];
    int64_t need = (st->remaining + inner - 1) / inner;
    if (need < st->nsel[0]) {
      st->nsel[0] = need;
      st->extent[0] = st->sel[0][need - 1] - st->sel[0][0] + 1;
      st->total = need * inner;
    }
  }
  if (st->remaining >= 0 && st->remaining < st->total) st->total = st->remaining;
  int64_t period = 1;
  for (int32_t k = t->ndim - 1; k >= 0; k--) {
    st->period[k] = period;
    period *= st->nsel[k];
  }
  if (st->total == 0) return QL_OK;
  QL_RETURN_NOT_OK(reserve_blocks(st, error));
  atomic_fetch_add(&st->scan->blocks_read, 1);
  for (int32_t j = 0; j < s->n_proj; j++) {
    const struct zr_column *c = &t->columns[s->proj[j]];
    if (c->role == ZR_ROLE_DIM) continue;
    const struct zr_array *a = &s->ds->group.arrays[c->array];
    int64_t lo[ZR_MAX_DIMS], count[ZR_MAX_DIMS];
    for (int32_t ax = 0; ax < c->n_axes; ax++) {
      lo[ax] = st->lo[c->axes[ax]];
      count[ax] = st->extent[c->axes[ax]];
    }
    int64_t n = zr_product(count, c->n_axes);
    if (n < 0 || n > ((int64_t)1 << 34) / a->dtype.size) {
      return ql_error_set(error, QL_ERESOURCES, "%s: array '%s': partition block too large",
                          s->ds->label, a->name);
    }
    int64_t stride = 1;
    for (int32_t ax = c->n_axes - 1; ax >= 0; ax--) {
      st->strides[j][ax] = stride;
      stride *= count[ax];
    }
    int64_t chunks = 0, bytes = 0;
    st->zero_copy[j] = (uint8_t)column_is_zero_copy(st, c);
    const uint8_t *cells = zr_dataset_borrow_box(s->ds, c->array, lo, count, &chunks, &bytes);
    st->blocks[j] = cells ? block_borrow(st->scan, cells) : block_acquire(st->scan, (size_t)(n * a->dtype.size));
    if (!st->blocks[j]) return ql_error_set(error, QL_ENOMEM, "out of memory reading array '%s'", a->name);
    int rc = cells ? QL_OK
                   : zr_dataset_read_box(s->ds, c->array, lo, count, st->blocks[j]->buf, &st->heaps[j],
                                         &st->scratch, &chunks, &bytes, error);
    atomic_fetch_add(&st->scan->chunks_read, chunks);
    atomic_fetch_add(&st->scan->bytes_read, bytes);
    if (rc != QL_OK) return rc;
  }
  return QL_OK;
}

/* The Arrow array of a zero-copy column: its data buffer points into the
 * block, which the array keeps alive. */
struct zr_view {
  struct zr_block *block;
  uint8_t *validity; /* owned; NULL when no cell is null */
  const void *buffers[2];
};

static void view_release(struct ArrowArray *a) {
  if (!a->release) return;
  struct zr_view *v = a->private_data;
  block_unref(v->block);
  free(v->validity);
  free(v);
  a->release = NULL;
}

static int view_init(struct zr_block *block, const struct zr_decoder *dec, const uint8_t *data, int64_t n,
                     struct ArrowArray *out, struct ql_error *error) {
  struct zr_view *v = calloc(1, sizeof(*v));
  if (!v) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int64_t nulls = 0;
  /* Most batches of a NaN-filled variable hold no missing cell: a quick
   * pass finds that without building (and then dropping) a bitmap. */
  int any = dec && dec->n_mask &&
            (dec->in.size == 8 ? zr_mask_any_f64(dec, (const double *)(const void *)data, n)
                               : zr_mask_any_f32(dec, (const float *)(const void *)data, n));
  if (any) {
    v->validity = malloc((size_t)((n + 7) / 8) + 1);
    if (!v->validity) {
      free(v);
      return ql_error_set(error, QL_ENOMEM, "out of memory");
    }
    nulls = dec->in.size == 8 ? zr_mask_bitmap_f64(dec, (const double *)(const void *)data, n, v->validity)
                              : zr_mask_bitmap_f32(dec, (const float *)(const void *)data, n, v->validity);
    if (nulls == 0) {
      free(v->validity);
      v->validity = NULL;
    }
  }
  atomic_fetch_add(&block->refs, 1);
  v->block = block;
  v->buffers[0] = v->validity;
  v->buffers[1] = data;
  memset(out, 0, sizeof(*out));
  out->length = n;
  out->null_count = nulls;
  out->n_buffers = 2;
  out->buffers = v->buffers;
  out->release = view_release;
  out->private_data = v;
  return QL_OK;
}

/* Rows [row0, row0 + n) of the partition: index of each row's position
 * along dimension k into sel[k]. */
static void dim_offsets(const struct zr_stream *st, int32_t k, int64_t row0, int64_t n, int64_t *offs) {
  int64_t p = st->period[k], ns = st->nsel[k];
  int64_t i = (row0 / p) % ns, within = row0 % p;
  const int64_t *sel = st->sel[k];
  if (p == 1) {
    for (int64_t r = 0; r < n; r++) {
      offs[r] = sel[i];
      if (++i == ns) i = 0;
    }
    return;
  }
  for (int64_t r = 0; r < n; r++) {
    offs[r] = sel[i];
    if (++within == p) {
      within = 0;
      if (++i == ns) i = 0;
    }
  }
}

/* A dimension column: runs of `period` equal values, each decoded once. */
static int fill_dim_runs(const struct zr_stream *st, const struct zr_column *c, const uint8_t *raw, int64_t row0,
                         int64_t n, struct zr_colbuf *b) {
  int32_t k = c->dim;
  int64_t p = st->period[k], ns = st->nsel[k];
  int64_t size = c->dec.in.size;
  int64_t r = 0;
  while (r < n) {
    int64_t g = row0 + r;
    int64_t run = p - g % p;
    if (run > n - r) run = n - r;
    QL_RETURN_NOT_OK(zr_colbuf_append_repeat(b, &c->dec, raw + st->sel[k][(g / p) % ns] * size, run));
    r += run;
  }
  return QL_OK;
}

/* Dimension columns repeat: the values of dimension k cycle every
 * period[k] * nsel[k] rows of a block. When that cycle is short, its
 * decoded values (plus one batch more, so any batch is a window of it) are
 * built once and every batch of the column is a zero-copy view into them;
 * blocks with the same positions along k (every block of a table chunked
 * only along time, say) share one pattern. */
#define ZR_PATTERN_MAX_ROWS ((int64_t)1 << 17)

static int64_t pattern_cycle(const struct zr_stream *st, int32_t k) { return st->period[k] * st->nsel[k]; }

static int pattern_applies(const struct zr_stream *st, const struct zr_column *c) {
  if (c->role != ZR_ROLE_DIM || c->dec.in.type == ZR_VLEN || c->dec.out == ZR_OUT_BOOL) return 0;
  if (c->array < 0) return 0; /* positions: written straight into each batch (fill_positions) */
  if (c->dec.out == ZR_OUT_UTF8 || c->dec.out == ZR_OUT_BINARY) return 0;
  int64_t cycle = pattern_cycle(st, c->dim);
  return cycle > 0 && cycle <= ZR_PATTERN_MAX_ROWS;
}

/* The pattern of projected dimension column j for the loaded block, long
 * enough for a window of `window` rows (a batch) from any point of the
 * cycle; built if the block's positions differ from the last one's or the
 * pattern is too short. Its length is bounded by the block's rows, not the
 * host's batch size (which may be huge). NULL (with QL_OK) when the values
 * hold nulls (the column is then built batch by batch). */
static int pattern_get(struct zr_stream *st, int32_t j, const struct zr_column *c, int64_t window,
                       struct zr_block **out) {
  if (st->pattern_off[j]) {
    *out = NULL;
    return QL_OK;
  }
  int32_t k = c->dim;
  int64_t cycle = pattern_cycle(st, k);
  int64_t key[3] = {st->start[k], st->count[k], st->period[k]};
  if (st->patterns[j] && memcmp(st->pattern_key[j], key, sizeof(key)) == 0 && st->pattern_key[j][3] >= cycle + window) {
    *out = st->patterns[j];
    return QL_OK;
  }
  block_unref(st->patterns[j]);
  st->patterns[j] = NULL;
  *out = NULL;
  int64_t rows = cycle + window;
  /* Each selected position decoded once; the pattern repeats it `period`
   * times in turn, cycle after cycle, by copying (a per-row decode cost
   * more than the rest of a small scan). */
  int64_t ns = st->nsel[k], period = st->period[k];
  struct zr_colbuf b;
  if (zr_colbuf_init(&b, c->dec.out, ns) != QL_OK) return QL_ENOMEM;
  const struct zr_dim *d = &st->scan->ds->dims[scan_table(st->scan)->dims[k]];
  int rc = QL_OK;
  for (int64_t i = 0; i < ns && rc == QL_OK; i++) rc = zr_colbuf_append(&b, &c->dec, d->raw + st->sel[k][i] * c->dec.in.size);
  if (rc == QL_OK && b.valid) st->pattern_off[j] = 1; /* null coordinates: batch by batch from now on */
  if (rc == QL_OK && !b.valid) {
    size_t w = (size_t)b.width;
    struct zr_block *p = block_acquire(st->scan, (size_t)rows * w);
    if (!p) {
      rc = QL_ENOMEM;
    } else {
      /* one cycle: every value `period` times (doubling copies), then the cycle repeated */
      uint8_t *o = p->buf;
      for (int64_t i = 0; i < ns; i++) {
        uint8_t *run = o + (size_t)(i * period) * w;
        memcpy(run, b.data + (size_t)i * w, w);
        for (int64_t done = 1; done < period;) {
          int64_t more = done < period - done ? done : period - done;
          memcpy(run + (size_t)done * w, run, (size_t)more * w);
          done += more;
        }
      }
      for (int64_t done = cycle; done < rows;) {
        int64_t more = done < rows - done ? done : rows - done;
        memcpy(o + (size_t)done * w, o, (size_t)more * w);
        done += more;
      }
      st->patterns[j] = p;
      memcpy(st->pattern_key[j], key, sizeof(key));
      st->pattern_key[j][3] = rows;
      *out = p;
    }
  }
  zr_colbuf_free(&b);
  return rc;
}

static int column_error(const struct zr_scan *s, const struct zr_column *c, int arc, struct ql_error *error) {
  return ql_error_set(error, arc, "%s: column '%s': %s", s->ds->label, c->name,
                      arc == QL_EOVERFLOW ? "a time value does not fit timestamp[ns] (or an offset overflows)"
                      : arc == QL_EDATA   ? "invalid string (not UTF-8 / UTF-32)"
                                          : "out of memory");
}

/* The column of a dimension without coordinate (int64, never null): its
 * values are the rows' positions along it, generated, not read. */
static int fill_positions(const struct zr_stream *st, int32_t k, int64_t row0, int64_t n, struct ArrowArray *out,
                          struct ql_error *error) {
  int64_t *values = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!values) return ql_error_set(error, QL_ENOMEM, "out of memory");
  dim_offsets(st, k, row0, n, values);
  return ql_array_init_fixed(out, n, 0, NULL, values, error);
}

static int fill_batch(struct zr_stream *st, int64_t n, struct ArrowArray *out, struct ql_error *error) {
  const struct zr_scan *s = st->scan;
  const struct zr_table *t = scan_table(s);
  int32_t nd = t->ndim;
  int64_t row0 = st->emitted;
  int64_t *idx = NULL; /* per row, its position per dimension (gathered value columns only) */
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!offs) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int rc = ql_array_init_struct(out, n, s->n_proj, error);
  for (int32_t j = 0; rc == QL_OK && j < s->n_proj; j++) {
    const struct zr_column *c = &t->columns[s->proj[j]];
    if (c->role != ZR_ROLE_DIM && st->zero_copy[j]) {
      rc = view_init(st->blocks[j], &c->dec, st->blocks[j]->data + row0 * c->dec.in.size, n, out->children[j], error);
      continue;
    }
    if (c->role == ZR_ROLE_DIM && c->array < 0) {
      rc = fill_positions(st, c->dim, row0, n, out->children[j], error);
      continue;
    }
    struct zr_colbuf b;
    if (zr_colbuf_init(&b, c->dec.out, n) != QL_OK) {
      rc = ql_error_set(error, QL_ENOMEM, "out of memory");
      break;
    }
    int arc;
    if (pattern_applies(st, c)) {
      int64_t batch = st->ctx && st->ctx->batch_size > 0 ? st->ctx->batch_size : 8192;
      struct zr_block *pattern = NULL;
      /* a full batch, or the whole block when it is smaller (never more rows than the block holds) */
      int64_t window = batch < st->total ? batch : st->total;
      arc = pattern_get(st, j, c, window > n ? window : n, &pattern);
      if (arc == QL_OK && pattern) {
        zr_colbuf_free(&b);
        int64_t at = row0 % pattern_cycle(st, c->dim);
        rc = view_init(pattern, NULL, pattern->data + at * zr_out_width(c->dec.out), n, out->children[j], error);
        continue;
      }
    }
    if (c->role == ZR_ROLE_DIM) {
      const struct zr_dim *d = &s->ds->dims[t->dims[c->dim]];
      if (c->dec.in.type != ZR_VLEN && st->period[c->dim] >= 4) {
        arc = fill_dim_runs(st, c, d->raw, row0, n, &b);
      } else {
        dim_offsets(st, c->dim, row0, n, offs);
        arc = c->dec.in.type == ZR_VLEN ? zr_colbuf_append_vlen(&b, &d->heap, d->raw, offs, n)
                                        : zr_colbuf_append_many(&b, &c->dec, d->raw, offs, n);
      }
    } else {
      if (!idx) {
        idx = malloc(sizeof(int64_t) * (size_t)(n * (nd ? nd : 1)));
        if (!idx) {
          zr_colbuf_free(&b);
          rc = ql_error_set(error, QL_ENOMEM, "out of memory");
          break;
        }
        for (int32_t k = 0; k < nd; k++) {
          dim_offsets(st, k, row0, n, offs);
          for (int64_t r = 0; r < n; r++) idx[r * nd + k] = offs[r];
        }
      }
      const uint8_t *base = st->blocks[j]->data;
      int64_t origin = 0;
      for (int32_t ax = 0; ax < c->n_axes; ax++) origin += st->lo[c->axes[ax]] * st->strides[j][ax];
      for (int64_t r = 0; r < n; r++) {
        int64_t off = -origin;
        const int64_t *ri = idx + r * nd;
        for (int32_t ax = 0; ax < c->n_axes; ax++) off += ri[c->axes[ax]] * st->strides[j][ax];
        offs[r] = off;
      }
      /* a variable's strings equal to its v2 fill_value are null, as xarray masks them */
      arc = c->dec.in.type == ZR_VLEN ? zr_colbuf_append_vlen_masked(&b, &c->dec, &st->heaps[j], base, offs, n)
                                      : zr_colbuf_append_many(&b, &c->dec, base, offs, n);
    }
    if (arc != QL_OK) rc = column_error(s, c, arc, error);
    if (rc == QL_OK) {
      rc = zr_colbuf_finish(&b, out->children[j], error);
    } else {
      zr_colbuf_free(&b);
    }
  }
  free(idx);
  free(offs);
  if (rc != QL_OK) ql_array_release(out);
  return rc;
}

static int stream_get_schema(struct ArrowArrayStream *self, struct ArrowSchema *out) {
  struct zr_stream *st = self->private_data;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  struct ArrowSchema full;
  int rc = zr_table_schema(st->scan->ds, scan_table(st->scan), &full, &err);
  if (rc == QL_OK) {
    rc = ql_schema_project(&full, st->scan->proj, st->scan->n_proj, out, &err);
    ql_schema_release(&full);
  }
  if (rc != QL_OK) stream_set_error(st, &err);
  ql_error_release(&err);
  return rc == QL_OK ? 0 : ql_status_to_errno(rc);
}

static int stream_get_next(struct ArrowArrayStream *self, struct ArrowArray *out) {
  struct zr_stream *st = self->private_data;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  memset(out, 0, sizeof(*out));
  const struct ql_task_context *ctx = st->ctx;
  if (ctx && ctx->is_cancelled && ctx->is_cancelled(ctx)) {
    ql_error_set(&err, QL_ECANCELLED, "scan of %s cancelled", st->scan->ds->label);
    stream_set_error(st, &err);
    ql_error_release(&err);
    return ql_status_to_errno(QL_ECANCELLED);
  }
  if (st->failed) return ql_status_to_errno(st->failed);
  int64_t t0 = now_ns();
  int rc = QL_OK;
  for (;;) {
    if (st->loaded && st->emitted < st->total) {
      int64_t batch = ctx && ctx->batch_size > 0 ? ctx->batch_size : 8192;
      int64_t n = st->total - st->emitted < batch ? st->total - st->emitted : batch;
      rc = fill_batch(st, n, out, &err);
      if (rc == QL_OK) {
        st->emitted += n;
        atomic_fetch_add(&st->scan->output_rows, n);
      }
      break;
    }
    if (st->loaded && st->remaining >= 0) st->remaining -= st->total;
    stream_unload(st);
    if (st->next_block >= st->end_block || st->remaining == 0) break; /* end of stream */
    rc = stream_load(st, st->next_block++, &err);
    if (rc != QL_OK) break;
  }
  atomic_fetch_add(&st->scan->elapsed_ns, now_ns() - t0);
  if (rc != QL_OK) {
    /* a half-loaded block must never be read */
    st->failed = rc;
    stream_set_error(st, &err);
    ql_error_release(&err);
    return ql_status_to_errno(rc);
  }
  return 0;
}

static const char *stream_last_error(struct ArrowArrayStream *self) {
  struct zr_stream *st = self->private_data;
  return st->last_error;
}

static void stream_free(struct zr_stream *st) {
  if (st->blocks && st->heaps) stream_unload(st);
  for (int32_t k = 0; k < ZR_MAX_DIMS; k++) free(st->sel[k]);
  free(st->blocks);
  free(st->zero_copy);
  free(st->heaps);
  free(st->strides);
  zr_scratch_free(&st->scratch);
  if (st->patterns) {
    for (int32_t j = 0; j < st->scan->n_proj; j++) block_unref(st->patterns[j]);
  }
  free(st->patterns);
  free(st->pattern_key);
  free(st->pattern_off);
  if (st->reservation.release) st->reservation.release(&st->reservation);
  free(st->last_error);
  scan_unref(st->scan);
  free(st);
}

static void stream_release(struct ArrowArrayStream *self) {
  if (!self->release) return;
  stream_free(self->private_data);
  self->release = NULL;
}

/* ---------------------------------------------------------------- plan */

static struct zr_scan *plan_scan(const struct ql_execution_plan *self) { return self->private_data; }

static const char *plan_name(const struct ql_execution_plan *self) { return plan_scan(self)->ds->plan_name; }

static const char *plan_display(const struct ql_execution_plan *self) { return plan_scan(self)->display; }

static int plan_get_schema(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error) {
  const struct zr_scan *s = plan_scan(self);
  struct ArrowSchema full;
  QL_RETURN_NOT_OK(zr_table_schema(s->ds, scan_table(s), &full, error));
  int rc = ql_schema_project(&full, s->proj, s->n_proj, out, error);
  ql_schema_release(&full);
  return rc;
}

static int plan_get_properties(const struct ql_execution_plan *self, struct ql_plan_properties *out,
                               struct ql_error *error) {
  (void)error;
  /* Never write past the caller's struct (R3): a host built against the
   * first layout (which ends at `ordering`) says so in struct_size. */
  size_t first = offsetof(struct ql_plan_properties, ordering) + sizeof(out->ordering), size = sizeof(*out);
  if (out->struct_size >= first && out->struct_size < size) size = out->struct_size;
  memset(out, 0, size);
  out->struct_size = (uint32_t)size;
  out->boundedness = QL_BOUNDED;
  out->partition_count = plan_scan(self)->n_parts > 0 ? plan_scan(self)->n_parts : 1;
  out->n_ordering = plan_scan(self)->n_ordering;
  out->ordering = plan_scan(self)->n_ordering ? plan_scan(self)->ordering : NULL;
  return QL_OK;
}

static int64_t plan_child_count(const struct ql_execution_plan *self) {
  (void)self;
  return 0;
}

static const struct ql_execution_plan *plan_child(const struct ql_execution_plan *self, int64_t i) {
  (void)self;
  (void)i;
  return NULL;
}

static void plan_release(struct ql_execution_plan *self);
static void plan_wrap(struct zr_scan *s, struct ql_execution_plan *out);

static int plan_with_new_children(const struct ql_execution_plan *self, struct ql_execution_plan *children,
                                  int64_t n_children, struct ql_execution_plan *out, struct ql_error *error) {
  for (int64_t i = 0; i < n_children; i++) {
    if (children[i].release) children[i].release(&children[i]);
  }
  if (n_children != 0) return ql_error_set(error, QL_EINVAL, "%s has no children (got %lld)", plan_scan(self)->ds->plan_name,
                                  (long long)n_children);
  plan_wrap(scan_ref(plan_scan(self)), out);
  return QL_OK;
}

static int plan_execute(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                        struct ArrowArrayStream *out, struct ql_error *error) {
  struct zr_scan *s = plan_scan(self);
  int64_t count = s->n_parts > 0 ? s->n_parts : 1;
  if (partition < 0 || partition >= count) {
    return ql_error_set(error, QL_EINVAL, "%s: partition %lld out of range (0..%lld)", s->ds->plan_name, (long long)partition,
                        (long long)count - 1);
  }
  struct zr_stream *st = calloc(1, sizeof(*st));
  if (!st) return ql_error_set(error, QL_ENOMEM, "out of memory");
  st->scan = scan_ref(s);
  st->ctx = ctx;
  st->remaining = s->limit;
  if (s->n_parts > 0) {
    st->next_block = s->part_first[partition];
    st->end_block = s->part_first[partition + 1];
  }
  int rc = stream_alloc(st, error);
  if (rc != QL_OK) {
    stream_free(st);
    return rc;
  }
  memset(out, 0, sizeof(*out));
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_last_error;
  out->release = stream_release;
  out->private_data = st;
  return QL_OK;
}

/* Add the box of kept blocks [klo[k], khi[k]) along every dimension k. */
static void add_kept_box(const struct zr_scan *s, const int64_t *klo, const int64_t *khi, struct zr_stats_acc *acc) {
  const struct zr_table *t = scan_table(s);
  struct zr_dim_stats dims[ZR_MAX_DIMS];
  memset(dims, 0, sizeof(dims));
  for (int32_t k = 0; k < t->ndim; k++) {
    int64_t size = s->ds->dims[t->dims[k]].size;
    for (int64_t i = klo[k]; i < khi[k]; i++) {
      int64_t from = s->kept[k][i] * t->step[k];
      int64_t to = from + t->step[k] < size ? from + t->step[k] : size;
      zr_dim_stats_add(&dims[k], s->ds, t, &s->sel, k, from, to);
    }
  }
  zr_stats_acc_merge(acc, t->ndim, dims);
}

/* Add kept blocks [a, b), numbered in C order over dimensions d.. of the
 * kept grid (dimensions before d fixed by klo/khi): a run of C order is at
 * most two boxes per dimension, so a partition's statistics cost the
 * dimensions' lengths, not its block count. */
static void add_kept_run(const struct zr_scan *s, int32_t d, int64_t *klo, int64_t *khi, int64_t a, int64_t b,
                         struct zr_stats_acc *acc) {
  int32_t nd = scan_table(s)->ndim;
  if (a >= b) return;
  int64_t inner = 1;
  for (int32_t k = d + 1; k < nd; k++) inner *= s->n_kept[k];
  int64_t whole = d < nd ? inner * s->n_kept[d] : 1;
  if (a == 0 && b == whole) {
    for (int32_t k = d; k < nd; k++) {
      klo[k] = 0;
      khi[k] = s->n_kept[k];
    }
    add_kept_box(s, klo, khi, acc);
    return;
  }
  int64_t i0 = a / inner, i1 = (b - 1) / inner;
  klo[d] = i0;
  khi[d] = i0 + 1;
  if (i0 == i1) {
    add_kept_run(s, d + 1, klo, khi, a - i0 * inner, b - i0 * inner, acc);
    return;
  }
  add_kept_run(s, d + 1, klo, khi, a - i0 * inner, inner, acc);
  if (i1 > i0 + 1) {
    klo[d] = i0 + 1;
    khi[d] = i1;
    for (int32_t k = d + 1; k < nd; k++) {
      klo[k] = 0;
      khi[k] = s->n_kept[k];
    }
    add_kept_box(s, klo, khi, acc);
  }
  klo[d] = i1;
  khi[d] = i1 + 1;
  add_kept_run(s, d + 1, klo, khi, 0, b - i1 * inner, acc);
}

static void partition_acc(const struct zr_scan *s, int64_t p, struct zr_stats_acc *acc) {
  memset(acc, 0, sizeof(*acc));
  if (s->n_parts == 0) return; /* the one empty partition */
  int64_t klo[ZR_MAX_DIMS], khi[ZR_MAX_DIMS];
  add_kept_run(s, 0, klo, khi, s->part_first[p], s->part_first[p + 1], acc);
}

/* The accumulated statistics of `partition` (-1: the whole scan) and, for
 * the whole scan under a limit, the sum of each partition's capped rows:
 * computed on the first request, then copied from the scan's cache. */
static int scan_stats_acc(struct zr_scan *s, int64_t partition, struct zr_stats_acc *acc, int64_t *limit_rows,
                          struct ql_error *error) {
  /* One partition: its statistics are the whole scan's, one computation. */
  int64_t slots = s->n_parts > 1 ? s->n_parts + 1 : 1;
  int64_t slot = s->n_parts > 1 ? partition + 1 : 0;
  int rc = QL_OK;
  pthread_mutex_lock(&s->stats_lock);
  if (!s->stats_acc) {
    s->stats_acc = calloc((size_t)slots, sizeof(*s->stats_acc));
    s->stats_done = calloc((size_t)slots, 1);
    if (!s->stats_acc || !s->stats_done) {
      free(s->stats_acc);
      free(s->stats_done);
      s->stats_acc = NULL;
      s->stats_done = NULL;
      rc = ql_error_set(error, QL_ENOMEM, "%s: out of memory for the statistics of %lld partitions",
                        s->ds->plan_name, (long long)s->n_parts);
    }
  }
  if (rc == QL_OK && !s->stats_done[slot]) {
    struct zr_stats_acc *dst = &s->stats_acc[slot];
    if (slot > 0) {
      partition_acc(s, partition, dst);
    } else {
      zr_stats_whole(s->ds, scan_table(s), &s->sel, dst);
      int64_t rows = 0;
      struct zr_stats_acc part;
      for (int64_t i = 0; s->limit >= 0 && i < s->n_parts; i++) {
        partition_acc(s, i, &part);
        rows += part.rows < s->limit ? part.rows : s->limit;
      }
      s->stats_limit_rows = rows;
    }
    s->stats_done[slot] = 1;
    atomic_fetch_add(&s->stats_computed, 1);
  }
  if (rc == QL_OK) {
    *acc = s->stats_acc[slot];
    *limit_rows = s->stats_limit_rows;
  }
  pthread_mutex_unlock(&s->stats_lock);
  return rc;
}

static int plan_get_statistics(const struct ql_execution_plan *self, int64_t partition, struct ql_statistics *out,
                               struct ql_error *error) {
  struct zr_scan *s = plan_scan(self);
  const struct zr_table *t = scan_table(s);
  if (partition < -1 || partition >= (s->n_parts > 0 ? s->n_parts : 1)) {
    return ql_error_set(error, QL_EINVAL, "%s: no partition %lld", s->ds->plan_name, (long long)partition);
  }
  struct zr_stats_acc acc;
  int64_t limit_rows = 0;
  QL_RETURN_NOT_OK(scan_stats_acc(s, partition, &acc, &limit_rows, error));
  if (partition >= 0) return zr_stats_emit(s->ds, t, &acc, s->proj, s->n_proj, s->limit, out, error);
  QL_RETURN_NOT_OK(zr_stats_emit(s->ds, t, &acc, s->proj, s->n_proj, -1, out, error));
  if (s->limit >= 0) {
    /* the limit applies per partition */
    out->num_rows = limit_rows;
    for (int64_t i = 0; i < out->n_columns; i++) {
      if (out->columns[i].min_max_precision == QL_PRECISION_EXACT) out->columns[i].min_max_precision = QL_PRECISION_INEXACT;
    }
  }
  return QL_OK;
}

static void metrics_release(struct ql_metrics *m) {
  if (!m->release) return;
  free(m->items);
  m->release = NULL;
}

static int plan_get_metrics(const struct ql_execution_plan *self, struct ql_metrics *out, struct ql_error *error) {
  struct zr_scan *s = plan_scan(self);
  memset(out, 0, sizeof(*out));
  enum { N_METRICS = 9 };
  out->items = calloc(N_METRICS, sizeof(struct ql_metric));
  if (!out->items) return ql_error_set(error, QL_ENOMEM, "out of memory");
  struct ql_metric items[N_METRICS] = {
      {"output_rows", QL_METRIC_COUNT, 0, -1, atomic_load(&s->output_rows)},
      {"chunks_read", QL_METRIC_COUNT, 0, -1, atomic_load(&s->chunks_read)},
      {"bytes_read", QL_METRIC_BYTES, 0, -1, atomic_load(&s->bytes_read)},
      {"elapsed_compute", QL_METRIC_TIME_NS, 0, -1, atomic_load(&s->elapsed_ns)},
      {"blocks_read", QL_METRIC_COUNT, 0, -1, atomic_load(&s->blocks_read)},
      {"blocks", QL_METRIC_COUNT, 0, -1, s->n_blocks},
      {"blocks_pruned", QL_METRIC_COUNT, 0, -1, s->n_blocks - s->n_kept_blocks},
      {"partitions", QL_METRIC_COUNT, 0, -1, s->n_parts},
      {"statistics_computed", QL_METRIC_COUNT, 0, -1, atomic_load(&s->stats_computed)}};
  memcpy(out->items, items, sizeof(items));
  out->count = N_METRICS;
  out->release = metrics_release;
  return QL_OK;
}

static void plan_release(struct ql_execution_plan *self) {
  if (!self->release) return;
  scan_unref(plan_scan(self));
  self->release = NULL;
  self->private_data = NULL;
}

static void plan_wrap(struct zr_scan *s, struct ql_execution_plan *out) {
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->name = plan_name;
  out->display = plan_display;
  out->get_schema = plan_get_schema;
  out->get_properties = plan_get_properties;
  out->child_count = plan_child_count;
  out->child = plan_child;
  out->with_new_children = plan_with_new_children;
  out->execute = plan_execute;
  out->get_statistics = plan_get_statistics;
  out->get_metrics = plan_get_metrics;
  out->release = plan_release;
  out->private_data = s;
}

/* --------------------------------------------------------- planning */

/* Prune the block grid per dimension and deal the kept blocks out to at
 * most `target` partitions (<= 0: one per block) as contiguous runs of
 * (nearly) equal length. */
static int plan_partitions(struct zr_scan *s, int64_t target, struct ql_error *error) {
  const struct zr_table *t = scan_table(s);
  int32_t nd = t->ndim;
  s->n_blocks = 1;
  s->n_kept_blocks = 1;
  for (int32_t k = 0; k < nd; k++) {
    int64_t size = s->ds->dims[t->dims[k]].size;
    int64_t nblocks = size == 0 ? 0 : (size + t->step[k] - 1) / t->step[k];
    s->n_blocks = s->n_blocks > 0 && nblocks > INT64_MAX / s->n_blocks ? INT64_MAX : s->n_blocks * nblocks;
    s->kept[k] = malloc(sizeof(int64_t) * (size_t)(nblocks ? nblocks : 1));
    if (!s->kept[k]) return ql_error_set(error, QL_ENOMEM, "out of memory");
    int64_t n = 0;
    for (int64_t b = 0; b < nblocks; b++) {
      int64_t from = b * t->step[k], to = from + t->step[k] < size ? from + t->step[k] : size;
      int64_t lo, hi;
      if (zr_selection_run(&s->sel, k, from, to, &lo, &hi)) s->kept[k][n++] = b;
    }
    s->n_kept[k] = n;
    /* the product of the dimensions' lengths fits (it is the row count) */
    s->n_kept_blocks *= n;
  }
  if (s->n_kept_blocks == 0) return QL_OK;
  int64_t n = s->n_kept_blocks, parts = target > 0 && target < n ? target : n;
  s->part_first = malloc(sizeof(int64_t) * (size_t)(parts + 1));
  if (!s->part_first) return ql_error_set(error, QL_ENOMEM, "out of memory: %lld partitions", (long long)parts);
  int64_t base = n / parts, extra = n % parts;
  for (int64_t p = 0; p <= parts; p++) s->part_first[p] = p * base + (p < extra ? p : extra);
  s->n_parts = parts;
  return QL_OK;
}

/* The order of the rows within each partition, for the host's optimizer
 * (a sort on time can then be a merge, ORDER BY time LIMIT n a top-n of
 * sorted streams). A partition reads its kept blocks one after the other
 * in C order of the kept grid and each block's rows in C order, so when
 * only the outermost dimension has more than one kept block, a partition's
 * rows are in C order of the whole table: sorted by the dimension columns
 * from the outermost in, as far as each is projected and its coordinate
 * values strictly monotonic (latitude often decreases: DESC). */
static void plan_ordering(struct zr_scan *s) {
  const struct zr_table *t = scan_table(s);
  s->n_ordering = 0;
  for (int32_t k = 1; k < t->ndim; k++) {
    if (s->n_kept[k] > 1) return;
  }
  for (int32_t k = 0; k < t->ndim; k++) {
    int32_t col = -1;
    for (int32_t j = 0; j < s->n_proj && col < 0; j++) {
      const struct zr_column *c = &t->columns[s->proj[j]];
      if (c->role == ZR_ROLE_DIM && c->dim == k) col = j;
    }
    int dir = col < 0 ? 0 : s->ds->dims[t->dims[k]].direction;
    if (dir == 0) return;
    /* DataFusion's defaults: ASC NULLS LAST, DESC NULLS FIRST (no NULLs here) */
    s->ordering[s->n_ordering].column = col;
    s->ordering[s->n_ordering].flags = dir > 0 ? 0 : QL_SORT_DESC | QL_SORT_NULLS_FIRST;
    s->n_ordering++;
  }
}

/* Chunks of the projected arrays: in the whole table, and in the kept
 * blocks (an upper bound of what a scan reads: slicing inside a block can
 * skip more; an array missing some table dimension is read once per block
 * along that dimension). */
static void count_chunks(const struct zr_scan *s, int64_t *kept, int64_t *total) {
  const struct zr_table *t = scan_table(s);
  *kept = 0;
  *total = 0;
  for (int32_t j = 0; j < s->n_proj; j++) {
    const struct zr_column *c = &t->columns[s->proj[j]];
    if (c->role == ZR_ROLE_DIM) continue;
    const struct zr_array *a = &s->ds->group.arrays[c->array];
    int64_t all = 1;
    for (int32_t ax = 0; ax < a->ndim; ax++) all *= (a->shape[ax] + a->chunks[ax] - 1) / a->chunks[ax];
    *total += all;
    int64_t in_kept = 1;
    for (int32_t k = 0; k < t->ndim; k++) {
      int32_t axis = -1;
      for (int32_t ax = 0; ax < c->n_axes; ax++) {
        if (c->axes[ax] == k) axis = ax;
      }
      if (axis < 0) {
        in_kept *= s->n_kept[k];
        continue;
      }
      int64_t size = s->ds->dims[t->dims[k]].size, ch = a->chunks[axis], along = 0;
      for (int64_t i = 0; i < s->n_kept[k]; i++) {
        int64_t lo = s->kept[k][i] * t->step[k];
        int64_t hi = lo + t->step[k] < size ? lo + t->step[k] : size;
        along += (hi - 1) / ch - lo / ch + 1;
      }
      in_kept *= along;
    }
    *kept += in_kept;
  }
}

static int build_display(struct zr_scan *s) {
  const struct zr_table *t = scan_table(s);
  int64_t kept, total;
  count_chunks(s, &kept, &total);
  size_t cap = 320 + strlen(s->ds->origin) + strlen(t->name);
  for (int32_t j = 0; j < s->n_proj; j++) cap += strlen(t->columns[s->proj[j]].name) + 2;
  s->display = malloc(cap);
  if (!s->display) return QL_ENOMEM;
  size_t used = (size_t)snprintf(s->display, cap, "%s table=%s arrays=[", s->ds->origin, t->name);
  int first = 1;
  for (int32_t j = 0; j < s->n_proj; j++) {
    const struct zr_column *c = &t->columns[s->proj[j]];
    if (c->role == ZR_ROLE_DIM) continue;
    used += (size_t)snprintf(s->display + used, cap - used, "%s%s", first ? "" : ", ", c->name);
    first = 0;
  }
  snprintf(s->display + used, cap - used, "] blocks=%lld/%lld partitions=%lld chunks=%lld/%lld pruned=%lld%s",
           (long long)s->n_kept_blocks, (long long)s->n_blocks, (long long)(s->n_parts > 0 ? s->n_parts : 1),
           (long long)kept, (long long)total, (long long)(total - kept), s->limit >= 0 ? " limit" : "");
  if (s->limit >= 0) {
    used = strlen(s->display);
    snprintf(s->display + used, cap - used, "=%lld", (long long)s->limit);
  }
  return QL_OK;
}

int zr_scan_plan_new(struct zr_dataset *ds, int32_t table, const struct ql_scan_args *args, int64_t target_partitions,
                     struct ql_execution_plan *out, struct ql_error *error) {
  struct zr_scan *s = calloc(1, sizeof(*s));
  if (!s) return ql_error_set(error, QL_ENOMEM, "out of memory");
  atomic_init(&s->refs, 1);
  pthread_mutex_init(&s->pool_lock, NULL);
  pthread_mutex_init(&s->stats_lock, NULL);
  s->ds = zr_dataset_ref(ds);
  s->table = table;
  s->limit = -1;
  const struct zr_table *t = scan_table(s);
  int rc = QL_OK;
  int32_t n_proj = args && args->n_projection >= 0 ? args->n_projection : t->n_columns;
  s->proj = calloc((size_t)(n_proj ? n_proj : 1), sizeof(int32_t));
  if (!s->proj) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int32_t j = 0; rc == QL_OK && j < n_proj; j++) {
    int32_t c = args && args->n_projection >= 0 ? args->projection[j] : j;
    if (c < 0 || c >= t->n_columns) {
      rc = ql_error_set(error, QL_EINVAL, "projection index %d out of range (table %s has %d columns)", c, t->name,
                        t->n_columns);
    }
    s->proj[j] = c;
  }
  s->n_proj = n_proj;
  s->sel.ndim = t->ndim;
  if (rc == QL_OK && args && QL_HAS_MEMBER(args, struct ql_scan_args, filters) && args->filters.view) {
    for (int32_t i = 0; rc == QL_OK && i < args->filters.n_exprs; i++) {
      ql_expr_id e = args->filters.exprs[i];
      if (zr_filter_supported(ds, t, args->filters.view, e)) {
        rc = zr_filter_apply(ds, t, args->filters.view, e, &s->sel, error);
      }
    }
  }
  if (rc == QL_OK && args && QL_HAS_MEMBER(args, struct ql_scan_args, limit) && args->limit >= 0) s->limit = args->limit;
  if (rc == QL_OK) rc = plan_partitions(s, target_partitions, error);
  if (rc == QL_OK) plan_ordering(s);
  if (rc == QL_OK && build_display(s) != QL_OK) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
  if (rc != QL_OK) {
    scan_unref(s);
    return rc;
  }
  plan_wrap(s, out);
  return QL_OK;
}
