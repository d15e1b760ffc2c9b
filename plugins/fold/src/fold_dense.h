/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: the dense kernel.
 *
 * When the rows read have a single integer join key k and at most one
 * integer group key per side spanning full ranges (fold_gemm.c decides),
 * the contraction is a matrix product: A[i][k] holds the sum
 * of the left input's values per (left group i, key k), B[k][j] the right
 * input's, and the result is C = A B. Each side also keeps, per cell, whether
 * a row exists and whether a non-NULL value exists, as bitsets over k, so
 * that a group (i, j) exists iff some k has rows on both sides, and is
 * non-NULL iff some k has non-NULL values on both sides (SQL semantics).
 * A NULL group key is one more row (column) at the end.
 *
 * Determinism: C[i][j] adds A[i][k] * B[k][j] in ascending k, whatever the
 * blocking and the number of threads (threads split the rows of C). Cells
 * without a value hold 0, and adding the resulting +0.0 products changes no
 * partial sum, so C[i][j] is the in-order sum of the present products. Float
 * cells must be filled at most once and with finite values (a second value
 * or a non-finite one makes the caller fall back to the hash path); int64
 * cells add with wrapping, as DataFusion's sum does.
 *
 * A float A may instead be stored key-major (`transposed` set: rows are
 * the keys, columns the groups, bitsets per group over the keys, as B's),
 * which makes its fill a sequential write when the left input comes
 * ordered by (key, group), as aᵀ in W̄ = aᵀ·z̄ does; each key's row of A
 * is then read through rowp, which may point into the input's own value
 * buffers (fold_gemm.c: no copy). The product adds in the same order
 * either way, so both layouts give the same bits.
 *
 * Memory: through the fold accounting. Single owner, except that
 * fd_gemm_rows may run on disjoint row ranges of one output at once.
 */
#ifndef QLINK_FOLD_DENSE_H
#define QLINK_FOLD_DENSE_H

#include <stdint.h>
#include <string.h>

#include "fold_mem.h"

struct fd_matrix {
  int64_t rows, cols; /* values are rows x cols, row-major */
  int32_t is_float;
  int32_t transposed; /* bitsets per column (over rows) instead of per row */
  int64_t words;      /* 64-bit words per bitset */
  int64_t dirty;      /* the values (rows * cols * 8 bytes) are not zeroed yet: the caller zeroes them */
  double *f;
  int64_t *i;
  uint64_t *exist, *has;
  /* A key-major A only (set by its owner before the product): per key
   * (row), its `cols` decoded values; not owned by the matrix. */
  const double *const *rowp;
};

/* An empty matrix: zeroed bitsets, and values that are zero unless
 * m->dirty is set, when the caller must zero them before use (they come
 * from the buffer cache; zeroed in parallel by fold_gemm.c). */
int fd_matrix_init(struct fd_matrix *m, int64_t rows, int64_t cols, int is_float, int transposed,
                        struct fd_mem *mem, struct ql_error *error);
/* A float key-major A (rows = keys, transposed) with zeroed bitsets and no
 * values: its rows are read through rowp, borrowed from elsewhere, unless
 * fd_matrix_add_values gives it values (dirty unless they came
 * zeroed) after all. */
int fd_matrix_init_bits(struct fd_matrix *m, int64_t rows, int64_t cols, struct fd_mem *mem,
                             struct ql_error *error);
int fd_matrix_add_values(struct fd_matrix *m, struct fd_mem *mem, struct ql_error *error);
void fd_matrix_destroy(struct fd_matrix *m, struct fd_mem *mem);
/* Record a row at (r, c) with its value (has_value: not NULL). Returns 0, or
 * 1 when a float cell would get a second value or a non-finite one. Inline:
 * it runs once per input row. */
static inline int fd_matrix_put(struct fd_matrix *m, int64_t r, int64_t c, int has_value, int64_t ivalue,
                                     double fvalue) {
  int64_t cell = r * m->cols + c;
  int64_t set = m->transposed ? c : r, bit = m->transposed ? r : c;
  int64_t word = set * m->words + bit / 64;
  uint64_t mask = UINT64_C(1) << (bit % 64);
  m->exist[word] |= mask;
  if (!has_value) return 0;
  if (m->is_float) {
    /* The has bit says the cell already holds a value. */
    if ((m->has[word] & mask) || !__builtin_isfinite(fvalue)) return 1;
    m->f[cell] = fvalue;
  } else {
    m->i[cell] = (int64_t)((uint64_t)m->i[cell] + (uint64_t)ivalue);
  }
  m->has[word] |= mask;
  return 0;
}

/* Float matrices are filled in two steps so that several threads may fill
 * one matrix at once without locks (int64 matrices use fd_matrix_put,
 * one thread per matrix):
 *
 * 1. fd_matrix_init with is_float: every cell is empty (zero bits: the memory
 *    comes zeroed from the allocator, no pass over it); the bitsets are zero.
 * 2. fd_matrix_put_f per row, from any thread: while filling, a cell
 *    holds 0 (empty), 1 (a NULL value) or the value's bits XOR
 *    FD_CELL_KEY, a NaN pattern, so that no finite value is stored as
 *    0 or 1 (non-finite values send the run to the hash path).
 * 3. fd_matrix_seal_f over disjoint row ranges (of 64 rows for a
 *    transposed matrix): sets the bitsets from the cells and counts the
 *    cells holding a value; a transposed matrix (B) has its cells turned
 *    into their values (0.0 without one), a row-major one (A) keeps them
 *    encoded and the kernel decodes each as it reads it. A is sealed by
 *    fd_gemm_rows itself, block by block just before the kernel
 *    reads the same cells (one pass over A less).
 *
 * A cell must receive at most one value (the products must each be
 * DataFusion's rounded product), and a NULL must not replace a value. Puts
 * only store, so the caller compares the number of values put with the
 * number of cells holding one after the seal: equal means no cell got two
 * values and none was overwritten (whatever the threads' timing); else the
 * run takes the hash path. */
#define FD_CELL_KEY UINT64_C(0x7ff8dead00000000)

/* Put a row at `cell` (row * cols + column) of a matrix's values f: its value, or for a NULL
 * value the NULL mark. Store only, no look at the cell (a load here would
 * wait for memory on every row): a second value, or a NULL after a value,
 * overwrites it, and the count after the seal sees the value lost. Returns
 * 1 when the value is not finite, else 0. */
static inline int fd_matrix_put_f(double *f, int64_t cell, int has_value, double value) {
  /* A relaxed atomic store (a plain move on x86-64 and arm64): threads may
   * meet on a cell only when the data has a duplicate, which the count
   * catches; the accesses themselves must not be data races. */
  uint64_t *slot = (uint64_t *)(void *)(f + cell), bits = 1;
  if (has_value) {
    if (!__builtin_isfinite(value)) return 1;
    memcpy(&bits, &value, 8);
    bits ^= FD_CELL_KEY;
  }
  __atomic_store_n(slot, bits, __ATOMIC_RELAXED);
  return 0;
}

/* Step 3 for rows [from, to) (from a multiple of 64 when m is transposed);
 * returns the number of cells in those rows holding a value. */
int64_t fd_matrix_seal_f(struct fd_matrix *m, int64_t from, int64_t to);

/* The product for result rows [row_from, row_to): c_values (M x
 * b->cols, row-major, double or int64 as a's type; M is a->rows, or
 * a->cols for a key-major A), c_exist and c_has (one byte per cell);
 * counts[0] += the cells of those rows with exist set, counts[1] += those
 * with has set. A row-major float A is sealed here, rows [row_from,
 * row_to) as the product first reads them (its bitsets; a float B, and a
 * key-major A, must be sealed before), and counts[2] += its cells in those
 * rows holding a value. Calls on disjoint row ranges may run at once. */
void fd_gemm_rows(struct fd_matrix *a, const struct fd_matrix *b, void *c_values, uint8_t *c_exist,
                       uint8_t *c_has, int64_t row_from, int64_t row_to, int64_t counts[3]);

/* fd_gemm_rows in steps, for a key-major float A (sealed, as B):
 * the products of keys [key_from, key_to) added into rows [row_from,
 * row_to) of c_values (the calls for one row range in ascending key
 * ranges: the summation order), then, once every key is in,
 * fd_gemm_bits for C's bits and counts[0..1] of those rows. Calls on
 * disjoint row ranges may run at once. */
void fd_gemm_keys(struct fd_matrix *a, const struct fd_matrix *b, double *c_values, int64_t row_from,
                       int64_t row_to, int64_t key_from, int64_t key_to);
void fd_gemm_bits(const struct fd_matrix *a, const struct fd_matrix *b, uint8_t *c_exist,
                       uint8_t *c_has, int64_t row_from, int64_t row_to, int64_t counts[2]);

/* For tests: how many dense products so far (process-wide) read side 0's
 * chunks in place as the rows of a key-major A (fold_gemm.c), whether or
 * not the run then fell back to the hash path. */
int64_t fd_dense_borrowed_runs(void);

/* For tests: allow (1, the default) or forbid (0) the AVX kernel; returns
 * whether it will be used (1 only on x86-64 CPUs with AVX). Process-wide. */
int fd_dense_avx(int allow);

#endif /* QLINK_FOLD_DENSE_H */
