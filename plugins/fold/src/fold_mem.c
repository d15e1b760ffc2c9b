/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: memory accounted against the host's memory pool. */
#include "fold_mem.h"

#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

int fd_mem_init(struct fd_mem *mem, const struct ql_memory_pool *pool, const char *name,
                     struct ql_error *error) {
  memset(mem, 0, sizeof(*mem));
  if (pthread_mutex_init(&mem->lock, NULL) != 0) return ql_error_set(error, QL_ENOMEM, "qlink_fold: cannot create a lock");
  if (pool && pool->reservation_new) {
    int rc = pool->reservation_new(pool, name, 0, &mem->reservation, error);
    if (rc != QL_OK) {
      pthread_mutex_destroy(&mem->lock);
      return rc;
    }
  }
  return QL_OK;
}

void fd_mem_destroy(struct fd_mem *mem) {
  if (mem->reservation.release) mem->reservation.release(&mem->reservation);
  pthread_mutex_destroy(&mem->lock);
}

static int fd_mem_grow(struct fd_mem *mem, int64_t bytes, struct ql_error *error) {
  int rc = QL_OK;
  pthread_mutex_lock(&mem->lock);
  if (mem->reservation.release) rc = mem->reservation.try_grow(&mem->reservation, bytes, error);
  if (rc == QL_OK) mem->bytes += bytes;
  pthread_mutex_unlock(&mem->lock);
  return rc;
}

static void fd_mem_shrink(struct fd_mem *mem, int64_t bytes) {
  pthread_mutex_lock(&mem->lock);
  if (mem->reservation.release) mem->reservation.shrink(&mem->reservation, bytes);
  mem->bytes -= bytes;
  pthread_mutex_unlock(&mem->lock);
}

int fd_mem_resize(struct fd_mem *mem, void **ptr, int64_t old_bytes, int64_t new_bytes,
                       struct ql_error *error) {
  if (new_bytes > old_bytes) QL_RETURN_NOT_OK(fd_mem_grow(mem, new_bytes - old_bytes, error));
  void *p = realloc(*ptr, new_bytes > 0 ? (size_t)new_bytes : 1);
  if (!p) {
    if (new_bytes > old_bytes) fd_mem_shrink(mem, new_bytes - old_bytes);
    return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory allocating %lld bytes", (long long)new_bytes);
  }
  if (new_bytes > old_bytes) memset((char *)p + old_bytes, 0, (size_t)(new_bytes - old_bytes));
  if (new_bytes < old_bytes) fd_mem_shrink(mem, old_bytes - new_bytes);
  *ptr = p;
  return QL_OK;
}

int fd_mem_alloc(struct fd_mem *mem, void **out, int64_t bytes, struct ql_error *error) {
  *out = NULL;
  if (bytes < 0) return ql_error_set(error, QL_EINVAL, "qlink_fold: negative allocation");
  QL_RETURN_NOT_OK(fd_mem_grow(mem, bytes, error));
  *out = malloc(bytes > 0 ? (size_t)bytes : 1);
  if (*out) return QL_OK;
  fd_mem_shrink(mem, bytes);
  return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory allocating %lld bytes", (long long)bytes);
}

/* fd_mem_calloc buffers: FD_HEADER bytes before the data hold
 * the capacity (keeping the data 64-byte aligned). */
#define FD_HEADER 64

static struct {
  pthread_mutex_t lock;
  int32_t n;
  void *base[FD_CACHE_SLOTS];
  int64_t cap[FD_CACHE_SLOTS];
  int64_t bytes;
} fd_cache = {PTHREAD_MUTEX_INITIALIZER, 0, {NULL}, {0}, 0};

/* The smallest cached buffer of capacity >= bytes (and not more than twice
 * that, so a small request does not pin a huge buffer), or NULL. */
