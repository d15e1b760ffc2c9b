/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/memory_pool.c. */
#include "qlink/lib/memory_pool.h"

#include <pthread.h>

#include "qlink/lib/status.h"
#include "ql_test.h"

static void test_limit(void) {
  struct ql_error error = {0};
  struct ql_ref_memory_pool *p = NULL;
  QL_CHECK_OK(ql_ref_memory_pool_new(100, &p, &error), error);
  const struct ql_memory_pool *pool = ql_ref_memory_pool_view(p);
  QL_CHECK_INT(pool->limit(pool), 100);
  QL_CHECK_INT(pool->reserved(pool), 0);

  struct ql_memory_reservation a, b;
  QL_CHECK_OK(pool->reservation_new(pool, "scan[0]", 0, &a, &error), error);
  QL_CHECK_OK(pool->reservation_new(pool, "sort", QL_CONSUMER_CAN_SPILL, &b, &error), error);
  QL_CHECK_INT(ql_ref_memory_pool_consumers(p), 2);
  QL_CHECK_OK(a.try_grow(&a, 60, &error), error);
  QL_CHECK_INT(a.size(&a), 60);
  QL_CHECK_INT(pool->reserved(pool), 60);

  QL_CHECK_INT(a.try_grow(&a, 50, &error), QL_ERESOURCES);
  QL_CHECK_STR(error.sqlstate, "53000");
  QL_CHECK_STR(error.message,
               "Resources exhausted: Failed to allocate additional 50 bytes for scan[0] with 60 bytes already "
               "allocated for this reservation - 40 bytes remain available for the total pool");
  QL_CHECK_INT(a.size(&a), 60); /* unchanged on failure */
  QL_CHECK_INT(pool->reserved(pool), 60);

  QL_CHECK_OK(b.try_grow(&b, 40, &error), error); /* exactly to the limit */
  QL_CHECK_INT(pool->reserved(pool), 100);
  QL_CHECK_INT(b.try_grow(&b, 1, &error), QL_ERESOURCES);
  QL_CHECK_STR(error.message,
               "Resources exhausted: Failed to allocate additional 1 bytes for sort with 40 bytes already "
               "allocated for this reservation - 0 bytes remain available for the total pool");
  QL_CHECK_INT(a.try_grow(&a, -1, &error), QL_EINVAL);

  a.shrink(&a, 25);
  QL_CHECK_INT(a.size(&a), 35);
  QL_CHECK_INT(pool->reserved(pool), 75);
  QL_CHECK_OK(a.try_grow(&a, 25, &error), error);
  QL_CHECK_INT(ql_ref_memory_pool_peak(p), 100);

  /* The pool refuses to go away while reservations live. */
  QL_CHECK_INT(ql_ref_memory_pool_free(p, &error), QL_ESTATE);
  QL_CHECK_STR(error.message, "memory pool still has 2 live reservation(s) holding 100 bytes; release them first");

  a.release(&a); /* returns its 60 bytes */
  QL_CHECK(a.release == NULL);
  QL_CHECK_INT(pool->reserved(pool), 40);
  QL_CHECK_INT(ql_ref_memory_pool_consumers(p), 1);
  b.release(&b);
  QL_CHECK_INT(pool->reserved(pool), 0);
  QL_CHECK_INT(ql_ref_memory_pool_consumers(p), 0);
  QL_CHECK_OK(ql_ref_memory_pool_free(p, &error), error);
  ql_error_release(&error);
}

static void test_unbounded(void) {
  struct ql_error error = {0};
  struct ql_ref_memory_pool *p = NULL;
  QL_CHECK_OK(ql_ref_memory_pool_new(-1, &p, &error), error);
  const struct ql_memory_pool *pool = ql_ref_memory_pool_view(p);
  QL_CHECK_INT(pool->limit(pool), -1);
  struct ql_memory_reservation r;
  QL_CHECK_OK(pool->reservation_new(pool, "big", 0, &r, &error), error);
  QL_CHECK_OK(r.try_grow(&r, INT64_C(1) << 50, &error), error);
  QL_CHECK_INT(pool->reserved(pool), INT64_C(1) << 50);
  r.release(&r);
  QL_CHECK_OK(ql_ref_memory_pool_free(p, &error), error);
  struct ql_ref_memory_pool *bad = NULL;
  QL_CHECK_INT(ql_ref_memory_pool_new(-5, &bad, &error), QL_EINVAL);
  QL_CHECK(bad == NULL);
  ql_error_release(&error);
}

#define THREADS 4
#define ROUNDS 20000

struct worker {
  const struct ql_memory_pool *pool;
  int64_t kept; /* bytes left reserved at the end */
  int failures;
};

