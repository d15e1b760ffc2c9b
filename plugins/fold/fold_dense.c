/* qlink_fold: the dense kernel (see fold_dense.h). */
#include "fold_dense.h"

#include <string.h>

#include "qlink/lib/status.h"

/* Cache blocking: a block of B (QL_FOLD_KB rows x QL_FOLD_JB columns, 64 KiB
 * of doubles) is reused across the rows of C. */
#define QL_FOLD_KB 64
#define QL_FOLD_JB 128

int ql_fold_matrix_init(struct ql_fold_matrix *m, int64_t rows, int64_t cols, int is_float, int transposed,
                        struct ql_fold_mem *mem, struct ql_error *error) {
  memset(m, 0, sizeof(*m));
  m->rows = rows;
  m->cols = cols;
  m->is_float = is_float;
  m->transposed = transposed;
  int64_t n_sets = transposed ? cols : rows, bits = transposed ? rows : cols;
  m->words = (bits + 63) / 64;
  int64_t cells = rows * cols;
  void *p = NULL;
  QL_RETURN_NOT_OK(ql_fold_mem_resize(mem, &p, 0, cells * 8, error));
  if (is_float) m->f = p;
  else m->i = p;
  p = NULL;
  int rc = ql_fold_mem_resize(mem, &p, 0, n_sets * m->words * 8, error);
  m->exist = p;
  p = NULL;
  if (rc == QL_OK) rc = ql_fold_mem_resize(mem, &p, 0, n_sets * m->words * 8, error);
  m->has = p;
  if (rc != QL_OK) ql_fold_matrix_destroy(m, mem);
  return rc;
}

void ql_fold_matrix_destroy(struct ql_fold_matrix *m, struct ql_fold_mem *mem) {
  int64_t cells = m->rows * m->cols, sets = (m->transposed ? m->cols : m->rows) * m->words * 8;
  ql_fold_mem_free(mem, m->f, cells * 8);
  ql_fold_mem_free(mem, m->i, cells * 8);
  ql_fold_mem_free(mem, m->exist, m->exist ? sets : 0);
  ql_fold_mem_free(mem, m->has, m->has ? sets : 0);
  memset(m, 0, sizeof(*m));
}

static int ql_fold_any_and(const uint64_t *x, const uint64_t *y, int64_t words) {
  for (int64_t w = 0; w < words; w++)
    if (x[w] & y[w]) return 1;
  return 0;
}

/* Four doubles at once (GCC/clang vector extension: SSE2 pairs without
 * AVX). Each lane computes exactly the scalar ci[j] + aik * bk[j]. */
typedef double ql_fold_v4d __attribute__((vector_size(32)));

/* c[j] += a * b[j] for j in [from, to). */
static inline void ql_fold_axpy(double *c, double a, const double *b, int64_t from, int64_t to) {
  int64_t j = from;
  for (; j + 4 <= to; j += 4) {
    ql_fold_v4d cv, bv;
    memcpy(&cv, c + j, sizeof(cv));
    memcpy(&bv, b + j, sizeof(bv));
    cv += a * bv;
    memcpy(c + j, &cv, sizeof(cv));
  }
  for (; j < to; j++) c[j] += a * b[j];
}

/* Narrow C (N <= 16, as a projection to a few features): each row of C is
 * kept in four vector accumulators over the whole k loop. Same additions in
 * the same order as the general kernel. */
static void ql_fold_gemm_f64_narrow(const struct ql_fold_matrix *a, const struct ql_fold_matrix *b, double *c,
                                    int64_t from, int64_t to) {
  int64_t K = a->cols, N = b->cols, nv = N / 4, tail = N % 4;
  for (int64_t i = from; i < to; i++) {
    ql_fold_v4d acc[4];
    double tacc[4] = {0.0, 0.0, 0.0, 0.0};
    memset(acc, 0, sizeof(acc));
    const double *ai = a->f + i * K;
    for (int64_t k = 0; k < K; k++) {
      double aik = ai[k];
      if (aik == 0.0) continue; /* adds only +0.0: no partial sum changes */
      const double *bk = b->f + k * N;
      for (int64_t v = 0; v < nv; v++) {
        ql_fold_v4d bv;
        memcpy(&bv, bk + 4 * v, sizeof(bv));
        acc[v] += aik * bv;
      }
      for (int64_t t = 0; t < tail; t++) tacc[t] += aik * bk[4 * nv + t];
    }
    double *ci = c + i * N;
    memcpy(ci, acc, (size_t)nv * sizeof(ql_fold_v4d));
    for (int64_t t = 0; t < tail; t++) ci[4 * nv + t] = tacc[t];
  }
}

static void ql_fold_gemm_f64(const struct ql_fold_matrix *a, const struct ql_fold_matrix *b, double *c, int64_t from,
                             int64_t to) {
  int64_t K = a->cols, N = b->cols;
  if (N <= 16) {
    ql_fold_gemm_f64_narrow(a, b, c, from, to);
    return;
  }
  for (int64_t jb = 0; jb < N; jb += QL_FOLD_JB) {
    int64_t je = jb + QL_FOLD_JB < N ? jb + QL_FOLD_JB : N;
    for (int64_t kb = 0; kb < K; kb += QL_FOLD_KB) { /* ascending k: the summation order */
      int64_t ke = kb + QL_FOLD_KB < K ? kb + QL_FOLD_KB : K;
      for (int64_t i = from; i < to; i++) {
        double *ci = c + i * N;
        const double *ai = a->f + i * K;
        for (int64_t k = kb; k < ke; k++) {
          double aik = ai[k];
          if (aik == 0.0) continue; /* adds only +0.0: no partial sum changes */
          ql_fold_axpy(ci, aik, b->f + k * N, jb, je);
        }
      }
    }
  }
}

static void ql_fold_gemm_i64(const struct ql_fold_matrix *a, const struct ql_fold_matrix *b, int64_t *c, int64_t from,
                             int64_t to) {
  int64_t K = a->cols, N = b->cols;
  for (int64_t jb = 0; jb < N; jb += QL_FOLD_JB) {
    int64_t je = jb + QL_FOLD_JB < N ? jb + QL_FOLD_JB : N;
    for (int64_t kb = 0; kb < K; kb += QL_FOLD_KB) {
      int64_t ke = kb + QL_FOLD_KB < K ? kb + QL_FOLD_KB : K;
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

void ql_fold_gemm_rows(const struct ql_fold_matrix *a, const struct ql_fold_matrix *b, void *c_values,
                       uint8_t *c_exist, uint8_t *c_has, int64_t row_from, int64_t row_to) {
  if (a->is_float) ql_fold_gemm_f64(a, b, c_values, row_from, row_to);
  else ql_fold_gemm_i64(a, b, c_values, row_from, row_to);
  int64_t N = b->cols, words = a->words;
  for (int64_t i = row_from; i < row_to; i++) {
    for (int64_t j = 0; j < N; j++) {
      c_exist[i * N + j] = (uint8_t)ql_fold_any_and(a->exist + i * words, b->exist + j * words, words);
      c_has[i * N + j] = (uint8_t)ql_fold_any_and(a->has + i * words, b->has + j * words, words);
    }
  }
}
