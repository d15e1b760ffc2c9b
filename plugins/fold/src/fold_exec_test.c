/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: FoldExec against a brute-force reference over seeded random
 * contractions (shapes, duplicate keys, NULL keys and values, empty inputs,
 * int64 and float64), bit-exact float results across runs with different
 * partitioning, row order, batch sizes and thread counts, the dense path,
 * cancellation and the memory limit. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fold_dense.h"
#include "fold_mem.h"
#include "fold_planner.h"
#include "fold_test_util.h"
#include "ql_test.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

#define CAP 8192

static struct ft_row ref_rows[CAP], got_rows[CAP], again_rows[CAP];

/* Random table: columns k0 k1 (join keys), g0 g1 (group keys), v (value). */
static void random_table(struct ft_table *t, const char *name, uint64_t *rng, int is_float, int64_t n_rows,
                         int64_t key_range, int dense) {
  memset(t, 0, sizeof(*t));
  snprintf(t->name, sizeof(t->name), "%s", name);
  t->n_cols = 5;
  const char *names[5] = {"k0", "k1", "g0", "g1", "v"};
  for (int c = 0; c < 5; c++) {
    snprintf(t->cols[c].name, sizeof(t->cols[c].name), "%s", names[c]);
    const char *f = (ft_rand(rng) % 3 == 0) ? "i" : "l";
    if (c == 4 && is_float) {
      int pick = (int)(ft_rand(rng) % 6);
      f = pick == 0 ? "f" : pick == 1 ? "i" : "g";
    }
    snprintf(t->cols[c].format, sizeof(t->cols[c].format), "%s", f);
  }
  int null_pct = (int)ft_rand_range(rng, 0, 25);
  int big = ft_rand(rng) % 5 == 0; /* int64 values whose products and sums wrap */
  t->n_rows = n_rows;
  for (int64_t r = 0; r < n_rows; r++) {
    for (int c = 0; c < 5; c++) {
      struct ft_col *col = &t->cols[c];
      col->valid[r] = (dense && c < 2) ? 1 : (ft_rand_range(rng, 0, 99) >= null_pct);
      if (c < 2) col->i[r] = dense ? (c == 0 ? r % key_range : 0) : ft_rand_range(rng, 0, key_range - 1);
      else if (c < 4) col->i[r] = ft_rand_range(rng, -2, 3);
      else if (col->format[0] == 'g')
        col->f[r] = (double)ft_rand_range(rng, -1000000, 1000000) / 1024.0 * ldexp(1.0, (int)ft_rand_range(rng, -30, 30));
      else if (col->format[0] == 'f') col->f[r] = (double)(float)((double)ft_rand_range(rng, -1000, 1000) / 7.0);
      else if (col->format[0] == 'i' || !big) col->i[r] = ft_rand_range(rng, -1000, 1000);
      else col->i[r] = (int64_t)ft_rand(rng);
      if (col->format[0] == 'i' && !is_float) col->f[r] = 0;
    }
  }
  ft_table_reset_layout(t);
  t->with_stats = dense ? 1 : (int)(ft_rand(rng) % 2);
}

/* A matrix as a table: every (g0, k0) of [0, m) x [0, key_range) once, in
 * random order, plus sometimes rows with a NULL g0; values sometimes NULL. */
static void grid_table(struct ft_table *t, const char *name, uint64_t *rng, int is_float, int64_t m, int64_t key_range) {
  random_table(t, name, rng, is_float, m * key_range, key_range, 1);
  int64_t extra = ft_rand(rng) % 3 == 0 ? ft_rand_range(rng, 1, 2) : 0;
  t->n_rows = m * key_range + extra;
  for (int64_t r = 0; r < t->n_rows; r++) {
    t->cols[0].i[r] = r < m * key_range ? r % key_range : ft_rand_range(rng, 0, key_range - 1);
    t->cols[0].valid[r] = 1;
    t->cols[2].i[r] = r / key_range;
    t->cols[2].valid[r] = r < m * key_range;
    t->cols[4].valid[r] = ft_rand(rng) % 8 != 0;
    if (t->cols[4].format[0] == 'g') t->cols[4].f[r] = (double)ft_rand_range(rng, -1000000, 1000000) / 1024.0;
    else if (t->cols[4].format[0] == 'f') t->cols[4].f[r] = (double)(float)((double)ft_rand_range(rng, -1000, 1000) / 7.0);
    else t->cols[4].i[r] = ft_rand_range(rng, -1000, 1000);
  }
  ft_table_shuffle_layout(t, rng, 1, 1024);
  t->with_stats = 1;
}

static void random_query(struct ft_query *q, uint64_t *rng, int is_float, int dense) {
  memset(q, 0, sizeof(*q));
  q->is_float = is_float;
  q->n_keys = dense ? 1 : (int)ft_rand_range(rng, 1, 2);
  for (int i = 0; i < q->n_keys; i++) q->akey[i] = q->bkey[i] = i;
  q->n_groups = (int)ft_rand_range(rng, 0, 3);
  int used[2][5] = {{0}};
  for (int i = 0; i < q->n_groups; i++) {
    int side, col;
    do {
      side = (int)(ft_rand(rng) % 2);
      int pick = (int)(ft_rand(rng) % 3);
      col = pick == 0 ? 0 : pick + 1; /* k0, g0 or g1 */
    } while (used[side][col]);
    used[side][col] = 1;
    q->gside[i] = side;
    q->gcol[i] = col;
  }
  q->aval = q->bval = 4;
  q->projection = (int)(ft_rand(rng) % 3);
  q->alias_inputs = (int)(ft_rand(rng) % 2);
  q->swap_product = (int)(ft_rand(rng) % 2);
}

/* Float rows compare within 1e-12 of the sum of |products| (the reference
 * sums naively in row order); integer rows exactly. */
static int rows_match(const struct ft_row *ref, int64_t n_ref, const struct ft_row *got, int64_t n_got, int is_float) {
  if (n_ref != n_got) {
    fprintf(stderr, "row count %lld, expected %lld\n", (long long)n_got, (long long)n_ref);
    return 0;
  }
  for (int64_t r = 0; r < n_ref; r++) {
    const struct ft_row *x = &ref[r], *y = &got[r];
    int same_keys = memcmp(x->keys, y->keys, sizeof(x->keys)) == 0 && x->nulls == y->nulls;
    int ok = same_keys && x->has == y->has;
    if (ok && x->has) ok = is_float == 1 ? fabs(x->f - y->f) <= 1e-12 * x->abs_sum : x->i == y->i && x->hi == y->hi;
    if (!ok) {
      fprintf(stderr, "row %lld: keys (%lld,%lld,%lld)/%u has %d i %lld f %.17g; expected (%lld,%lld,%lld)/%u has %d i %lld f %.17g\n",
              (long long)r, (long long)y->keys[0], (long long)y->keys[1], (long long)y->keys[2], y->nulls, y->has,
              (long long)y->i, y->f, (long long)x->keys[0], (long long)x->keys[1], (long long)x->keys[2], x->nulls,
              x->has, (long long)x->i, x->f);
      return 0;
    }
  }
  return 1;
}

static int rows_identical(const struct ft_row *a, const struct ft_row *b, int64_t n) {
  for (int64_t r = 0; r < n; r++) {
    if (memcmp(a[r].keys, b[r].keys, sizeof(a[r].keys)) || a[r].nulls != b[r].nulls || a[r].has != b[r].has ||
        a[r].i != b[r].i || a[r].hi != b[r].hi || memcmp(&a[r].f, &b[r].f, 8))
      return 0;
  }
  return 1;
}

/* Plan q over a and b with the planner; 0 and a FoldExec in *out, or 1. */
static int plan_fold(const struct ft_query *q, struct ft_table *a, struct ft_table *b, struct ql_plan_view *view,
                     struct ql_execution_plan *out) {
  struct ft_view_ids ids;
  if (ft_build_view(q, a, b, view, &ids)) return 1;
  struct ft_planner_env env;
  ft_planner_env_init(&env, view, &ids, a, b);
  struct ql_planner planner;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  if (fd_planner_new(NULL, &planner, &err) != QL_OK) return 1;
  struct ql_planner_result res;
  memset(&res, 0, sizeof(res));
  res.struct_size = sizeof(res);
  int rc = planner.plan(&planner, &env.ctx, &res, &err);
  planner.release(&planner);
  if (rc != QL_OK || res.action != QL_PLANNER_PHYSICAL || res.node != ids.aggregate) {
    fprintf(stderr, "planner: rc %d action %d node %d (%s)\n", rc, res.action, res.node, ql_error_message(&err));
    ql_error_release(&err);
    if (res.physical.release) res.physical.release(&res.physical);
    view->release(view);
    return 1;
  }
  *out = res.physical;
  return 0;
}

