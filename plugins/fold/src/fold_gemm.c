/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: the dense path: choosing it from the data, matrices, product,
 * groups (see fold_internal.h, fold_dense.h, fold_exec.h). */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fold_dense.h"
#include "fold_internal.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FD_NO_AVX)
#include <immintrin.h>
#define FD_AVX2 1 /* the fill's and span check's loops in AVX2 where the CPU has it */
/* Rows ahead those loops ask for (the columns are read once, from memory). */
#define FD_STREAM_AHEAD 384
#endif

/* Longest sampled group range trusted without an exact pass. */
#define FD_SAMPLE_MAX_GROUPS 256

/* Largest key or group range the dense kernel indexes (one matrix side). */
#define FD_DENSE_MAX_DIM (INT64_C(1) << 24)

/* The dense problem the data read describe. */
struct fd_gemm_shape {
  int64_t kmin, klen;       /* the join key range both sides cover */
  int64_t skmin[2], sklen[2]; /* per side: its own key range (kmin, klen within each) */
  int64_t gmin[2], glen[2]; /* per side: its non-NULL group key range (glen 0: none) */
  int64_t dim[2];           /* rows of A (side 0), columns of B (side 1); index glen = the NULL group */
};

/* One side's key and group ranges; 0 when the side cannot be dense. */
static int fd_gemm_side(const struct fd_input *in, struct fd_gemm_shape *g, int k, int64_t *klo,
                             int64_t *khi) {
  const struct fd_side *s = &in->side;
  int nulls = 0;
  if (s->n_groups > 1 || s->keys[0]->storage == FD_U64) return 0;
  /* No row: nothing joins; the hash path handles that at no cost. */
  if (!fd_input_range(in, 0, 0, klo, khi, &nulls)) return 0;
  if (fd_input_sampled(in, FD_KEYS)) {
    /* Sampled key ranges are widened by 1/64 of their span on each side:
     * a key the sample missed then most likely still has its place in the
     * matrices (empty keys change no sum and no bit; the product skips
     * them), and the fill is not done twice. */
    uint64_t slack = ((uint64_t)*khi - (uint64_t)*klo) / 64;
    *klo = (uint64_t)*klo - (uint64_t)INT64_MIN < slack ? INT64_MIN : *klo - (int64_t)slack;
    *khi = (uint64_t)INT64_MAX - (uint64_t)*khi < slack ? INT64_MAX : *khi + (int64_t)slack;
  }
  g->gmin[k] = 0;
  g->glen[k] = 0;
  g->dim[k] = 1;
  if (s->n_groups == 0) return 1;
  if (s->groups[0]->storage == FD_U64) return 0;
  int64_t lo, hi;
  if (fd_input_range(in, 1, 0, &lo, &hi, &nulls)) {
    if ((uint64_t)hi - (uint64_t)lo >= (uint64_t)FD_DENSE_MAX_DIM) return 0;
    g->gmin[k] = lo;
    g->glen[k] = hi - lo + 1;
  }
  g->dim[k] = g->glen[k] + nulls;
  return 1;
}

/* Does the data make the contraction a dense matrix product? One integer
 * join key, at most one integer group key per side, an int64 or float64
 * product, and key and group ranges so full that the matrices are about as
 * large as the inputs (sparse ranges would cost memory and time on empty
 * cells; the hash path takes those). */
static int fd_gemm_shape(const struct fd_run *run, struct fd_gemm_shape *g) {
  const struct fd_spec *p = &run->plan->spec;
  if (p->n_keys != 1 || (p->product != FD_S64 && p->product != FD_F64)) return 0;
  int64_t klo[2], khi[2];
  for (int k = 0; k < 2; k++)
    if (!fd_gemm_side(&run->in[k], g, k, &klo[k], &khi[k])) return 0;
  int64_t lo = klo[0] > klo[1] ? klo[0] : klo[1], hi = khi[0] < khi[1] ? khi[0] : khi[1];
  if (hi < lo || (uint64_t)hi - (uint64_t)lo >= (uint64_t)FD_DENSE_MAX_DIM) return 0;
  for (int k = 0; k < 2; k++) {
    /* A side's own range may be wide (its rows outside [lo, hi] cannot
     * match); its length is only compared with, so it saturates. */
    g->skmin[k] = klo[k];
    g->sklen[k] = (uint64_t)khi[k] - (uint64_t)klo[k] >= (uint64_t)INT64_MAX ? INT64_MAX : khi[k] - klo[k] + 1;
  }
  g->kmin = lo;
  g->klen = hi - lo + 1;
  int64_t m = g->dim[0], n = g->dim[1], k = g->klen; /* each < 2^25: no overflow below */
  int64_t rows0 = run->in[0].rows, rows1 = run->in[1].rows;
  return m * k <= 4 * rows0 + 4096 && k * n <= 4 * rows1 + 4096 && m * n <= 4 * (rows0 + rows1) + 65536;
}

/* Side k's rows into its matrix (A[group][key] for side 0, B[key][group]
 * for side 1); FD_FALLBACK on a second or non-finite float value in a
 * cell (the products must each be DataFusion's rounded product). */
static int fd_gemm_fill(const struct fd_input *in, const struct fd_gemm_shape *g, int k,
                             struct fd_matrix *m, struct fd_block *blk) {
  int has_group = in->side.n_groups == 1;
  for (int64_t p = 0; p < in->n_parts; p++) {
    const struct fd_part *part = &in->parts[p];
    for (int64_t ci = 0; ci < part->n_chunks; ci++) {
      const struct fd_chunk *c = part->chunks[ci];
      for (int64_t from = 0; from < c->batch.length; from += FD_BLOCK) {
        fd_block_decode(in, c, from, blk);
        for (int64_t r = 0; r < blk->n; r++) {
          uint64_t key = (uint64_t)blk->keys[r] - (uint64_t)g->kmin;
          if (key >= (uint64_t)g->klen) continue; /* cannot match the other side */
          int64_t gi = 0;
          if (has_group) gi = (blk->group_nulls[r] & 1u) ? g->glen[k] : blk->groups[r] - g->gmin[k];
          int64_t iv = (int64_t)(uint64_t)blk->ivalue[r]; /* int64 products only on this path */
          double fv = blk->fvalue[r];
          int dup = k == 0 ? fd_matrix_put(m, gi, (int64_t)key, blk->has[r], iv, fv)
                           : fd_matrix_put(m, (int64_t)key, gi, blk->has[r], iv, fv);
          if (dup) return FD_FALLBACK;
        }
      }
    }
  }
  return QL_OK;
}

/* Filling A and B: one task per side (the matrices are disjoint). */
struct fd_fill_task {
  struct fd_run *run;
  const struct fd_gemm_shape *shape;
  struct fd_matrix *m[2];
  int rc[2];
  atomic_int next;
};

static int fd_fill_worker(void *arg, struct ql_error *error) {
  struct fd_fill_task *t = arg;
  struct fd_block *blk;
  QL_RETURN_NOT_OK(fd_block_new(&t->run->mem, &blk, error));
  for (;;) {
    int k = atomic_fetch_add(&t->next, 1);
    if (k >= 2) break;
    t->rc[k] = fd_gemm_fill(&t->run->in[k], t->shape, k, t->m[k], blk);
  }
  fd_mem_free(&t->run->mem, blk, (int64_t)sizeof(*blk));
  return QL_OK;
}

/* A chunk of side 0 whose rows are consecutive cells of a key-major A:
 * cells [c0, c0 + n) hold values[0..n). */
struct fd_span {
  int64_t c0, n; /* n < 0: the chunk is not one */
  const double *values;
};

/* Float matrices: every chunk of both sides is one task, so both workers
 * share the larger side too (see fold_dense.h for why that is safe). */
struct fd_fill_f_task {
  struct fd_run *run;
  const struct fd_gemm_shape *shape;
  struct fd_matrix *m[2];
  int64_t n_chunks[2]; /* over all partitions of each side */
  int skip[2];         /* side k's chunks are not filled (done already) */
  struct fd_span *spans; /* not NULL: side 0's chunks are only checked, into spans[chunk] */
  atomic_llong next;
  atomic_llong values;   /* values put */
  atomic_llong values_b; /* of which into b */
  atomic_int fallback;
  atomic_int miss;       /* a row outside the ranges the matrices were sized by */
};

/* Chunk number i of side k (partitions in order). */
static const struct fd_chunk *fd_nth_chunk(const struct fd_input *in, int64_t i) {
  for (int64_t p = 0; p < in->n_parts; p++) {
    if (i < in->parts[p].n_chunks) return in->parts[p].chunks[i];
    i -= in->parts[p].n_chunks;
  }
  return NULL;
}

