/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: the dense kernel (see fold_dense.h). */
#include "fold_dense.h"

#include <stdatomic.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "qlink/lib/status.h"

/* Cache blocking: a block of B (FD_KB rows x FD_JB columns, 64 KiB
 * of doubles) is reused across the rows of C. */
#define FD_KB 64
#define FD_JB 128

/* The matrix and its bitsets; its values too when with_values. */
static int fd_matrix_make(struct fd_matrix *m, int64_t rows, int64_t cols, int is_float, int transposed,
                               int with_values, struct fd_mem *mem, struct ql_error *error) {
  memset(m, 0, sizeof(*m));
  m->rows = rows;
  m->cols = cols;
  m->is_float = is_float;
  m->transposed = transposed;
  int64_t n_sets = transposed ? cols : rows, bits = transposed ? rows : cols;
  m->words = (bits + 63) / 64;
  int64_t cells = rows * cols;
  void *p = NULL;
  int zeroed = 1;
  if (with_values) {
    QL_RETURN_NOT_OK(fd_mem_alloc_cached(mem, &p, cells * 8, &zeroed, error));
    m->dirty = !zeroed;
    if (is_float) m->f = p;
    else m->i = p;
  }
  int rc = fd_mem_calloc(mem, &p, n_sets * m->words * 8, error);
  m->exist = p;
  if (rc == QL_OK) rc = fd_mem_calloc(mem, &p, n_sets * m->words * 8, error);
  m->has = p;
  if (rc != QL_OK) fd_matrix_destroy(m, mem);
  return rc;
}

int fd_matrix_init(struct fd_matrix *m, int64_t rows, int64_t cols, int is_float, int transposed,
                        struct fd_mem *mem, struct ql_error *error) {
  return fd_matrix_make(m, rows, cols, is_float, transposed, 1, mem, error);
}

int fd_matrix_init_bits(struct fd_matrix *m, int64_t rows, int64_t cols, struct fd_mem *mem,
                             struct ql_error *error) {
  return fd_matrix_make(m, rows, cols, 1, 1, 0, mem, error);
}

int fd_matrix_add_values(struct fd_matrix *m, struct fd_mem *mem, struct ql_error *error) {
  void *p = NULL;
  int zeroed = 1;
  QL_RETURN_NOT_OK(fd_mem_alloc_cached(mem, &p, m->rows * m->cols * 8, &zeroed, error));
  m->f = p;
  m->dirty = !zeroed;
  return QL_OK;
}

/* A filled cell's value: 0.0 unless it holds one (see fold_dense.h). */
static inline double fd_cell_value(uint64_t cell) {
  uint64_t bits = cell > 1 ? cell ^ FD_CELL_KEY : 0;
  double v;
  memcpy(&v, &bits, 8);
  return v;
}

/* A[i][k] of a sealed float A (its cells stay encoded, see the seal). */
static inline double fd_a_value(const double *ai, int64_t k) {
  uint64_t cell;
  memcpy(&cell, ai + k, 8);
  return fd_cell_value(cell);
}

/* A[i][k]: a row-major A's cell decoded (af: its cells, K keys per row),
 * or a key-major A's value read through its row of key k (km set: rowp,
 * already sealed and decoded). km is a constant where this is inlined. */
static inline __attribute__((always_inline)) double fd_a_at(const double *af, const double *const *rowp,
                                                                 int64_t K, const int km, int64_t i, int64_t k) {
  return km ? rowp[k][i] : fd_a_value(af + i * K, k);
}

/* Do the n cells from `cells` all hold a value (encoded cell > 1)? The fill's workers are done (joined) when this runs, so plain loads.
 * SSE2: a cell is 0 or 1 iff cell >> 1 is zero, tested 32 bits at a time
 * and the two halves combined; OR-ed over the cells. */
static inline int fd_all_values(const uint64_t *cells, int64_t n) {
  int64_t c = 0;
  uint64_t small1 = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  __m128i small = zero;
  for (; c + 2 <= n; c += 2) {
    __m128i v = _mm_srli_epi64(_mm_loadu_si128((const __m128i *)(const void *)(cells + c)), 1);
    __m128i z = _mm_cmpeq_epi32(v, zero);
    small = _mm_or_si128(small, _mm_and_si128(z, _mm_shuffle_epi32(z, 0xb1)));
  }
  small1 = (uint64_t)_mm_movemask_epi8(small);
#endif
  for (; c < n; c++) small1 |= (cells[c] >> 1) == 0;
  return small1 == 0;
}

