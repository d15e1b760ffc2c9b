/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: the children's batches, held and decoded block by block (see fold_internal.h).
 *
 * Why read everything first: the fold must consume both inputs before it
 * can emit a row anyway, and holding them lets it choose its kernel from the
 * data itself (the key ranges actually present: a dense matrix product or
 * the hash path) instead of from statistics a host may not give. The
 * batches are held as they came (no copy: no memory to fault in), and
 * decoded when used, FD_BLOCK rows at a time, one typed loop per
 * column, into a buffer that stays in cache.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "fold_internal.h"
#include "qlink/lib/status.h"

/* Loop bodies shared by the loaders: n values of type T from position `at`
 * of c, each converted by CONV into dst[r * stride]. */
#define FD_LOAD(T, CONV)                                          \
  do {                                                                 \
    const T *src_ = (const T *)c->buffers[1] + at;                    \
    for (int64_t r = 0; r < n; r++) dst[r * stride] = CONV(src_[r]);   \
  } while (0)
#define FD_AS_I64(v) ((int64_t)(v))
#define FD_AS_F64(v) ((double)(v))
#define FD_AS_U128(v) ((fd_u128)(uint64_t)(int64_t)(v))

/* Integer and temporal columns widened to int64 (uint64 keeps its bits). */
static void fd_load_ints(const struct ArrowArray *c, int64_t at, int64_t n, int32_t storage, int64_t *dst,
                              int64_t stride) {
  switch (storage) {
    case FD_S8: FD_LOAD(int8_t, FD_AS_I64); break;
    case FD_S16: FD_LOAD(int16_t, FD_AS_I64); break;
    case FD_S32: FD_LOAD(int32_t, FD_AS_I64); break;
    case FD_U8: FD_LOAD(uint8_t, FD_AS_I64); break;
    case FD_U16: FD_LOAD(uint16_t, FD_AS_I64); break;
    case FD_U32: FD_LOAD(uint32_t, FD_AS_I64); break;
    case FD_U64: FD_LOAD(uint64_t, FD_AS_I64); break;
    default: FD_LOAD(int64_t, FD_AS_I64); break;
  }
}

/* Values of a float64 sum, as float64 (float32 exactly; integers as the
 * cast DataFusion's coercion applies). */
static void fd_load_doubles(const struct ArrowArray *c, int64_t at, int64_t n, int32_t storage, double *dst) {
  const int64_t stride = 1;
  switch (storage) {
    case FD_F64: FD_LOAD(double, FD_AS_F64); break;
    case FD_F32: FD_LOAD(float, FD_AS_F64); break;
    case FD_S8: FD_LOAD(int8_t, FD_AS_F64); break;
    case FD_S16: FD_LOAD(int16_t, FD_AS_F64); break;
    case FD_S32: FD_LOAD(int32_t, FD_AS_F64); break;
    case FD_U8: FD_LOAD(uint8_t, FD_AS_F64); break;
    case FD_U16: FD_LOAD(uint16_t, FD_AS_F64); break;
    case FD_U32: FD_LOAD(uint32_t, FD_AS_F64); break;
    case FD_U64: FD_LOAD(uint64_t, FD_AS_F64); break;
    default: FD_LOAD(int64_t, FD_AS_F64); break;
  }
}

/* Values of an integer or decimal sum: decimal128 as its 16 bytes, other
 * integers sign- (zero-) extended to 64 bits, then as unsigned 128. */
static void fd_load_u128(const struct ArrowArray *c, int64_t at, int64_t n, int32_t storage, fd_u128 *dst) {
  const int64_t stride = 1;
  switch (storage) {
    case FD_D128: memcpy(dst, (const uint8_t *)c->buffers[1] + at * 16, (size_t)n * 16); break;
    case FD_S8: FD_LOAD(int8_t, FD_AS_U128); break;
    case FD_S16: FD_LOAD(int16_t, FD_AS_U128); break;
    case FD_S32: FD_LOAD(int32_t, FD_AS_U128); break;
    case FD_U8: FD_LOAD(uint8_t, FD_AS_U128); break;
    case FD_U16: FD_LOAD(uint16_t, FD_AS_U128); break;
    case FD_U32: FD_LOAD(uint32_t, FD_AS_U128); break;
    case FD_U64: FD_LOAD(uint64_t, FD_AS_U128); break;
    default: FD_LOAD(int64_t, FD_AS_U128); break;
  }
}

