/* SPDX-License-Identifier: Apache-2.0 */
/* The reference memory pool: one mutex guards the pool's totals; each
 * reservation keeps its own size (single owner, as services.h says), and
 * updates it under the pool's mutex so pool totals always equal the sum of
 * the live reservations. */
#include "qlink/lib/memory_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

struct ql_ref_memory_pool {
  struct ql_memory_pool view;
  pthread_mutex_t mutex;
  int64_t limit; /* -1: unbounded */
  int64_t reserved;
  int64_t peak;
  int64_t consumers;
};

struct ql_reservation_state {
  struct ql_ref_memory_pool *pool;
  char *name;
  int32_t flags;
  int64_t size;
};

static int ql_reservation_try_grow(struct ql_memory_reservation *self, int64_t bytes, struct ql_error *error) {
  struct ql_reservation_state *r = self->private_data;
  if (bytes < 0) {
    return ql_error_set(error, QL_EINVAL, "try_grow of %s: negative byte count %lld", r->name, (long long)bytes);
  }
  struct ql_ref_memory_pool *pool = r->pool;
  pthread_mutex_lock(&pool->mutex);
  int64_t available = pool->limit < 0 ? INT64_MAX : pool->limit - pool->reserved;
  int fits = bytes <= available;
  if (fits) {
    pool->reserved += bytes;
    r->size += bytes;
    if (pool->reserved > pool->peak) pool->peak = pool->reserved;
  }
  int64_t held = r->size;
  pthread_mutex_unlock(&pool->mutex);
  if (fits) return QL_OK;
  /* DataFusion's ResourcesExhausted wording, so hosts and users see one format. */
  return ql_error_set(error, QL_ERESOURCES,
                      "Resources exhausted: Failed to allocate additional %lld bytes for %s with %lld bytes already "
                      "allocated for this reservation - %lld bytes remain available for the total pool",
                      (long long)bytes, r->name, (long long)held, (long long)(available < 0 ? 0 : available));
}

static void ql_reservation_shrink(struct ql_memory_reservation *self, int64_t bytes) {
  struct ql_reservation_state *r = self->private_data;
  struct ql_ref_memory_pool *pool = r->pool;
  pthread_mutex_lock(&pool->mutex);
  /* Out-of-contract amounts are clamped so the pool's totals stay exact. */
  if (bytes < 0) bytes = 0;
  if (bytes > r->size) bytes = r->size;
  r->size -= bytes;
  pool->reserved -= bytes;
  pthread_mutex_unlock(&pool->mutex);
}

static int64_t ql_reservation_size(const struct ql_memory_reservation *self) {
  const struct ql_reservation_state *r = self->private_data;
  pthread_mutex_lock(&r->pool->mutex);
  int64_t size = r->size;
  pthread_mutex_unlock(&r->pool->mutex);
  return size;
}

static void ql_reservation_release(struct ql_memory_reservation *self) {
  struct ql_reservation_state *r = self->private_data;
  struct ql_ref_memory_pool *pool = r->pool;
  pthread_mutex_lock(&pool->mutex);
  pool->reserved -= r->size;
  pool->consumers--;
  pthread_mutex_unlock(&pool->mutex);
  free(r->name);
  free(r);
  self->private_data = NULL;
  self->release = NULL;
}

static int ql_pool_reservation_new(const struct ql_memory_pool *self, const char *name, int32_t flags,
                                   struct ql_memory_reservation *out, struct ql_error *error) {
  struct ql_ref_memory_pool *pool = self->private_data;
  memset(out, 0, sizeof(*out));
  if (!name) return ql_error_set(error, QL_EINVAL, "reservation_new: consumer name is NULL");
  struct ql_reservation_state *r = calloc(1, sizeof(*r));
  size_t n = strlen(name) + 1;
  char *copy = malloc(n);
  if (!r || !copy) {
    free(r);
    free(copy);
    return ql_error_set(error, QL_ENOMEM, "out of memory registering memory consumer '%s'", name);
  }
  memcpy(copy, name, n);
  r->pool = pool;
  r->name = copy;
  r->flags = flags;
  pthread_mutex_lock(&pool->mutex);
  pool->consumers++;
  pthread_mutex_unlock(&pool->mutex);
  out->struct_size = (uint32_t)sizeof(*out);
  out->try_grow = ql_reservation_try_grow;
  out->shrink = ql_reservation_shrink;
  out->size = ql_reservation_size;
  out->release = ql_reservation_release;
  out->private_data = r;
  return QL_OK;
}