/* Bitsets of rows [from, to) of a row-major float matrix over its columns
 * [c0, c1) (c0 a multiple of 64), each word built in a register (bits
 * shifted in from the top, so every shift is by a constant); the cells
 * stay encoded (the kernel decodes each A[i][k] as it reads it). Returns
 * the cells holding a value. */
static int64_t fd_seal_rows(struct fd_matrix *m, int64_t from, int64_t to, int64_t c0, int64_t c1) {
  int64_t cols = m->cols, words = m->words, count = 0;
  for (int64_t r = from; r < to; r++) {
    const uint64_t *cells = (const uint64_t *)(const void *)(m->f + r * cols);
    for (int64_t w = c0 / 64; w * 64 < c1; w++) {
      int64_t w0 = w * 64, w1 = w0 + 64 < c1 ? w0 + 64 : c1;
      if (fd_all_values(cells + w0, w1 - w0)) {
        /* Every cell holds a value (a dense input): both words full. */
        uint64_t full = w1 - w0 == 64 ? ~UINT64_C(0) : (UINT64_C(1) << (w1 - w0)) - 1;
        m->exist[r * words + w] = m->has[r * words + w] = full;
        count += w1 - w0;
        continue;
      }
      uint64_t e = 0, h = 0;
      for (int64_t c = w0; c < w1; c++) {
        uint64_t cell = __atomic_load_n(cells + c, __ATOMIC_RELAXED);
        e = (e >> 1) | ((uint64_t)(cell != 0) << 63);
        h = (h >> 1) | ((uint64_t)(cell > 1) << 63);
        count += cell > 1;
      }
      if (w1 - w0 < 64) {
        e >>= 64 - (w1 - w0);
        h >>= 64 - (w1 - w0);
      }
      m->exist[r * words + w] = e;
      m->has[r * words + w] = h;
    }
  }
  return count;
}

int64_t fd_matrix_seal_f(struct fd_matrix *m, int64_t from, int64_t to) {
  if (!m->transposed) return fd_seal_rows(m, from, to, 0, m->cols);
  int64_t cols = m->cols, words = m->words, count = 0;
  /* 64-row groups (from is a multiple of 64): the bitset words of rows
   * [from, to) belong to this call alone. */
  for (int64_t g0 = from; g0 < to; g0 += 64) {
    int64_t n = to - g0 < 64 ? to - g0 : 64, w = g0 / 64;
    uint64_t *cells = (uint64_t *)(void *)(m->f + g0 * cols);
    if (fd_all_values(cells, n * cols)) {
      /* Every cell holds a value (a dense input): every column's word of
       * the group full, the cells decoded in one loop. */
      uint64_t full = n == 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;
      for (int64_t c = 0; c < cols; c++) m->exist[c * words + w] = m->has[c * words + w] = full;
      for (int64_t i = 0; i < n * cols; i++) cells[i] ^= FD_CELL_KEY;
      count += n * cols;
      continue;
    }
    for (int64_t r = g0; r < g0 + n; r++) {
      /* Bit r of column c's set. */
      double *row = m->f + r * cols;
      uint64_t bit = UINT64_C(1) << (r % 64);
      for (int64_t c = 0; c < cols; c++) {
        uint64_t cell;
        memcpy(&cell, row + c, 8);
        if (cell != 0) m->exist[c * words + w] |= bit;
        if (cell > 1) {
          m->has[c * words + w] |= bit;
          count++;
        }
        row[c] = fd_cell_value(cell);
      }
    }
  }
  return count;
}

void fd_matrix_destroy(struct fd_matrix *m, struct fd_mem *mem) {
  int64_t cells = m->rows * m->cols, sets = (m->transposed ? m->cols : m->rows) * m->words * 8;
  fd_mem_cfree(mem, m->f, cells * 8);
  fd_mem_cfree(mem, m->i, cells * 8);
  fd_mem_cfree(mem, m->exist, m->exist ? sets : 0);
  fd_mem_cfree(mem, m->has, m->has ? sets : 0);
  memset(m, 0, sizeof(*m));
}