int fd_block_new(struct fd_mem *mem, struct fd_block **out, struct ql_error *error) {
  void *p;
  QL_RETURN_NOT_OK(fd_mem_alloc(mem, &p, (int64_t)sizeof(struct fd_block), error));
  *out = p;
  return QL_OK;
}

/* Move row `from` of b to row `to` (to < from). */
static void fd_block_move(struct fd_block *b, int64_t nk, int64_t ng, int64_t to, int64_t from) {
  memcpy(b->keys + to * nk, b->keys + from * nk, (size_t)nk * 8);
  if (ng) {
    memcpy(b->groups + to * ng, b->groups + from * ng, (size_t)ng * 8);
    b->group_nulls[to] = b->group_nulls[from];
  }
  b->fvalue[to] = b->fvalue[from];
  b->ivalue[to] = b->ivalue[from];
  b->has[to] = b->has[from];
}

/* Drop the rows of b (rows `from`... of the batch) with a NULL join key. */
static void fd_block_drop_null_keys(struct fd_block *b, const struct fd_side *s,
                                         const struct ArrowArray *batch, int64_t from) {
  const struct ArrowArray *cols[FD_MAX_KEYS];
  int64_t at[FD_MAX_KEYS];
  int32_t n_nullable = 0;
  for (int32_t i = 0; i < s->n_keys; i++) {
    const struct ArrowArray *col = batch->children[s->keys[i]->column];
    if (!fd_has_nulls(col)) continue;
    cols[n_nullable] = col;
    at[n_nullable++] = col->offset + batch->offset + from;
  }
  if (n_nullable == 0) return;
  int64_t kept = 0;
  for (int64_t r = 0; r < b->n; r++) {
    int valid = 1;
    for (int32_t i = 0; i < n_nullable && valid; i++) valid = fd_bit(cols[i], at[i] + r);
    if (!valid) continue;
    if (kept != r) fd_block_move(b, s->n_keys, s->n_groups, kept, r);
    kept++;
  }
  b->n = kept;
}

void fd_block_decode(const struct fd_input *in, const struct fd_chunk *c, int64_t from,
                          struct fd_block *b) {
  const struct fd_side *s = &in->side;
  const struct ArrowArray *batch = &c->batch;
  int64_t n = batch->length - from < FD_BLOCK ? batch->length - from : FD_BLOCK;
  int64_t nk = s->n_keys, ng = s->n_groups;
  b->n = n;
  for (int32_t i = 0; i < nk; i++) {
    const struct ArrowArray *col = batch->children[s->keys[i]->column];
    fd_load_ints(col, col->offset + batch->offset + from, n, s->keys[i]->storage, b->keys + i, nk);
  }
  if (ng) memset(b->group_nulls, 0, (size_t)n * 4);
  for (int32_t i = 0; i < ng; i++) {
    const struct ArrowArray *col = batch->children[s->groups[i]->column];
    int64_t at = col->offset + batch->offset + from;
    fd_load_ints(col, at, n, s->groups[i]->storage, b->groups + i, ng);
    if (!fd_has_nulls(col)) continue;
    for (int64_t r = 0; r < n; r++) {
      if (fd_bit(col, at + r)) continue;
      b->groups[r * ng + i] = 0; /* equal NULL groups must be equal tuples */
      b->group_nulls[r] |= 1u << i;
    }
  }
  const struct ArrowArray *col = batch->children[s->value->column];
  int64_t at = col->offset + batch->offset + from;
  if (in->is_float) fd_load_doubles(col, at, n, s->value->storage, b->fvalue);
  else fd_load_u128(col, at, n, s->value->storage, b->ivalue);
  if (!fd_has_nulls(col)) {
    memset(b->has, 1, (size_t)n);
  } else {
    for (int64_t r = 0; r < n; r++) {
      b->has[r] = (uint8_t)fd_bit(col, at + r);
      if (b->has[r]) continue;
      /* Undefined bytes under a NULL: keep every decoded value defined. */
      if (in->is_float) b->fvalue[r] = 0;
      else b->ivalue[r] = 0;
    }
  }
  fd_block_drop_null_keys(b, s, batch, from);
}

