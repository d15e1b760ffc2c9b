/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/function_registry.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/function.h"
#include "qlink/lib/function_registry.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static struct ql_function_info user_info(const char *name, int32_t kind, uint64_t uid) {
  struct ql_function_info info = {0};
  info.id.origin = QL_ORIGIN_USER;
  info.id.kind = kind;
  info.id.name = name;
  info.id.library = "qlink_test";
  info.id.uid = uid;
  info.volatility = QL_IMMUTABLE;
  return info;
}

/* Register n functions "fn_<i>" (scalar, uid i), then look every one up. */
static void check_n_functions(int n) {
  struct ql_error error = {0};
  struct ql_function_registry *r = NULL;
  QL_CHECK_OK(ql_function_registry_new(&r, &error), error);
  char name[32];
  int failures = 0;
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof(name), "Fn_%d", i);
    struct ql_function_info info = user_info(name, QL_FUNCTION_SCALAR, (uint64_t)i);
    if (ql_function_registry_put(r, name, &info, (void *)(intptr_t)(i + 1), NULL, &error) != QL_OK) failures++;
  }
  QL_CHECK_INT(failures, 0);
  QL_CHECK_INT(ql_function_registry_count(r), n);
  QL_CHECK_INT(ql_function_registry_generation(r), n);
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof(name), (i % 2) ? "FN_%d" : "fn_%d", i); /* any case */
    struct ql_function_info out;
    void *payload = NULL;
    if (ql_function_registry_lookup(r, name, QL_FUNCTION_SCALAR, &out, &payload) != QL_OK) {
      failures++;
      continue;
    }
    char expected[32];
    snprintf(expected, sizeof(expected), "Fn_%d", i); /* the id keeps the registered spelling */
    if (out.id.uid != (uint64_t)i || strcmp(out.id.name, expected) != 0 || payload != (void *)(intptr_t)(i + 1) ||
        strcmp(out.id.library, "qlink_test") != 0 || out.id.origin != QL_ORIGIN_USER) {
      failures++;
    }
  }
  QL_CHECK_INT(failures, 0);
  snprintf(name, sizeof(name), "fn_%d", n);
  QL_CHECK_INT(ql_function_registry_lookup(r, name, QL_FUNCTION_SCALAR, NULL, NULL), QL_ENOTFOUND);
  QL_CHECK_INT(ql_function_registry_lookup(r, "fn_0", QL_FUNCTION_AGGREGATE, NULL, NULL), QL_ENOTFOUND);
  QL_CHECK_INT(ql_function_registry_lookup(r, "fn_", QL_FUNCTION_SCALAR, NULL, NULL), QL_ENOTFOUND);
  QL_CHECK_INT(ql_function_registry_generation(r), n); /* lookups change nothing */
  ql_function_registry_free(r, NULL);
}

static int freed_payloads = 0;
static void count_free(void *payload) {
  (void)payload;
  freed_payloads++;
}