static int fd_any_and(const uint64_t *x, const uint64_t *y, int64_t words) {
  for (int64_t w = 0; w < words; w++)
    if (x[w] & y[w]) return 1;
  return 0;
}

/* Two doubles at once, the SSE2 register width (GCC/clang vector
 * extension; a wider vector type would be split through the stack without
 * AVX). Each lane computes exactly the scalar c + a * b: no fused
 * multiply-add (ISO C mode, no -mfma), so every path rounds alike. */
typedef double fd_v2d __attribute__((vector_size(16)));

/* c[j] += a * b[j] for j in [from, to). */
static inline void fd_axpy(double *c, double a, const double *b, int64_t from, int64_t to) {
  const fd_v2d av = {a, a};
  int64_t j = from;
  for (; j + 2 <= to; j += 2) {
    fd_v2d cv, bv;
    memcpy(&cv, c + j, sizeof(cv));
    memcpy(&bv, b + j, sizeof(bv));
    cv += av * bv;
    memcpy(c + j, &cv, sizeof(cv));
  }
  for (; j < to; j++) c[j] += a * b[j];
}

/* Keys per block of the narrow kernel: a block of B (FD_NKB x N <= 16
 * doubles, at most 64 KiB) stays in L1/L2 while every row of C in the range
 * runs over it. */
#define FD_NKB 512

/* Narrow C (N <= 16, as a projection to a few features): for each block of
 * keys, each row of C is loaded into accumulators, runs over the block, and
 * is stored back. The same additions in the same order as the general
 * kernel: C[i][j] adds its products in ascending k. Instantiated per N
 * (always inlined with a constant N) so the accumulators live in
 * registers. */
static inline __attribute__((always_inline)) void fd_narrow_row(const double *af, const double *const *rowp,
                                                                     const int km, const double *bf, double *c,
                                                                     int64_t K, const int64_t N, int64_t i,
                                                                     int64_t kb, int64_t ke) {
  const int64_t nv = N / 2, tail = N % 2;
  double *ci = c + i * N;
  fd_v2d acc[8];
  double tacc = 0.0;
#pragma GCC unroll 8
  for (int64_t v = 0; v < nv; v++) memcpy(&acc[v], ci + 2 * v, sizeof(fd_v2d));
  if (tail) tacc = ci[N - 1];
  for (int64_t k = kb; k < ke; k++) {
    double aik = fd_a_at(af, rowp, K, km, i, k);
    if (aik == 0.0) continue; /* adds only +0.0: no partial sum changes */
    const fd_v2d av = {aik, aik};
    const double *bk = bf + k * N;
#pragma GCC unroll 8
    for (int64_t v = 0; v < nv; v++) {
      fd_v2d bv;
      memcpy(&bv, bk + 2 * v, sizeof(bv));
      acc[v] += av * bv;
    }
    if (tail) tacc += aik * bk[N - 1];
  }
#pragma GCC unroll 8
  for (int64_t v = 0; v < nv; v++) memcpy(ci + 2 * v, &acc[v], sizeof(fd_v2d));
  if (tail) ci[N - 1] = tacc;
}

/* Rows i and i + 1 of C at once (N <= 9: both rows' accumulators fit the
 * 16 SSE2 registers): twice the independent additions in flight (one row
 * alone waits on the latency of its N / 2 chains) and each B[k] loaded
 * once for both. A row whose A[i][k] is 0.0 while the other's is not adds
 * a product of +-0.0, which changes no partial sum (a sum started at +0.0
 * never becomes -0.0 in round-to-nearest), so every cell gets the same
 * bits as from fd_narrow_row. */