/* Min and max of n integer values from position `at` of col, optionally
 * skipping NULLs (*null: a NULL was seen). One typed loop: the ranges are
 * taken at load for every batch. Without NULLs, two independent minima
 * and maxima, so the loop is not one long chain of dependent selects. */
#define FD_RANGE(T)                                                      \
  do {                                                                        \
    const T *v_ = (const T *)col->buffers[1] + at;                            \
    int64_t r = 0;                                                            \
    if (!nullable) {                                                          \
      int64_t l0 = l, l1 = l, h0 = h, h1 = h;                                 \
      for (; r + 2 <= n; r += 2) {                                            \
        int64_t x0 = (int64_t)v_[r], x1 = (int64_t)v_[r + 1];                 \
        l0 = x0 < l0 ? x0 : l0;                                               \
        h0 = x0 > h0 ? x0 : h0;                                               \
        l1 = x1 < l1 ? x1 : l1;                                               \
        h1 = x1 > h1 ? x1 : h1;                                               \
      }                                                                       \
      l = l0 < l1 ? l0 : l1;                                                  \
      h = h0 > h1 ? h0 : h1;                                                  \
    }                                                                         \
    for (; r < n; r++) {                                                      \
      if (nullable && !fd_bit(col, at + r)) {                            \
        *null = 1;                                                            \
        continue;                                                             \
      }                                                                       \
      int64_t x = (int64_t)v_[r];                                             \
      l = x < l ? x : l;                                                      \
      h = x > h ? x : h;                                                      \
    }                                                                         \
  } while (0)

static void fd_column_range(const struct ArrowArray *col, int64_t at, int64_t n, int32_t storage, int64_t *lo,
                                 int64_t *hi, int *null) {
  int nullable = fd_has_nulls(col);
  int64_t l = *lo, h = *hi;
  switch (storage) {
    case FD_S8: FD_RANGE(int8_t); break;
    case FD_S16: FD_RANGE(int16_t); break;
    case FD_S32: FD_RANGE(int32_t); break;
    case FD_U8: FD_RANGE(uint8_t); break;
    case FD_U16: FD_RANGE(uint16_t); break;
    case FD_U32: FD_RANGE(uint32_t); break;
    case FD_U64: FD_RANGE(uint64_t); break;
    default: FD_RANGE(int64_t); break;
  }
  *lo = l;
  *hi = h;
}

/* Value `at` of an integer column, as int64 (as the range loops read it). */
static int64_t fd_int_at(const struct ArrowArray *col, int64_t at, int32_t storage) {
  const void *v = col->buffers[1];
  switch (storage) {
    case FD_S8: return ((const int8_t *)v)[at];
    case FD_S16: return ((const int16_t *)v)[at];
    case FD_S32: return ((const int32_t *)v)[at];
    case FD_U8: return ((const uint8_t *)v)[at];
    case FD_U16: return ((const uint16_t *)v)[at];
    case FD_U32: return ((const uint32_t *)v)[at];
    case FD_U64: return (int64_t)((const uint64_t *)v)[at];
    default: return ((const int64_t *)v)[at];
  }
}

/* Bytes per value of an integer column. */
static int64_t fd_storage_width(int32_t storage) {
  switch (storage) {
    case FD_S8:
    case FD_U8: return 1;
    case FD_S16:
    case FD_U16: return 2;
    case FD_S32:
    case FD_U32: return 4;
    default: return 8;
  }
}

/* Min and max over a sample of the n values from `at` of a column without
 * NULLs: the first and last FD_SAMPLE_EDGE and every
 * FD_SAMPLE_STRIDE-th between (sorted data: exact; a short cycle, as a
 * column index: every value, the stride being prime). */
