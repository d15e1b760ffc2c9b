/* qlink_fold: memory accounted against the host's memory pool. */
#include "fold_mem.h"

#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

int ql_fold_mem_init(struct ql_fold_mem *mem, const struct ql_memory_pool *pool, const char *name,
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

void ql_fold_mem_destroy(struct ql_fold_mem *mem) {
  if (mem->reservation.release) mem->reservation.release(&mem->reservation);
  pthread_mutex_destroy(&mem->lock);
}

static int ql_fold_mem_grow(struct ql_fold_mem *mem, int64_t bytes, struct ql_error *error) {
  int rc = QL_OK;
  pthread_mutex_lock(&mem->lock);
  if (mem->reservation.release) rc = mem->reservation.try_grow(&mem->reservation, bytes, error);
  if (rc == QL_OK) mem->bytes += bytes;
  pthread_mutex_unlock(&mem->lock);
  return rc;
}

static void ql_fold_mem_shrink(struct ql_fold_mem *mem, int64_t bytes) {
  pthread_mutex_lock(&mem->lock);
  if (mem->reservation.release) mem->reservation.shrink(&mem->reservation, bytes);
  mem->bytes -= bytes;
  pthread_mutex_unlock(&mem->lock);
}

int ql_fold_mem_resize(struct ql_fold_mem *mem, void **ptr, int64_t old_bytes, int64_t new_bytes,
                       struct ql_error *error) {
  if (new_bytes > old_bytes) QL_RETURN_NOT_OK(ql_fold_mem_grow(mem, new_bytes - old_bytes, error));
  void *p = realloc(*ptr, new_bytes > 0 ? (size_t)new_bytes : 1);
  if (!p) {
    if (new_bytes > old_bytes) ql_fold_mem_shrink(mem, new_bytes - old_bytes);
    return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory allocating %lld bytes", (long long)new_bytes);
  }
  if (new_bytes > old_bytes) memset((char *)p + old_bytes, 0, (size_t)(new_bytes - old_bytes));
  if (new_bytes < old_bytes) ql_fold_mem_shrink(mem, old_bytes - new_bytes);
  *ptr = p;
  return QL_OK;
}

int ql_fold_mem_alloc(struct ql_fold_mem *mem, void **out, int64_t bytes, struct ql_error *error) {
  *out = NULL;
  if (bytes < 0) return ql_error_set(error, QL_EINVAL, "qlink_fold: negative allocation");
  QL_RETURN_NOT_OK(ql_fold_mem_grow(mem, bytes, error));
  *out = malloc(bytes > 0 ? (size_t)bytes : 1);
  if (*out) return QL_OK;
  ql_fold_mem_shrink(mem, bytes);
  return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory allocating %lld bytes", (long long)bytes);
}

/* ql_fold_mem_calloc buffers: QL_FOLD_HEADER bytes before the data hold
 * the capacity (keeping the data 64-byte aligned). */
#define QL_FOLD_HEADER 64

static struct {
  pthread_mutex_t lock;
  int32_t n;
  void *base[QL_FOLD_CACHE_SLOTS];
  int64_t cap[QL_FOLD_CACHE_SLOTS];
  int64_t bytes;
} ql_fold_cache = {PTHREAD_MUTEX_INITIALIZER, 0, {NULL}, {0}, 0};

/* The smallest cached buffer of capacity >= bytes (and not more than twice
 * that, so a small request does not pin a huge buffer), or NULL. */
static void *ql_fold_cache_take(int64_t bytes) {
  void *base = NULL;
  pthread_mutex_lock(&ql_fold_cache.lock);
  int32_t best = -1;
  for (int32_t i = 0; i < ql_fold_cache.n; i++) {
    int64_t cap = ql_fold_cache.cap[i];
    if (cap >= bytes && cap <= 2 * bytes && (best < 0 || cap < ql_fold_cache.cap[best])) best = i;
  }
  if (best >= 0) {
    base = ql_fold_cache.base[best];
    ql_fold_cache.bytes -= ql_fold_cache.cap[best];
    ql_fold_cache.n--;
    /* Keep the others in age order (oldest first). */
    memmove(ql_fold_cache.base + best, ql_fold_cache.base + best + 1, (size_t)(ql_fold_cache.n - best) * sizeof(void *));
    memmove(ql_fold_cache.cap + best, ql_fold_cache.cap + best + 1, (size_t)(ql_fold_cache.n - best) * sizeof(int64_t));
  }
  pthread_mutex_unlock(&ql_fold_cache.lock);
  return base;
}

/* Keep a freed buffer, making room by freeing the oldest cached ones (the
 * sizes a query needs change as it goes: stale small buffers must not hold
 * the slots). 0 when it is larger than the whole cache. */
static int ql_fold_cache_put(void *base, int64_t cap) {
  if (cap > QL_FOLD_CACHE_BYTES) return 0;
  void *evicted[QL_FOLD_CACHE_SLOTS];
  int32_t n_evicted = 0;
  pthread_mutex_lock(&ql_fold_cache.lock);
  while (ql_fold_cache.n == QL_FOLD_CACHE_SLOTS || ql_fold_cache.bytes + cap > QL_FOLD_CACHE_BYTES) {
    evicted[n_evicted++] = ql_fold_cache.base[0];
    ql_fold_cache.bytes -= ql_fold_cache.cap[0];
    ql_fold_cache.n--;
    memmove(ql_fold_cache.base, ql_fold_cache.base + 1, (size_t)ql_fold_cache.n * sizeof(void *));
    memmove(ql_fold_cache.cap, ql_fold_cache.cap + 1, (size_t)ql_fold_cache.n * sizeof(int64_t));
  }
  ql_fold_cache.base[ql_fold_cache.n] = base;
  ql_fold_cache.cap[ql_fold_cache.n++] = cap;
  ql_fold_cache.bytes += cap;
  pthread_mutex_unlock(&ql_fold_cache.lock);
  for (int32_t i = 0; i < n_evicted; i++) free(evicted[i]);
  return 1;
}

/* Give the cached buffers back when the plugin is unloaded (or at exit). */
__attribute__((destructor)) static void ql_fold_cache_drain(void) {
  pthread_mutex_lock(&ql_fold_cache.lock);
  for (int32_t i = 0; i < ql_fold_cache.n; i++) free(ql_fold_cache.base[i]);
  ql_fold_cache.n = 0;
  ql_fold_cache.bytes = 0;
  pthread_mutex_unlock(&ql_fold_cache.lock);
}

/* A cacheable buffer, zeroed when `zero`; *zeroed (when not NULL): it is
 * (zero asked, or fresh from calloc). */
static int ql_fold_mem_big(struct ql_fold_mem *mem, void **out, int64_t bytes, int zero, int *zeroed,
                           struct ql_error *error) {
  *out = NULL;
  if (zeroed) *zeroed = 1;
  if (bytes < 0 || bytes > INT64_MAX / 2) return ql_error_set(error, QL_EINVAL, "qlink_fold: bad allocation size %lld", (long long)bytes);
  QL_RETURN_NOT_OK(ql_fold_mem_grow(mem, bytes, error));
  void *base = bytes >= QL_FOLD_CACHE_MIN ? ql_fold_cache_take(bytes) : NULL;
  if (base) {
    if (zero) memset((char *)base + QL_FOLD_HEADER, 0, (size_t)bytes);
    else if (zeroed) *zeroed = 0;
  } else {
    /* calloc, not malloc + memset: large blocks come as zero pages. */
    base = calloc((size_t)bytes + QL_FOLD_HEADER, 1);
    if (!base) {
      ql_fold_mem_shrink(mem, bytes);
      return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory allocating %lld bytes", (long long)bytes);
    }
    memcpy(base, &bytes, sizeof(bytes));
  }
  *out = (char *)base + QL_FOLD_HEADER;
  return QL_OK;
}

int ql_fold_mem_calloc(struct ql_fold_mem *mem, void **out, int64_t bytes, struct ql_error *error) {
  return ql_fold_mem_big(mem, out, bytes, 1, NULL, error);
}

int ql_fold_mem_alloc_cached(struct ql_fold_mem *mem, void **out, int64_t bytes, int *zeroed, struct ql_error *error) {
  return ql_fold_mem_big(mem, out, bytes, 0, zeroed, error);
}

void ql_fold_mem_cfree(struct ql_fold_mem *mem, void *ptr, int64_t bytes) {
  if (!ptr) return;
  void *base = (char *)ptr - QL_FOLD_HEADER;
  int64_t cap;
  memcpy(&cap, base, sizeof(cap));
  if (cap < QL_FOLD_CACHE_MIN || !ql_fold_cache_put(base, cap)) free(base);
  if (bytes > 0) ql_fold_mem_shrink(mem, bytes);
}

int ql_fold_mem_reserve(struct ql_fold_mem *mem, int64_t bytes, struct ql_error *error) {
  if (bytes < 0) return ql_error_set(error, QL_EINVAL, "qlink_fold: negative reservation");
  return ql_fold_mem_grow(mem, bytes, error);
}

void ql_fold_mem_unreserve(struct ql_fold_mem *mem, int64_t bytes) {
  if (bytes > 0) ql_fold_mem_shrink(mem, bytes);
}

void ql_fold_mem_free(struct ql_fold_mem *mem, void *ptr, int64_t bytes) {
  if (!ptr) return;
  free(ptr);
  if (bytes > 0) ql_fold_mem_shrink(mem, bytes);
}

/* ------------------------------------------------------- output blocks */

/* An output block: this header, then the data, then the validity bitmap
 * (each 64-byte aligned). */
struct ql_fold_out_block {
  struct ql_fold_out_block *next; /* in the pool */
  int64_t cap;                    /* bytes after the header */
  const void *buffers[2];         /* the array's buffers: validity, data */
  char pad_[32];
};

static struct {
  pthread_mutex_t lock;
  struct ql_fold_out_block *head; /* most recently returned first */
  int64_t bytes;
} ql_fold_out_pool = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

/* A pooled block of capacity in [bytes, 2 * bytes], looking at the first
 * few only (the batches of one output have one size), or NULL. */
static struct ql_fold_out_block *ql_fold_out_take(int64_t bytes) {
  struct ql_fold_out_block *b = NULL;
  pthread_mutex_lock(&ql_fold_out_pool.lock);
  struct ql_fold_out_block **link = &ql_fold_out_pool.head;
  for (int tries = 0; *link && tries < 8; tries++, link = &(*link)->next) {
    if ((*link)->cap >= bytes && (*link)->cap <= 2 * bytes) {
      b = *link;
      *link = b->next;
      ql_fold_out_pool.bytes -= b->cap;
      break;
    }
  }
  pthread_mutex_unlock(&ql_fold_out_pool.lock);
  return b;
}

static void ql_fold_out_release(struct ArrowArray *array) {
  if (!array->release) return;
  struct ql_fold_out_block *b = array->private_data;
  int kept = 0;
  pthread_mutex_lock(&ql_fold_out_pool.lock);
  if (ql_fold_out_pool.bytes + b->cap <= QL_FOLD_OUT_POOL_BYTES) {
    b->next = ql_fold_out_pool.head;
    ql_fold_out_pool.head = b;
    ql_fold_out_pool.bytes += b->cap;
    kept = 1;
  }
  pthread_mutex_unlock(&ql_fold_out_pool.lock);
  if (!kept) free(b);
  array->release = NULL;
}

__attribute__((destructor)) static void ql_fold_out_drain(void) {
  pthread_mutex_lock(&ql_fold_out_pool.lock);
  while (ql_fold_out_pool.head) {
    struct ql_fold_out_block *b = ql_fold_out_pool.head;
    ql_fold_out_pool.head = b->next;
    free(b);
  }
  ql_fold_out_pool.bytes = 0;
  pthread_mutex_unlock(&ql_fold_out_pool.lock);
}

int ql_fold_out_array(struct ArrowArray *out, int64_t length, int64_t width, int with_validity, void **data,
                      uint8_t **validity, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  *data = NULL;
  *validity = NULL;
  if (length < 0 || width <= 0 || length > INT64_MAX / 16 / width)
    return ql_error_set(error, QL_EINVAL, "qlink_fold: bad output column of %lld values", (long long)length);
  int64_t data_bytes = (length * width + 63) / 64 * 64 + 64; /* at least one line: a non-NULL buffer */
  int64_t bytes = data_bytes + (with_validity ? (length + 7) / 8 : 0);
  struct ql_fold_out_block *b = ql_fold_out_take(bytes);
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
  out->release = ql_fold_out_release;
  out->private_data = b;
  return QL_OK;
}