static inline __attribute__((always_inline)) void fd_narrow_pair(const double *af, const double *const *rowp,
                                                                      const int km, const double *bf, double *c,
                                                                      int64_t K, const int64_t N, int64_t i,
                                                                      int64_t kb, int64_t ke) {
  const int64_t nv = N / 2, tail = N % 2;
  double *c0 = c + i * N, *c1 = c0 + N;
  fd_v2d acc0[4], acc1[4];
  double t0 = 0.0, t1 = 0.0;
#pragma GCC unroll 4
  for (int64_t v = 0; v < nv; v++) {
    memcpy(&acc0[v], c0 + 2 * v, sizeof(fd_v2d));
    memcpy(&acc1[v], c1 + 2 * v, sizeof(fd_v2d));
  }
  if (tail) {
    t0 = c0[N - 1];
    t1 = c1[N - 1];
  }
  for (int64_t k = kb; k < ke; k++) {
    double x0 = fd_a_at(af, rowp, K, km, i, k), x1 = fd_a_at(af, rowp, K, km, i + 1, k);
    if (x0 == 0.0 && x1 == 0.0) continue;
    const fd_v2d av0 = {x0, x0}, av1 = {x1, x1};
    const double *bk = bf + k * N;
#pragma GCC unroll 4
    for (int64_t v = 0; v < nv; v++) {
      fd_v2d bv;
      memcpy(&bv, bk + 2 * v, sizeof(bv));
      acc0[v] += av0 * bv;
      acc1[v] += av1 * bv;
    }
    if (tail) {
      t0 += x0 * bk[N - 1];
      t1 += x1 * bk[N - 1];
    }
  }
#pragma GCC unroll 4
  for (int64_t v = 0; v < nv; v++) {
    memcpy(c0 + 2 * v, &acc0[v], sizeof(fd_v2d));
    memcpy(c1 + 2 * v, &acc1[v], sizeof(fd_v2d));
  }
  if (tail) {
    c0[N - 1] = t0;
    c1[N - 1] = t1;
  }
}

static inline __attribute__((always_inline)) int64_t fd_narrow_km(struct fd_matrix *a, const int km,
                                                                       const double *bf, double *c, const int64_t N,
                                                                       int64_t from, int64_t to, int64_t k0,
                                                                       int64_t k1) {
  const double *af = a->f;
  const double *const *rowp = a->rowp;
  int64_t K = km ? a->rows : a->cols, values = 0;
  for (int64_t kb = k0; kb < k1; kb += FD_NKB) {
    int64_t ke = kb + FD_NKB < k1 ? kb + FD_NKB : k1;
    /* A's bitsets for this block of the rows, read just before the
     * kernel reads the same cells (in cache); a key-major A is sealed
     * before the product. */
    if (!km) values += fd_seal_rows(a, from, to, kb, ke);
    int64_t i = from;
    if (N <= 9)
      for (; i + 2 <= to; i += 2) fd_narrow_pair(af, rowp, km, bf, c, K, N, i, kb, ke);
    for (; i < to; i++) fd_narrow_row(af, rowp, km, bf, c, K, N, i, kb, ke);
  }
  return values;
}

static inline __attribute__((always_inline)) int64_t fd_narrow_n(struct fd_matrix *a, const double *bf,
                                                                      double *c, const int64_t N, int64_t from,
                                                                      int64_t to, int64_t k0, int64_t k1) {
  return a->transposed ? fd_narrow_km(a, 1, bf, c, N, from, to, k0, k1)
                       : fd_narrow_km(a, 0, bf, c, N, from, to, k0, k1);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FD_NO_AVX)
/* N = 8 and N = 16 (the common feature widths) with 256-bit AVX vectors
 * where the CPU has them, chosen at run time: the same operations lane by
 * lane (a multiply, then an add, each rounded: AVX has no fused
 * multiply-add, and FMA is not enabled), so the same bits as the SSE2 path. */
#define FD_AVX 1
typedef double fd_v4d __attribute__((vector_size(32)));

/* How many keys ahead a key-major A's rows are prefetched. */
#define FD_AHEAD 16

/* R (1 or 2) rows of C from row i over keys [kb, ke) of a row-major A,
 * N = 4 * NV. */
static inline __attribute__((always_inline, target("avx"))) void fd_avx_rows(const double *af, const double *bf,
                                                                                  double *c, int64_t K,
                                                                                  const int64_t NV, const int64_t R,
                                                                                  int64_t i, int64_t kb, int64_t ke) {
  const int64_t N = 4 * NV;
  fd_v4d acc[2][4];
#pragma GCC unroll 2
  for (int64_t r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int64_t v = 0; v < NV; v++) memcpy(&acc[r][v], c + (i + r) * N + 4 * v, sizeof(fd_v4d));
  for (int64_t k = kb; k < ke; k++) {
    double x[2] = {0.0, 0.0};
    int any = 0;
#pragma GCC unroll 2
    for (int64_t r = 0; r < R; r++) {
      x[r] = fd_a_value(af + (i + r) * K, k);
      any |= x[r] != 0.0;
    }
    if (!any) continue; /* adds only +-0.0: no partial sum changes (see fd_narrow_pair) */
    const double *bk = bf + k * N;
#pragma GCC unroll 4
    for (int64_t v = 0; v < NV; v++) {
      fd_v4d bv;
      memcpy(&bv, bk + 4 * v, sizeof(bv));
#pragma GCC unroll 2
      for (int64_t r = 0; r < R; r++) {
        const fd_v4d av = {x[r], x[r], x[r], x[r]};
        acc[r][v] += av * bv;
      }
    }
  }
#pragma GCC unroll 2
  for (int64_t r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int64_t v = 0; v < NV; v++) memcpy(c + (i + r) * N + 4 * v, &acc[r][v], sizeof(fd_v4d));
}

