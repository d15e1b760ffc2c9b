/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/executor.c. */
#include <stdatomic.h>
#include <unistd.h>

#include "qlink/lib/status.h"
#include "ql_test.h"
#include "runtime_internal.h"

static int add_one(void *arg, struct ql_error *error) {
  (void)error;
  atomic_fetch_add((atomic_int *)arg, 1);
  return QL_OK;
}

static int fail_with_message(void *arg, struct ql_error *error) {
  return ql_error_set(error, QL_EDATA, "chunk %d is corrupt", *(int *)arg);
}

static int fail_silently(void *arg, struct ql_error *error) {
  (void)arg;
  (void)error;
  return QL_EIO;
}

struct nested {
  const struct ql_executor *ex;
  atomic_int *counter;
};

/* Spawns a child job and blocks on it: needs a second worker. */
static int spawn_and_wait(void *arg, struct ql_error *error) {
  struct nested *n = arg;
  struct ql_job child;
  QL_RETURN_NOT_OK(n->ex->spawn(n->ex, add_one, n->counter, &child, error));
  int rc = child.wait(&child, error);
  child.release(&child);
  return rc;
}

static int slow_add(void *arg, struct ql_error *error) {
  usleep(2000);
  return add_one(arg, error);
}

int main(void) {
  struct ql_error error = {0};
  struct ql_thread_executor *pool = NULL;
  QL_CHECK_OK(ql_thread_executor_new(2, &pool, &error), error);
  const struct ql_executor *ex = ql_thread_executor_view(pool);
  QL_CHECK_INT(ex->parallelism(ex), 2);
  QL_CHECK_INT(ql_thread_executor_workers(pool), 2);

  /* 100 jobs, all waited for: the counter is exact. */
  atomic_int counter;
  atomic_init(&counter, 0);
  struct ql_job jobs[100];
  int spawn_failures = 0;
  for (int i = 0; i < 100; i++) {
    if (ex->spawn(ex, add_one, &counter, &jobs[i], &error) != QL_OK) spawn_failures++;
  }
  QL_CHECK_INT(spawn_failures, 0);
  int wait_failures = 0;
  for (int i = 0; i < 100; i++) {
    if (jobs[i].wait(&jobs[i], &error) != QL_OK) wait_failures++;
    jobs[i].release(&jobs[i]);
  }
  QL_CHECK_INT(wait_failures, 0);
  QL_CHECK_INT(atomic_load(&counter), 100);

  /* Errors come back through wait, with the job's message. */
  int chunk = 7;
  struct ql_job job;
  QL_CHECK_OK(ex->spawn(ex, fail_with_message, &chunk, &job, &error), error);
  QL_CHECK_INT(job.wait(&job, &error), QL_EDATA);
  QL_CHECK_STR(error.message, "chunk 7 is corrupt");
  ql_error_release(&error);
  QL_CHECK_INT(job.wait(&job, &error), QL_EDATA); /* again: status only */
  QL_CHECK(error.release == NULL);
  job.release(&job);
  QL_CHECK(job.release == NULL);
  QL_CHECK_OK(ex->spawn(ex, fail_silently, NULL, &job, &error), error);
  QL_CHECK_INT(job.wait(&job, &error), QL_EIO);
  QL_CHECK_STR(error.message, "job failed with QL_EIO");
  job.release(&job);
  QL_CHECK_OK(ex->spawn(ex, fail_with_message, &chunk, &job, &error), error);
  QL_CHECK_INT(job.wait(&job, NULL), QL_EDATA); /* NULL error: the message is freed with the job */
  job.release(&job);
  ql_error_release(&error);

  /* Nested: 4 jobs each waiting on a child, with 2 configured workers. */
  atomic_init(&counter, 0);
  struct nested n = {ex, &counter};
  struct ql_job parents[4];
  for (int i = 0; i < 4; i++) QL_CHECK_OK(ex->spawn(ex, spawn_and_wait, &n, &parents[i], &error), error);
  for (int i = 0; i < 4; i++) {
    QL_CHECK_OK(parents[i].wait(&parents[i], &error), error);
    parents[i].release(&parents[i]);
  }
  QL_CHECK_INT(atomic_load(&counter), 4);

  /* Detached jobs still run to completion before the pool is freed. */
  atomic_init(&counter, 0);
  for (int i = 0; i < 10; i++) {
    QL_CHECK_OK(ex->spawn(ex, slow_add, &counter, &job, &error), error);
    job.release(&job);
  }
  QL_CHECK_INT(ex->spawn(ex, NULL, NULL, &job, &error), QL_EINVAL);
  ql_error_release(&error);
  ql_thread_executor_free(pool);
  QL_CHECK_INT(atomic_load(&counter), 10);

  struct ql_thread_executor *bad = NULL;
  QL_CHECK_INT(ql_thread_executor_new(0, &bad, &error), QL_EINVAL);
  QL_CHECK(bad == NULL);
  ql_error_release(&error);
  QL_TEST_END();
}