static void test_random(uint64_t seed, int iterations) {
  uint64_t rng = seed;
  struct ft_table *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
  int dense_runs = 0, gemm_done = 0, narrow_runs = 0, decimal_runs = 0;
  for (int it = 0; it < iterations; it++) {
    int is_float = (int)(ft_rand(&rng) % 2);
    int dense = ft_rand(&rng) % 5 == 0;
    int grid = !dense && ft_rand(&rng) % 4 == 0;
    int64_t key_range = ft_rand_range(&rng, 1, 6);
    int64_t na = ft_rand(&rng) % 10 == 0 ? 0 : ft_rand_range(&rng, dense ? key_range : 1, 60);
    int64_t nb = ft_rand(&rng) % 10 == 0 ? 0 : ft_rand_range(&rng, dense ? key_range : 1, 60);
    if (dense) na = na < key_range ? key_range : na, nb = nb < key_range ? key_range : nb;
    struct ft_query q;
    if (grid) {
      grid_table(a, "a", &rng, is_float, ft_rand_range(&rng, 1, 5), key_range);
      grid_table(b, "b", &rng, is_float, ft_rand_range(&rng, 1, 5), key_range);
      random_query(&q, &rng, is_float, 1);
      q.n_groups = (int)ft_rand_range(&rng, 0, 2);
      q.gside[0] = (int)(ft_rand(&rng) % 2), q.gcol[0] = 2;
      q.gside[1] = 1 - q.gside[0], q.gcol[1] = 2;
    } else {
      random_table(a, "a", &rng, is_float, na, key_range, dense);
      random_table(b, "b", &rng, is_float, nb, key_range, dense);
      random_query(&q, &rng, is_float, dense);
      if (ft_rand(&rng) % 4 == 0) {
        /* Narrow factors: int32 / int16 products that wrap, float32 products. */
        q.narrow_product = 1;
        const char *f = is_float ? "f" : (ft_rand(&rng) % 2 ? "i" : "s");
        int wide = ft_rand(&rng) % 2;
        for (int k = 0; k < 2; k++) {
          struct ft_col *v = &(k ? b : a)->cols[4];
          snprintf(v->format, sizeof(v->format), "%s", f);
          for (int64_t r = 0; r < (k ? b : a)->n_rows; r++) {
            if (f[0] == 'f') v->f[r] = (double)(float)((double)ft_rand_range(&rng, -100000, 100000) / 9.0);
            else if (f[0] == 'i') v->i[r] = wide ? ft_rand_range(&rng, INT32_MIN, INT32_MAX) : ft_rand_range(&rng, -50, 50);
            else v->i[r] = ft_rand_range(&rng, INT16_MIN, INT16_MAX);
          }
        }
        narrow_runs++;
      } else if (!is_float && ft_rand(&rng) % 3 == 0) {
        /* decimal128 factors of different scales; unscaled values up to 2^61. */
        q.decimal = 1;
        snprintf(a->cols[4].format, 8, "d:10,2");
        snprintf(b->cols[4].format, 8, "d:18,3");
        int huge = ft_rand(&rng) % 2;
        for (int k = 0; k < 2; k++)
          for (int64_t r = 0; r < (k ? b : a)->n_rows; r++)
            (k ? b : a)->cols[4].i[r] = huge ? ft_rand_range(&rng, -((int64_t)1 << 61), (int64_t)1 << 61)
                                             : ft_rand_range(&rng, -99999, 99999);
        decimal_runs++;
      }
    }
    struct ql_plan_view view;
    struct ql_execution_plan fold;
    if (plan_fold(&q, a, b, &view, &fold)) {
      QL_CHECK(!"planner folded the generated query");
      continue;
    }
    int64_t n_ref = ft_reference(&q, a, b, ref_rows, CAP);
    ft_sort_rows(ref_rows, n_ref);

    char msg[512];
    struct ft_host h1;
    ft_host_init(&h1, -1, 0, ft_rand_range(&rng, 1, 64));
    int kind = q.decimal ? 2 : is_float;
    int64_t n1 = ft_collect(&fold, &h1, q.n_groups, kind, got_rows, CAP, msg, sizeof(msg));
    QL_CHECK_INT(ft_host_free(&h1), QL_OK);
    if (n1 < 0) fprintf(stderr, "iteration %d: %s\n", it, msg);
    ft_sort_rows(got_rows, n1 < 0 ? 0 : n1);
    int ok = n1 >= 0 && rows_match(ref_rows, n_ref, got_rows, n1, kind);
    if (!ok) fprintf(stderr, "iteration %d (seed %llu) differs from the reference\n", it, (unsigned long long)seed);
    QL_CHECK(ok);

    /* Same data, other partitioning, order, batches and threads: same bits. */
    ft_table_shuffle_layout(a, &rng, (int)ft_rand_range(&rng, 1, 4), ft_rand_range(&rng, 1, 9));
    ft_table_shuffle_layout(b, &rng, (int)ft_rand_range(&rng, 1, 4), ft_rand_range(&rng, 1, 9));
    struct ft_host h2;
    ft_host_init(&h2, -1, 3, ft_rand_range(&rng, 1, 5));
    int64_t n2 = ft_collect(&fold, &h2, q.n_groups, kind, again_rows, CAP, msg, sizeof(msg));
    QL_CHECK_INT(ft_host_free(&h2), QL_OK);
    ft_sort_rows(again_rows, n2 < 0 ? 0 : n2);
    int same = n2 == n1 && rows_identical(got_rows, again_rows, n1);
    if (!same) fprintf(stderr, "iteration %d: second run differs (%lld rows vs %lld)\n", it, (long long)n2, (long long)n1);
    QL_CHECK(same);
    struct ql_metrics m;
    if (fold.get_metrics(&fold, &m, NULL) == QL_OK) {
      gemm_done += m.items[5].value > 0;
      dense_runs += m.items[6].value > 0;
      m.release(&m);
    }
    fold.release(&fold);
    view.release(&view);
  }
  QL_CHECK(gemm_done > 20); /* the generator reaches the dense kernel */
  QL_CHECK(narrow_runs > 20);
  QL_CHECK(decimal_runs > 10);
  QL_CHECK(dense_runs > 20); /* and the hash path's dense key index */
  printf("dense key index in %d runs, dense kernel in %d of %d\n", dense_runs, gemm_done, iterations);
  free(a);
  free(b);
}

/* A matmul big enough to need more memory than a tiny pool allows. */
static void test_memory_limit(void) {
  uint64_t rng = 7;
  struct ft_table *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
  random_table(a, "a", &rng, 1, 2000, 50, 0);
  random_table(b, "b", &rng, 1, 2000, 50, 0);
  struct ft_query q;
  memset(&q, 0, sizeof(q));
  q.is_float = 1;
  q.n_keys = 1;
  q.n_groups = 2;
  q.gside[0] = 0, q.gcol[0] = 2, q.gside[1] = 1, q.gcol[1] = 2;
  q.aval = q.bval = 4;
  struct ql_plan_view view;
  struct ql_execution_plan fold;
  if (plan_fold(&q, a, b, &view, &fold)) {
    QL_CHECK(!"planned");
    return;
  }
  char msg[512];
  struct ft_host h;
  ft_host_init(&h, 4096, 2, 1024);
  int64_t n = ft_collect(&fold, &h, q.n_groups, 1, got_rows, CAP, msg, sizeof(msg));
  QL_CHECK_INT(n, -QL_ERESOURCES);
  QL_CHECK(strstr(msg, "FoldExec") != NULL); /* the pool's message names the consumer */
  QL_CHECK_INT(ql_ref_memory_pool_consumers(h.pool), 0);
  QL_CHECK_INT(ft_host_free(&h), QL_OK);

  /* A generous pool: the same query runs and reserved memory was used. */
  ft_host_init(&h, 64 << 20, 2, 1024);
  n = ft_collect(&fold, &h, q.n_groups, 1, got_rows, CAP, msg, sizeof(msg));
  QL_CHECK(n > 0);
  QL_CHECK(ql_ref_memory_pool_peak(h.pool) > 4096);
  QL_CHECK_INT(ft_host_free(&h), QL_OK);

  /* No memory pool at all (a host without one): still runs. */
  ft_host_init(&h, -1, 0, 1024);
  h.ctx.runtime_env = NULL;
  int64_t n_nopool = ft_collect(&fold, &h, q.n_groups, 1, again_rows, CAP, msg, sizeof(msg));
  QL_CHECK_INT(n_nopool, n);
  QL_CHECK_INT(ft_host_free(&h), QL_OK);
  fold.release(&fold);
  view.release(&view);
  free(a);
  free(b);
}