/* R (1, 2 or 4, R * NV <= 8) rows of C from row i over keys [kb, ke) of a
 * key-major A (rowp), N = 4 * NV. A's rows may be the input's own memory,
 * not in cache (no fill passed over them): a row FD_AHEAD keys on is
 * asked for. The R values of a key sit side by side, each broadcast
 * straight from memory; no test for zeros (a dense input has none, and
 * the products of zeros change no sum, see fd_narrow_pair). */
static inline __attribute__((always_inline, target("avx"))) void fd_avx_km_rows(const double *const *rowp,
                                                                                     const double *bf, double *c,
                                                                                     const int64_t NV,
                                                                                     const int64_t R, int64_t i,
                                                                                     int64_t kb, int64_t ke) {
  const int64_t N = 4 * NV;
  fd_v4d acc[4][4];
#pragma GCC unroll 4
  for (int64_t r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int64_t v = 0; v < NV; v++) memcpy(&acc[r][v], c + (i + r) * N + 4 * v, sizeof(fd_v4d));
  for (int64_t k = kb; k < ke; k++) {
    if (k + FD_AHEAD < ke) __builtin_prefetch(rowp[k + FD_AHEAD] + i);
    const double *p = rowp[k] + i, *bk = bf + k * N;
#pragma GCC unroll 4
    for (int64_t v = 0; v < NV; v++) {
      fd_v4d bv;
      memcpy(&bv, bk + 4 * v, sizeof(bv));
#pragma GCC unroll 4
      for (int64_t r = 0; r < R; r++) {
        const fd_v4d av = {p[r], p[r], p[r], p[r]};
        acc[r][v] += av * bv;
      }
    }
  }
#pragma GCC unroll 4
  for (int64_t r = 0; r < R; r++)
#pragma GCC unroll 4
    for (int64_t v = 0; v < NV; v++) memcpy(c + (i + r) * N + 4 * v, &acc[r][v], sizeof(fd_v4d));
}

/* A row-major A (sealed here, block by block) takes rows in pairs; a
 * key-major one (sealed before) four rows at a time when N = 8: each
 * B[k] loaded then serves four rows, whose A values sit side by side in
 * the key's row. km is a constant where this is inlined. */
static inline __attribute__((always_inline, target("avx"))) int64_t fd_narrow_avx_km(
    struct fd_matrix *a, const int km, const double *bf, double *c, int64_t N, int64_t from, int64_t to,
    int64_t k0, int64_t k1) {
  const double *af = a->f;
  const double *const *rowp = a->rowp;
  int64_t K = km ? a->rows : a->cols, values = 0;
  for (int64_t kb = k0; kb < k1; kb += FD_NKB) {
    int64_t ke = kb + FD_NKB < k1 ? kb + FD_NKB : k1;
    if (!km) values += fd_seal_rows(a, from, to, kb, ke);
    int64_t i = from;
    if (km && N == 8) {
      for (; i + 4 <= to; i += 4) fd_avx_km_rows(rowp, bf, c, 2, 4, i, kb, ke);
      for (; i + 2 <= to; i += 2) fd_avx_km_rows(rowp, bf, c, 2, 2, i, kb, ke);
      for (; i < to; i++) fd_avx_km_rows(rowp, bf, c, 2, 1, i, kb, ke);
    } else if (km) {
      for (; i + 2 <= to; i += 2) fd_avx_km_rows(rowp, bf, c, 4, 2, i, kb, ke);
      for (; i < to; i++) fd_avx_km_rows(rowp, bf, c, 4, 1, i, kb, ke);
    } else if (N == 8) {
      for (; i + 2 <= to; i += 2) fd_avx_rows(af, bf, c, K, 2, 2, i, kb, ke);
      for (; i < to; i++) fd_avx_rows(af, bf, c, K, 2, 1, i, kb, ke);
    } else {
      for (; i + 2 <= to; i += 2) fd_avx_rows(af, bf, c, K, 4, 2, i, kb, ke);
      for (; i < to; i++) fd_avx_rows(af, bf, c, K, 4, 1, i, kb, ke);
    }
  }
  return values;
}