/* A float64's exponent bits: all set for infinities and NaNs. */
#define FD_EXP_MASK UINT64_C(0x7ff0000000000000)

#ifdef FD_AVX2

/* The span check of int64 keys and groups, four rows at a time (AVX2,
 * chosen at run time): nonzero when a row is not the cell c0 + r. Keys
 * and groups are compared unsigned against their lengths (sign bits
 * flipped for the signed compare); a key inside its length (< 2^24) and
 * M (< 2^25) multiply exactly in 32 x 32 -> 64 bits. */
static __attribute__((target("avx2"))) uint64_t fd_span_bad_avx2(const int64_t *kp, const int64_t *gp, int64_t n,
                                                                      uint64_t kmin, uint64_t klen, uint64_t gmin,
                                                                      uint64_t glen, uint64_t M, uint64_t c0) {
  const __m256i flip = _mm256_set1_epi64x(INT64_MIN), four = _mm256_set1_epi64x(4);
  const __m256i vkmin = _mm256_set1_epi64x((int64_t)kmin), vgmin = _mm256_set1_epi64x((int64_t)gmin);
  const __m256i vklen = _mm256_set1_epi64x((int64_t)(klen ^ (UINT64_C(1) << 63)));
  const __m256i vglen = _mm256_set1_epi64x((int64_t)(glen ^ (UINT64_C(1) << 63)));
  const __m256i vm = _mm256_set1_epi64x((int64_t)M);
  __m256i expect = _mm256_add_epi64(_mm256_set1_epi64x((int64_t)c0), _mm256_setr_epi64x(0, 1, 2, 3));
  __m256i diff = _mm256_setzero_si256(), inside = _mm256_set1_epi64x(-1);
  int64_t r = 0;
  for (; r + 4 <= n; r += 4) {
    __builtin_prefetch(kp + r + FD_STREAM_AHEAD);
    __builtin_prefetch(gp + r + FD_STREAM_AHEAD);
    __m256i kk = _mm256_sub_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(kp + r)), vkmin);
    __m256i gi = _mm256_sub_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(gp + r)), vgmin);
    inside = _mm256_and_si256(inside, _mm256_cmpgt_epi64(vklen, _mm256_xor_si256(kk, flip)));
    inside = _mm256_and_si256(inside, _mm256_cmpgt_epi64(vglen, _mm256_xor_si256(gi, flip)));
    diff = _mm256_or_si256(diff, _mm256_xor_si256(_mm256_add_epi64(_mm256_mul_epu32(kk, vm), gi), expect));
    expect = _mm256_add_epi64(expect, four);
  }
  uint64_t bad = !_mm256_testz_si256(diff, diff) || _mm256_movemask_epi8(inside) != -1;
  for (; r < n; r++) {
    uint64_t kk = (uint64_t)kp[r] - kmin, gi = (uint64_t)gp[r] - gmin;
    bad |= (uint64_t)(kk >= klen) | (uint64_t)(gi >= glen) | ((kk * M + gi) ^ (c0 + (uint64_t)r));
  }
  return bad;
}

static int fd_has_avx2(void) {
  static atomic_int known = -1;
  int v = atomic_load_explicit(&known, memory_order_relaxed);
  if (v < 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx2") ? 1 : 0;
    atomic_store_explicit(&known, v, memory_order_relaxed);
  }
  return v;
}

/* The direct fill's scatter of int64 keys and groups and float64 values
 * without NULLs, four rows at a time (AVX2, chosen at run time) while all
 * four lie inside the matrix (keys and groups below 2^25: cells multiply
 * exactly in 32 x 32 -> 64 bits): the rows from the returned one on are
 * left to the scalar loop. *values += the values stored; *nonfinite set
 * when one is not finite. */
static __attribute__((target("avx2"))) int64_t fd_scatter_avx2(const int64_t *kp, const int64_t *gp,
                                                                    const uint64_t *vb, int64_t n, uint64_t *cells,
                                                                    const int64_t lim[6], int64_t *values,
                                                                    uint64_t *nonfinite) {
  const __m256i flip = _mm256_set1_epi64x(INT64_MIN), exp = _mm256_set1_epi64x((int64_t)FD_EXP_MASK);
  const __m256i vkmin = _mm256_set1_epi64x(lim[0]), vgmin = _mm256_set1_epi64x(lim[2]);
  const __m256i vklen = _mm256_set1_epi64x((int64_t)((uint64_t)lim[1] ^ (UINT64_C(1) << 63)));
  const __m256i vglen = _mm256_set1_epi64x((int64_t)((uint64_t)lim[3] ^ (UINT64_C(1) << 63)));
  const __m256i vgs = _mm256_set1_epi64x(lim[4]), vks = _mm256_set1_epi64x(lim[5]);
  const __m256i key = _mm256_set1_epi64x((int64_t)FD_CELL_KEY);
  __m256i bad = _mm256_setzero_si256();
  int64_t r = 0;
  for (; r + 4 <= n; r += 4) {
    __builtin_prefetch(kp + r + FD_STREAM_AHEAD);
    __builtin_prefetch(gp + r + FD_STREAM_AHEAD);
    __builtin_prefetch(vb + r + FD_STREAM_AHEAD);
    __m256i kk = _mm256_sub_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(kp + r)), vkmin);
    __m256i gi = _mm256_sub_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(gp + r)), vgmin);
    __m256i in = _mm256_and_si256(_mm256_cmpgt_epi64(vklen, _mm256_xor_si256(kk, flip)),
                                  _mm256_cmpgt_epi64(vglen, _mm256_xor_si256(gi, flip)));
    if (_mm256_movemask_epi8(in) != -1) break;
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(vb + r));
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi64(_mm256_and_si256(v, exp), exp));
    __m256i cell = _mm256_add_epi64(_mm256_mul_epu32(gi, vgs), _mm256_mul_epu32(kk, vks));
    __m256i enc = _mm256_xor_si256(v, key);
    __m128i c01 = _mm256_castsi256_si128(cell), c23 = _mm256_extracti128_si256(cell, 1);
    __m128i e01 = _mm256_castsi256_si128(enc), e23 = _mm256_extracti128_si256(enc, 1);
    __atomic_store_n(cells + _mm_cvtsi128_si64(c01), (uint64_t)_mm_cvtsi128_si64(e01), __ATOMIC_RELAXED);
    __atomic_store_n(cells + _mm_extract_epi64(c01, 1), (uint64_t)_mm_extract_epi64(e01, 1), __ATOMIC_RELAXED);
    __atomic_store_n(cells + _mm_cvtsi128_si64(c23), (uint64_t)_mm_cvtsi128_si64(e23), __ATOMIC_RELAXED);
    __atomic_store_n(cells + _mm_extract_epi64(c23, 1), (uint64_t)_mm_extract_epi64(e23, 1), __ATOMIC_RELAXED);
  }
  *values += r;
  *nonfinite |= !_mm256_testz_si256(bad, bad);
  return r;
}
#endif

/* The scatter loop of the direct fill: key type TK, group type TG (when
 * HAS_GROUP), float64 values; rows [0, n) of the columns at their offsets.
 * Without NULL values (the common case) the loop only stores: the values'
 * exponents are OR-ed together and checked once at the end (a non-finite
 * value sends the run to the hash path, so what it stored does not
 * matter), and every row kept is a value. */
#define FD_SCATTER(TK, TG, HAS_GROUP)                                                          \
  do {                                                                                              \
    const TK *kp = (const TK *)key->buffers[1] + key->offset + off;                                 \
    const TG *gp = HAS_GROUP ? (const TG *)grp->buffers[1] + grp->offset + off : NULL;              \
    if (!vnull) {                                                                                   \
      const uint64_t *vb = (const uint64_t *)(const void *)vp;                                      \
      uint64_t *cells = (uint64_t *)(void *)mf;                                                     \
      for (int64_t r = r0; r < n; r++) {                                                            \
        uint64_t kk = (uint64_t)(int64_t)kp[r] - (uint64_t)kmin;                                    \
        if (kk >= (uint64_t)klen) { /* cannot match the other side, if within this side's range */  \
          misses += (uint64_t)(int64_t)kp[r] - (uint64_t)skmin >= (uint64_t)sklen;                  \
          continue;                                                                                 \
        }                                                                                           \
        int64_t gi = HAS_GROUP ? (int64_t)gp[r] - gmin : 0;                                         \
        if (HAS_GROUP && (uint64_t)gi >= (uint64_t)glen) {                                          \
          misses++;                                                                                 \
          continue;                                                                                 \
        }                                                                                           \
        uint64_t bits = vb[r];                                                                      \
        nonfinite |= ~bits & FD_EXP_MASK ? 0 : 1;                                              \
        __atomic_store_n(cells + gi * gstride + (int64_t)kk * kstride, bits ^ FD_CELL_KEY,     \
                         __ATOMIC_RELAXED);                                                         \
        values++;                                                                                   \
      }                                                                                             \
      if (nonfinite) return -1;                                                                     \
      break;                                                                                        \
    }                                                                                               \
    for (int64_t r = 0; r < n; r++) {                                                               \
      uint64_t kk = (uint64_t)(int64_t)kp[r] - (uint64_t)kmin;                                      \
      if (kk >= (uint64_t)klen) {                                                                   \
        misses += (uint64_t)(int64_t)kp[r] - (uint64_t)skmin >= (uint64_t)sklen;                    \
        continue;                                                                                   \
      }                                                                                             \
      int64_t gi = HAS_GROUP ? (int64_t)gp[r] - gmin : 0;                                           \
      if (HAS_GROUP && (uint64_t)gi >= (uint64_t)glen) {                                            \
        misses++;                                                                                   \
        continue;                                                                                   \
      }                                                                                             \
      int has = fd_bit(val, val->offset + off + r);                                            \
      if (fd_matrix_put_f(mf, gi * gstride + (int64_t)kk * kstride, has, has ? vp[r] : 0.0)) return -1; \
      values += has;                                                                                \
    }                                                                                               \
  } while (0)


