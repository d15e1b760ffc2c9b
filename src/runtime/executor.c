/* SPDX-License-Identifier: Apache-2.0 */
/* The reference executor: a pthread worker pool with one FIFO job queue.
 *
 * A job is shared by its spawner's handle and the pool (two references);
 * whichever lets go last frees it, so a handle released before the job ran
 * (detach) is safe. One mutex guards the queue and every job's state; jobs
 * finishing broadcast one condition variable that waiters re-check. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "runtime_internal.h"

struct ql_exec_job {
  struct ql_thread_executor *pool;
  int (*fn)(void *arg, struct ql_error *error);
  void *arg;
  int done;
  int refs; /* guarded by pool->mutex */
  int status;
  struct ql_error error;
  struct ql_exec_job *next; /* queue link */
};

struct ql_thread_executor {
  struct ql_executor view;
  pthread_mutex_t mutex;
  pthread_cond_t work;     /* a job was queued, or shutdown */
  pthread_cond_t finished; /* some job finished */
  struct ql_exec_job *head, *tail;
  int32_t parallelism;
  int32_t max_workers;
  int32_t n_workers;
  int32_t idle;
  int shutdown;
  pthread_t *workers;
};

/* Drop one reference; frees the job when none is left. Called with the mutex held. */
static void ql_job_unref_locked(struct ql_exec_job *job) {
  if (--job->refs > 0) return;
  ql_error_release(&job->error);
  free(job);
}

static void *ql_worker_main(void *arg) {
  struct ql_thread_executor *pool = arg;
  pthread_mutex_lock(&pool->mutex);
  while (1) {
    while (!pool->head && !pool->shutdown) {
      pool->idle++;
      pthread_cond_wait(&pool->work, &pool->mutex);
      pool->idle--;
    }
    struct ql_exec_job *job = pool->head;
    if (!job) break; /* shutdown with an empty queue */
    pool->head = job->next;
    if (!pool->head) pool->tail = NULL;
    pthread_mutex_unlock(&pool->mutex);

    struct ql_error error = {0};
    int status = job->fn(job->arg, &error);
    /* A job that failed without a message still reports why. */
    if (status != QL_OK && !error.release) ql_error_set(&error, status, "job failed with %s", ql_status_name(status));
    if (status == QL_OK) ql_error_release(&error);

    pthread_mutex_lock(&pool->mutex);
    job->status = status;
    ql_error_move(&job->error, &error);
    job->done = 1;
    pthread_cond_broadcast(&pool->finished);
    ql_job_unref_locked(job);
  }
  pthread_mutex_unlock(&pool->mutex);
  return NULL;
}

/* Start one more worker; called with the mutex held. */
static int ql_executor_add_worker(struct ql_thread_executor *pool) {
  if (pool->n_workers >= pool->max_workers) return QL_ERESOURCES;
  if (pthread_create(&pool->workers[pool->n_workers], NULL, ql_worker_main, pool) != 0) return QL_ERESOURCES;
  pool->n_workers++;
  return QL_OK;
}

static int ql_job_wait(struct ql_job *self, struct ql_error *error) {
  struct ql_exec_job *job = self->private_data;
  if (!job) return ql_error_set(error, QL_ESTATE, "ql_job wait: the job handle was released");
  struct ql_thread_executor *pool = job->pool;
  pthread_mutex_lock(&pool->mutex);
  while (!job->done) pthread_cond_wait(&pool->finished, &pool->mutex);
  int status = job->status;
  /* The first wait takes the job's error; later waits get the status only. */
  if (error) {
    ql_error_move(error, &job->error);
  }
  pthread_mutex_unlock(&pool->mutex);
  return status;
}

static void ql_job_release(struct ql_job *self) {
  struct ql_exec_job *job = self->private_data;
  if (job) {
    struct ql_thread_executor *pool = job->pool;
    pthread_mutex_lock(&pool->mutex);
    ql_job_unref_locked(job);
    pthread_mutex_unlock(&pool->mutex);
  }
  self->private_data = NULL;
  self->release = NULL;
}