static __attribute__((target("avx"))) int64_t fd_narrow_avx(struct fd_matrix *a, const double *bf,
                                                                 double *c, int64_t N, int64_t from, int64_t to,
                                                                 int64_t k0, int64_t k1) {
  return a->transposed ? fd_narrow_avx_km(a, 1, bf, c, N, from, to, k0, k1)
                       : fd_narrow_avx_km(a, 0, bf, c, N, from, to, k0, k1);
}

static atomic_int fd_avx_off; /* fd_dense_avx(0) */

/* Does the CPU (and OS) offer AVX? Asked once. */
static int fd_has_avx(void) {
  static atomic_int known = -1;
  if (atomic_load_explicit(&fd_avx_off, memory_order_relaxed)) return 0;
  int v = atomic_load_explicit(&known, memory_order_relaxed);
  if (v < 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx") ? 1 : 0;
    atomic_store_explicit(&known, v, memory_order_relaxed);
  }
  return v;
}
#endif

int fd_dense_avx(int allow) {
#ifdef FD_AVX
  atomic_store(&fd_avx_off, !allow);
  return fd_has_avx();
#else
  (void)allow;
  return 0;
#endif
}

static int64_t fd_gemm_f64_narrow(struct fd_matrix *a, const struct fd_matrix *b, double *c,
                                       int64_t from, int64_t to, int64_t k0, int64_t k1) {
#ifdef FD_AVX
  if ((b->cols == 8 || b->cols == 16) && fd_has_avx())
    return fd_narrow_avx(a, b->f, c, b->cols, from, to, k0, k1);
#endif
  switch (b->cols) {
#define FD_NARROW_CASE(n) \
  case n: return fd_narrow_n(a, b->f, c, n, from, to, k0, k1);
    FD_NARROW_CASE(1) FD_NARROW_CASE(2) FD_NARROW_CASE(3) FD_NARROW_CASE(4)
    FD_NARROW_CASE(5) FD_NARROW_CASE(6) FD_NARROW_CASE(7) FD_NARROW_CASE(8)
    FD_NARROW_CASE(9) FD_NARROW_CASE(10) FD_NARROW_CASE(11) FD_NARROW_CASE(12)
    FD_NARROW_CASE(13) FD_NARROW_CASE(14) FD_NARROW_CASE(15) FD_NARROW_CASE(16)
#undef FD_NARROW_CASE
    default: return a->transposed ? 0 : fd_seal_rows(a, from, to, 0, a->cols); /* N == 0: no cell */
  }
}

/* The products of keys [k0, k1) for rows [from, to) (k0 a multiple of
 * 64 for a row-major A, which is also sealed here, rows [from, to) over
 * those keys, as it first reads them); returns A's cells holding a value
 * that it sealed. */
static int64_t fd_gemm_f64(struct fd_matrix *a, const struct fd_matrix *b, double *c, int64_t from,
                                int64_t to, int64_t k0, int64_t k1) {
  const int km = a->transposed;
  int64_t K = km ? a->rows : a->cols, N = b->cols, values = 0;
  if (N <= 16) return fd_gemm_f64_narrow(a, b, c, from, to, k0, k1);
  for (int64_t jb = 0; jb < N; jb += FD_JB) {
    int64_t je = jb + FD_JB < N ? jb + FD_JB : N;
    for (int64_t kb = k0; kb < k1; kb += FD_KB) { /* ascending k: the summation order */
      int64_t ke = kb + FD_KB < k1 ? kb + FD_KB : k1;
      if (jb == 0 && !km) values += fd_seal_rows(a, from, to, kb, ke);
      for (int64_t i = from; i < to; i++) {
        double *ci = c + i * N;
        for (int64_t k = kb; k < ke; k++) {
          double aik = km ? a->rowp[k][i] : fd_a_value(a->f + i * K, k);
          if (aik == 0.0) continue; /* adds only +0.0: no partial sum changes */
          fd_axpy(ci, aik, b->f + k * N, jb, je);
        }
      }
    }
  }
  return values;
}