/* Chunk c straight from its Arrow buffers when its key and group columns
 * have no NULL and are int32/int64 and its values float64 (the common
 * case: no decoding pass); -2 when the chunk is not of that kind, -3 when a
 * row lies outside the side's key or group range the matrices were sized
 * by (sampled ranges that missed a value). */
static int64_t fd_fill_direct_f(const struct fd_input *in, const struct fd_chunk *c,
                                     const struct fd_gemm_shape *g, int k, struct fd_matrix *m) {
  const struct fd_side *s = &in->side;
  const struct ArrowArray *batch = &c->batch;
  const struct ArrowArray *key = batch->children[s->keys[0]->column];
  const struct ArrowArray *grp = s->n_groups ? batch->children[s->groups[0]->column] : NULL;
  const struct ArrowArray *val = batch->children[s->value->column];
  int32_t ks = s->keys[0]->storage, gs = grp ? s->groups[0]->storage : FD_S64;
  if (s->value->storage != FD_F64 || (ks != FD_S64 && ks != FD_S32) ||
      (gs != FD_S64 && gs != FD_S32) || fd_has_nulls(key) || (grp && fd_has_nulls(grp)))
    return -2;
  int64_t off = batch->offset, n = batch->length, values = 0, misses = 0;
  int64_t kmin = g->kmin, klen = g->klen, gmin = g->gmin[k], glen = g->glen[k];
  int64_t skmin = g->skmin[k], sklen = g->sklen[k];
  /* A[group][key] for side 0 (A[key][group] when key-major), B[key][group] for side 1. */
  int64_t gstride = m->transposed ? 1 : m->cols, kstride = m->transposed ? m->cols : 1;
  int vnull = fd_has_nulls(val);
  double *mf = m->f;
  const double *vp = (const double *)val->buffers[1] + val->offset + off;
  int64_t r0 = 0; /* rows before r0 are done */
  uint64_t nonfinite = 0;
#ifdef FD_AVX2
  if (!vnull && ks == FD_S64 && grp && gs == FD_S64 && fd_has_avx2()) {
    const int64_t lim[6] = {kmin, klen, gmin, glen, gstride, kstride};
    r0 = fd_scatter_avx2((const int64_t *)key->buffers[1] + key->offset + off,
                              (const int64_t *)grp->buffers[1] + grp->offset + off,
                              (const uint64_t *)(const void *)vp, n, (uint64_t *)(void *)mf, lim, &values, &nonfinite);
  }
#endif
  if (ks == FD_S64 && !grp) FD_SCATTER(int64_t, int64_t, 0);
  else if (ks == FD_S64 && gs == FD_S64) FD_SCATTER(int64_t, int64_t, 1);
  else if (ks == FD_S64) FD_SCATTER(int64_t, int32_t, 1);
  else if (!grp) FD_SCATTER(int32_t, int32_t, 0);
  else if (gs == FD_S64) FD_SCATTER(int32_t, int64_t, 1);
  else FD_SCATTER(int32_t, int32_t, 1);
  return misses ? -3 : values;
}

/* The check of a chunk's rows for fd_span_of: key type TK, group
 * type TG. Branch-free: every row is looked at. */
#define FD_SPAN_LOOP(TK, TG)                                                                 \
  do {                                                                                            \
    const TK *kp = (const TK *)key->buffers[1] + key->offset + off;                               \
    const TG *gp = (const TG *)grp->buffers[1] + grp->offset + off;                               \
    c0 = ((uint64_t)(int64_t)kp[0] - (uint64_t)kmin) * (uint64_t)M + ((uint64_t)(int64_t)gp[0] - (uint64_t)gmin); \
    for (int64_t r = 0; r < n; r++) {                                                             \
      uint64_t kk = (uint64_t)(int64_t)kp[r] - (uint64_t)kmin, gi = (uint64_t)(int64_t)gp[r] - (uint64_t)gmin; \
      bad |= (uint64_t)(kk >= klen) | (uint64_t)(gi >= glen) | ((kk * (uint64_t)M + gi) ^ (c0 + (uint64_t)r)); \
    }                                                                                             \
  } while (0)


/* Is chunk c of side 0 a span of a key-major A (M groups per key): its
 * rows, in order, the consecutive cells from some c0 on, each row's key
 * and group inside the matrices, keys and groups int32/int64 and values
 * float64, none NULL? Then its values need no copy: the product reads
 * them where they are. Every row is checked (as the fill would). */
static struct fd_span fd_span_of(const struct fd_input *in, const struct fd_chunk *c,
                                           const struct fd_gemm_shape *g, int64_t M) {
  struct fd_span span = {0, -1, NULL};
  const struct fd_side *s = &in->side;
  const struct ArrowArray *batch = &c->batch;
  if (s->n_groups != 1 || s->value->storage != FD_F64) return span;
  const struct ArrowArray *key = batch->children[s->keys[0]->column];
  const struct ArrowArray *grp = batch->children[s->groups[0]->column];
  const struct ArrowArray *val = batch->children[s->value->column];
  int32_t ks = s->keys[0]->storage, gs = s->groups[0]->storage;
  if ((ks != FD_S64 && ks != FD_S32) || (gs != FD_S64 && gs != FD_S32) ||
      fd_has_nulls(key) || fd_has_nulls(grp) || fd_has_nulls(val))
    return span;
  int64_t off = batch->offset, n = batch->length;
  const double *vp = (const double *)val->buffers[1] + val->offset + off;
  if (n == 0) {
    span.n = 0;
    return span;
  }
  if ((uintptr_t)(const void *)vp % _Alignof(double) != 0) return span;
  uint64_t kmin = (uint64_t)g->kmin, klen = (uint64_t)g->klen, gmin = (uint64_t)g->gmin[0];
  uint64_t glen = (uint64_t)g->glen[0], c0 = 0, bad = 0;
#ifdef FD_AVX2
  if (ks == FD_S64 && gs == FD_S64 && fd_has_avx2()) {
    const int64_t *kp = (const int64_t *)key->buffers[1] + key->offset + off;
    const int64_t *gp = (const int64_t *)grp->buffers[1] + grp->offset + off;
    c0 = ((uint64_t)kp[0] - kmin) * (uint64_t)M + ((uint64_t)gp[0] - gmin);
    bad = fd_span_bad_avx2(kp, gp, n, kmin, klen, gmin, glen, (uint64_t)M, c0);
  } else
#endif
  if (ks == FD_S64 && gs == FD_S64) FD_SPAN_LOOP(int64_t, int64_t);
  else if (ks == FD_S64) FD_SPAN_LOOP(int64_t, int32_t);
  else if (gs == FD_S64) FD_SPAN_LOOP(int32_t, int64_t);
  else FD_SPAN_LOOP(int32_t, int32_t);
  if (bad) return span;
  span.c0 = (int64_t)c0;
  span.n = n;
  span.values = vp;
  return span;
}

/* The rows of chunk c of side k into its matrix; the number of values put,
 * -1 when a value is not finite, -3 when a row lies outside the ranges the
 * matrices were sized by. */