static void fd_column_sample(const struct ArrowArray *col, int64_t at, int64_t n, int32_t storage, int64_t *lo,
                                  int64_t *hi) {
  /* Each sampled value is on a cache line of its own, most likely not in
   * cache (the batch was just produced elsewhere or long ago): ask for
   * all of them (and the edges' lines) first, so that the misses overlap
   * instead of coming one after the other. */
  const char *base = (const char *)col->buffers[1];
  int64_t width = fd_storage_width(storage), edge = FD_SAMPLE_EDGE * width;
  for (int64_t b = 0; b < edge; b += 64) {
    __builtin_prefetch(base + at * width + b);
    __builtin_prefetch(base + (at + n) * width - edge + b);
  }
  for (int64_t r = FD_SAMPLE_EDGE; r < n - FD_SAMPLE_EDGE; r += FD_SAMPLE_STRIDE)
    __builtin_prefetch(base + (at + r) * width);
  int null = 0;
  fd_column_range(col, at, FD_SAMPLE_EDGE, storage, lo, hi, &null);
  fd_column_range(col, at + n - FD_SAMPLE_EDGE, FD_SAMPLE_EDGE, storage, lo, hi, &null);
  int64_t l = *lo, h = *hi;
  for (int64_t r = FD_SAMPLE_EDGE; r < n - FD_SAMPLE_EDGE; r += FD_SAMPLE_STRIDE) {
    int64_t x = fd_int_at(col, at + r, storage);
    l = x < l ? x : l;
    h = x > h ? x : h;
  }
  *lo = l;
  *hi = h;
}

/* Exact ranges of group column i of chunk c (reset first). */
static void fd_chunk_group_range(struct fd_chunk *c, const struct fd_side *s, int32_t i) {
  const struct ArrowArray *batch = &c->batch;
  const struct ArrowArray *col = batch->children[s->groups[i]->column];
  int null = 0;
  uint32_t bit = 1u << i;
  c->group_lo[i] = INT64_MAX;
  c->group_hi[i] = INT64_MIN;
  c->group_any &= ~bit;
  c->group_null &= ~bit;
  fd_column_range(col, col->offset + batch->offset, batch->length, s->groups[i]->storage, &c->group_lo[i],
                       &c->group_hi[i], &null);
  if (null) c->group_null |= bit;
  if (c->group_lo[i] <= c->group_hi[i]) c->group_any |= bit;
}

/* The chunk's ranges straight from its columns when no join key is NULL
 * (the common case: every row is kept); 0 when a key column has NULLs.
 * With `sample`, a large chunk's key ranges come from a sample of its rows,
 * and its group ranges too when no group column has a NULL (c->sampled). */
static int fd_chunk_ranges_direct(struct fd_chunk *c, const struct fd_side *s, int sample) {
  const struct ArrowArray *batch = &c->batch;
  for (int32_t i = 0; i < s->n_keys; i++)
    if (fd_has_nulls(batch->children[s->keys[i]->column])) return 0;
  int64_t n = batch->length;
  c->kept = n;
  c->sampled = 0;
  if (sample && n >= FD_SAMPLE_MIN_ROWS) {
    c->sampled = FD_KEYS | FD_GROUPS;
    for (int32_t i = 0; i < s->n_groups; i++)
      if (fd_has_nulls(batch->children[s->groups[i]->column])) c->sampled = FD_KEYS;
  }
  for (int32_t i = 0; i < s->n_keys; i++) {
    const struct ArrowArray *col = batch->children[s->keys[i]->column];
    int null = 0;
    if (c->sampled & FD_KEYS)
      fd_column_sample(col, col->offset + batch->offset, n, s->keys[i]->storage, &c->key_lo[i], &c->key_hi[i]);
    else
      fd_column_range(col, col->offset + batch->offset, n, s->keys[i]->storage, &c->key_lo[i], &c->key_hi[i],
                           &null);
  }
  for (int32_t i = 0; i < s->n_groups; i++) {
    if (!(c->sampled & FD_GROUPS)) {
      fd_chunk_group_range(c, s, i);
      continue;
    }
    const struct ArrowArray *col = batch->children[s->groups[i]->column];
    fd_column_sample(col, col->offset + batch->offset, n, s->groups[i]->storage, &c->group_lo[i],
                          &c->group_hi[i]);
    c->group_any |= 1u << i; /* no NULL: every row has a value */
  }
  return 1;
}

