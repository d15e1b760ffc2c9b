/* qlink_fold: FoldExec against a brute-force reference over seeded random
 * contractions (shapes, duplicate keys, NULL keys and values, empty inputs,
 * int64 and float64), bit-exact float results across runs with different
 * partitioning, row order, batch sizes and thread counts, the dense path,
 * cancellation and the memory limit. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fold_planner.h"
#include "fold_test_util.h"
#include "ql_test.h"
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
    if (ok && x->has) ok = is_float ? fabs(x->f - y->f) <= 1e-12 * x->abs_sum : x->i == y->i;
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
        a[r].i != b[r].i || memcmp(&a[r].f, &b[r].f, 8))
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
  if (ql_fold_planner_new(NULL, &planner, &err) != QL_OK) return 1;
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
  int dense_runs = 0;
  for (int it = 0; it < iterations; it++) {
    int is_float = (int)(ft_rand(&rng) % 2);
    int dense = ft_rand(&rng) % 5 == 0;
    int64_t key_range = ft_rand_range(&rng, 1, 6);
    int64_t na = ft_rand(&rng) % 10 == 0 ? 0 : ft_rand_range(&rng, dense ? key_range : 1, 60);
    int64_t nb = ft_rand(&rng) % 10 == 0 ? 0 : ft_rand_range(&rng, dense ? key_range : 1, 60);
    if (dense) na = na < key_range ? key_range : na, nb = nb < key_range ? key_range : nb;
    random_table(a, "a", &rng, is_float, na, key_range, dense);
    random_table(b, "b", &rng, is_float, nb, key_range, dense);
    struct ft_query q;
    random_query(&q, &rng, is_float, dense);
    struct ql_plan_view view;
    struct ql_execution_plan fold;
    if (plan_fold(&q, a, b, &view, &fold)) {
      QL_CHECK(!"planner folded the generated query");
      continue;
    }
    if (strstr(fold.display(&fold), "dense")) dense_runs++;
    int64_t n_ref = ft_reference(&q, a, b, ref_rows, CAP);
    ft_sort_rows(ref_rows, n_ref);

    char msg[512];
    struct ft_host h1;
    ft_host_init(&h1, -1, 0, ft_rand_range(&rng, 1, 64));
    int64_t n1 = ft_collect(&fold, &h1, q.n_groups, is_float, got_rows, CAP, msg, sizeof(msg));
    QL_CHECK_INT(ft_host_free(&h1), QL_OK);
    if (n1 < 0) fprintf(stderr, "iteration %d: %s\n", it, msg);
    ft_sort_rows(got_rows, n1 < 0 ? 0 : n1);
    int ok = n1 >= 0 && rows_match(ref_rows, n_ref, got_rows, n1, is_float);
    if (!ok) fprintf(stderr, "iteration %d (seed %llu) differs from the reference\n", it, (unsigned long long)seed);
    QL_CHECK(ok);

    /* Same data, other partitioning, order, batches and threads: same bits. */
    ft_table_shuffle_layout(a, &rng, (int)ft_rand_range(&rng, 1, 4), ft_rand_range(&rng, 1, 9));
    ft_table_shuffle_layout(b, &rng, (int)ft_rand_range(&rng, 1, 4), ft_rand_range(&rng, 1, 9));
    struct ft_host h2;
    ft_host_init(&h2, -1, 3, ft_rand_range(&rng, 1, 5));
    int64_t n2 = ft_collect(&fold, &h2, q.n_groups, is_float, again_rows, CAP, msg, sizeof(msg));
    QL_CHECK_INT(ft_host_free(&h2), QL_OK);
    ft_sort_rows(again_rows, n2 < 0 ? 0 : n2);
    int same = n2 == n1 && rows_identical(got_rows, again_rows, n1);
    if (!same) fprintf(stderr, "iteration %d: second run differs (%lld rows vs %lld)\n", it, (long long)n2, (long long)n1);
    QL_CHECK(same);
    fold.release(&fold);
    view.release(&view);
  }
  QL_CHECK(dense_runs > 0); /* the generator reaches the dense path */
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

static int always_cancelled(const struct ql_task_context *ctx) {
  (void)ctx;
  return 1;
}

static void test_cancel_and_exact_values(void) {
  /* a(k, s, v) x w(k, o, v): a 2x2 by 2x2 matmul with duplicates and NULLs,
   * values checked by hand. */
  struct ft_table *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
  uint64_t rng = 1;
  random_table(a, "a", &rng, 0, 5, 2, 0);
  random_table(b, "b", &rng, 0, 4, 2, 0);
  a->with_stats = b->with_stats = 0; /* the hash path (the display below says so) */
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
  h.ctx.is_cancelled = always_cancelled;
  n = ft_collect(&fold, &h, 2, 0, got_rows, CAP, msg, sizeof(msg));
  QL_CHECK_INT(n, -QL_ECANCELLED);
  QL_CHECK_INT(ft_host_free(&h), QL_OK);

  /* EXPLAIN-facing surface. */
  QL_CHECK_STR(fold.name(&fold), "FoldExec");
  QL_CHECK_STR(fold.display(&fold), "on=[a.k0 = b.k0], by=[a.g0, b.g0], sum=a.v * b.v, build=right");
  QL_CHECK_INT(fold.child_count(&fold), 2);
  QL_CHECK_STR(fold.child(&fold, 0)->name(fold.child(&fold, 0)), "FtTableExec");
  QL_CHECK(fold.child(&fold, 2) == NULL);
  struct ql_plan_properties props;
  QL_CHECK_OK(fold.get_properties(&fold, &props, &err), err);
  QL_CHECK_INT(props.partition_count, 1);

  /* with_new_children keeps working on new inputs. */
  struct ql_execution_plan kids[2], copy;
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

int main(void) {
  test_cancel_and_exact_values();
  test_random(20261129, 400);
  test_memory_limit();
  QL_TEST_END();
}