static int64_t fd_fill_chunk_f(const struct fd_input *in, const struct fd_chunk *c,
                                    const struct fd_gemm_shape *g, int k, struct fd_matrix *m,
                                    struct fd_block *blk) {
  int64_t direct = fd_fill_direct_f(in, c, g, k, m);
  if (direct != -2) return direct;
  int has_group = in->side.n_groups == 1;
  int64_t values = 0, kmin = g->kmin, klen = g->klen, gmin = g->gmin[k], gnull = g->glen[k], cols = m->cols;
  int64_t gdim = g->dim[k], skmin = g->skmin[k], sklen = g->sklen[k];
  for (int64_t from = 0; from < c->batch.length; from += FD_BLOCK) {
    fd_block_decode(in, c, from, blk);
    for (int64_t r = 0; r < blk->n; r++) {
      uint64_t key = (uint64_t)blk->keys[r] - (uint64_t)kmin;
      if (key >= (uint64_t)klen) { /* cannot match the other side, if within this side's range */
        if ((uint64_t)blk->keys[r] - (uint64_t)skmin >= (uint64_t)sklen) return -3;
        continue;
      }
      int64_t gi = 0;
      if (has_group && (blk->group_nulls[r] & 1u)) {
        if (gdim == gnull) return -3; /* no NULL group was seen in the sample */
        gi = gnull;
      } else if (has_group) {
        gi = blk->groups[r] - gmin;
        if ((uint64_t)gi >= (uint64_t)gnull) return -3;
      }
      int64_t cell = m->transposed ? (int64_t)key * cols + gi : gi * cols + (int64_t)key;
      if (fd_matrix_put_f(m->f, cell, blk->has[r], blk->fvalue[r])) return -1;
      values += blk->has[r];
    }
  }
  return values;
}

static int fd_fill_f_worker(void *arg, struct ql_error *error) {
  struct fd_fill_f_task *t = arg;
  struct fd_block *blk;
  QL_RETURN_NOT_OK(fd_block_new(&t->run->mem, &blk, error));
  int64_t total = t->n_chunks[0] + t->n_chunks[1], values = 0, values_b = 0;
  while (!atomic_load_explicit(&t->fallback, memory_order_relaxed)) {
    int64_t i = atomic_fetch_add(&t->next, 1);
    if (i >= total) break;
    int k = i < t->n_chunks[0] ? 0 : 1;
    if (t->skip[k]) continue;
    const struct fd_chunk *c = fd_nth_chunk(&t->run->in[k], k ? i - t->n_chunks[0] : i);
    if (k == 0 && t->spans) {
      t->spans[i] = fd_span_of(&t->run->in[0], c, t->shape, t->m[0]->cols);
      continue;
    }
    int64_t v = fd_fill_chunk_f(&t->run->in[k], c, t->shape, k, t->m[k], blk);
    if (v == -3) atomic_store(&t->miss, 1);
    if (v < 0) atomic_store(&t->fallback, 1);
    else values += v, values_b += k ? v : 0;
  }
  atomic_fetch_add(&t->values, values);
  atomic_fetch_add(&t->values_b, values_b);
  fd_mem_free(&t->run->mem, blk, (int64_t)sizeof(*blk));
  return QL_OK;
}

/* Sealing both float matrices: tasks of about FD_SEAL_CELLS cells,
 * row ranges of A, then 64-row multiples of B. */
#define FD_SEAL_CELLS (INT64_C(1) << 16)

struct fd_seal_task {
  struct fd_matrix *m[2];
  int64_t step[2], n_tasks[2];
  atomic_llong next;
  atomic_llong values[2]; /* cells holding a value, per matrix */
};

static int fd_seal_worker(void *arg, struct ql_error *error) {
  (void)error;
  struct fd_seal_task *t = arg;
  int64_t values[2] = {0, 0};
  for (;;) {
    int64_t i = atomic_fetch_add(&t->next, 1);
    if (i >= t->n_tasks[0] + t->n_tasks[1]) break;
    int k = i < t->n_tasks[0] ? 0 : 1;
    int64_t from = (k ? i - t->n_tasks[0] : i) * t->step[k];
    int64_t to = from + t->step[k] < t->m[k]->rows ? from + t->step[k] : t->m[k]->rows;
    values[k] += fd_matrix_seal_f(t->m[k], from, to);
  }
  atomic_fetch_add(&t->values[0], values[0]);
  atomic_fetch_add(&t->values[1], values[1]);
  return QL_OK;
}

static int fd_zero(struct fd_run *run, struct fd_matrix *a, struct fd_matrix *b, void *c,
                        int64_t c_bytes, struct ql_error *error);

/* Value r of an int32/int64 column without NULLs (offset included by the
 * caller) into *out; 0 for any other column. */
static int fd_int_at(const struct ArrowArray *col, int32_t storage, int64_t r, int64_t *out) {
  if (fd_has_nulls(col)) return 0;
  if (storage == FD_S64) *out = ((const int64_t *)col->buffers[1])[col->offset + r];
  else if (storage == FD_S32) *out = ((const int32_t *)col->buffers[1])[col->offset + r];
  else return 0;
  return 1;
}

/* Store a float A key-major? When the left input comes ordered by (key,
 * group), as its first chunk's first two rows tell (one key, consecutive
 * groups): the fill then writes A in order, and may not need to copy it at
 * all (fd_borrow_rows). Either layout gives the same bits, so this
 * guess from one chunk cannot change a result. */
static int fd_gemm_key_major(const struct fd_run *run) {
  const struct fd_input *in = &run->in[0];
  if (in->side.n_groups != 1) return 0;
  const struct fd_chunk *c = NULL;
  for (int64_t p = 0; p < in->n_parts && !c; p++)
    for (int64_t i = 0; i < in->parts[p].n_chunks && !c; i++)
      if (in->parts[p].chunks[i]->batch.length >= 2) c = in->parts[p].chunks[i];
  if (!c) return 0;
  const struct ArrowArray *key = c->batch.children[in->side.keys[0]->column];
  const struct ArrowArray *grp = c->batch.children[in->side.groups[0]->column];
  int64_t k0, k1, g0, g1, off = c->batch.offset;
  int32_t ks = in->side.keys[0]->storage, gs = in->side.groups[0]->storage;
  if (!fd_int_at(key, ks, off, &k0) || !fd_int_at(key, ks, off + 1, &k1) ||
      !fd_int_at(grp, gs, off, &g0) || !fd_int_at(grp, gs, off + 1, &g1))
    return 0;
  return k0 == k1 && (uint64_t)g1 - (uint64_t)g0 == 1;
}

/* Does one of the n doubles fail to be finite? */
static int fd_any_nonfinite(const void *values, int64_t n) {
  const double *v = values;
  for (int64_t i = 0; i < n; i++)
    if (!__builtin_isfinite(v[i])) return 1;
  return 0;
}

/* How the product reads a key-major A's rows (fd_matrix.rowp): into
 * its own values, or borrowed from side 0's chunks (extra: the rows no
 * chunk holds whole, copied; row 0 of it is all zeros). rowp comes from
 * the buffer cache (W̄'s 400 KB of fresh pages cost page faults on every
 * run). */
struct fd_arows {
  const double **rowp;
  double *extra;
  int64_t rowp_bytes, extra_bytes;
  int borrowed;
};

static int fd_span_cmp(const void *x, const void *y) {
  const struct fd_span *p = x, *q = y;
  return (p->c0 > q->c0) - (p->c0 < q->c0);
}

/* How many rows of a key-major A (M groups per key) the sorted,
 * disjoint spans cut (touch without one of them holding it whole): only a
 * span's first and last rows can be. */
static int64_t fd_cut_rows(const struct fd_span *spans, int64_t m, int64_t M) {
  int64_t cut = 0, last = -1;
  for (int64_t j = 0; j < m; j++) {
    int64_t lo = spans[j].c0, hi = lo + spans[j].n, r0 = lo / M, r1 = (hi - 1) / M;
    if ((lo % M != 0 || (r0 == r1 && hi % M != 0)) && r0 != last) cut++, last = r0;
    if (r1 != r0 && hi % M != 0 && r1 != last) cut++, last = r1;
  }
  return cut;
}

/* Row k of a key-major A assembled from the spans (from j on) into row,
 * zeroed before; the bits of the cells held set in a's bitsets. */
static void fd_row_copy(struct fd_matrix *a, const struct fd_span *spans, int64_t n, int64_t j,
                             int64_t k, double *row) {
  int64_t M = a->cols, lo = k * M, hi = lo + M;
  for (; j < n && spans[j].c0 < hi; j++) {
    int64_t from = spans[j].c0 > lo ? spans[j].c0 : lo;
    int64_t to = spans[j].c0 + spans[j].n < hi ? spans[j].c0 + spans[j].n : hi;
    for (int64_t cell = from; cell < to; cell++) {
      int64_t i = cell - lo;
      row[i] = spans[j].values[cell - spans[j].c0];
      uint64_t bit = UINT64_C(1) << (k % 64);
      a->exist[i * a->words + k / 64] |= bit;
      a->has[i * a->words + k / 64] |= bit;
    }
  }
}