static void test_cancel_and_exact_values(void) {
  /* a(k, s, v) x w(k, o, v): a 2x2 by 2x2 matmul with duplicates and NULLs,
   * values checked by hand. */
  struct ft_table *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
  uint64_t rng = 1;
  random_table(a, "a", &rng, 0, 5, 2, 0);
  random_table(b, "b", &rng, 0, 4, 2, 0);
  a->with_stats = b->with_stats = 0; /* nothing may depend on statistics */
  for (int c = 0; c < 5; c++) {
    snprintf(a->cols[c].format, 8, "l");
    snprintf(b->cols[c].format, 8, "l");
  }
  /* a rows (k0, g0, v): (0,0,1) (1,0,2) (0,1,3) (1,1,NULL) (NULL,0,100) */
  int64_t ak[5] = {0, 1, 0, 1, 0}, ag[5] = {0, 0, 1, 1, 0}, av[5] = {1, 2, 3, 0, 100};
  uint8_t akv[5] = {1, 1, 1, 1, 0}, avv[5] = {1, 1, 1, 0, 1};
  /* b rows (k0, g0, v): (0,0,10) (1,0,20) (0,0,5) (1,1,30) */
  int64_t bk[4] = {0, 1, 0, 1}, bg[4] = {0, 0, 0, 1}, bv[4] = {10, 20, 5, 30};
  for (int r = 0; r < 5; r++) {
    a->cols[0].i[r] = ak[r], a->cols[0].valid[r] = akv[r];
    a->cols[2].i[r] = ag[r], a->cols[2].valid[r] = 1;
    a->cols[4].i[r] = av[r], a->cols[4].valid[r] = avv[r];
  }
  for (int r = 0; r < 4; r++) {
    b->cols[0].i[r] = bk[r], b->cols[0].valid[r] = 1;
    b->cols[2].i[r] = bg[r], b->cols[2].valid[r] = 1;
    b->cols[4].i[r] = bv[r], b->cols[4].valid[r] = 1;
  }
  struct ft_query q;
  memset(&q, 0, sizeof(q));
  q.n_keys = 1;
  q.n_groups = 2;
  q.gside[0] = 0, q.gcol[0] = 2, q.gside[1] = 1, q.gcol[1] = 2;
  q.aval = q.bval = 4;
  struct ql_plan_view view;
  struct ql_execution_plan fold;
  if (plan_fold(&q, a, b, &view, &fold)) {
    QL_CHECK(!"planned");
    return;
  }
  char msg[512];
  struct ft_host h;
  ft_host_init(&h, -1, 0, 1024);
  int64_t n = ft_collect(&fold, &h, 2, 0, got_rows, CAP, msg, sizeof(msg));
  ft_sort_rows(got_rows, n < 0 ? 0 : n);
  /* Groups: (0,0) = 1*10 + 1*5 + 2*20 = 55; (0,1) = 2*30 = 60; (1,0) = 3*10 + 3*5 + NULL*20 = 45;
   * (1,1) = NULL*30 only: NULL. */
  QL_CHECK_INT(n, 4);
  if (n == 4) {
    QL_CHECK_INT(got_rows[0].keys[0], 0); QL_CHECK_INT(got_rows[0].keys[1], 0); QL_CHECK_INT(got_rows[0].i, 55);
    QL_CHECK_INT(got_rows[1].keys[0], 0); QL_CHECK_INT(got_rows[1].keys[1], 1); QL_CHECK_INT(got_rows[1].i, 60);
    QL_CHECK_INT(got_rows[2].keys[0], 1); QL_CHECK_INT(got_rows[2].keys[1], 0); QL_CHECK_INT(got_rows[2].i, 45);
    QL_CHECK_INT(got_rows[3].keys[0], 1); QL_CHECK_INT(got_rows[3].keys[1], 1); QL_CHECK_INT(got_rows[3].has, 0);
  }
  QL_CHECK_INT(ft_host_free(&h), QL_OK);

  /* Metrics after one run. */
  struct ql_metrics m;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  QL_CHECK_OK(fold.get_metrics(&fold, &m, &err), err);
  QL_CHECK_STR(m.items[0].name, "output_rows");
  QL_CHECK_INT(m.items[0].value, 4);
  QL_CHECK_STR(m.items[3].name, "groups");
  QL_CHECK_INT(m.items[3].value, 4);
  m.release(&m);

  /* Cancelled before the first batch. */
  ft_host_init(&h, -1, 0, 1024);
  ql_ref_host_cancel(h.host, 1);
  n = ft_collect(&fold, &h, 2, 0, got_rows, CAP, msg, sizeof(msg));
  QL_CHECK_INT(n, -QL_ECANCELLED);
  QL_CHECK_INT(ft_host_free(&h), QL_OK);

  /* An input whose batches lack the planned columns: a clean QL_EDATA. */
  a->broken_batches = 1;
  ft_host_init(&h, -1, 0, 1024);
  n = ft_collect(&fold, &h, 2, 0, got_rows, CAP, msg, sizeof(msg));
  QL_CHECK_INT(n, -QL_EDATA);
  QL_CHECK(strstr(msg, "missing or malformed") != NULL);
  QL_CHECK_INT(ft_host_free(&h), QL_OK);
  a->broken_batches = 0;

  /* EXPLAIN-facing surface. */
  QL_CHECK_STR(fold.name(&fold), "FoldExec");
  QL_CHECK_STR(fold.display(&fold), "on=[a.k0 = b.k0], by=[a.g0, b.g0], sum=a.v * b.v");
  QL_CHECK_INT(fold.child_count(&fold), 2);
  QL_CHECK_STR(fold.child(&fold, 0)->name(fold.child(&fold, 0)), "FtTableExec");
  QL_CHECK(fold.child(&fold, 2) == NULL);
  struct ql_plan_properties props;
  QL_CHECK_OK(fold.get_properties(&fold, &props, &err), err);
  QL_CHECK_INT(props.partition_count, 1);

  /* with_new_children checks the new inputs' columns... */
  struct ql_execution_plan kids[2], copy;
  struct ft_table *narrow = calloc(1, sizeof(*narrow));
  narrow->n_cols = 1;
  snprintf(narrow->cols[0].name, 16, "k0");
  snprintf(narrow->cols[0].format, 8, "l");
  ft_table_reset_layout(narrow);
  ft_plan_new(narrow, &kids[0]);
  ft_plan_new(b, &kids[1]);
  QL_CHECK_INT(fold.with_new_children(&fold, kids, 2, &copy, &err), QL_EINVAL);
  QL_CHECK(kids[0].release == NULL && kids[1].release == NULL); /* moved in and released */
  ql_error_release(&err);
  free(narrow);
  /* ...and keeps working on good ones. */
  ft_plan_new(a, &kids[0]);
  ft_plan_new(b, &kids[1]);
  QL_CHECK_OK(fold.with_new_children(&fold, kids, 2, &copy, &err), err);
  ft_host_init(&h, -1, 0, 1);
  /* A stream outlives its plan. */
  struct ArrowArrayStream s;
  QL_CHECK_OK(copy.execute(&copy, 0, &h.ctx, &s, &err), err);
  copy.release(&copy);
  QL_CHECK(copy.release == NULL);
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    if (s.get_next(&s, &batch) != 0 || !batch.release) break;
    QL_CHECK_INT(batch.length, 1); /* batch size 1 */
    rows += batch.length;
    batch.release(&batch);
  }
  s.release(&s);
  QL_CHECK_INT(rows, 4);
  QL_CHECK_INT(ft_host_free(&h), QL_OK);
  fold.release(&fold);
  view.release(&view);
  free(a);
  free(b);
}


