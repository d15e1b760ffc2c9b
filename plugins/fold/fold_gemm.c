/* qlink_fold: the dense path: choosing it from the data, matrices, product,
 * groups (see fold_internal.h, fold_dense.h, fold_exec.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "fold_dense.h"
#include "fold_internal.h"
#include "qlink/lib/status.h"

/* Largest key or group range the dense kernel indexes (one matrix side). */
#define QL_FOLD_DENSE_MAX_DIM (INT64_C(1) << 24)

/* The dense problem the data read describe. */
struct ql_fold_gemm_shape {
  int64_t kmin, klen;       /* the join key range both sides cover */
  int64_t gmin[2], glen[2]; /* per side: its non-NULL group key range (glen 0: none) */
  int64_t dim[2];           /* rows of A (side 0), columns of B (side 1); index glen = the NULL group */
};

/* One side's key and group ranges; 0 when the side cannot be dense. */
static int ql_fold_gemm_side(const struct ql_fold_input *in, struct ql_fold_gemm_shape *g, int k, int64_t *klo,
                             int64_t *khi) {
  const struct ql_fold_side *s = &in->side;
  int nulls = 0;
  if (s->n_groups > 1 || s->keys[0]->storage == QL_FOLD_U64) return 0;
  /* No row: nothing joins; the hash path handles that at no cost. */
  if (!ql_fold_input_range(in, 0, 0, klo, khi, &nulls)) return 0;
  g->gmin[k] = 0;
  g->glen[k] = 0;
  g->dim[k] = 1;
  if (s->n_groups == 0) return 1;
  if (s->groups[0]->storage == QL_FOLD_U64) return 0;
  int64_t lo, hi;
  if (ql_fold_input_range(in, 1, 0, &lo, &hi, &nulls)) {
    if ((uint64_t)hi - (uint64_t)lo >= (uint64_t)QL_FOLD_DENSE_MAX_DIM) return 0;
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
static int ql_fold_gemm_shape(const struct ql_fold_run *run, struct ql_fold_gemm_shape *g) {
  const struct ql_fold_spec *p = &run->plan->spec;
  if (p->n_keys != 1 || (p->product != QL_FOLD_S64 && p->product != QL_FOLD_F64)) return 0;
  int64_t klo[2], khi[2];
  for (int k = 0; k < 2; k++)
    if (!ql_fold_gemm_side(&run->in[k], g, k, &klo[k], &khi[k])) return 0;
  int64_t lo = klo[0] > klo[1] ? klo[0] : klo[1], hi = khi[0] < khi[1] ? khi[0] : khi[1];
  if (hi < lo || (uint64_t)hi - (uint64_t)lo >= (uint64_t)QL_FOLD_DENSE_MAX_DIM) return 0;
  g->kmin = lo;
  g->klen = hi - lo + 1;
  int64_t m = g->dim[0], n = g->dim[1], k = g->klen; /* each < 2^25: no overflow below */
  int64_t rows0 = run->in[0].rows, rows1 = run->in[1].rows;
  return m * k <= 4 * rows0 + 4096 && k * n <= 4 * rows1 + 4096 && m * n <= 4 * (rows0 + rows1) + 65536;
}

/* Side k's rows into its matrix (A[group][key] for side 0, B[key][group]
 * for side 1); QL_FOLD_FALLBACK on a second or non-finite float value in a
 * cell (the products must each be DataFusion's rounded product). */
static int ql_fold_gemm_fill(const struct ql_fold_input *in, const struct ql_fold_gemm_shape *g, int k,
                             struct ql_fold_matrix *m, struct ql_fold_block *blk) {
  int has_group = in->side.n_groups == 1;
  for (int64_t p = 0; p < in->n_parts; p++) {
    const struct ql_fold_part *part = &in->parts[p];
    for (int64_t ci = 0; ci < part->n_chunks; ci++) {
      const struct ql_fold_chunk *c = part->chunks[ci];
      for (int64_t from = 0; from < c->batch.length; from += QL_FOLD_BLOCK) {
        ql_fold_block_decode(in, c, from, blk);
        for (int64_t r = 0; r < blk->n; r++) {
          uint64_t key = (uint64_t)blk->keys[r] - (uint64_t)g->kmin;
          if (key >= (uint64_t)g->klen) continue; /* cannot match the other side */
          int64_t gi = 0;
          if (has_group) gi = (blk->group_nulls[r] & 1u) ? g->glen[k] : blk->groups[r] - g->gmin[k];
          int64_t iv = (int64_t)(uint64_t)blk->ivalue[r]; /* int64 products only on this path */
          double fv = blk->fvalue[r];
          int dup = k == 0 ? ql_fold_matrix_put(m, gi, (int64_t)key, blk->has[r], iv, fv)
                           : ql_fold_matrix_put(m, (int64_t)key, gi, blk->has[r], iv, fv);
          if (dup) return QL_FOLD_FALLBACK;
        }
      }
    }
  }
  return QL_OK;
}

/* Filling A and B: one task per side (the matrices are disjoint). */
struct ql_fold_fill_task {
  struct ql_fold_run *run;
  const struct ql_fold_gemm_shape *shape;
  struct ql_fold_matrix *m[2];
  int rc[2];
  atomic_int next;
};

static int ql_fold_fill_worker(void *arg, struct ql_error *error) {
  struct ql_fold_fill_task *t = arg;
  struct ql_fold_block *blk;
  QL_RETURN_NOT_OK(ql_fold_block_new(&t->run->mem, &blk, error));
  for (;;) {
    int k = atomic_fetch_add(&t->next, 1);
    if (k >= 2) break;
    t->rc[k] = ql_fold_gemm_fill(&t->run->in[k], t->shape, k, t->m[k], blk);
  }
  ql_fold_mem_free(&t->run->mem, blk, (int64_t)sizeof(*blk));
  return QL_OK;
}

struct ql_fold_gemm_task {
  const struct ql_fold_matrix *a, *b;
  void *c;
  uint8_t *exist, *has;
  int64_t rows, block; /* rows of C, rows per task */
  atomic_llong next;
};

static int ql_fold_gemm_worker(void *arg, struct ql_error *error) {
  (void)error;
  struct ql_fold_gemm_task *t = arg;
  for (;;) {
    int64_t from = atomic_fetch_add(&t->next, t->block);
    if (from >= t->rows) return QL_OK;
    int64_t to = from + t->block < t->rows ? from + t->block : t->rows;
    ql_fold_gemm_rows(t->a, t->b, t->c, t->exist, t->has, from, to);
  }
}

void ql_fold_dense_destroy(struct ql_fold_run *run) {
  struct ql_fold_dense_out *d = &run->dense;
  int64_t cells = d->rows * d->cols;
  int is_float = run->plan->spec.value_type == QL_FOLD_FLOAT64;
  ql_fold_mem_free(&run->mem, d->c, cells * 8);
  ql_fold_mem_free(&run->mem, d->exist, cells);
  ql_fold_mem_free(&run->mem, d->has, cells);
  ql_fold_groups_destroy(&d->window, &run->mem);
  memset(d, 0, sizeof(*d));
  ql_fold_groups_init(&d->window, run->plan->spec.n_groups, 0, is_float);
}

int ql_fold_dense_window(struct ql_fold_run *run, int64_t n, struct ql_error *error) {
  struct ql_fold_dense_out *d = &run->dense;
  struct ql_fold_groups *w = &d->window;
  const struct ql_fold_spec *s = &run->plan->spec;
  if (w->cap < n) {
    ql_fold_groups_destroy(w, &run->mem);
    QL_RETURN_NOT_OK(ql_fold_groups_alloc(w, n, 1, &run->mem, error));
  }
  int32_t width = w->gmap.width;
  int64_t cells = d->rows * d->cols;
  for (int64_t g = 0; g < n && d->cursor < cells; d->cursor++) {
    int64_t cell = d->cursor;
    if (!d->exist[cell]) continue;
    int64_t i = cell / d->cols, j = cell % d->cols;
    uint32_t nulls = 0;
    int64_t *tuple = w->gmap.values + g * width;
    for (int32_t k = 0; k < width; k++) {
      int side = s->groups[k].side;
      int64_t idx = side == 0 ? i : j;
      if (idx == d->glen[side]) {
        tuple[k] = 0;
        nulls |= 1u << k;
      } else {
        tuple[k] = d->gmin[side] + idx;
      }
    }
    w->gmap.nulls[g] = nulls;
    w->has[g] = d->has[cell];
    if (w->is_float) w->final_f[g] = d->has[cell] ? ((const double *)d->c)[cell] : 0.0;
    else w->acc_i[g] = d->has[cell] ? (ql_fold_u128)(uint64_t)((const int64_t *)d->c)[cell] : 0;
    g++;
  }
  w->gmap.count = n;
  return QL_OK;
}

int ql_fold_run_gemm(struct ql_fold_run *run, struct ql_error *error) {
  struct ql_fold_gemm_shape g;
  if (!ql_fold_gemm_shape(run, &g)) return QL_FOLD_FALLBACK;
  int is_float = run->plan->spec.value_type == QL_FOLD_FLOAT64;
  int64_t rows = g.dim[0], cols = g.dim[1], cells = rows * cols;
  struct ql_fold_matrix a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  struct ql_fold_gemm_task task;
  memset(&task, 0, sizeof(task));
  void *c = NULL, *exist = NULL, *has = NULL;
  int rc = ql_fold_matrix_init(&a, rows, g.klen, is_float, 0, &run->mem, error);
  if (rc == QL_OK) rc = ql_fold_matrix_init(&b, g.klen, cols, is_float, 1, &run->mem, error);
  if (rc == QL_OK) rc = ql_fold_mem_resize(&run->mem, &c, 0, cells * 8, error); /* zeroed: C accumulates */
  if (rc == QL_OK) rc = ql_fold_mem_alloc(&run->mem, &exist, cells, error);
  if (rc == QL_OK) rc = ql_fold_mem_alloc(&run->mem, &has, cells, error);
  if (rc == QL_OK) {
    struct ql_fold_fill_task fill = {run, &g, {&a, &b}, {QL_OK, QL_OK}, 0};
    rc = ql_fold_parallel(&run->ctx, 2, ql_fold_fill_worker, &fill, error);
    if (rc == QL_OK) rc = fill.rc[0] != QL_OK ? fill.rc[0] : fill.rc[1];
  }
  if (rc == QL_OK) {
    task.a = &a;
    task.b = &b;
    task.c = c;
    task.exist = exist;
    task.has = has;
    task.rows = rows;
    /* Blocks of up to 64 rows, at least 8 tasks when C has few rows (a
     * long contraction, as W = A^T Z, has few rows and much work each). */
    task.block = rows / 8 < 1 ? 1 : rows / 8 > 64 ? 64 : rows / 8;
    rc = ql_fold_parallel(&run->ctx, (rows + task.block - 1) / task.block, ql_fold_gemm_worker, &task, error);
  }
  ql_fold_matrix_destroy(&a, &run->mem);
  ql_fold_matrix_destroy(&b, &run->mem);
  if (rc != QL_OK) {
    ql_fold_mem_free(&run->mem, c, cells * 8);
    ql_fold_mem_free(&run->mem, exist, cells);
    ql_fold_mem_free(&run->mem, has, cells);
    return rc;
  }
  /* C is the result: emitted from it directly, batch by batch. */
  struct ql_fold_dense_out *d = &run->dense;
  d->rows = rows;
  d->cols = cols;
  d->c = c;
  d->exist = exist;
  d->has = has;
  for (int64_t cell = 0; cell < cells; cell++) d->count += ((const uint8_t *)exist)[cell];
  for (int k = 0; k < 2; k++) {
    d->gmin[k] = g.gmin[k];
    d->glen[k] = g.glen[k];
  }
  d->active = 1;
  atomic_fetch_add(&run->plan->dense_runs, 1);
  return QL_OK;
}