/* Side 0's chunks as the rows of the key-major A (K keys of M groups,
 * bitsets zeroed, no values) when every chunk is a span (spans[0..n)) and
 * no two overlap: each row then points into the one chunk holding it
 * whole, or at a row of zeros when no chunk touches it, or is copied (the
 * few rows a chunk boundary cuts); every cell a span holds has a value.
 * No two spans overlap, so no cell gets two values. *borrowed 0: the
 * spans do not qualify (A must be filled). */
static int fd_borrow_rows(struct fd_run *run, struct fd_matrix *a, struct fd_span *spans,
                               int64_t n, struct fd_arows *ar, struct ql_error *error) {
  int64_t K = a->rows, M = a->cols, m = 0, cut = 0;
  for (int64_t i = 0; i < n; i++) {
    if (spans[i].n < 0) return QL_OK;
    if (spans[i].n > 0) spans[m++] = spans[i];
  }
  qsort(spans, (size_t)m, sizeof(*spans), fd_span_cmp);
  for (int64_t i = 1; i < m; i++)
    if (spans[i].c0 < spans[i - 1].c0 + spans[i - 1].n) return QL_OK;
  cut = fd_cut_rows(spans, m, M);
  if (cut * 8 > K) return QL_OK; /* mostly cut rows: filling A costs less */
  ar->rowp_bytes = K * (int64_t)sizeof(double *);
  ar->extra_bytes = (cut + 1) * M * 8;
  void *p = NULL, *q = NULL, *full = NULL;
  int64_t full_bytes = a->words * 8;
  QL_RETURN_NOT_OK(fd_mem_alloc_cached(&run->mem, &p, ar->rowp_bytes, NULL, error));
  ar->rowp = p;
  QL_RETURN_NOT_OK(fd_mem_calloc(&run->mem, &q, ar->extra_bytes, error));
  ar->extra = q;
  QL_RETURN_NOT_OK(fd_mem_calloc(&run->mem, &full, full_bytes, error));
  uint64_t *whole = full; /* bit k: row k held whole by a span */
  double *next = ar->extra + M;
  /* Rows in order, span by span: those before a span's first row no span
   * touches (a row of zeros); a span's rows are held whole by it, or cut
   * (copied, from it and the spans after it that touch the row). */
  int64_t k = 0;
  for (int64_t j = 0; j < m; j++) {
    int64_t lo = spans[j].c0, hi = lo + spans[j].n, r1 = (hi - 1) / M;
    for (; k < lo / M; k++) ar->rowp[k] = ar->extra;
    for (; k <= r1; k++) {
      if (k * M >= lo && k * M + M <= hi) {
        ar->rowp[k] = spans[j].values + (k * M - lo);
        whole[k / 64] |= UINT64_C(1) << (k % 64);
      } else {
        fd_row_copy(a, spans, m, j, k, next);
        ar->rowp[k] = next;
        next += M;
      }
    }
  }
  for (; k < K; k++) ar->rowp[k] = ar->extra;
  for (int64_t i = 0; i < M; i++)
    for (int64_t w = 0; w < a->words; w++) {
      a->exist[i * a->words + w] |= whole[w];
      a->has[i * a->words + w] |= whole[w];
    }
  fd_mem_cfree(&run->mem, full, full_bytes);
  ar->borrowed = 1;
  return QL_OK;
}

static atomic_llong fd_borrowed_count;

int64_t fd_dense_borrowed_runs(void) {
  return atomic_load(&fd_borrowed_count);
}

/* Is some value of a borrowed A not finite? (Only asked when C holds a
 * non-finite sum, which finite values can also give by overflowing.) */
static int fd_borrowed_nonfinite(const struct fd_matrix *a) {
  for (int64_t k = 0; k < a->rows; k++)
    for (int64_t i = 0; i < a->cols; i++)
      if (!__builtin_isfinite(a->rowp[k][i])) return 1;
  return 0;
}

/* Seal b (unless b_put is not NULL: the product seals it, and must find
 * *b_put values in it), and a when it is key-major with values of its own
 * (a row-major A is sealed by the product); *a_values: the number of
 * values the product must find in a (values put minus those sealed).
 * FD_FALLBACK when b, or a sealed here, holds fewer values than were
 * put into it (a cell got two, or a NULL after a value). */
static int fd_gemm_seal(struct fd_run *run, struct fd_matrix *a, struct fd_matrix *b,
                             const struct fd_fill_f_task *fill, int64_t *a_values, int64_t *b_put,
                             struct ql_error *error) {
  struct fd_seal_task seal;
  memset(&seal, 0, sizeof(seal));
  seal.m[0] = a;
  seal.m[1] = b;
  for (int k = 0; k < 2; k++) {
    int64_t rows = FD_SEAL_CELLS / (seal.m[k]->cols ? seal.m[k]->cols : 1);
    seal.step[k] = rows < 64 ? 64 : rows / 64 * 64;
  }
  seal.n_tasks[0] = a->transposed && a->f ? (a->rows + seal.step[0] - 1) / seal.step[0] : 0;
  seal.n_tasks[1] = b_put ? 0 : (b->rows + seal.step[1] - 1) / seal.step[1];
  QL_RETURN_NOT_OK(
      fd_parallel(&run->ctx, seal.n_tasks[0] + seal.n_tasks[1], fd_seal_worker, &seal, error));
  int64_t put_b = atomic_load(&fill->values_b), put_a = atomic_load(&fill->values) - put_b;
  *a_values = put_a;
  if (seal.n_tasks[0]) {
    if (atomic_load(&seal.values[0]) != put_a) return FD_FALLBACK;
    *a_values = 0;
  }
  if (b_put) {
    *b_put = put_b;
    return QL_OK;
  }
  return atomic_load(&seal.values[1]) == put_b ? QL_OK : FD_FALLBACK;
}

/* Fill the float matrices a and b and seal b (unless b_put is not NULL:
 * see fd_gemm_seal) and a key-major a; *a_values: the number of
 * values the product must find in a row-major a.
 * FD_FALLBACK when a value was not finite or a cell got two;
 * FD_GUESS_MISS when a row lies outside the sampled ranges. A
 * key-major a without values first tries to borrow side 0's chunks as its
 * rows (ar); when they do not qualify, it gets values and is filled. */
static int fd_gemm_fill_f(struct fd_run *run, const struct fd_gemm_shape *g, struct fd_matrix *a,
                               struct fd_matrix *b, struct fd_arows *ar, int64_t *a_values,
                               int64_t *b_put, struct ql_error *error) {
  struct fd_fill_f_task fill;
  memset(&fill, 0, sizeof(fill));
  fill.run = run;
  fill.shape = g;
  fill.m[0] = a;
  fill.m[1] = b;
  for (int k = 0; k < 2; k++)
    for (int64_t p = 0; p < run->in[k].n_parts; p++) fill.n_chunks[k] += run->in[k].parts[p].n_chunks;
  int64_t spans_bytes = (fill.n_chunks[0] ? fill.n_chunks[0] : 1) * (int64_t)sizeof(struct fd_span);
  void *p = NULL;
  if (a->transposed && !a->f) {
    QL_RETURN_NOT_OK(fd_mem_alloc(&run->mem, &p, spans_bytes, error));
    fill.spans = p;
  }
  int rc = fd_parallel(&run->ctx, fill.n_chunks[0] + fill.n_chunks[1], fd_fill_f_worker, &fill, error);
  if (rc == QL_OK && fill.spans) rc = fd_borrow_rows(run, a, fill.spans, fill.n_chunks[0], ar, error);
  fd_mem_free(&run->mem, p, spans_bytes);
  if (rc == QL_OK && a->transposed && !ar->borrowed && atomic_load(&fill.fallback) == 0 &&
      atomic_load(&fill.miss) == 0) {
    /* Side 0 is not made of spans: A gets values and is filled. */
    fill.spans = NULL;
    fill.skip[1] = 1;
    atomic_store(&fill.next, 0);
    rc = fd_matrix_add_values(a, &run->mem, error);
    struct fd_matrix zeroed_b = *b;
    zeroed_b.dirty = 0;
    if (rc == QL_OK) rc = fd_zero(run, a, &zeroed_b, NULL, 0, error);
    if (rc == QL_OK) rc = fd_parallel(&run->ctx, fill.n_chunks[0], fd_fill_f_worker, &fill, error);
  }
  QL_RETURN_NOT_OK(rc);
  if (atomic_load(&fill.miss)) return FD_GUESS_MISS;
  if (atomic_load(&fill.fallback)) return FD_FALLBACK;
  if (a->transposed && !ar->borrowed) {
    ar->rowp_bytes = a->rows * (int64_t)sizeof(double *);
    QL_RETURN_NOT_OK(fd_mem_alloc_cached(&run->mem, &p, ar->rowp_bytes, NULL, error));
    ar->rowp = p;
    for (int64_t k = 0; k < a->rows; k++) ar->rowp[k] = a->f + k * a->cols;
  }
  a->rowp = ar->rowp;
  return fd_gemm_seal(run, a, b, &fill, a_values, b_put, error);
}