static int64_t ql_pool_reserved(const struct ql_memory_pool *self) {
  struct ql_ref_memory_pool *pool = self->private_data;
  pthread_mutex_lock(&pool->mutex);
  int64_t reserved = pool->reserved;
  pthread_mutex_unlock(&pool->mutex);
  return reserved;
}

static int64_t ql_pool_limit(const struct ql_memory_pool *self) {
  struct ql_ref_memory_pool *pool = self->private_data;
  pthread_mutex_lock(&pool->mutex);
  int64_t limit = pool->limit;
  pthread_mutex_unlock(&pool->mutex);
  return limit;
}

int ql_ref_memory_pool_set_limit(struct ql_ref_memory_pool *pool, int64_t limit, struct ql_error *error) {
  if (limit < -1) return ql_error_set(error, QL_EINVAL, "memory pool limit %lld: use -1 for unbounded", (long long)limit);
  pthread_mutex_lock(&pool->mutex);
  pool->limit = limit;
  pthread_mutex_unlock(&pool->mutex);
  return QL_OK;
}

int ql_ref_memory_pool_new(int64_t limit, struct ql_ref_memory_pool **out, struct ql_error *error) {
  *out = NULL;
  if (limit < -1) return ql_error_set(error, QL_EINVAL, "memory pool limit %lld: use -1 for unbounded", (long long)limit);
  struct ql_ref_memory_pool *pool = calloc(1, sizeof(*pool));
  if (!pool) return ql_error_set(error, QL_ENOMEM, "out of memory creating a memory pool");
  if (pthread_mutex_init(&pool->mutex, NULL) != 0) {
    free(pool);
    return ql_error_set(error, QL_EINTERNAL, "pthread_mutex_init failed for a memory pool");
  }
  pool->limit = limit;
  pool->view.struct_size = (uint32_t)sizeof(pool->view);
  pool->view.reservation_new = ql_pool_reservation_new;
  pool->view.reserved = ql_pool_reserved;
  pool->view.limit = ql_pool_limit;
  pool->view.private_data = pool;
  *out = pool;
  return QL_OK;
}

int ql_ref_memory_pool_free(struct ql_ref_memory_pool *pool, struct ql_error *error) {
  if (!pool) return QL_OK;
  pthread_mutex_lock(&pool->mutex);
  int64_t consumers = pool->consumers, reserved = pool->reserved;
  pthread_mutex_unlock(&pool->mutex);
  if (consumers != 0) {
    return ql_error_set(error, QL_ESTATE,
                        "memory pool still has %lld live reservation(s) holding %lld bytes; release them first",
                        (long long)consumers, (long long)reserved);
  }
  pthread_mutex_destroy(&pool->mutex);
  free(pool);
  return QL_OK;
}

const struct ql_memory_pool *ql_ref_memory_pool_view(struct ql_ref_memory_pool *pool) { return &pool->view; }

int64_t ql_ref_memory_pool_consumers(const struct ql_ref_memory_pool *pool) {
  struct ql_ref_memory_pool *p = (struct ql_ref_memory_pool *)pool; /* the mutex is not const */
  pthread_mutex_lock(&p->mutex);
  int64_t n = p->consumers;
  pthread_mutex_unlock(&p->mutex);
  return n;
}

int64_t ql_ref_memory_pool_peak(const struct ql_ref_memory_pool *pool) {
  struct ql_ref_memory_pool *p = (struct ql_ref_memory_pool *)pool;
  pthread_mutex_lock(&p->mutex);
  int64_t n = p->peak;
  pthread_mutex_unlock(&p->mutex);
  return n;
}