/* ------------------------------------------------------------ dense choice */

/* One row of a hand-made table: join key k0 and group g0 (valid flags:
 * 0 = NULL). */
struct dc_row {
  int64_t k;
  uint8_t k_valid;
  int64_t g;
  uint8_t g_valid;
};

/* Columns k0 k1 g0 g1 v (int64; v float64 when is_float), the rows given,
 * values random (1 in 8 NULL); statistics never offered. */
static void dc_table(struct ft_table *t, const char *name, const struct dc_row *rows, int64_t n, int is_float,
                     uint64_t *rng) {
  memset(t, 0, sizeof(*t));
  snprintf(t->name, sizeof(t->name), "%s", name);
  t->n_cols = 5;
  const char *names[5] = {"k0", "k1", "g0", "g1", "v"};
  for (int c = 0; c < 5; c++) {
    snprintf(t->cols[c].name, sizeof(t->cols[c].name), "%s", names[c]);
    snprintf(t->cols[c].format, sizeof(t->cols[c].format), "%s", c == 4 && is_float ? "g" : "l");
  }
  t->n_rows = n;
  for (int64_t r = 0; r < n; r++) {
    t->cols[0].i[r] = rows[r].k, t->cols[0].valid[r] = rows[r].k_valid;
    t->cols[1].valid[r] = 1;
    t->cols[2].i[r] = rows[r].g, t->cols[2].valid[r] = rows[r].g_valid;
    t->cols[3].valid[r] = 1;
    t->cols[4].valid[r] = ft_rand(rng) % 8 != 0;
    if (is_float) t->cols[4].f[r] = (double)ft_rand_range(rng, -1000000, 1000000) / 1024.0;
    else t->cols[4].i[r] = ft_rand_range(rng, -1000, 1000);
  }
  ft_table_shuffle_layout(t, rng, (int)ft_rand_range(rng, 1, 3), ft_rand_range(rng, 1, 50));
  t->with_stats = 0;
}

/* Every (g, k) of [g0, g0 + m) x [k0, k0 + kn) once, `copies` times. */
static int64_t dc_grid(struct dc_row *rows, int64_t g0, int64_t m, int64_t k0, int64_t kn, int copies) {
  int64_t n = 0;
  for (int c = 0; c < copies; c++)
    for (int64_t g = 0; g < m; g++)
      for (int64_t k = 0; k < kn; k++) rows[n++] = (struct dc_row){k0 + k, 1, g0 + g, 1};
  return n;
}

/* dense_range_misses of dc_check's first run. */
static int64_t dc_last_misses;

/* a JOIN b ON k0 GROUP BY a.g0, b.g0: equal to the reference, the same bits
 * under another layout and thread count, and the kernel the data call for
 * (metrics of the first run: dense kernel runs, dense key index runs). */
static void dc_check(const char *what, struct ft_table *a, struct ft_table *b, int is_float, int64_t want_gemm,
                     int64_t want_index, uint64_t *rng) {
  struct ft_query q;
  memset(&q, 0, sizeof(q));
  q.is_float = is_float;
  q.n_keys = 1;
  q.n_groups = 2;
  q.gside[0] = 0, q.gcol[0] = 2, q.gside[1] = 1, q.gcol[1] = 2;
  q.aval = q.bval = 4;
  struct ql_plan_view view;
  struct ql_execution_plan fold;
  if (plan_fold(&q, a, b, &view, &fold)) {
    QL_CHECK(!"planned");
    return;
  }
  int64_t n_ref = ft_reference(&q, a, b, ref_rows, CAP);
  ft_sort_rows(ref_rows, n_ref);
  char msg[512];
  struct ft_host h;
  ft_host_init(&h, 64 << 20, 2, ft_rand_range(rng, 1, 64));
  int64_t n1 = ft_collect(&fold, &h, 2, is_float, got_rows, CAP, msg, sizeof(msg));
  QL_CHECK_INT(ft_host_free(&h), QL_OK);
  if (n1 < 0) fprintf(stderr, "%s: %s\n", what, msg);
  ft_sort_rows(got_rows, n1 < 0 ? 0 : n1);
  int ok = n1 >= 0 && rows_match(ref_rows, n_ref, got_rows, n1, is_float);
  if (!ok) fprintf(stderr, "dense choice case '%s' differs from the reference\n", what);
  QL_CHECK(ok);
  struct ql_metrics m;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  QL_CHECK_OK(fold.get_metrics(&fold, &m, &err), err);
  QL_CHECK_STR(m.items[5].name, "dense_kernel_runs");
  QL_CHECK_STR(m.items[6].name, "dense_key_index_runs");
  if (m.items[5].value != want_gemm || m.items[6].value != want_index)
    fprintf(stderr, "dense choice case '%s': dense kernel %lld, dense index %lld\n", what,
            (long long)m.items[5].value, (long long)m.items[6].value);
  QL_CHECK_INT(m.items[5].value, want_gemm);
  QL_CHECK_INT(m.items[6].value, want_index);
  QL_CHECK_STR(m.items[8].name, "dense_range_misses");
  dc_last_misses = m.items[8].value;
  m.release(&m);
  ft_table_shuffle_layout(a, rng, (int)ft_rand_range(rng, 1, 4), ft_rand_range(rng, 1, 9));
  ft_table_shuffle_layout(b, rng, (int)ft_rand_range(rng, 1, 4), ft_rand_range(rng, 1, 9));
  ft_host_init(&h, -1, 3, ft_rand_range(rng, 1, 5));
  int64_t n2 = ft_collect(&fold, &h, 2, is_float, again_rows, CAP, msg, sizeof(msg));
  QL_CHECK_INT(ft_host_free(&h), QL_OK);
  ft_sort_rows(again_rows, n2 < 0 ? 0 : n2);
  QL_CHECK(n2 == n1 && rows_identical(got_rows, again_rows, n1));
  fold.release(&fold);
  view.release(&view);
}

/* a as K keys x M groups ordered by (key, group), as aᵀ in W̄ = aᵀ·z̄,
 * every value present, in batches of `batch` rows in one partition (and
 * `again` rows repeating its first ones at the end); b a K x 8 grid (fewer
 * groups when that would not fit) without key `no_key`, in any layout. */
static void km_tables(struct ft_table *a, struct ft_table *b, int64_t K, int64_t M, int64_t batch, int64_t again,
                      int64_t no_key, uint64_t *rng) {
  int64_t N = K * 8 <= FT_MAX_ROWS ? 8 : FT_MAX_ROWS / K;
  static struct dc_row ra[FT_MAX_ROWS], rb[FT_MAX_ROWS];
  int64_t na = 0, nb = 0;
  for (int64_t k = 0; k < K; k++)
    for (int64_t g = 0; g < M; g++) ra[na++] = (struct dc_row){k, 1, g, 1};
  for (int64_t r = 0; r < again; r++) ra[na++] = ra[r];
  for (int64_t k = 0; k < K; k++)
    for (int64_t g = 0; g < N && k != no_key; g++) rb[nb++] = (struct dc_row){k, 1, g, 1};
  dc_table(a, "a", ra, na, 1, rng);
  dc_table(b, "b", rb, nb, 1, rng);
  ft_table_reset_layout(a);
  a->batch_rows = batch;
  for (int64_t r = 0; r < na; r++) a->cols[4].valid[r] = 1;
}

/* A float left input ordered by (key, group) makes A key-major, its
 * chunks read in place when they tile it (no NULL values, no overlap);
 * whatever the layout the bits are the same (dc_check runs each case
 * again reshuffled, where A is row-major or filled). */