static void fd_gemm_i64(const struct fd_matrix *a, const struct fd_matrix *b, int64_t *c, int64_t from,
                             int64_t to) {
  int64_t K = a->cols, N = b->cols;
  for (int64_t jb = 0; jb < N; jb += FD_JB) {
    int64_t je = jb + FD_JB < N ? jb + FD_JB : N;
    for (int64_t kb = 0; kb < K; kb += FD_KB) {
      int64_t ke = kb + FD_KB < K ? kb + FD_KB : K;
      for (int64_t i = from; i < to; i++) {
        uint64_t *ci = (uint64_t *)c + i * N;
        const int64_t *ai = a->i + i * K;
        for (int64_t k = kb; k < ke; k++) {
          uint64_t aik = (uint64_t)ai[k];
          if (aik == 0) continue;
          const int64_t *bk = b->i + k * N;
          for (int64_t j = jb; j < je; j++) ci[j] += aik * (uint64_t)bk[j];
        }
      }
    }
  }
}

void fd_gemm_keys(struct fd_matrix *a, const struct fd_matrix *b, double *c_values, int64_t row_from,
                       int64_t row_to, int64_t key_from, int64_t key_to) {
  fd_gemm_f64(a, b, c_values, row_from, row_to, key_from, key_to);
}

void fd_gemm_rows(struct fd_matrix *a, const struct fd_matrix *b, void *c_values, uint8_t *c_exist,
                       uint8_t *c_has, int64_t row_from, int64_t row_to, int64_t counts[3]) {
  if (a->is_float) counts[2] += fd_gemm_f64(a, b, c_values, row_from, row_to, 0, a->transposed ? a->rows : a->cols);
  else fd_gemm_i64(a, b, c_values, row_from, row_to);
  fd_gemm_bits(a, b, c_exist, c_has, row_from, row_to, counts);
}

void fd_gemm_bits(const struct fd_matrix *a, const struct fd_matrix *b, uint8_t *c_exist,
                       uint8_t *c_has, int64_t row_from, int64_t row_to, int64_t counts[2]) {
  int64_t N = b->cols, words = a->words, exist = 0, has = 0;
  if (words == 1) {
    /* Short contractions (K <= 64): one word per bitset. When every cell
     * of B holds a value (a dense input), a row of C exists (has a sum)
     * wherever A's row has a row (a value) at all: whole rows at once. */
    int64_t K = a->transposed ? a->rows : a->cols;
    uint64_t kmask = K == 64 ? ~UINT64_C(0) : (UINT64_C(1) << K) - 1;
    int b_full = 1;
    for (int64_t j = 0; j < N; j++) b_full &= b->exist[j] == kmask && b->has[j] == kmask;
    for (int64_t i = row_from; i < row_to && b_full; i++) {
      uint8_t e = a->exist[i] != 0, h = a->has[i] != 0;
      memset(c_exist + i * N, e, (size_t)N);
      memset(c_has + i * N, h, (size_t)N);
      exist += e * N;
      has += h * N;
    }
    for (int64_t i = row_from; i < row_to && !b_full; i++) {
      uint64_t ae = a->exist[i], ah = a->has[i];
      for (int64_t j = 0; j < N; j++) {
        uint8_t e = (uint8_t)((ae & b->exist[j]) != 0), h = (uint8_t)((ah & b->has[j]) != 0);
        c_exist[i * N + j] = e;
        c_has[i * N + j] = h;
        exist += e;
        has += h;
      }
    }
  } else {
    for (int64_t i = row_from; i < row_to; i++) {
      for (int64_t j = 0; j < N; j++) {
        uint8_t e = (uint8_t)fd_any_and(a->exist + i * words, b->exist + j * words, words);
        uint8_t h = (uint8_t)fd_any_and(a->has + i * words, b->has + j * words, words);
        c_exist[i * N + j] = e;
        c_has[i * N + j] = h;
        exist += e;
        has += h;
      }
    }
  }
  counts[0] += exist;
  counts[1] += has;
}