/* Fold the kept rows of a block into the chunk's ranges. */
static void fd_chunk_ranges(struct fd_chunk *c, const struct fd_side *s, const struct fd_block *b) {
  int64_t nk = s->n_keys, ng = s->n_groups;
  for (int32_t i = 0; i < nk; i++) {
    int64_t l = c->key_lo[i], h = c->key_hi[i];
    for (int64_t r = 0; r < b->n; r++) {
      int64_t x = b->keys[r * nk + i];
      l = x < l ? x : l;
      h = x > h ? x : h;
    }
    c->key_lo[i] = l;
    c->key_hi[i] = h;
  }
  for (int32_t i = 0; i < ng; i++) {
    uint32_t bit = 1u << i;
    int64_t l = c->group_lo[i], h = c->group_hi[i];
    for (int64_t r = 0; r < b->n; r++) {
      if (b->group_nulls[r] & bit) {
        c->group_null |= bit;
        continue;
      }
      int64_t x = b->groups[r * ng + i];
      l = x < l ? x : l;
      h = x > h ? x : h;
      c->group_any |= bit;
    }
    c->group_lo[i] = l;
    c->group_hi[i] = h;
  }
}

struct fd_load {
  struct fd_input *in;
  struct fd_part *part;
  struct fd_block *block;
};

static int fd_part_push(struct fd_part *part, struct fd_chunk *c, struct fd_mem *mem,
                             struct ql_error *error) {
  if (part->n_chunks == part->chunks_cap) {
    int64_t cap = part->chunks_cap ? part->chunks_cap * 2 : 16;
    void *p = part->chunks;
    QL_RETURN_NOT_OK(fd_mem_resize(mem, &p, part->chunks_cap * 8, cap * 8, error));
    part->chunks = p;
    part->chunks_cap = cap;
  }
  part->chunks[part->n_chunks++] = c;
  part->rows += c->kept;
  return QL_OK;
}

static void fd_chunk_free(struct fd_mem *mem, struct fd_chunk *c) {
  if (c->batch.release) c->batch.release(&c->batch);
  fd_mem_unreserve(mem, c->reserved);
  fd_mem_free(mem, c, (int64_t)sizeof(*c));
}

/* Keep a checked batch (moved out of *batch) with its ranges, unless no row
 * of it can join. */
static int fd_load_batch(struct fd_run *run, void *arg, struct ArrowArray *batch, struct ql_error *error) {
  struct fd_load *ld = arg;
  int side = (int)(ld->in - run->in);
  QL_RETURN_NOT_OK(fd_check_batch(run, side, batch, error));
  ld->part->rows_read += batch->length;
  if (batch->length == 0) return QL_OK;
  /* Holding the batch holds its memory: reserve what its columns read take. */
  int64_t reserved = batch->length * ld->in->row_bytes;
  QL_RETURN_NOT_OK(fd_mem_reserve(&run->mem, reserved, error));
  void *p;
  int rc = fd_mem_alloc(&run->mem, &p, (int64_t)sizeof(struct fd_chunk), error);
  if (rc != QL_OK) {
    fd_mem_unreserve(&run->mem, reserved);
    return rc;
  }
  struct fd_chunk *c = p;
  memset(c, 0, sizeof(*c));
  c->reserved = reserved;
  c->batch = *batch;
  batch->release = NULL; /* moved */
  for (int32_t i = 0; i < FD_MAX_KEYS; i++) c->key_lo[i] = INT64_MAX, c->key_hi[i] = INT64_MIN;
  for (int32_t i = 0; i < FD_MAX_GROUPS; i++) c->group_lo[i] = INT64_MAX, c->group_hi[i] = INT64_MIN;
  if (!fd_chunk_ranges_direct(c, &ld->in->side, 1)) {
    c->sampled = 0;
    for (int64_t from = 0; from < c->batch.length; from += FD_BLOCK) {
      fd_block_decode(ld->in, c, from, ld->block);
      c->kept += ld->block->n;
      fd_chunk_ranges(c, &ld->in->side, ld->block);
    }
  }
  rc = c->kept > 0 ? fd_part_push(ld->part, c, &run->mem, error) : QL_OK;
  if (c->kept == 0 || rc != QL_OK) fd_chunk_free(&run->mem, c);
  return rc;
}

/* Tasks 0..n_parts[0]-1 read the left child's partitions, the rest the
 * right child's; workers take them from a shared counter. */
struct fd_read_task {
  struct fd_run *run;
  int64_t n_tasks;
  atomic_llong next;
  atomic_int failed;
};