static void test_key_major(struct ft_table *a, struct ft_table *b, uint64_t *rng) {
  int64_t before = fd_dense_borrowed_runs();
  /* 100 keys x 16 groups (the AVX kernel four rows at a time), in
   * batches of 256 rows (whole key rows) and of 301 (five rows cut by
   * batch boundaries, copied). */
  for (int64_t batch = 256; batch <= 301; batch += 45) {
    km_tables(a, b, 100, 16, batch, 0, -1, rng);
    dc_check("key-major, read in place", a, b, 1, 1, 0, rng);
    QL_CHECK_INT(fd_dense_borrowed_runs(), before + 1);
    before = fd_dense_borrowed_runs();
  }
  /* 6 groups (the SSE2 kernel), one batch, 600 keys (two steps of the
   * product, 512 keys each). */
  km_tables(a, b, 600, 6, 4096, 0, -1, rng);
  dc_check("key-major, 6 groups", a, b, 1, 1, 0, rng);
  QL_CHECK_INT(fd_dense_borrowed_runs(), before + 1);
  before = fd_dense_borrowed_runs();
  /* Keys 50..59 missing from a, whole batches of 10 keys each: spans with
   * a gap between them (rows of zeros). */
  km_tables(a, b, 100, 16, 160, 0, -1, rng);
  int64_t na = 0;
  for (int64_t r = 0; r < a->n_rows; r++)
    if (a->cols[0].i[r] < 50 || a->cols[0].i[r] >= 60) {
      for (int c = 0; c < a->n_cols; c++) {
        a->cols[c].i[na] = a->cols[c].i[r], a->cols[c].f[na] = a->cols[c].f[r];
        a->cols[c].valid[na] = a->cols[c].valid[r];
      }
      na++;
    }
  a->n_rows = na;
  ft_table_reset_layout(a);
  a->batch_rows = 160;
  dc_check("key-major with a gap", a, b, 1, 1, 0, rng);
  QL_CHECK_INT(fd_dense_borrowed_runs(), before + 1);
  before = fd_dense_borrowed_runs();
  /* NULL values: A key-major, filled (and sealed before the product). */
  km_tables(a, b, 100, 16, 256, 0, -1, rng);
  for (int64_t r = 0; r < a->n_rows; r += 9) a->cols[4].valid[r] = 0;
  dc_check("key-major with NULL values", a, b, 1, 1, 0, rng);
  /* A last batch repeating cells 0..47 (spans overlap): not read in
   * place; filled, and the duplicates send it to the hash path. */
  km_tables(a, b, 100, 16, 48, 48, -1, rng);
  dc_check("key-major, a batch again", a, b, 1, 0, 1, rng);
  QL_CHECK_INT(fd_dense_borrowed_runs(), before);
  /* A cell of b twice (b is sealed by the product, step by step, when A
   * is key-major): the hash path. */
  km_tables(a, b, 100, 16, 256, 0, -1, rng);
  for (int c = 0; c < b->n_cols; c++) {
    b->cols[c].i[b->n_rows] = b->cols[c].i[7], b->cols[c].f[b->n_rows] = b->cols[c].f[7];
    b->cols[c].valid[b->n_rows] = b->cols[c].valid[7];
  }
  b->cols[4].valid[b->n_rows] = b->cols[4].valid[7] = 1;
  b->n_rows++;
  ft_table_reset_layout(b);
  dc_check("key-major, a cell of b twice", a, b, 1, 0, 1, rng);
  QL_CHECK_INT(fd_dense_borrowed_runs(), before + 1); /* read in place, then the count of b says no */
  before = fd_dense_borrowed_runs();
  /* An infinite value on a key b lacks: it joins nothing, but read in
   * place it makes its row of C NaN, so the run looks at A's values and
   * goes to the hash path, as the fill would. */
  km_tables(a, b, 100, 16, 256, 0, 5, rng);
  a->cols[4].f[5 * 16 + 3] = INFINITY;
  dc_check("key-major, an infinity", a, b, 1, 0, 1, rng);
  QL_CHECK_INT(fd_dense_borrowed_runs(), before + 1); /* read in place, then C says look */
}

/* The kernel is chosen from the data read, never from statistics (the
 * tables here offer none): dense ranges take the dense kernel; sparse,
 * huge or duplicate-float data take the hash path, with the dense key index
 * when the build side's keys are dense. */
