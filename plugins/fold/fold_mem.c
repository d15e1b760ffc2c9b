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