static void *fd_cache_take(int64_t bytes) {
  void *base = NULL;
  pthread_mutex_lock(&fd_cache.lock);
  int32_t best = -1;
  for (int32_t i = 0; i < fd_cache.n; i++) {
    int64_t cap = fd_cache.cap[i];
    if (cap >= bytes && cap <= 2 * bytes && (best < 0 || cap < fd_cache.cap[best])) best = i;
  }
  if (best >= 0) {
    base = fd_cache.base[best];
    fd_cache.bytes -= fd_cache.cap[best];
    fd_cache.n--;
    /* Keep the others in age order (oldest first). */
    memmove(fd_cache.base + best, fd_cache.base + best + 1, (size_t)(fd_cache.n - best) * sizeof(void *));
    memmove(fd_cache.cap + best, fd_cache.cap + best + 1, (size_t)(fd_cache.n - best) * sizeof(int64_t));
  }
  pthread_mutex_unlock(&fd_cache.lock);
  return base;
}

/* Keep a freed buffer, making room by freeing the oldest cached ones (the
 * sizes a query needs change as it goes: stale small buffers must not hold
 * the slots). 0 when it is larger than the whole cache. */
static int fd_cache_put(void *base, int64_t cap) {
  if (cap > FD_CACHE_BYTES) return 0;
  void *evicted[FD_CACHE_SLOTS];
  int32_t n_evicted = 0;
  pthread_mutex_lock(&fd_cache.lock);
  while (fd_cache.n == FD_CACHE_SLOTS || fd_cache.bytes + cap > FD_CACHE_BYTES) {
    evicted[n_evicted++] = fd_cache.base[0];
    fd_cache.bytes -= fd_cache.cap[0];
    fd_cache.n--;
    memmove(fd_cache.base, fd_cache.base + 1, (size_t)fd_cache.n * sizeof(void *));
    memmove(fd_cache.cap, fd_cache.cap + 1, (size_t)fd_cache.n * sizeof(int64_t));
  }
  fd_cache.base[fd_cache.n] = base;
  fd_cache.cap[fd_cache.n++] = cap;
  fd_cache.bytes += cap;
  pthread_mutex_unlock(&fd_cache.lock);
  for (int32_t i = 0; i < n_evicted; i++) free(evicted[i]);
  return 1;
}

/* Give the cached buffers back when the plugin is unloaded (or at exit). */
__attribute__((destructor)) static void fd_cache_drain(void) {
  pthread_mutex_lock(&fd_cache.lock);
  for (int32_t i = 0; i < fd_cache.n; i++) free(fd_cache.base[i]);
  fd_cache.n = 0;
  fd_cache.bytes = 0;
  pthread_mutex_unlock(&fd_cache.lock);
}

/* A cacheable buffer, zeroed when `zero`; *zeroed (when not NULL): it is
 * (zero asked, or fresh from calloc). */
static int fd_mem_big(struct fd_mem *mem, void **out, int64_t bytes, int zero, int *zeroed,
                           struct ql_error *error) {
  *out = NULL;
  if (zeroed) *zeroed = 1;
  if (bytes < 0 || bytes > INT64_MAX / 2) return ql_error_set(error, QL_EINVAL, "qlink_fold: bad allocation size %lld", (long long)bytes);
  QL_RETURN_NOT_OK(fd_mem_grow(mem, bytes, error));
  void *base = bytes >= FD_CACHE_MIN ? fd_cache_take(bytes) : NULL;
  if (base) {
    if (zero) memset((char *)base + FD_HEADER, 0, (size_t)bytes);
    else if (zeroed) *zeroed = 0;
  } else {
    /* calloc, not malloc + memset: large blocks come as zero pages. */
    base = calloc((size_t)bytes + FD_HEADER, 1);
    if (!base) {
      fd_mem_shrink(mem, bytes);
      return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory allocating %lld bytes", (long long)bytes);
    }
    memcpy(base, &bytes, sizeof(bytes));
  }
  *out = (char *)base + FD_HEADER;
  return QL_OK;
}

int fd_mem_calloc(struct fd_mem *mem, void **out, int64_t bytes, struct ql_error *error) {
  return fd_mem_big(mem, out, bytes, 1, NULL, error);
}

int fd_mem_alloc_cached(struct fd_mem *mem, void **out, int64_t bytes, int *zeroed, struct ql_error *error) {
  return fd_mem_big(mem, out, bytes, 0, zeroed, error);
}

void fd_mem_cfree(struct fd_mem *mem, void *ptr, int64_t bytes) {
  if (!ptr) return;
  void *base = (char *)ptr - FD_HEADER;
  int64_t cap;
  memcpy(&cap, base, sizeof(cap));
  if (cap < FD_CACHE_MIN || !fd_cache_put(base, cap)) free(base);
  if (bytes > 0) fd_mem_shrink(mem, bytes);
}