static void test_dense_choice(void) {
  uint64_t rng = 99;
  static struct dc_row ra[FT_MAX_ROWS], rb[FT_MAX_ROWS];
  struct ft_table *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
  for (int is_float = 0; is_float < 2; is_float++) {
    /* A 20 x 8 by 8 x 6 matrix product. */
    int64_t na = dc_grid(ra, 0, 20, 0, 8, 1), nb = dc_grid(rb, 0, 6, 0, 8, 1);
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    dc_check("dense", a, b, is_float, 1, 0, &rng);

    /* No NULL value at all (a dense tensor): the fill that only stores,
     * whole bitset words set at once (8 keys: one short word; 100 keys: a
     * full word and a short one), C's bits from A's rows when B is full,
     * and the sum column copied from C. */
    for (int64_t keys = 8; keys <= 100; keys += 92) {
      /* 6, 8 and 16 columns of C (8 and 16: the AVX kernel where the CPU
       * has it), 21 rows (a last row without a pair). */
      for (int64_t n = 6; n <= 16; n += n == 6 ? 2 : 8) {
        na = dc_grid(ra, 0, 21, 0, keys, 1), nb = dc_grid(rb, 0, n, 0, keys, 1);
        dc_table(a, "a", ra, na, is_float, &rng);
        dc_table(b, "b", rb, nb, is_float, &rng);
        for (int64_t r = 0; r < na; r++) a->cols[4].valid[r] = 1;
        for (int64_t r = 0; r < nb; r++) b->cols[4].valid[r] = 1;
        dc_check("dense without NULL values", a, b, is_float, 1, 0, &rng);
        /* And with NULL values (1 in 8), so some A cells are 0.0. */
        dc_table(a, "a", ra, na, is_float, &rng);
        dc_table(b, "b", rb, nb, is_float, &rng);
        dc_check("dense, 8 or 16 columns", a, b, is_float, 1, 0, &rng);
      }
    }

    /* Negative keys and groups; NULL join keys (dropped) and NULL groups
     * (a group of their own) on both sides. */
    na = dc_grid(ra, -20, 20, -8, 8, 1), nb = dc_grid(rb, -6, 6, -8, 8, 1);
    ra[na++] = (struct dc_row){0, 0, 3, 1};
    ra[na++] = (struct dc_row){-3, 1, 0, 0};
    ra[na++] = (struct dc_row){-3, 1, 0, 0};
    rb[nb++] = (struct dc_row){-1, 1, 0, 0};
    rb[nb++] = (struct dc_row){-7, 0, 0, 0};
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    /* Two rows of a share the cell (NULL group, key -3): floats fall back. */
    dc_check("negative with NULLs", a, b, is_float, is_float ? 0 : 1, is_float ? 1 : 0, &rng);

    /* Keys next to INT64_MAX, groups next to INT64_MIN. */
    na = dc_grid(ra, INT64_MIN, 10, INT64_MAX - 7, 8, 1), nb = dc_grid(rb, INT64_MIN + 1, 4, INT64_MAX - 7, 8, 1);
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    dc_check("extreme but dense", a, b, is_float, 1, 0, &rng);

    /* Every cell twice: int64 cells add up (dense); float cells would
     * round differently, so the hash path with a dense key index. */
    na = dc_grid(ra, 0, 20, 0, 8, 2), nb = dc_grid(rb, 0, 6, 0, 8, 1);
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    dc_check("duplicates", a, b, is_float, is_float ? 0 : 1, is_float ? 1 : 0, &rng);
    /* The same on the other side (b is sealed before the product, a
     * within it: both must see a lost value). */
    na = dc_grid(ra, 0, 20, 0, 8, 1), nb = dc_grid(rb, 0, 6, 0, 8, 2);
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    dc_check("duplicates in b", a, b, is_float, is_float ? 0 : 1, is_float ? 1 : 0, &rng);

    /* Sparse keys: neither dense structure. */
    na = dc_grid(ra, 0, 20, 0, 8, 1), nb = dc_grid(rb, 0, 6, 0, 8, 1);
    for (int64_t r = 0; r < na; r++) ra[r].k *= 100003;
    for (int64_t r = 0; r < nb; r++) rb[r].k *= 100003;
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    dc_check("sparse keys", a, b, is_float, 0, 0, &rng);

    /* Dense keys, sparse groups: the hash path, keys indexed densely. */
    na = dc_grid(ra, 0, 20, 0, 8, 1), nb = dc_grid(rb, 0, 6, 0, 8, 1);
    for (int64_t r = 0; r < na; r++) ra[r].g *= 1000;
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    dc_check("sparse groups", a, b, is_float, 0, 1, &rng);

    /* Key ranges wider than int64 can subtract: the hash path, and the
     * extreme keys still match each other. */
    na = dc_grid(ra, 0, 5, 0, 4, 1), nb = dc_grid(rb, 0, 3, 0, 4, 1);
    int64_t ext[4] = {INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1};
    for (int i = 0; i < 4; i++) {
      ra[na++] = (struct dc_row){ext[i], 1, i, 1};
      rb[nb++] = (struct dc_row){ext[3 - i], 1, i, 1};
    }
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    dc_check("huge range", a, b, is_float, 0, 0, &rng);

    /* Chunks of 2,048 rows get their key ranges from a sample (the first
     * and last 64 rows, every 61st between): cycling keys are sampled
     * exactly, and the fill reads the key column once. */
    na = dc_grid(ra, 0, 128, 0, 16, 1), nb = dc_grid(rb, 0, 8, 0, 16, 1);
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    ft_table_reset_layout(a);
    a->batch_rows = 2048;
    dc_check("sampled ranges", a, b, is_float, 1, 0, &rng);
    QL_CHECK_INT(dc_last_misses, 0);
    /* A group (500) or a key (16) only one unsampled row (position 100)
     * holds (a 127-group span is trusted; a 16-key span has no slack): a
     * float fill sized by the sample finds it and is done again with exact
     * ranges (the row with key 16 must meet b's); int64 products always
     * take exact ranges. */
    for (int what = 0; what < 2; what++) {
      na = dc_grid(ra, 0, 127, 0, 16, 1), nb = dc_grid(rb, 0, 8, 0, 17, 1);
      memmove(ra + 101, ra + 100, (size_t)(na - 100) * sizeof(ra[0]));
      ra[100] = what == 0 ? (struct dc_row){3, 1, 500, 1} : (struct dc_row){16, 1, 7, 1};
      na++;
      dc_table(a, "a", ra, na, is_float, &rng);
      dc_table(b, "b", rb, nb, is_float, &rng);
      ft_table_reset_layout(a);
      a->batch_rows = 2048;
      dc_check(what == 0 ? "group outside the sample" : "key outside the sample", a, b, is_float, 1, 0, &rng);
      QL_CHECK_INT(dc_last_misses, is_float ? 1 : 0);
    }
    /* A sampled group span of 256 or more is made exact before the fill:
     * the group (320) only an unsampled row holds costs no second fill. */
    na = dc_grid(ra, 0, 300, 0, 8, 1), nb = dc_grid(rb, 0, 8, 0, 8, 1);
    memmove(ra + 101, ra + 100, (size_t)(na - 100) * sizeof(ra[0]));
    ra[100] = (struct dc_row){5, 1, 320, 1};
    na++;
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    ft_table_reset_layout(a);
    a->batch_rows = 4096;
    dc_check("long group span", a, b, is_float, 1, 0, &rng);
    QL_CHECK_INT(dc_last_misses, 0);
    /* A key (1030) the sample of a 1,024-key span misses, within its
     * slack (16): no second fill, and it meets b's key 1030 (b's 1,040
     * rows are sampled too). */
    na = dc_grid(ra, 0, 2, 0, 1024, 1), nb = dc_grid(rb, 0, 1, 0, 1040, 1);
    memmove(ra + 101, ra + 100, (size_t)(na - 100) * sizeof(ra[0]));
    ra[100] = (struct dc_row){1030, 1, 1, 1};
    na++;
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    ft_table_reset_layout(a);
    ft_table_reset_layout(b);
    a->batch_rows = b->batch_rows = 4096;
    dc_check("key within the slack", a, b, is_float, 1, 0, &rng);
    QL_CHECK_INT(dc_last_misses, 0);

    /* Exactly at the density limit (20 x 1,024 cells for 4,096 rows): the
     * sampled keys, widened, would not pass, the exact ones do; the choice
     * is the exact ranges' (dense), whatever the layout. */
    for (int64_t r = 0; r < 4096; r++) ra[r] = (struct dc_row){(r * 7) % 1024, 1, r % 20, 1};
    na = 4096;
    nb = dc_grid(rb, 0, 1, 0, 1024, 1);
    dc_table(a, "a", ra, na, is_float, &rng);
    dc_table(b, "b", rb, nb, is_float, &rng);
    ft_table_reset_layout(a);
    ft_table_reset_layout(b);
    a->batch_rows = b->batch_rows = 4096;
    dc_check("at the density limit", a, b, is_float, 1, 0, &rng);

    if (is_float) test_key_major(a, b, &rng);

    /* An empty side: no rows, no kernel. */
    dc_table(b, "b", rb, 0, is_float, &rng);
    dc_check("empty", a, b, is_float, 0, 0, &rng);
  }
  free(a);
  free(b);
}

/* ------------------------------------------------------------------ chains */

/* ij,jk,k->i: R(i) = sum_k (sum_j A(i,j) B(j,k)) C(k), as
 *   Aggregate(t.g0; sum(t.s * c.v)) over Join(t.g1 = c.k0) over
 *   [SubqueryAlias t over Aggregate(a.g0, b.g1; sum(a.v * b.v)) over Join(a.k0 = b.k0), Scan c].
 * The test host plans the alias by calling the planner again on that
 * subtree, as hosts do, so the inner contraction folds too. */
struct chain_env {
  struct ql_planner_context ctx;
  struct ql_planner planner;
  const struct ft_table *a, *b, *c;
  ql_node_id scan_a, scan_b, scan_c, alias_t;
  int inner_folds;
};

static int chain_plan_physical(const struct ql_planner_context *self, ql_node_id node, struct ql_execution_plan *out,
                               struct ql_error *error) {
  struct chain_env *env = self->private_data;
  if (node == env->scan_a) return ft_plan_new(env->a, out);
  if (node == env->scan_b) return ft_plan_new(env->b, out);
  if (node == env->scan_c) return ft_plan_new(env->c, out);
  if (node == env->alias_t) {
    /* The subtree as its own view: same arena, root moved. */
    struct ql_plan_view sub = *self->plan;
    sub.root = node;
    sub.release = NULL;
    struct ql_planner_context ctx = *self;
    ctx.plan = &sub;
    struct ql_planner_result res;
    memset(&res, 0, sizeof(res));
    res.struct_size = sizeof(res);
    QL_RETURN_NOT_OK(env->planner.plan(&env->planner, &ctx, &res, error));
    if (res.action != QL_PLANNER_PHYSICAL) return ql_error_set(error, QL_ENOTSUP, "inner contraction not folded");
    env->inner_folds++;
    *out = res.physical; /* the alias adds nothing physically */
    return QL_OK;
  }
  return ql_error_set(error, QL_ENOTSUP, "test host cannot plan node %d", node);
}