static int ql_executor_spawn(const struct ql_executor *self, int (*fn)(void *arg, struct ql_error *error), void *arg,
                             struct ql_job *out, struct ql_error *error) {
  struct ql_thread_executor *pool = self->private_data;
  memset(out, 0, sizeof(*out));
  if (!fn) return ql_error_set(error, QL_EINVAL, "executor spawn: fn is NULL");
  struct ql_exec_job *job = calloc(1, sizeof(*job));
  if (!job) return ql_error_set(error, QL_ENOMEM, "out of memory spawning a job");
  job->pool = pool;
  job->fn = fn;
  job->arg = arg;
  job->refs = 2; /* the handle and the queue */

  pthread_mutex_lock(&pool->mutex);
  if (pool->shutdown) {
    pthread_mutex_unlock(&pool->mutex);
    free(job);
    return ql_error_set(error, QL_ESTATE, "executor spawn: the executor is shutting down");
  }
  if (pool->tail) {
    pool->tail->next = job;
  } else {
    pool->head = job;
  }
  pool->tail = job;
  /* Every worker busy: start another so waiting jobs cannot starve the queue. */
  if (pool->idle == 0) (void)ql_executor_add_worker(pool);
  pthread_cond_signal(&pool->work);
  pthread_mutex_unlock(&pool->mutex);

  out->wait = ql_job_wait;
  out->release = ql_job_release;
  out->private_data = job;
  return QL_OK;
}

static int32_t ql_executor_parallelism(const struct ql_executor *self) {
  const struct ql_thread_executor *pool = self->private_data;
  return pool->parallelism;
}

int ql_thread_executor_new(int32_t threads, struct ql_thread_executor **out, struct ql_error *error) {
  *out = NULL;
  if (threads < 1) return ql_error_set(error, QL_EINVAL, "executor: %d threads; need at least 1", (int)threads);
  struct ql_thread_executor *pool = calloc(1, sizeof(*pool));
  if (!pool) return ql_error_set(error, QL_ENOMEM, "out of memory creating an executor");
  pool->parallelism = threads;
  pool->max_workers = threads * 16 > 64 ? threads * 16 : 64;
  pool->workers = calloc((size_t)pool->max_workers, sizeof(pthread_t));
  if (!pool->workers) {
    free(pool);
    return ql_error_set(error, QL_ENOMEM, "out of memory creating an executor");
  }
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->work, NULL);
  pthread_cond_init(&pool->finished, NULL);
  pool->view.struct_size = (uint32_t)sizeof(pool->view);
  pool->view.spawn = ql_executor_spawn;
  pool->view.parallelism = ql_executor_parallelism;
  pool->view.private_data = pool;
  pthread_mutex_lock(&pool->mutex);
  int rc = QL_OK;
  for (int32_t i = 0; i < threads && rc == QL_OK; i++) rc = ql_executor_add_worker(pool);
  pthread_mutex_unlock(&pool->mutex);
  if (rc != QL_OK) {
    ql_thread_executor_free(pool);
    return ql_error_set(error, QL_ERESOURCES, "executor: could not start %d worker threads", (int)threads);
  }
  *out = pool;
  return QL_OK;
}

void ql_thread_executor_free(struct ql_thread_executor *pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->mutex);
  pool->shutdown = 1;
  /* Queued jobs still run: workers drain the queue before exiting. */
  if (pool->head && pool->n_workers == 0) (void)ql_executor_add_worker(pool);
  pthread_cond_broadcast(&pool->work);
  int32_t n = pool->n_workers;
  pthread_mutex_unlock(&pool->mutex);
  for (int32_t i = 0; i < n; i++) pthread_join(pool->workers[i], NULL);
  pthread_cond_destroy(&pool->work);
  pthread_cond_destroy(&pool->finished);
  pthread_mutex_destroy(&pool->mutex);
  free(pool->workers);
  free(pool);
}

const struct ql_executor *ql_thread_executor_view(struct ql_thread_executor *executor) { return &executor->view; }

int32_t ql_thread_executor_workers(struct ql_thread_executor *executor) {
  pthread_mutex_lock(&executor->mutex);
  int32_t n = executor->n_workers;
  pthread_mutex_unlock(&executor->mutex);
  return n;
}