static void test_changes(void) {
  struct ql_error error = {0};
  struct ql_function_registry *r = NULL;
  QL_CHECK_OK(ql_function_registry_new(&r, &error), error);
  QL_CHECK_INT(ql_function_registry_generation(r), 0);
  QL_CHECK_INT(ql_function_registry_count(r), 0);

  int a = 1, b = 2, c = 3;
  struct ql_function_info sum_user = user_info("sum", QL_FUNCTION_AGGREGATE, 7);
  QL_CHECK_OK(ql_function_registry_put(r, "SUM", &sum_user, &a, NULL, &error), error);
  QL_CHECK_INT(ql_function_registry_generation(r), 1);
  /* Same name, other kind: a separate entry. */
  struct ql_function_info sum_scalar = user_info("sum", QL_FUNCTION_SCALAR, 8);
  QL_CHECK_OK(ql_function_registry_put(r, "sum", &sum_scalar, &b, NULL, &error), error);
  QL_CHECK_INT(ql_function_registry_generation(r), 2);
  QL_CHECK_INT(ql_function_registry_count(r), 2);

  /* Replace: the old payload comes back, generation bumps once. */
  void *replaced = NULL;
  struct ql_function_info sum_v2 = user_info("sum", QL_FUNCTION_AGGREGATE, 9);
  QL_CHECK_OK(ql_function_registry_put(r, "Sum", &sum_v2, &c, &replaced, &error), error);
  QL_CHECK(replaced == &a);
  QL_CHECK_INT(ql_function_registry_generation(r), 3);
  QL_CHECK_INT(ql_function_registry_count(r), 2);
  struct ql_function_info out;
  void *payload;
  QL_CHECK_OK(ql_function_registry_lookup(r, "sUm", QL_FUNCTION_AGGREGATE, &out, &payload), error);
  QL_CHECK_INT(out.id.uid, 9);
  QL_CHECK(payload == &c);

  /* Strings are copied: the caller's buffers may change. */
  char name[8] = "tmpfn";
  struct ql_function_info tmp = user_info(name, QL_FUNCTION_WINDOW, 1);
  QL_CHECK_OK(ql_function_registry_put(r, name, &tmp, NULL, NULL, &error), error);
  memcpy(name, "xxxxx", 5);
  QL_CHECK_OK(ql_function_registry_lookup(r, "TMPFN", QL_FUNCTION_WINDOW, &out, NULL), error);
  QL_CHECK_STR(out.id.name, "tmpfn");
  QL_CHECK_INT(ql_function_registry_generation(r), 4);

  /* Remove. */
  QL_CHECK_OK(ql_function_registry_remove(r, "SUM", QL_FUNCTION_SCALAR, &payload, &error), error);
  QL_CHECK(payload == &b);
  QL_CHECK_INT(ql_function_registry_generation(r), 5);
  QL_CHECK_INT(ql_function_registry_lookup(r, "sum", QL_FUNCTION_SCALAR, &out, NULL), QL_ENOTFOUND);
  QL_CHECK_OK(ql_function_registry_lookup(r, "sum", QL_FUNCTION_AGGREGATE, &out, NULL), error);
  QL_CHECK_INT(ql_function_registry_remove(r, "sum", QL_FUNCTION_SCALAR, &payload, &error), QL_ENOTFOUND);
  QL_CHECK_STR(error.message, "no function 'sum' of kind 1 is registered");
  QL_CHECK_INT(ql_function_registry_generation(r), 5); /* failed changes do not bump */

  /* Bad input. */
  QL_CHECK_INT(ql_function_registry_put(r, "", &tmp, NULL, NULL, &error), QL_EINVAL);
  QL_CHECK_INT(ql_function_registry_put(r, "x", NULL, NULL, NULL, &error), QL_EINVAL);
  struct ql_function_info bad_kind = user_info("x", 42, 1);
  QL_CHECK_INT(ql_function_registry_put(r, "x", &bad_kind, NULL, NULL, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "function registry put 'x': unknown function kind 42");
  QL_CHECK_INT(ql_function_registry_generation(r), 5);

  /* A NULL id name takes the registered name. */
  struct ql_function_info anon = user_info(NULL, QL_FUNCTION_TABLE, 3);
  QL_CHECK_OK(ql_function_registry_put(r, "Gen_Rows", &anon, &a, NULL, &error), error);
  QL_CHECK_OK(ql_function_registry_lookup(r, "gen_rows", QL_FUNCTION_TABLE, &out, NULL), error);
  QL_CHECK_STR(out.id.name, "Gen_Rows"); /* as registered */

  freed_payloads = 0;
  ql_function_registry_free(r, count_free); /* payloads: sum agg (&c), gen_rows (&a); tmpfn has none */
  QL_CHECK_INT(freed_payloads, 2);
  ql_error_release(&error);
}

struct reader_arg {
  const struct ql_function_registry *r;
  int failures;
};

static void *reader(void *p) {
  struct reader_arg *a = p;
  for (int i = 0; i < 20000; i++) {
    struct ql_function_info out;
    if (ql_function_registry_lookup(a->r, "stable", QL_FUNCTION_SCALAR, &out, NULL) != QL_OK || out.id.uid != 1) {
      a->failures++;
    }
  }
  return NULL;
}

static void test_concurrent_readers_and_writer(void) {
  struct ql_error error = {0};
  struct ql_function_registry *r = NULL;
  QL_CHECK_OK(ql_function_registry_new(&r, &error), error);
  struct ql_function_info info = user_info("stable", QL_FUNCTION_SCALAR, 1);
  QL_CHECK_OK(ql_function_registry_put(r, "stable", &info, NULL, NULL, &error), error);
  pthread_t t[3];
  struct reader_arg args[3] = {{r, 0}, {r, 0}, {r, 0}};
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, reader, &args[i]);
  /* The writer grows the table (rehashing) while readers look up. */
  char name[32];
  int failures = 0;
  for (int i = 0; i < 3000; i++) {
    snprintf(name, sizeof(name), "w%d", i);
    struct ql_function_info w = user_info(name, QL_FUNCTION_SCALAR, 100 + (uint64_t)i);
    if (ql_function_registry_put(r, name, &w, NULL, NULL, &error) != QL_OK) failures++;
  }
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  QL_CHECK_INT(failures, 0);
  for (int i = 0; i < 3; i++) QL_CHECK_INT(args[i].failures, 0);
  QL_CHECK_INT(ql_function_registry_generation(r), 3001);
  ql_function_registry_free(r, NULL);
}

int main(void) {
  check_n_functions(10);
  check_n_functions(10000);
  test_changes();
  test_concurrent_readers_and_writer();
  QL_TEST_END();
}