int fd_mem_reserve(struct fd_mem *mem, int64_t bytes, struct ql_error *error) {
  if (bytes < 0) return ql_error_set(error, QL_EINVAL, "qlink_fold: negative reservation");
  return fd_mem_grow(mem, bytes, error);
}

void fd_mem_unreserve(struct fd_mem *mem, int64_t bytes) {
  if (bytes > 0) fd_mem_shrink(mem, bytes);
}

void fd_mem_free(struct fd_mem *mem, void *ptr, int64_t bytes) {
  if (!ptr) return;
  free(ptr);
  if (bytes > 0) fd_mem_shrink(mem, bytes);
}

/* ------------------------------------------------------- output blocks */

/* An output block: this header, then the data, then the validity bitmap
 * (each 64-byte aligned). */
struct fd_out_block {
  struct fd_out_block *next; /* in the pool */
  int64_t cap;                    /* bytes after the header */
  const void *buffers[2];         /* the array's buffers: validity, data */
  char pad_[32];
};

static struct {
  pthread_mutex_t lock;
  struct fd_out_block *head; /* most recently returned first */
  int64_t bytes;
} fd_out_pool = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

/* A pooled block of capacity in [bytes, 2 * bytes], looking at the first
 * few only (the batches of one output have one size), or NULL. */
static struct fd_out_block *fd_out_take(int64_t bytes) {
  struct fd_out_block *b = NULL;
  pthread_mutex_lock(&fd_out_pool.lock);
  struct fd_out_block **link = &fd_out_pool.head;
  for (int tries = 0; *link && tries < 8; tries++, link = &(*link)->next) {
    if ((*link)->cap >= bytes && (*link)->cap <= 2 * bytes) {
      b = *link;
      *link = b->next;
      fd_out_pool.bytes -= b->cap;
      break;
    }
  }
  pthread_mutex_unlock(&fd_out_pool.lock);
  return b;
}

static void fd_out_release(struct ArrowArray *array) {
  if (!array->release) return;
  struct fd_out_block *b = array->private_data;
  int kept = 0;
  pthread_mutex_lock(&fd_out_pool.lock);
  if (fd_out_pool.bytes + b->cap <= FD_OUT_POOL_BYTES) {
    b->next = fd_out_pool.head;
    fd_out_pool.head = b;
    fd_out_pool.bytes += b->cap;
    kept = 1;
  }
  pthread_mutex_unlock(&fd_out_pool.lock);
  if (!kept) free(b);
  array->release = NULL;
}

__attribute__((destructor)) static void fd_out_drain(void) {
  pthread_mutex_lock(&fd_out_pool.lock);
  while (fd_out_pool.head) {
    struct fd_out_block *b = fd_out_pool.head;
    fd_out_pool.head = b->next;
    free(b);
  }
  fd_out_pool.bytes = 0;
  pthread_mutex_unlock(&fd_out_pool.lock);
}

int fd_out_array(struct ArrowArray *out, int64_t length, int64_t width, int with_validity, void **data,
                      uint8_t **validity, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  *data = NULL;
  *validity = NULL;
  if (length < 0 || width <= 0 || length > INT64_MAX / 16 / width)
    return ql_error_set(error, QL_EINVAL, "qlink_fold: bad output column of %lld values", (long long)length);
  int64_t data_bytes = (length * width + 63) / 64 * 64 + 64; /* at least one line: a non-NULL buffer */
  int64_t bytes = data_bytes + (with_validity ? (length + 7) / 8 : 0);
  struct fd_out_block *b = fd_out_take(bytes);
  if (!b) {
    void *p = NULL;
    if (posix_memalign(&p, 64, sizeof(*b) + (size_t)bytes) != 0)
      return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory emitting");
    b = p;
    b->cap = bytes;
  }
  char *base = (char *)(b + 1);
  *data = base;
  *validity = with_validity ? (uint8_t *)base + data_bytes : NULL;
  b->buffers[0] = *validity;
  b->buffers[1] = base;
  out->length = length;
  out->n_buffers = 2;
  out->buffers = b->buffers;
  out->release = fd_out_release;
  out->private_data = b;
  return QL_OK;
}