struct fd_gemm_task {
  struct fd_matrix *a;
  struct fd_matrix *b; /* sealed by the product when b_put >= 0 */
  void *c;
  uint8_t *exist, *has;
  int64_t rows, block; /* rows of C, rows per task */
  atomic_llong next;
  atomic_llong n_exist, n_has; /* cells of C with exist / has set */
  atomic_llong a_values;       /* cells of a float A holding a value */
  int64_t b_put;               /* >= 0: B is sealed by the product (key-major A), and must hold b_put values */
  atomic_llong b_values;       /* then: the cells of B holding a value */
};

static int fd_gemm_worker(void *arg, struct ql_error *error) {
  (void)error;
  struct fd_gemm_task *t = arg;
  int64_t counts[3] = {0, 0, 0};
  for (;;) {
    int64_t from = atomic_fetch_add(&t->next, t->block);
    if (from >= t->rows) break;
    int64_t to = from + t->block < t->rows ? from + t->block : t->rows;
    fd_gemm_rows(t->a, t->b, t->c, t->exist, t->has, from, to, counts);
  }
  atomic_fetch_add(&t->n_exist, counts[0]);
  atomic_fetch_add(&t->n_has, counts[1]);
  atomic_fetch_add(&t->a_values, counts[2]);
  return QL_OK;
}

/* A key-major A with few row blocks (W̄'s 16 rows: two): each block's keys
 * in steps of FD_KM_STEP, a worker taking the free block furthest
 * behind, so that one worker alone takes the blocks in turn, reading each
 * step's rows of B from memory once and from cache for the other blocks
 * (with a block per task, one worker read all of B once per block), while
 * two workers take a block each. A block's steps run one at a time, in
 * ascending keys: the summation order. */
#define FD_KM_STEP 512
#define FD_KM_BLOCKS 8

struct fd_km_task {
  struct fd_gemm_task *t;
  int64_t blocks, K;
  atomic_int busy[FD_KM_BLOCKS];
  atomic_llong next[FD_KM_BLOCKS]; /* the block's next key; K + 1: done, C's bits too */
  atomic_int *sealed; /* per step, when the product seals B: 0 not yet, 1 under way, 2 sealed */
};

/* Seal B's rows of step s (a multiple of 64 keys on) if no worker has
 * claimed them; 1 when this call sealed them. */
static int fd_km_try_seal(struct fd_km_task *km, int64_t s) {
  int expected = 0;
  if (atomic_load(&km->sealed[s]) != 0 || !atomic_compare_exchange_strong(&km->sealed[s], &expected, 1)) return 0;
  int64_t kb = s * FD_KM_STEP, ke = kb + FD_KM_STEP < km->K ? kb + FD_KM_STEP : km->K;
  atomic_fetch_add(&km->t->b_values, fd_matrix_seal_f(km->t->b, kb, ke));
  atomic_store(&km->sealed[s], 2);
  return 1;
}

/* B's rows of step s sealed before any block reads them: by the first
 * worker to get there (in cache then for the product: one pass over B
 * less). A worker that finds another sealing them seals the steps after
 * it meanwhile, so that two workers in step take turns instead of one
 * waiting for the other. */
static void fd_km_seal_step(struct fd_km_task *km, int64_t s) {
  int64_t steps = (km->K + FD_KM_STEP - 1) / FD_KM_STEP, ahead = s + 1;
  while (atomic_load(&km->sealed[s]) != 2) {
    if (fd_km_try_seal(km, s)) return;
    while (ahead < steps && ahead <= s + 2 && atomic_load(&km->sealed[ahead]) != 0) ahead++;
    if (ahead < steps && ahead <= s + 2) fd_km_try_seal(km, ahead);
    else sched_yield();
  }
}

static int fd_km_worker(void *arg, struct ql_error *error) {
  (void)error;
  struct fd_km_task *km = arg;
  struct fd_gemm_task *t = km->t;
  int64_t counts[2] = {0, 0}, K = km->K;
  for (;;) {
    int64_t g = -1, behind = INT64_MAX;
    for (int64_t i = 0; i < km->blocks; i++) {
      int64_t at = atomic_load(&km->next[i]);
      if (at <= K && at < behind && !atomic_load(&km->busy[i])) g = i, behind = at;
    }
    if (g < 0) break; /* every block is done or held: its holder goes on with it */
    int free_ = 0;
    if (!atomic_compare_exchange_strong(&km->busy[g], &free_, 1)) continue;
    int64_t kb = atomic_load(&km->next[g]), from = g * t->block;
    int64_t to = from + t->block < t->rows ? from + t->block : t->rows, ke = K;
    if (kb < K) {
      ke = kb + FD_KM_STEP < K ? kb + FD_KM_STEP : K;
      if (km->sealed) fd_km_seal_step(km, kb / FD_KM_STEP);
      fd_gemm_keys(t->a, t->b, t->c, from, to, kb, ke);
    }
    if (kb <= K && ke == K) {
      fd_gemm_bits(t->a, t->b, t->exist, t->has, from, to, counts);
      ke = K + 1;
    }
    if (kb <= K) atomic_store(&km->next[g], ke);
    atomic_store(&km->busy[g], 0);
  }
  atomic_fetch_add(&t->n_exist, counts[0]);
  atomic_fetch_add(&t->n_has, counts[1]);
  return QL_OK;
}

/* Is the product over task's row blocks the stepped one (a key-major A,
 * few blocks), which can seal B itself? */
static int fd_gemm_stepped(const struct fd_gemm_task *task) {
  return task->a->transposed && (task->rows + task->block - 1) / task->block <= FD_KM_BLOCKS;
}

/* The product over task's row blocks (sealing B in steps when
 * task->b_put >= 0). */
static int fd_gemm_product(struct fd_run *run, struct fd_gemm_task *task, struct ql_error *error) {
  int64_t blocks = (task->rows + task->block - 1) / task->block;
  if (!fd_gemm_stepped(task)) return fd_parallel(&run->ctx, blocks, fd_gemm_worker, task, error);
  struct fd_km_task km;
  memset(&km, 0, sizeof(km));
  km.t = task;
  km.blocks = blocks;
  km.K = task->a->rows;
  int64_t steps = (km.K + FD_KM_STEP - 1) / FD_KM_STEP, bytes = (steps ? steps : 1) * (int64_t)sizeof(atomic_int);
  void *p = NULL;
  if (task->b_put >= 0) {
    QL_RETURN_NOT_OK(fd_mem_calloc(&run->mem, &p, bytes, error));
    km.sealed = p;
  }
  int rc = fd_parallel(&run->ctx, blocks, fd_km_worker, &km, error);
  fd_mem_cfree(&run->mem, p, bytes);
  /* B holding fewer values than were put: a cell got two. */
  if (rc == QL_OK && task->b_put >= 0 && atomic_load(&task->b_values) != task->b_put) rc = FD_FALLBACK;
  return rc;
}

void fd_dense_destroy(struct fd_run *run) {
  struct fd_dense_out *d = &run->dense;
  for (int64_t i = d->next_ready; i < d->n_ready; i++)
    if (d->ready[i].release) d->ready[i].release(&d->ready[i]);
  int64_t cells = d->rows * d->cols;
  fd_mem_cfree(&run->mem, d->c, cells * 8);
  fd_mem_cfree(&run->mem, d->exist, cells);
  fd_mem_cfree(&run->mem, d->has, cells);
  memset(d, 0, sizeof(*d));
}

/* Where the n rows of a batch come from: the cells sel[r] of C, at row
 * ii[r] and column jj[r]; or, when every cell of C is a group (sel NULL),
 * the n cells from `first` on. */
struct fd_dense_rows {
  const int64_t *sel, *ii, *jj;
  int64_t first, ncols, n;
};

/* A group key column from the row (side 0) or column (side 1) index of
 * each row's cell: gmin + index. With every cell a group, a row index
 * repeats over runs of ncols rows and a column index counts up within
 * them, written run by run without a division per row. */
