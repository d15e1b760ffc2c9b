/* qlink_fold: the dense path: matrices, product, groups (see fold_internal.h, fold_exec.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold_dense.h"
#include "fold_internal.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

struct ql_fold_gemm_fill {
  struct ql_fold_matrix *m;
  int64_t rows;
  struct ql_fold_side side;
  int32_t side_index;
};

static int ql_fold_gemm_batch(struct ql_fold_run *run, void *arg, const struct ArrowArray *batch,
                              struct ql_error *error) {
  struct ql_fold_gemm_fill *f = arg;
  const struct ql_fold_shared *p = run->plan;
  int s = f->side_index;
  QL_RETURN_NOT_OK(ql_fold_check_batch(run, s, batch, error));
  struct ql_fold_row row;
  for (int64_t r = 0; r < batch->length; r++) {
    if (!ql_fold_decode(&f->side, batch, r, &row)) continue;
    int64_t key = row.keys[0];
    if (key < p->gemm_kmin_side[s] || key > p->gemm_kmax_side[s]) return QL_FOLD_FALLBACK; /* statistics were wrong */
    if (key < p->gemm_kmin || key - p->gemm_kmin >= p->gemm_klen) continue;          /* cannot match the other side */
    int64_t g = 0;
    if (p->gemm_glen[s] > 0) {
      if (row.group_nulls & 1u) {
        g = p->gemm_glen[s]; /* the NULL group */
      } else {
        g = row.groups[0] - p->gemm_gmin[s];
        if (g < 0 || g >= p->gemm_glen[s]) return QL_FOLD_FALLBACK;
      }
    }
    int64_t k = key - p->gemm_kmin;
    int64_t iv = (int64_t)(uint64_t)row.ivalue; /* int64 products only on this path */
    int dup = s == 0 ? ql_fold_matrix_put(f->m, g, k, row.has_value, iv, row.fvalue)
                     : ql_fold_matrix_put(f->m, k, g, row.has_value, iv, row.fvalue);
    if (dup) return QL_FOLD_FALLBACK;
  }
  f->rows += batch->length;
  return QL_OK;
}

struct ql_fold_gemm_task {
  const struct ql_fold_matrix *a, *b;
  void *c;
  uint8_t *exist, *has;
  int64_t rows;
  atomic_llong next;
};

#define QL_FOLD_GEMM_ROWS 32

static int ql_fold_gemm_worker(void *arg, struct ql_error *error) {
  (void)error;
  struct ql_fold_gemm_task *t = arg;
  for (;;) {
    int64_t from = atomic_fetch_add(&t->next, QL_FOLD_GEMM_ROWS);
    if (from >= t->rows) return QL_OK;
    int64_t to = from + QL_FOLD_GEMM_ROWS < t->rows ? from + QL_FOLD_GEMM_ROWS : t->rows;
    ql_fold_gemm_rows(t->a, t->b, t->c, t->exist, t->has, from, to);
  }
}

/* Turn C into groups of the result, row by row. */
static int ql_fold_gemm_groups(struct ql_fold_run *run, const struct ql_fold_gemm_task *t, int64_t n_cols,
                               struct ql_error *error) {
  const struct ql_fold_shared *p = run->plan;
  const struct ql_fold_spec *s = &p->spec;
  int64_t tuple[QL_FOLD_MAX_GROUPS];
  for (int64_t i = 0; i < t->rows; i++) {
    for (int64_t j = 0; j < n_cols; j++) {
      int64_t cell = i * n_cols + j;
      if (!t->exist[cell]) continue;
      uint32_t nulls = 0;
      for (int32_t g = 0; g < s->n_groups; g++) {
        int side = s->groups[g].side;
        int64_t idx = side == 0 ? i : j;
        if (idx == p->gemm_glen[side]) {
          tuple[g] = 0;
          nulls |= 1u << g;
        } else {
          tuple[g] = p->gemm_gmin[side] + idx;
        }
      }
      int64_t gi; /* each cell is its own group: no lookup needed */
      QL_RETURN_NOT_OK(ql_fold_group_append(&run->result, tuple, nulls, &gi, &run->mem, error));
      if (!t->has[cell]) continue;
      run->result.has[gi] = 1;
      if (run->result.is_float)
        QL_RETURN_NOT_OK(ql_fold_xsum_add(&run->result.acc_f[gi], ((const double *)t->c)[cell], &run->mem, error));
      else
        run->result.acc_i[gi] = (uint64_t)((const int64_t *)t->c)[cell];
    }
  }
  return QL_OK;
}

int ql_fold_run_gemm(struct ql_fold_run *run, struct ql_error *error) {
  const struct ql_fold_shared *p = run->plan;
  int is_float = p->spec.value_type == QL_FOLD_FLOAT64;
  int64_t rows = p->gemm_glen[0] + (p->gemm_glen[0] > 0), cols = p->gemm_glen[1] + (p->gemm_glen[1] > 0);
  if (rows == 0) rows = 1;
  if (cols == 0) cols = 1;
  struct ql_fold_matrix a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  struct ql_fold_gemm_task task;
  memset(&task, 0, sizeof(task));
  void *c = NULL, *exist = NULL, *has = NULL;
  int64_t cells = rows * cols;
  int rc = ql_fold_matrix_init(&a, rows, p->gemm_klen, is_float, 0, &run->mem, error);
  if (rc == QL_OK) rc = ql_fold_matrix_init(&b, p->gemm_klen, cols, is_float, 1, &run->mem, error);
  if (rc == QL_OK) rc = ql_fold_mem_resize(&run->mem, &c, 0, cells * 8, error);
  if (rc == QL_OK) rc = ql_fold_mem_resize(&run->mem, &exist, 0, cells, error);
  if (rc == QL_OK) rc = ql_fold_mem_resize(&run->mem, &has, 0, cells, error);
  struct ql_fold_gemm_fill fill[2];
  for (int s = 0; s < 2; s++) {
    fill[s].m = s == 0 ? &a : &b;
    fill[s].rows = 0;
    fill[s].side_index = s;
    ql_fold_side_init(&p->spec, s, &fill[s].side);
    if (rc == QL_OK) rc = ql_fold_drain_all(run, s, ql_fold_gemm_batch, &fill[s], error);
  }
  if (rc == QL_OK) {
    task.a = &a;
    task.b = &b;
    task.c = c;
    task.exist = exist;
    task.has = has;
    task.rows = rows;
    rc = ql_fold_parallel(&run->ctx, (rows + QL_FOLD_GEMM_ROWS - 1) / QL_FOLD_GEMM_ROWS, ql_fold_gemm_worker, &task, error);
  }
  if (rc == QL_OK) rc = ql_fold_gemm_groups(run, &task, cols, error);
  ql_fold_matrix_destroy(&a, &run->mem);
  ql_fold_matrix_destroy(&b, &run->mem);
  ql_fold_mem_free(&run->mem, c, c ? cells * 8 : 0);
  ql_fold_mem_free(&run->mem, exist, exist ? cells : 0);
  ql_fold_mem_free(&run->mem, has, has ? cells : 0);
  if (rc == QL_OK) {
    atomic_fetch_add(&run->plan->dense_runs, 1);
    atomic_fetch_add(&run->plan->build_rows, fill[0].rows); /* left input */
    atomic_fetch_add(&run->plan->probe_rows, fill[1].rows); /* right input */
  }
  if (rc == QL_FOLD_FALLBACK) ql_fold_groups_destroy(&run->result, &run->mem); /* start over on the hash path */
  return rc;
}
