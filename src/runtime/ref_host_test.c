/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/ref_host.c: the session, runtime-environment and
 * task-context views of the reference host. */
#include <string.h>
#include <time.h>

#include "qlink/lib/host.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static int double_it(void *arg, struct ql_error *error) {
  (void)error;
  *(int *)arg *= 2;
  return QL_OK;
}

static void test_session(struct ql_ref_host *host) {
  struct ql_error error = {0};
  const struct ql_session *s = ql_ref_host_session(host);
  QL_CHECK_INT(s->struct_size, sizeof(struct ql_session));
  QL_CHECK(strncmp(s->id(s), "qlink-ref-", 10) == 0);
  QL_CHECK(s->id(s) == s->id(s)); /* stable, borrowed */

  /* Defaults under DataFusion's keys. */
  char buf[64];
  size_t len = 0;
  QL_CHECK_OK(s->config_get(s, "qlink.execution.batch_size", buf, sizeof(buf), &len, &error), error);
  QL_CHECK_STR(buf, "1024");
  QL_CHECK_INT(len, 4);
  QL_CHECK_OK(s->config_get(s, "qlink.execution.target_partitions", buf, sizeof(buf), &len, &error), error);
  QL_CHECK_STR(buf, "3");

  uint64_t g0 = s->generation(s);
  QL_CHECK_OK(ql_ref_host_config_set(host, "qlink.zarr.cache", "a-rather-long-value", &error), error);
  QL_CHECK_INT(s->generation(s), g0 + 1);
  /* Truncated copy, full length reported. */
  char small[5];
  QL_CHECK_OK(s->config_get(s, "qlink.zarr.cache", small, sizeof(small), &len, &error), error);
  QL_CHECK_STR(small, "a-ra");
  QL_CHECK_INT(len, 19);
  QL_CHECK_OK(s->config_get(s, "qlink.zarr.cache", NULL, 0, &len, &error), error); /* length only */
  QL_CHECK_INT(len, 19);
  QL_CHECK_OK(ql_ref_host_config_set(host, "qlink.zarr.cache", "off", &error), error);
  QL_CHECK_OK(s->config_get(s, "qlink.zarr.cache", buf, sizeof(buf), &len, &error), error);
  QL_CHECK_STR(buf, "off");
  QL_CHECK_INT(s->generation(s), g0 + 2);
  QL_CHECK_INT(s->config_get(s, "no.such.key", buf, sizeof(buf), &len, &error), QL_ENOTFOUND);
  QL_CHECK_STR(error.message, "unknown config option 'no.such.key'");
  QL_CHECK_INT(s->generation(s), g0 + 2); /* reads change nothing */

  /* Many options still look up correctly (the table grows). */
  char key[32], value[32];
  int failures = 0;
  for (int i = 0; i < 500; i++) {
    snprintf(key, sizeof(key), "k.%d", i);
    snprintf(value, sizeof(value), "v%d", i * 3);
    if (ql_ref_host_config_set(host, key, value, &error) != QL_OK) failures++;
  }
  for (int i = 0; i < 500; i++) {
    snprintf(key, sizeof(key), "k.%d", i);
    snprintf(value, sizeof(value), "v%d", i * 3);
    if (s->config_get(s, key, buf, sizeof(buf), &len, &error) != QL_OK || strcmp(buf, value) != 0) failures++;
  }
  QL_CHECK_INT(failures, 0);
  QL_CHECK_INT(s->generation(s), g0 + 502);

  /* Functions: the built-ins, then a user function; each change bumps the generation. */
  struct ql_function_info info;
  QL_CHECK_OK(s->function_lookup(s, "SUM", QL_FUNCTION_AGGREGATE, &info, &error), error);
  QL_CHECK_INT(info.id.origin, QL_ORIGIN_BUILTIN);
  QL_CHECK_STR(info.id.name, "sum");
  QL_CHECK_INT(s->function_lookup(s, "my_udf", QL_FUNCTION_SCALAR, &info, &error), QL_ENOTFOUND);
  char expected[128];
  snprintf(expected, sizeof(expected), "no scalar function 'my_udf' in session %s", s->id(s));
  QL_CHECK_STR(error.message, expected);
  uint64_t g1 = s->generation(s);
  struct ql_function_info mine = {{QL_ORIGIN_USER, QL_FUNCTION_SCALAR, "my_udf", "qlink_test", 42}, QL_IMMUTABLE, 0};
  QL_CHECK_OK(ql_function_registry_put(ql_ref_host_functions(host), "my_udf", &mine, NULL, NULL, &error), error);
  QL_CHECK_INT(s->generation(s), g1 + 1);
  QL_CHECK_OK(s->function_lookup(s, "MY_UDF", QL_FUNCTION_SCALAR, &info, &error), error);
  QL_CHECK_INT(info.id.uid, 42);
  QL_CHECK_STR(info.id.library, "qlink_test");

  QL_CHECK_INT(s->table_lookup(s, "t", NULL, &error), QL_ENOTSUP);
  QL_CHECK_STR(error.sqlstate, "0A000");

  const struct ql_runtime_env *env = s->runtime_env(s);
  QL_CHECK(env == ql_ref_host_runtime_env(host));
  ql_error_release(&error);
}