#define FD_KEY_LOOP(T)                                                   \
  do {                                                                        \
    T *out_ = data;                                                           \
    if (idx) {                                                                \
      for (int64_t r = 0; r < n; r++) out_[r] = (T)(gmin + idx[r]);           \
      break;                                                                  \
    }                                                                         \
    int64_t i_ = rows->first / rows->ncols, j_ = rows->first % rows->ncols;   \
    for (int64_t r = 0; r < n; i_++, j_ = 0) {                                \
      int64_t run = rows->ncols - j_ < n - r ? rows->ncols - j_ : n - r;      \
      if (side == 0) {                                                        \
        T v_ = (T)(gmin + i_);                                                \
        for (int64_t t = 0; t < run; t++) out_[r + t] = v_;                   \
      } else {                                                                \
        for (int64_t t = 0; t < run; t++) out_[r + t] = (T)(gmin + j_ + t);   \
      }                                                                       \
      r += run;                                                               \
    }                                                                         \
  } while (0)

/* The key column (`width` bytes per value: the low bytes of the int64,
 * little-endian) into data, NULL where the index is glen (the side's NULL
 * group, when it has one: glen < dim), validity written in full. Returns
 * the NULL count. */
static int64_t fd_dense_key(const struct fd_dense_rows *rows, int side, int64_t gmin, int64_t glen,
                                 int64_t dim, int64_t width, void *data, uint8_t *validity) {
  const int64_t *idx = rows->sel ? (side == 0 ? rows->ii : rows->jj) : NULL;
  int64_t n = rows->n;
  switch (width) {
    case 1: FD_KEY_LOOP(uint8_t); break;
    case 2: FD_KEY_LOOP(uint16_t); break;
    case 4: FD_KEY_LOOP(uint32_t); break;
    default: FD_KEY_LOOP(uint64_t); break;
  }
  if (glen >= dim) return 0; /* no NULL group on this side */
  memset(validity, 0xff, (size_t)(n + 7) / 8);
  int64_t nulls = 0;
  for (int64_t r = 0; r < n; r++) {
    int64_t index;
    if (idx) index = idx[r];
    else index = side == 0 ? (rows->first + r) / rows->ncols : (rows->first + r) % rows->ncols;
    if (index != glen) continue;
    validity[r >> 3] &= (uint8_t) ~(1u << (r & 7));
    memset((uint8_t *)data + r * width, 0, (size_t)width);
    nulls++;
  }
  return nulls;
}

/* The sum column from each row's cell of C (8 bytes each: a double or the
 * int64 sum), NULL (and 0) where no product was non-NULL; validity written
 * in full. Returns the NULL count. */
static int64_t fd_dense_sum(const struct fd_dense_out *d, const struct fd_dense_rows *rows,
                                 uint8_t *data, uint8_t *validity) {
  const uint64_t *c = d->c;
  uint64_t *out = (uint64_t *)data;
  int64_t valid = 0, n = rows->n;
  for (int64_t r0 = 0; r0 < n; r0 += 8) {
    int64_t r1 = r0 + 8 < n ? r0 + 8 : n;
    unsigned byte = 0;
    for (int64_t r = r0; r < r1; r++) {
      int64_t cell = rows->sel ? rows->sel[r] : rows->first + r;
      unsigned h = d->has[cell];
      out[r] = h ? c[cell] : 0;
      byte |= h << (r - r0);
      valid += h;
    }
    validity[r0 >> 3] = (uint8_t)byte;
  }
  return n - valid;
}

/* One batch from `rows` into out (released on failure). */
static int fd_dense_batch(const struct fd_run *run, const struct fd_dense_rows *rows,
                               struct ArrowArray *out, struct ql_error *error) {
  const struct fd_dense_out *d = &run->dense;
  const struct fd_spec *s = &run->plan->spec;
  int32_t ng = s->n_groups;
  int64_t n = rows->n, cells = d->rows * d->cols;
  int rc = ql_array_init_struct(out, n, ng + 1, error);
  for (int32_t k = 0; k <= ng && rc == QL_OK; k++) {
    struct ArrowArray *col = out->children[k];
    int64_t width = k < ng ? ql_format_byte_width(s->groups[k].format) : 8;
    void *data;
    uint8_t *validity;
    rc = fd_out_array(col, n, width, 1, &data, &validity, error);
    if (rc != QL_OK) break;
    if (k < ng) {
      int side = s->groups[k].side;
      col->null_count = fd_dense_key(rows, side, d->gmin[side], d->glen[side], side == 0 ? d->rows : d->cols,
                                          width, data, validity);
    } else if (!rows->sel && d->with_value == cells) {
      /* Every cell holds a sum: the batch's cells are the column. */
      memcpy(data, (const uint64_t *)d->c + rows->first, (size_t)n * 8);
      col->null_count = 0;
    } else {
      col->null_count = fd_dense_sum(d, rows, data, validity);
    }
    if (col->null_count == 0) col->buffers[0] = NULL;
  }
  if (rc != QL_OK && out->release) out->release(out);
  return rc;
}

/* Building a window of batches: batch i covers cells [first + i * batch,
 * ...), each task one batch. */
struct fd_emit_task {
  const struct fd_run *run;
  struct ArrowArray *out;
  int64_t first, batch, cells, n_batches;
  atomic_llong next;
  atomic_int failed;
};

static int fd_emit_worker(void *arg, struct ql_error *error) {
  struct fd_emit_task *t = arg;
  while (!atomic_load(&t->failed)) {
    int64_t i = atomic_fetch_add(&t->next, 1);
    if (i >= t->n_batches) break;
    int64_t first = t->first + i * t->batch;
    struct fd_dense_rows rows = {NULL, NULL, NULL, first, t->run->dense.cols,
                                      t->cells - first < t->batch ? t->cells - first : t->batch};
    int rc = fd_dense_batch(t->run, &rows, &t->out[i], error);
    if (rc != QL_OK) {
      atomic_store(&t->failed, 1);
      return rc;
    }
  }
  return QL_OK;
}

/* Every cell a group: the next n cells, from a window of batches built
 * ahead on the executor's workers (writing 800,000 rows of three columns
 * took ~3 ms on one thread while the other core idled). */
static int fd_dense_emit_window(struct fd_run *run, int64_t n, struct ArrowArray *out,
                                     struct ql_error *error) {
  struct fd_dense_out *d = &run->dense;
  if (d->next_ready == d->n_ready) {
    struct fd_emit_task t;
    memset(&t, 0, sizeof(t));
    t.run = run;
    t.out = d->ready;
    t.first = d->cursor;
    t.batch = n; /* every batch but the last has the full size */
    t.cells = d->rows * d->cols;
    int64_t left = (t.cells - t.first + n - 1) / n;
    t.n_batches = left < FD_EMIT_WINDOW ? left : FD_EMIT_WINDOW;
    memset(d->ready, 0, sizeof(d->ready));
    int rc = fd_parallel(&run->ctx, t.n_batches, fd_emit_worker, &t, error);
    if (rc != QL_OK) {
      for (int64_t i = 0; i < t.n_batches; i++)
        if (d->ready[i].release) d->ready[i].release(&d->ready[i]);
      return rc;
    }
    d->n_ready = t.n_batches;
    d->next_ready = 0;
  }
  struct ArrowArray *b = &d->ready[d->next_ready++];
  if (b->length != n) return ql_error_set(error, QL_EINTERNAL, "qlink_fold: emitted batch of the wrong length");
  *out = *b;
  b->release = NULL; /* moved */
  d->cursor += n;
  return QL_OK;
}

int fd_dense_emit(struct fd_run *run, int64_t n, struct ArrowArray *out, struct ql_error *error) {
  struct fd_dense_out *d = &run->dense;
  int64_t ncols = d->cols, cells = d->rows * d->cols;
  if (d->count == cells) return fd_dense_emit_window(run, n, out, error);
  /* Some cells are not groups: list the batch's cells and their row and
   * column in C. */
  int64_t *sel = malloc((size_t)(n ? n : 1) * 3 * sizeof(int64_t));
  if (!sel) return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory emitting");
  int64_t *ii = sel + n, *jj = sel + 2 * n;
  int64_t i = d->cursor / ncols, j = d->cursor % ncols;
  for (int64_t r = 0; r < n && d->cursor < cells; d->cursor++) {
    if (d->exist[d->cursor]) {
      sel[r] = d->cursor;
      ii[r] = i;
      jj[r] = j;
      r++;
    }
    if (++j == ncols) {
      j = 0;
      i++;
    }
  }
  struct fd_dense_rows rows = {sel, ii, jj, 0, ncols, n};
  int rc = fd_dense_batch(run, &rows, out, error);
  free(sel);
  return rc;
}

/* Zeroing the matrices' values and C from the buffer cache: pieces of
 * FD_ZERO_PIECE bytes shared by the workers (one thread wrote ~10 MB
 * for W̄ while the other waited). */
#define FD_ZERO_PIECE (INT64_C(256) << 10)