static int fd_read_worker(void *arg, struct ql_error *error) {
  struct fd_read_task *t = arg;
  struct fd_run *run = t->run;
  for (;;) {
    if (atomic_load(&t->failed)) return QL_OK;
    int64_t i = atomic_fetch_add(&t->next, 1);
    if (i >= t->n_tasks) return QL_OK;
    int side = i < run->in[0].n_parts ? 0 : 1;
    int64_t p = side ? i - run->in[0].n_parts : i;
    struct fd_block *block;
    int rc = fd_block_new(&run->mem, &block, error);
    if (rc == QL_OK) {
      struct fd_load ld = {&run->in[side], &run->in[side].parts[p], block};
      rc = fd_drain(run, side, p, fd_load_batch, &ld, error);
      fd_mem_free(&run->mem, block, (int64_t)sizeof(*block));
    }
    if (rc != QL_OK) {
      atomic_store(&t->failed, 1);
      return rc;
    }
  }
}

static int64_t fd_storage_bytes(int32_t storage) {
  switch (storage) {
    case FD_S8: case FD_U8: return 1;
    case FD_S16: case FD_U16: return 2;
    case FD_S32: case FD_U32: case FD_F32: return 4;
    case FD_D128: return 16;
    default: return 8;
  }
}

/* Bytes per row of the columns a side reads, validity bits rounded up. */
static int64_t fd_row_bytes(const struct fd_side *s) {
  int64_t bytes = fd_storage_bytes(s->value->storage) + 1;
  for (int32_t i = 0; i < s->n_keys; i++) bytes += fd_storage_bytes(s->keys[i]->storage) + 1;
  for (int32_t i = 0; i < s->n_groups; i++) bytes += fd_storage_bytes(s->groups[i]->storage) + 1;
  return bytes;
}

int fd_read_inputs(struct fd_run *run, struct ql_error *error) {
  for (int k = 0; k < 2; k++) {
    struct fd_input *in = &run->in[k];
    fd_side_init(&run->plan->spec, k, &in->side);
    in->is_float = in->side.value->as_f64;
    in->row_bytes = fd_row_bytes(&in->side);
    int64_t n = fd_partition_count(&run->plan->children[k], error);
    if (n < 0) return ql_error_prefix(error, "qlink_fold: input %d properties", k);
    void *p = NULL;
    QL_RETURN_NOT_OK(fd_mem_resize(&run->mem, &p, 0, n * (int64_t)sizeof(struct fd_part), error));
    in->parts = p;
    in->n_parts = n;
  }
  struct fd_read_task task;
  memset(&task, 0, sizeof(task));
  task.run = run;
  task.n_tasks = run->in[0].n_parts + run->in[1].n_parts;
  QL_RETURN_NOT_OK(fd_parallel(&run->ctx, task.n_tasks, fd_read_worker, &task, error));
  for (int k = 0; k < 2; k++) {
    struct fd_input *in = &run->in[k];
    for (int64_t p = 0; p < in->n_parts; p++) {
      in->rows += in->parts[p].rows;
      in->rows_read += in->parts[p].rows_read;
    }
  }
  /* The hash path builds on the smaller side: a function of the data only,
   * so the same data give the same plan of work (ties: the right side). */
  run->build_side = run->in[0].rows < run->in[1].rows ? 0 : 1;
  return QL_OK;
}

/* Chunks of both sides, numbered side 0's first (partitions in order), for
 * workers taking them from a counter. */
struct fd_exact_task {
  struct fd_run *run;
  int what, sides;
  int64_t n_chunks[2];
  atomic_llong next;
};