static void test_runtime_env(struct ql_ref_host *host) {
  struct ql_error error = {0};
  const struct ql_runtime_env *env = ql_ref_host_runtime_env(host);
  QL_CHECK_INT(env->struct_size, sizeof(struct ql_runtime_env));
  const struct ql_memory_pool *pool = env->memory_pool;
  QL_CHECK_INT(pool->limit(pool), 1000);
  struct ql_memory_reservation r;
  QL_CHECK_OK(pool->reservation_new(pool, "test", 0, &r, &error), error);
  QL_CHECK_OK(r.try_grow(&r, 900, &error), error);
  QL_CHECK_INT(r.try_grow(&r, 200, &error), QL_ERESOURCES);
  r.release(&r);
  QL_CHECK_INT(pool->reserved(pool), 0);

  /* file:// and memory:// are both served. */
  struct ql_object_store st;
  QL_CHECK_OK(env->object_stores->get_store(env->object_stores, "memory:///x", &st, &error), error);
  QL_CHECK_OK(ql_memory_store_put(&st, "x/y", "12345", 5, &error), error);
  struct ql_object_meta meta;
  QL_CHECK_OK(st.head(&st, "x/y", &meta, &error), error);
  QL_CHECK_INT(meta.size, 5);
  st.release(&st);
  QL_CHECK_OK(env->object_stores->get_store(env->object_stores, "file:///tmp", &st, &error), error);
  st.release(&st);

  struct ql_temp_file tf;
  QL_CHECK_OK(env->temp_files->create(env->temp_files, "spill", &tf, &error), error);
  QL_CHECK(tf.path != NULL && tf.path[0] == '/');
  tf.release(&tf);
  ql_error_release(&error);
}

static void test_task_context(struct ql_ref_host *host) {
  struct ql_task_context ctx;
  memset(&ctx, 0xCD, sizeof(ctx));
  ql_ref_host_task_context(host, 5, &ctx);
  QL_CHECK_INT(ctx.struct_size, sizeof(struct ql_task_context));
  QL_CHECK_INT(ctx.partition, 5);
  QL_CHECK_INT(ctx.batch_size, 1024);
  QL_CHECK(ctx.session == ql_ref_host_session(host));
  QL_CHECK(ctx.runtime_env == ql_ref_host_runtime_env(host));
  QL_CHECK(ctx.executor == ql_ref_host_executor(host));
  QL_CHECK_INT(ctx.executor->parallelism(ctx.executor), 3);
  QL_CHECK_INT(ctx.is_cancelled(&ctx), 0);
  ql_ref_host_cancel(host, 1);
  QL_CHECK_INT(ctx.is_cancelled(&ctx), 1);
  ql_ref_host_cancel(host, 0);
  QL_CHECK_INT(ctx.is_cancelled(&ctx), 0);

  struct ql_error error = {0};
  int value = 21;
  struct ql_job job;
  QL_CHECK_OK(ctx.executor->spawn(ctx.executor, double_it, &value, &job, &error), error);
  QL_CHECK_OK(job.wait(&job, &error), error);
  job.release(&job);
  QL_CHECK_INT(value, 42);

  /* O(1), no allocation: 100,000 task contexts take far under 2 s even under valgrind. */
  clock_t start = clock();
  int64_t sum = 0;
  for (int64_t i = 0; i < 100000; i++) {
    ql_ref_host_task_context(host, i, &ctx);
    sum += ctx.partition;
  }
  double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
  QL_CHECK_INT(sum, 4999950000);
  QL_CHECK(seconds < 2.0);
}

static void test_defaults_and_leak_report(void) {
  struct ql_error error = {0};
  struct ql_ref_host *host = NULL;
  QL_CHECK_OK(ql_ref_host_new(NULL, &host, &error), error);
  const struct ql_runtime_env *env = ql_ref_host_runtime_env(host);
  QL_CHECK_INT(env->memory_pool->limit(env->memory_pool), -1);
  struct ql_task_context ctx;
  ql_ref_host_task_context(host, 0, &ctx);
  QL_CHECK_INT(ctx.batch_size, 8192);
  QL_CHECK(ctx.executor->parallelism(ctx.executor) >= 1);
  struct ql_ref_host *other = NULL;
  QL_CHECK_OK(ql_ref_host_new(NULL, &other, &error), error);
  const struct ql_session *a = ql_ref_host_session(host), *b = ql_ref_host_session(other);
  QL_CHECK(strcmp(a->id(a), b->id(b)) != 0); /* distinct sessions, distinct ids */
  QL_CHECK_OK(ql_ref_host_free(other, &error), error);

  /* A reservation still held at free: QL_ESTATE, everything else freed. */
  struct ql_memory_reservation r;
  QL_CHECK_OK(env->memory_pool->reservation_new(env->memory_pool, "leaky", 0, &r, &error), error);
  QL_CHECK_OK(r.try_grow(&r, 64, &error), error);
  struct ql_ref_memory_pool *pool = ql_ref_host_memory_pool(host);
  QL_CHECK_INT(ql_ref_host_free(host, &error), QL_ESTATE);
  QL_CHECK_STR(error.message,
               "reference host freed with memory still reserved: memory pool still has 1 live reservation(s) "
               "holding 64 bytes; release them first");
  /* The pool was kept for the reservation; releasing it lets the pool go. */
  r.release(&r);
  QL_CHECK_OK(ql_ref_memory_pool_free(pool, &error), error);

  struct ql_ref_host_options bad = {-1, -5, 1};
  QL_CHECK_INT(ql_ref_host_new(&bad, &host, &error), QL_EINVAL);
  QL_CHECK(host == NULL);
  ql_error_release(&error);
}

int main(void) {
  struct ql_error error = {0};
  struct ql_ref_host_options options = {1000, 1024, 3};
  struct ql_ref_host *host = NULL;
  QL_CHECK_OK(ql_ref_host_new(&options, &host, &error), error);
  test_session(host);
  test_runtime_env(host);
  test_task_context(host);
  QL_CHECK_OK(ql_ref_host_free(host, &error), error);
  test_defaults_and_leak_report();
  QL_TEST_END();
}