struct fd_zero_task {
  char *buf[3];
  int64_t bytes[3], pieces[3];
  atomic_llong next;
};

static int fd_zero_worker(void *arg, struct ql_error *error) {
  (void)error;
  struct fd_zero_task *t = arg;
  for (;;) {
    int64_t i = atomic_fetch_add(&t->next, 1), b = 0;
    while (b < 3 && i >= t->pieces[b]) i -= t->pieces[b++];
    if (b == 3) return QL_OK;
    int64_t from = i * FD_ZERO_PIECE;
    int64_t len = t->bytes[b] - from < FD_ZERO_PIECE ? t->bytes[b] - from : FD_ZERO_PIECE;
    memset(t->buf[b] + from, 0, (size_t)len);
  }
}

/* Zero what is dirty of a's and b's values and of c (NULL: zeroed). */
static int fd_zero(struct fd_run *run, struct fd_matrix *a, struct fd_matrix *b, void *c,
                        int64_t c_bytes, struct ql_error *error) {
  struct fd_zero_task t;
  memset(&t, 0, sizeof(t));
  struct fd_matrix *m[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    if (!m[k]->dirty) continue;
    t.buf[k] = m[k]->is_float ? (char *)m[k]->f : (char *)m[k]->i;
    t.bytes[k] = m[k]->rows * m[k]->cols * 8;
    m[k]->dirty = 0;
  }
  t.buf[2] = c;
  t.bytes[2] = c ? c_bytes : 0;
  int64_t total = 0;
  for (int k = 0; k < 3; k++) total += t.pieces[k] = (t.bytes[k] + FD_ZERO_PIECE - 1) / FD_ZERO_PIECE;
  if (total == 0) return QL_OK;
  return fd_parallel(&run->ctx, total, fd_zero_worker, &t, error);
}

/* One attempt at the dense path with the chunks' ranges as they are. */
static int fd_gemm_try(struct fd_run *run, struct ql_error *error) {
  struct fd_gemm_shape g;
  if (!fd_gemm_shape(run, &g)) {
    /* Sampled ranges (widened keys) may fail where exact ones pass: the
     * choice must be the exact ranges' (the same data, the same path). */
    const int all = FD_KEYS | FD_GROUPS;
    return fd_input_sampled(&run->in[0], all) || fd_input_sampled(&run->in[1], all) ? FD_SHAPE_UNSURE
                                                                                              : FD_FALLBACK;
  }
  int is_float = run->plan->spec.value_type == FD_FLOAT64;
  int64_t rows = g.dim[0], cols = g.dim[1], cells = rows * cols;
  struct fd_matrix a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  struct fd_gemm_task task;
  memset(&task, 0, sizeof(task));
  void *c = NULL, *exist = NULL, *has = NULL;
  struct fd_arows ar;
  memset(&ar, 0, sizeof(ar));
  int rc = is_float && fd_gemm_key_major(run) ? fd_matrix_init_bits(&a, g.klen, rows, &run->mem, error)
                                                   : fd_matrix_init(&a, rows, g.klen, is_float, 0, &run->mem, error);
  if (rc == QL_OK) rc = fd_matrix_init(&b, g.klen, cols, is_float, 1, &run->mem, error);
  int c_zeroed = 1;
  if (rc == QL_OK) rc = fd_mem_alloc_cached(&run->mem, &c, cells * 8, &c_zeroed, error);
  if (rc == QL_OK) rc = fd_zero(run, &a, &b, c_zeroed ? NULL : c, cells * 8, error); /* C accumulates */
  /* Written in full by the product. */
  if (rc == QL_OK) rc = fd_mem_alloc_cached(&run->mem, &exist, cells, NULL, error);
  if (rc == QL_OK) rc = fd_mem_alloc_cached(&run->mem, &has, cells, NULL, error);
  int64_t a_values = 0;
  task.a = &a;
  task.b = &b;
  task.c = c;
  task.exist = exist;
  task.has = has;
  task.rows = rows;
  /* Blocks of 8 to 64 rows (each block reads all of B once, so a long
   * contraction, as W = A^T Z with few rows and much work each, wants
   * few blocks), about 8 of them when C has few rows. */
  task.block = rows / 8 < 8 ? 8 : rows / 8 > 64 ? 64 : rows / 8;
  task.b_put = -1;
  if (rc == QL_OK && is_float) {
    rc = fd_gemm_fill_f(run, &g, &a, &b, &ar, &a_values, fd_gemm_stepped(&task) ? &task.b_put : NULL,
                             error);
  } else if (rc == QL_OK) {
    struct fd_fill_task fill = {run, &g, {&a, &b}, {QL_OK, QL_OK}, 0};
    rc = fd_parallel(&run->ctx, 2, fd_fill_worker, &fill, error);
    if (rc == QL_OK) rc = fill.rc[0] != QL_OK ? fill.rc[0] : fill.rc[1];
  }
  if (rc == QL_OK) {
    rc = fd_gemm_product(run, &task, error);
    if (ar.borrowed) atomic_fetch_add(&fd_borrowed_count, 1);
    /* A float A holding fewer values than were put: a cell got two. */
    if (rc == QL_OK && is_float && atomic_load(&task.a_values) != a_values) rc = FD_FALLBACK;
    /* A borrowed A's values were not looked at before: a non-finite one
     * makes its row of C non-finite (no finite sum comes back from an
     * infinity or a NaN), and sends the run to the hash path as the fill
     * would have. */
    if (rc == QL_OK && ar.borrowed && fd_any_nonfinite(c, cells) && fd_borrowed_nonfinite(&a))
      rc = FD_FALLBACK;
  }
  fd_matrix_destroy(&a, &run->mem);
  fd_matrix_destroy(&b, &run->mem);
  fd_mem_cfree(&run->mem, ar.rowp, ar.rowp_bytes);
  fd_mem_cfree(&run->mem, ar.extra, ar.extra_bytes);
  if (rc != QL_OK) {
    fd_mem_cfree(&run->mem, c, cells * 8);
    fd_mem_cfree(&run->mem, exist, cells);
    fd_mem_cfree(&run->mem, has, cells);
    return rc;
  }
  /* C is the result: emitted from it directly, batch by batch. */
  struct fd_dense_out *d = &run->dense;
  d->rows = rows;
  d->cols = cols;
  d->c = c;
  d->exist = exist;
  d->has = has;
  d->count = atomic_load(&task.n_exist);
  d->with_value = atomic_load(&task.n_has);
  for (int k = 0; k < 2; k++) {
    d->gmin[k] = g.gmin[k];
    d->glen[k] = g.glen[k];
  }
  d->active = 1;
  atomic_fetch_add(&run->plan->dense_runs, 1);
  return QL_OK;
}

int fd_run_gemm(struct fd_run *run, struct ql_error *error) {
  /* The float fill checks every row against the ranges it was sized by, so
   * it may start from sampled ones: they are a subset of the exact ranges,
   * and if no row lies outside them they are exact (the same matrices,
   * the same bits). Otherwise (or for int64 products, whose fill does not
   * check) the exact ranges decide, as they always do in the end. */
  const int all = FD_KEYS | FD_GROUPS;
  if (run->plan->spec.value_type != FD_FLOAT64) QL_RETURN_NOT_OK(fd_inputs_exact(run, all, 3, error));
  /* Sampled group ranges are trusted only when short (a column index):
   * every value then recurs so often that the sample sees them all. A
   * long one (as z̄'s s for Ā, from an aggregate's output) is made exact:
   * a group outside the matrices would cost a second fill, and group
   * ranges are not widened (they shape C). */
  int sides = 0;
  for (int k = 0; k < 2; k++) {
    int64_t lo, hi;
    int nulls;
    if (fd_input_sampled(&run->in[k], FD_GROUPS) && fd_input_range(&run->in[k], 1, 0, &lo, &hi, &nulls) &&
        (uint64_t)hi - (uint64_t)lo >= FD_SAMPLE_MAX_GROUPS)
      sides |= 1 << k;
  }
  if (sides) QL_RETURN_NOT_OK(fd_inputs_exact(run, FD_GROUPS, sides, error));
  int rc = fd_gemm_try(run, error);
  if (rc != FD_GUESS_MISS && rc != FD_SHAPE_UNSURE) return rc;
  if (rc == FD_GUESS_MISS) atomic_fetch_add(&run->plan->range_misses, 1);
  QL_RETURN_NOT_OK(fd_inputs_exact(run, all, 3, error));
  rc = fd_gemm_try(run, error);
  /* Exact ranges neither miss nor leave the shape unsure. */
  return rc == FD_GUESS_MISS || rc == FD_SHAPE_UNSURE ? FD_FALLBACK : rc;
}