static int fd_exact_worker(void *arg, struct ql_error *error) {
  (void)error;
  struct fd_exact_task *t = arg;
  for (;;) {
    int64_t i = atomic_fetch_add(&t->next, 1);
    if (i >= t->n_chunks[0] + t->n_chunks[1]) return QL_OK;
    int k = i < t->n_chunks[0] ? 0 : 1;
    if (!(t->sides & (1 << k))) continue;
    struct fd_input *in = &t->run->in[k];
    i -= k ? t->n_chunks[0] : 0;
    struct fd_chunk *c = NULL;
    for (int64_t p = 0; p < in->n_parts && !c; p++) {
      if (i < in->parts[p].n_chunks) c = in->parts[p].chunks[i];
      else i -= in->parts[p].n_chunks;
    }
    if (!c) continue;
    const struct ArrowArray *batch = &c->batch;
    if (c->sampled & t->what & FD_KEYS) {
      for (int32_t j = 0; j < in->side.n_keys; j++) { /* sampled chunks have no NULL key */
        const struct ArrowArray *col = batch->children[in->side.keys[j]->column];
        int null = 0;
        c->key_lo[j] = INT64_MAX;
        c->key_hi[j] = INT64_MIN;
        fd_column_range(col, col->offset + batch->offset, batch->length, in->side.keys[j]->storage,
                             &c->key_lo[j], &c->key_hi[j], &null);
      }
    }
    if (c->sampled & t->what & FD_GROUPS)
      for (int32_t j = 0; j < in->side.n_groups; j++) fd_chunk_group_range(c, &in->side, j);
    c->sampled &= ~t->what;
  }
}

int fd_input_sampled(const struct fd_input *in, int what) {
  for (int64_t p = 0; p < in->n_parts; p++)
    for (int64_t i = 0; i < in->parts[p].n_chunks; i++)
      if (in->parts[p].chunks[i]->sampled & what) return 1;
  return 0;
}

int fd_inputs_exact(struct fd_run *run, int what, int sides, struct ql_error *error) {
  struct fd_exact_task t;
  memset(&t, 0, sizeof(t));
  t.run = run;
  t.what = what;
  t.sides = sides;
  int64_t inexact = 0;
  for (int k = 0; k < 2; k++) {
    for (int64_t p = 0; p < run->in[k].n_parts; p++) {
      const struct fd_part *part = &run->in[k].parts[p];
      t.n_chunks[k] += part->n_chunks;
      for (int64_t i = 0; i < part->n_chunks && (sides & (1 << k)); i++) inexact += (part->chunks[i]->sampled & what) != 0;
    }
  }
  if (inexact == 0) return QL_OK;
  return fd_parallel(&run->ctx, inexact, fd_exact_worker, &t, error);
}

void fd_inputs_destroy(struct fd_run *run) {
  for (int k = 0; k < 2; k++) {
    struct fd_input *in = &run->in[k];
    for (int64_t p = 0; p < in->n_parts; p++) {
      struct fd_part *part = &in->parts[p];
      for (int64_t c = 0; c < part->n_chunks; c++) fd_chunk_free(&run->mem, part->chunks[c]);
      fd_mem_free(&run->mem, part->chunks, part->chunks_cap * 8);
    }
    fd_mem_free(&run->mem, in->parts, in->n_parts * (int64_t)sizeof(struct fd_part));
    in->parts = NULL;
    in->n_parts = 0;
  }
}

void fd_block_row(const struct fd_input *in, const struct fd_block *b, int64_t r,
                       struct fd_row *row) {
  int32_t nk = in->side.n_keys, ng = in->side.n_groups;
  memcpy(row->keys, b->keys + r * nk, (size_t)nk * 8);
  if (ng) memcpy(row->groups, b->groups + r * ng, (size_t)ng * 8);
  row->group_nulls = ng ? b->group_nulls[r] : 0;
  row->has_value = b->has[r];
  row->ivalue = in->is_float ? 0 : b->ivalue[r];
  row->fvalue = in->is_float ? b->fvalue[r] : 0;
}

int fd_input_range(const struct fd_input *in, int is_group, int32_t i, int64_t *lo, int64_t *hi,
                        int *nulls) {
  int64_t l = INT64_MAX, h = INT64_MIN;
  int any = 0;
  uint32_t bit = 1u << i;
  *nulls = 0;
  for (int64_t p = 0; p < in->n_parts; p++) {
    const struct fd_part *part = &in->parts[p];
    for (int64_t k = 0; k < part->n_chunks; k++) {
      const struct fd_chunk *c = part->chunks[k];
      if (is_group) {
        *nulls |= (c->group_null & bit) != 0;
        if (!(c->group_any & bit)) continue;
      }
      int64_t cl = is_group ? c->group_lo[i] : c->key_lo[i], ch = is_group ? c->group_hi[i] : c->key_hi[i];
      l = cl < l ? cl : l;
      h = ch > h ? ch : h;
      any = 1; /* kept chunks are never empty */
    }
  }
  *lo = l;
  *hi = h;
  return any;
}