static void test_chain(uint64_t seed) {
  uint64_t rng = seed;
  struct ft_table *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b)), *c = calloc(1, sizeof(*c));
  random_table(a, "a", &rng, 0, ft_rand_range(&rng, 0, 40), 4, 0);
  random_table(b, "b", &rng, 0, ft_rand_range(&rng, 0, 40), 4, 0);
  random_table(c, "c", &rng, 0, ft_rand_range(&rng, 0, 40), 4, 0);
  for (int64_t r = 0; r < c->n_rows; r++) c->cols[0].i[r] = ft_rand_range(&rng, -2, 3); /* joins t.g1 */
  struct ft_query q;
  memset(&q, 0, sizeof(q));
  q.n_keys = 1;
  q.n_groups = 2;
  q.gside[0] = 0, q.gcol[0] = 2, q.gside[1] = 1, q.gcol[1] = 3;
  q.aval = q.bval = 4;
  struct ql_plan_view inner;
  struct ft_view_ids ids;
  if (ft_build_view(&q, a, b, &inner, &ids)) {
    QL_CHECK(!"inner view");
    return;
  }
  struct ql_ir_builder *bld;
  ql_ir_builder_new(&bld, NULL);
  for (int32_t i = 0; i < inner.n_exprs; i++) ql_ir_expr(bld, &inner.exprs[i]);
  for (int32_t i = 0; i < inner.n_nodes; i++) ql_ir_node(bld, &inner.nodes[i]);
  const struct ArrowSchema *ts = inner.nodes[ids.aggregate].schema; /* g0, g1, sum */
  const char *tq[3] = {"t", "t", "t"};
  struct ql_plan_node alias;
  memset(&alias, 0, sizeof(alias));
  alias.kind = QL_NODE_SUBQUERY_ALIAS;
  alias.condition = -1, alias.n_projection = -1, alias.fetch = -1;
  alias.n_inputs = 1;
  alias.inputs = &ids.aggregate;
  alias.schema = ts;
  alias.field_qualifiers = tq;
  alias.name = "t";
  ql_node_id t = ql_ir_node(bld, &alias);
  struct ArrowSchema cs;
  ft_table_schema(c, &cs);
  const char *cq[5] = {"c", "c", "c", "c", "c"};
  static const int32_t all[5] = {0, 1, 2, 3, 4};
  struct ql_table_ref cref = {"c", &cs, c, NULL};
  struct ql_plan_node scan = alias;
  scan.kind = QL_NODE_TABLE_SCAN;
  scan.n_inputs = 0;
  scan.inputs = NULL;
  scan.schema = &cs;
  scan.field_qualifiers = cq;
  scan.n_projection = 5;
  scan.projection = all;
  scan.name = "c";
  scan.table = &cref;
  ql_node_id sc = ql_ir_node(bld, &scan);
  struct ArrowSchema js;
  ql_schema_init_struct(&js, NULL, 8, NULL);
  const char *jq[8];
  for (int i = 0; i < 8; i++) {
    const struct ArrowSchema *f = i < 3 ? ts->children[i] : cs.children[i - 3];
    ql_schema_copy(f, js.children[i], NULL);
    jq[i] = i < 3 ? "t" : "c";
  }
  /* t.g1 is int32 or int64; c.k0 likewise: compare as int64. */
  const char *tk = ts->children[1]->format, *ck = c->cols[0].format;
  ql_expr_id lk = ql_ir_column(bld, "g1", "t", 1), rk = ql_ir_column(bld, "k0", "c", 3);
  if (strcmp(tk, "l")) lk = ql_ir_cast(bld, lk, "l", 0);
  if (strcmp(ck, "l")) rk = ql_ir_cast(bld, rk, "l", 0);
  ql_node_id jin[2] = {t, sc};
  struct ql_plan_node join = alias;
  join.kind = QL_NODE_JOIN;
  join.join_type = QL_JOIN_INNER;
  join.n_inputs = 2;
  join.inputs = jin;
  join.schema = &js;
  join.field_qualifiers = jq;
  join.name = NULL;
  join.n_exprs = join.n_exprs2 = 1;
  join.exprs = &lk;
  join.exprs2 = &rk;
  ql_node_id j = ql_ir_node(bld, &join);
  ql_expr_id x = ql_ir_column(bld, ts->children[2]->name, "t", 2);
  ql_expr_id y = ql_ir_column(bld, "v", "c", 7);
  if (strcmp(c->cols[4].format, "l")) y = ql_ir_cast(bld, y, "l", 0);
  ql_expr_id prod = ql_ir_binary(bld, QL_OP_MULTIPLY, x, y);
  struct ql_function_id sum = {QL_ORIGIN_BUILTIN, QL_FUNCTION_AGGREGATE, "sum", NULL, 0};
  ql_expr_id agg = ql_ir_function(bld, QL_EXPR_AGGREGATE_FUNCTION, &sum, &prod, 1, 0, -1);
  ql_expr_id g = ql_ir_column(bld, "g0", "t", 0);
  struct ArrowSchema as;
  ql_schema_init_struct(&as, NULL, 2, NULL);
  ql_schema_copy(ts->children[0], as.children[0], NULL);
  ql_schema_init(as.children[1], "l", "sum(t.s * c.v)", ARROW_FLAG_NULLABLE, NULL);
  const char *aq[2] = {"t", NULL};
  struct ql_plan_node an = alias;
  an.kind = QL_NODE_AGGREGATE;
  an.inputs = &j;
  an.schema = &as;
  an.field_qualifiers = aq;
  an.name = NULL;
  an.n_exprs = 1;
  an.exprs = &g;
  an.n_exprs2 = 1;
  an.exprs2 = &agg;
  ql_node_id root = ql_ir_node(bld, &an);
  struct ql_plan_view view;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  QL_CHECK_OK(ql_ir_builder_finish(bld, root, &view, &err), err);
  QL_CHECK_OK(ql_ir_validate(&view, &err), err);
  ql_ir_builder_free(bld);
  ql_schema_release(&cs);
  ql_schema_release(&js);
  ql_schema_release(&as);

  struct chain_env env;
  memset(&env, 0, sizeof(env));
  env.ctx.struct_size = sizeof(env.ctx);
  env.ctx.plan = &view;
  env.ctx.plan_physical = chain_plan_physical;
  env.ctx.private_data = &env;
  env.a = a, env.b = b, env.c = c;
  env.scan_a = ids.scans[0], env.scan_b = ids.scans[1], env.scan_c = sc, env.alias_t = t;
  fd_planner_new(NULL, &env.planner, NULL);
  struct ql_planner_result res;
  memset(&res, 0, sizeof(res));
  QL_CHECK_OK(env.planner.plan(&env.planner, &env.ctx, &res, &err), err);
  QL_CHECK_INT(res.action, QL_PLANNER_PHYSICAL);
  QL_CHECK_INT(res.node, root);
  QL_CHECK_INT(env.inner_folds, 1);
  if (res.action == QL_PLANNER_PHYSICAL) {
    const struct ql_execution_plan *child = res.physical.child(&res.physical, 0);
    QL_CHECK_STR(child->name(child), "FoldExec"); /* FoldExec over FoldExec, visible to EXPLAIN */
    /* Reference: inner rows, then the outer join and sum by brute force. */
    int64_t nt = ft_reference(&q, a, b, ref_rows, CAP);
    struct ft_row expect[64];
    int64_t ne = 0;
    for (int64_t r = 0; r < nt; r++) {
      for (int64_t rc = 0; rc < c->n_rows; rc++) {
        if ((ref_rows[r].nulls & 2u) || !c->cols[0].valid[rc] || ref_rows[r].keys[1] != c->cols[0].i[rc]) continue;
        struct ft_row key;
        memset(&key, 0, sizeof(key));
        key.keys[0] = ref_rows[r].keys[0];
        key.nulls = ref_rows[r].nulls & 1u;
        int64_t at = -1;
        for (int64_t k = 0; k < ne && at < 0; k++)
          if (!memcmp(expect[k].keys, key.keys, sizeof(key.keys)) && expect[k].nulls == key.nulls) at = k;
        if (at < 0) expect[at = ne++] = key;
        if (!ref_rows[r].has || !c->cols[4].valid[rc]) continue;
        expect[at].has = 1;
        expect[at].i = (int64_t)((uint64_t)expect[at].i + (uint64_t)ref_rows[r].i * (uint64_t)c->cols[4].i[rc]);
      }
    }
    ft_sort_rows(expect, ne);
    char msg[256];
    struct ft_host h;
    ft_host_init(&h, -1, 2, 3);
    int64_t n = ft_collect(&res.physical, &h, 1, 0, got_rows, CAP, msg, sizeof(msg));
    QL_CHECK_INT(ft_host_free(&h), QL_OK);
    ft_sort_rows(got_rows, n < 0 ? 0 : n);
    QL_CHECK(n >= 0 && rows_match(expect, ne, got_rows, n, 0));
    res.physical.release(&res.physical);
  }
  env.planner.release(&env.planner);
  view.release(&view);
  inner.release(&inner);
  free(a);
  free(b);
  free(c);
}

/* The buffer cache and the output pool: a freed large buffer is reused,
 * zeroed when asked (fd_mem_calloc) and left as it was otherwise
 * (fd_mem_alloc_cached says so); a released output column's block
 * backs the next one; everything is accounted and given back. */