static void *worker_main(void *arg) {
  struct worker *w = arg;
  struct ql_memory_reservation r;
  if (w->pool->reservation_new(w->pool, "worker", 0, &r, NULL) != QL_OK) {
    w->failures++;
    return NULL;
  }
  for (int i = 0; i < ROUNDS; i++) {
    if (r.try_grow(&r, 3, NULL) != QL_OK) w->failures++;
    r.shrink(&r, 2);
  }
  w->kept = r.size(&r);
  r.shrink(&r, w->kept); /* every byte back before release */
  r.release(&r);
  return NULL;
}

static void *worker_keep(void *arg) {
  struct worker *w = arg;
  /* Like worker_main, but the reservation is released while still holding bytes. */
  struct ql_memory_reservation r;
  if (w->pool->reservation_new(w->pool, "keeper", 0, &r, NULL) != QL_OK) return NULL;
  for (int i = 0; i < ROUNDS; i++) {
    if (r.try_grow(&r, 5, NULL) != QL_OK) w->failures++;
    r.shrink(&r, 4);
  }
  w->kept = r.size(&r);
  r.release(&r);
  return NULL;
}

static void test_concurrent(void) {
  struct ql_error error = {0};
  struct ql_ref_memory_pool *p = NULL;
  QL_CHECK_OK(ql_ref_memory_pool_new(-1, &p, &error), error);
  const struct ql_memory_pool *pool = ql_ref_memory_pool_view(p);
  pthread_t threads[THREADS];
  struct worker workers[THREADS] = {{0}};
  for (int t = 0; t < THREADS; t++) {
    workers[t].pool = pool;
    pthread_create(&threads[t], NULL, (t % 2) ? worker_keep : worker_main, &workers[t]);
  }
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  for (int t = 0; t < THREADS; t++) {
    QL_CHECK_INT(workers[t].failures, 0);
    QL_CHECK_INT(workers[t].kept, ROUNDS); /* +3-2 or +5-4 per round */
  }
  QL_CHECK_INT(pool->reserved(pool), 0);
  QL_CHECK_INT(ql_ref_memory_pool_consumers(p), 0);
  /* Each thread peaks at ROUNDS+1 (or +4); the pool's peak is at least one thread's. */
  QL_CHECK(ql_ref_memory_pool_peak(p) >= ROUNDS + 1);
  QL_CHECK(ql_ref_memory_pool_peak(p) <= 2 * (ROUNDS + 4) + 2 * (ROUNDS + 1));
  QL_CHECK_OK(ql_ref_memory_pool_free(p, &error), error);

  /* A bounded pool shared by 4 threads never exceeds its limit, and totals stay exact. */
  QL_CHECK_OK(ql_ref_memory_pool_new(1000, &p, &error), error);
  pool = ql_ref_memory_pool_view(p);
  for (int t = 0; t < THREADS; t++) {
    workers[t] = (struct worker){pool, 0, 0};
    pthread_create(&threads[t], NULL, worker_main, &workers[t]);
  }
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  QL_CHECK(ql_ref_memory_pool_peak(p) <= 1000);
  QL_CHECK_INT(pool->reserved(pool), 0);
  QL_CHECK_OK(ql_ref_memory_pool_free(p, &error), error);
  ql_error_release(&error);
}

/* The limit follows the engine's setting: lowered below what is held, the
 * held bytes stay and the next grow fails; raised, it fits again. */
static void test_set_limit(void) {
  struct ql_error error = {0};
  struct ql_ref_memory_pool *p = NULL;
  QL_CHECK_OK(ql_ref_memory_pool_new(-1, &p, &error), error);
  const struct ql_memory_pool *pool = ql_ref_memory_pool_view(p);
  struct ql_memory_reservation a;
  QL_CHECK_OK(pool->reservation_new(pool, "scan[1]", 0, &a, &error), error);
  QL_CHECK_OK(a.try_grow(&a, 80, &error), error);
  QL_CHECK_OK(ql_ref_memory_pool_set_limit(p, 50, &error), error);
  QL_CHECK_INT(pool->limit(pool), 50);
  QL_CHECK_INT(a.size(&a), 80);
  QL_CHECK_INT(a.try_grow(&a, 1, &error), QL_ERESOURCES);
  QL_CHECK_STR(error.message,
               "Resources exhausted: Failed to allocate additional 1 bytes for scan[1] with 80 bytes already "
               "allocated for this reservation - 0 bytes remain available for the total pool");
  QL_CHECK_OK(ql_ref_memory_pool_set_limit(p, 100, &error), error);
  QL_CHECK_OK(a.try_grow(&a, 20, &error), error);
  QL_CHECK_INT(ql_ref_memory_pool_set_limit(p, -2, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "memory pool limit -2: use -1 for unbounded");
  QL_CHECK_INT(pool->limit(pool), 100);
  a.release(&a);
  QL_CHECK_OK(ql_ref_memory_pool_free(p, &error), error);
  ql_error_release(&error);
}

int main(void) {
  test_limit();
  test_set_limit();
  test_unbounded();
  test_concurrent();
  QL_TEST_END();
}
