/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: the exact float64 sum: exact values, order independence,
 * rounding, subnormals, overflow, NaN and infinities, merging, memory. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fold_test_util.h"
#include "fold_xsum.h"
#include "ql_test.h"
#include "qlink/lib/status.h"

static struct fd_mem mem;

static double sum_of(const double *v, int n) {
  struct fd_xsum x;
  memset(&x, 0, sizeof(x));
  for (int i = 0; i < n; i++)
    /* Alternate the inline fast path and the general one: same sums. */
    if ((i % 2 ? fd_xsum_add_fast(&x, v[i], &mem, NULL) : fd_xsum_add(&x, v[i], &mem, NULL)) != QL_OK) abort();
  double r = fd_xsum_value(&x);
  fd_xsum_clear(&x, &mem);
  return r;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, 8) == 0; }

static void test_exact_cases(void) {
  double cancel[] = {1e16, 1.0, -1e16};
  QL_CHECK(sum_of(cancel, 3) == 1.0);
  double wide[] = {1e300, 1e-300, -1e300};
  QL_CHECK(sum_of(wide, 3) == 1e-300);
  double sub[] = {5e-324, 5e-324};
  QL_CHECK(sum_of(sub, 2) == 1e-323);
  double tie[] = {9007199254740992.0, 1.0}; /* 2^53 + 1: tie, to even */
  QL_CHECK(sum_of(tie, 2) == 9007199254740992.0);
  double up[] = {9007199254740992.0, 3.0}; /* 2^53 + 3: tie, to even (up) */
  QL_CHECK(sum_of(up, 2) == 9007199254740996.0);
  double above[] = {9007199254740992.0, 1.0, 1e-300}; /* just above the tie: up */
  QL_CHECK(sum_of(above, 3) == 9007199254740994.0);
  double over[] = {DBL_MAX, DBL_MAX};
  QL_CHECK(sum_of(over, 2) == INFINITY);
  double back[] = {DBL_MAX, DBL_MAX, -DBL_MAX};
  QL_CHECK(sum_of(back, 3) == DBL_MAX);
  double negz[] = {-0.0, -0.0};
  QL_CHECK(same_bits(sum_of(negz, 2), 0.0));
  QL_CHECK(same_bits(sum_of(NULL, 0), 0.0));
  double neg[] = {-1.5, -2.25};
  QL_CHECK(sum_of(neg, 2) == -3.75);
  double inf[] = {1.0, INFINITY};
  QL_CHECK(sum_of(inf, 2) == INFINITY);
  double ninf[] = {1.0, -INFINITY};
  QL_CHECK(sum_of(ninf, 2) == -INFINITY);
  double both[] = {INFINITY, -INFINITY};
  QL_CHECK(isnan(sum_of(both, 2)));
  double nan[] = {1.0, NAN};
  QL_CHECK(isnan(sum_of(nan, 2)));
  double tiny_neg[] = {-5e-324};
  QL_CHECK(sum_of(tiny_neg, 1) == -5e-324);
}

/* Values k * 2^-20 with |k| < 2^40: the exact sum fits an __int128, whose
 * conversion to double rounds to nearest even. */
static void test_against_int128(void) {
  uint64_t rng = 42;
  for (int it = 0; it < 200; it++) {
    int n = (int)ft_rand_range(&rng, 1, 300);
    double v[300];
    __int128 exact = 0;
    for (int i = 0; i < n; i++) {
      int64_t k = ft_rand_range(&rng, -((int64_t)1 << 40), (int64_t)1 << 40);
      if (ft_rand(&rng) % 3 == 0) k *= (int64_t)1 << ft_rand_range(&rng, 0, 12); /* wider spread */
      v[i] = ldexp((double)k, -20);
      exact += k;
    }
    double expect = ldexp((double)exact, -20);
    double got = sum_of(v, n);
    QL_CHECK(same_bits(got, expect));
    /* Any order, and any split into merged partial sums: the same bits. */
    for (int i = n - 1; i > 0; i--) {
      int j = (int)ft_rand_range(&rng, 0, i);
      double t = v[i];
      v[i] = v[j];
      v[j] = t;
    }
    QL_CHECK(same_bits(sum_of(v, n), expect));
    struct fd_xsum x, y;
    memset(&x, 0, sizeof(x));
    memset(&y, 0, sizeof(y));
    int cut = (int)ft_rand_range(&rng, 0, n);
    for (int i = 0; i < n; i++) fd_xsum_add(i < cut ? &x : &y, v[i], &mem, NULL);
    QL_CHECK_OK(fd_xsum_merge(&x, &y, &mem, NULL), (struct ql_error){0});
    QL_CHECK(same_bits(fd_xsum_value(&x), expect));
    fd_xsum_clear(&x, &mem);
    fd_xsum_clear(&y, &mem);
  }
}

/* Random doubles over the whole exponent range, permuted: same bits; and
 * the result is within one rounding of a long double sum when that is exact
 * enough to tell. */
static void test_order_independent(void) {
  uint64_t rng = 99;
  for (int it = 0; it < 200; it++) {
    int n = (int)ft_rand_range(&rng, 1, 100);
    double v[100];
    for (int i = 0; i < n; i++) {
      uint64_t bits = ft_rand(&rng) & ~(UINT64_C(0x7ff) << 52);
      bits |= (uint64_t)ft_rand_range(&rng, 0, 2046) << 52; /* finite, subnormals included */
      memcpy(&v[i], &bits, 8);
    }
    double first = sum_of(v, n);
    for (int rep = 0; rep < 3; rep++) {
      for (int i = n - 1; i > 0; i--) {
        int j = (int)ft_rand_range(&rng, 0, i);
        double t = v[i];
        v[i] = v[j];
        v[j] = t;
      }
      QL_CHECK(same_bits(sum_of(v, n), first));
    }
  }
}

/* Windows wider than the inline limbs go through the memory accounting, and
 * a pool that says no fails the add cleanly. */
static void test_memory(void) {
  struct ql_ref_memory_pool *pool;
  QL_CHECK_OK(ql_ref_memory_pool_new(16, &pool, NULL), (struct ql_error){0});
  struct fd_mem m;
  QL_CHECK_OK(fd_mem_init(&m, ql_ref_memory_pool_view(pool), "xsum", NULL), (struct ql_error){0});
  struct fd_xsum x;
  memset(&x, 0, sizeof(x));
  QL_CHECK_INT(fd_xsum_add(&x, 1.0, &m, NULL), QL_OK);
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  QL_CHECK_INT(fd_xsum_add(&x, 1e300, &m, &err), QL_ERESOURCES); /* needs ~17 limbs */
  ql_error_release(&err);
  QL_CHECK(fd_xsum_value(&x) == 1.0); /* unchanged */
  fd_xsum_clear(&x, &m);
  fd_mem_destroy(&m);
  QL_CHECK_INT(ql_ref_memory_pool_free(pool, NULL), QL_OK);
}

int main(void) {
  fd_mem_init(&mem, NULL, "test", NULL);
  test_exact_cases();
  test_against_int128();
  test_order_independent();
  test_memory();
  QL_CHECK_INT(mem.bytes, 0);
  fd_mem_destroy(&mem);
  QL_TEST_END();
}