static void test_buffer_reuse(void) {
  struct ft_host h;
  ft_host_init(&h, 64 << 20, 0, 1024);
  struct fd_mem mem;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  QL_CHECK_OK(fd_mem_init(&mem, h.ctx.runtime_env->memory_pool, "test", &err), err);
  int64_t bytes = FD_CACHE_MIN + 4096;
  void *p = NULL, *q = NULL;
  int zeroed = -1;
  QL_CHECK_OK(fd_mem_alloc_cached(&mem, &p, bytes, &zeroed, &err), err);
  QL_CHECK_INT(zeroed, 1); /* nothing cached of that size yet: fresh zero pages */
  memset(p, 0xab, (size_t)bytes);
  fd_mem_cfree(&mem, p, bytes);
  QL_CHECK_OK(fd_mem_alloc_cached(&mem, &q, bytes, &zeroed, &err), err);
  QL_CHECK(q == p);
  QL_CHECK_INT(zeroed, 0);
  QL_CHECK_INT(((uint8_t *)q)[bytes - 1], 0xab);
  fd_mem_cfree(&mem, q, bytes);
  QL_CHECK_OK(fd_mem_calloc(&mem, &q, bytes, &err), err);
  QL_CHECK(q == p);
  int all_zero = 1;
  for (int64_t i = 0; i < bytes; i++) all_zero &= ((uint8_t *)q)[i] == 0;
  QL_CHECK(all_zero);
  fd_mem_cfree(&mem, q, bytes);
  QL_CHECK_INT(mem.bytes, 0);
  fd_mem_destroy(&mem);
  QL_CHECK_INT(ft_host_free(&h), QL_OK);

  struct ArrowArray a, b;
  void *data, *data2;
  uint8_t *validity, *validity2;
  QL_CHECK_OK(fd_out_array(&a, 1000, 8, 1, &data, &validity, &err), err);
  QL_CHECK(validity != NULL && (uintptr_t)data % 64 == 0);
  memset(data, 0, 8000);
  memset(validity, 0xff, 125);
  a.null_count = 0;
  QL_CHECK_INT(a.n_buffers, 2);
  QL_CHECK(a.buffers[1] == data && a.buffers[0] == validity);
  a.release(&a);
  QL_CHECK(a.release == NULL);
  QL_CHECK_OK(fd_out_array(&b, 900, 8, 0, &data2, &validity2, &err), err);
  QL_CHECK(data2 == data && validity2 == NULL && b.buffers[0] == NULL);
  b.release(&b);
  QL_CHECK_INT(fd_out_array(&b, -1, 8, 0, &data2, &validity2, &err), QL_EINVAL);
  ql_error_release(&err);
}

/* The AVX kernel (N = 8, 16) gives the SSE2 kernel's bits, and so does a
 * key-major A under either: random float products with empty, NULL,
 * +-0.0 and overflowing cells, 1 to 33 rows and 8 to 5,000 keys, computed
 * five ways (row-major with and without AVX, key-major with and without,
 * and key-major in steps of keys). */
static void test_avx_same_bits(void) {
  uint64_t rng = 2026;
  int64_t ns[2] = {8, 16}, ks[4] = {8, 16, 700, 5000}, ms[3] = {1, 7, 33};
  int64_t differ = 0, cases = 0;
  for (int ni = 0; ni < 2; ni++)
    for (int ki = 0; ki < 4; ki++)
      for (int mi = 0; mi < 3; mi++)
        for (int full = 0; full < 2; full++) {
          int64_t N = ns[ni], K = ks[ki], M = ms[mi];
          struct fd_mem mem;
          struct ql_error err;
          memset(&err, 0, sizeof(err));
          QL_CHECK_OK(fd_mem_init(&mem, NULL, "test", &err), err);
          struct fd_matrix a[4], b[4];
          double *c[4];
          const double **rowp = malloc((size_t)K * sizeof(*rowp));
          uint8_t *e[4], *h[4];
          int64_t counts[4][3], a_held[4] = {0, 0, 0, 0};
          memset(counts, 0, sizeof(counts));
          for (int v = 0; v < 4; v++) {
            if (v < 2) QL_CHECK_OK(fd_matrix_init(&a[v], M, K, 1, 0, &mem, &err), err);
            else QL_CHECK_OK(fd_matrix_init(&a[v], K, M, 1, 1, &mem, &err), err); /* key-major */
            QL_CHECK_OK(fd_matrix_init(&b[v], K, N, 1, 1, &mem, &err), err);
            memset(a[v].f, 0, (size_t)(M * K * 8)); /* the caller zeroes dirty (cached) values */
            memset(b[v].f, 0, (size_t)(K * N * 8));
            c[v] = calloc((size_t)(M * N), 8);
            e[v] = malloc((size_t)(M * N));
            h[v] = malloc((size_t)(M * N));
          }
          for (int64_t i = 0; i < M * K + K * N; i++) {
            uint64_t r = ft_rand(&rng);
            if (!full && r % 7 == 0) continue;
            double x = (double)ft_rand_range(&rng, -1000000, 1000000) / 1024.0 * (r % 11 == 0 ? 1e300 : 1.0);
            if (r % 13 == 0) x = (r & 1) ? 0.0 : -0.0;
            for (int v = 0; v < 4; v++) {
              /* Cell i of A is (row i / K, key i % K). */
              int64_t cell = i >= M * K ? i - M * K : v < 2 ? i : (i % K) * M + i / K;
              fd_matrix_put_f(i < M * K ? a[v].f : b[v].f, cell, full || r % 5, x);
            }
          }
          for (int v = 0; v < 4; v++) {
            fd_matrix_seal_f(&b[v], 0, K);
            if (v >= 2) {
              a_held[v] = fd_matrix_seal_f(&a[v], 0, K);
              for (int64_t k = 0; k < K; k++) rowp[k] = a[v].f + k * M;
              a[v].rowp = rowp;
            }
            fd_dense_avx(v % 2 == 0);
            fd_gemm_rows(&a[v], &b[v], c[v], e[v], h[v], 0, M, counts[v]);
            a_held[v] += counts[v][2];
          }
          /* The key-major A once more, in steps of 700 keys, then C's bits. */
          double *c4 = calloc((size_t)(M * N), 8);
          uint8_t *e4 = malloc((size_t)(M * N)), *h4 = malloc((size_t)(M * N));
          int64_t counts4[2] = {0, 0};
          for (int64_t k0 = 0; k0 < K; k0 += 700)
            fd_gemm_keys(&a[2], &b[2], c4, 0, M, k0, k0 + 700 < K ? k0 + 700 : K);
          fd_gemm_bits(&a[2], &b[2], e4, h4, 0, M, counts4);
          differ += memcmp(c[0], c4, (size_t)(M * N * 8)) != 0 || memcmp(e[0], e4, (size_t)(M * N)) != 0 ||
                    memcmp(h[0], h4, (size_t)(M * N)) != 0 || counts[0][0] != counts4[0] ||
                    counts[0][1] != counts4[1];
          free(c4);
          free(e4);
          free(h4);
          for (int v = 1; v < 4; v++)
            differ += memcmp(c[0], c[v], (size_t)(M * N * 8)) != 0 || memcmp(e[0], e[v], (size_t)(M * N)) != 0 ||
                      memcmp(h[0], h[v], (size_t)(M * N)) != 0 || counts[0][0] != counts[v][0] ||
                      counts[0][1] != counts[v][1] || a_held[0] != a_held[v];
          cases++;
          for (int v = 0; v < 4; v++) {
            free(c[v]);
            free(e[v]);
            free(h[v]);
            fd_matrix_destroy(&a[v], &mem);
            fd_matrix_destroy(&b[v], &mem);
          }
          free(rowp);
          QL_CHECK_INT(mem.bytes, 0);
          fd_mem_destroy(&mem);
        }
  fd_dense_avx(1);
  QL_CHECK_INT(cases, 48);
  QL_CHECK_INT(differ, 0);
}

int main(void) {
  test_buffer_reuse();
  test_avx_same_bits();
  test_cancel_and_exact_values();
  test_random(20261129, 400);
  test_dense_choice();
  test_memory_limit();
  for (uint64_t seed = 1; seed <= 30; seed++) test_chain(seed);
  QL_TEST_END();
}
