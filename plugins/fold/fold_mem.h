/* qlink_fold: memory accounted against the host's memory pool.
 *
 * Every buffer the fold operator allocates while executing is reserved from
 * the task context's memory pool first (DataFusion's MemoryReservation), so
 * the session's memory limit applies and a refusal surfaces as the host's own
 * QL_ERESOURCES error. One reservation is shared by the worker jobs of one
 * execution, hence the lock (reservations themselves are single-owner).
 */
#ifndef QL_FOLD_MEM_H
#define QL_FOLD_MEM_H

#include <pthread.h>

#include "qlink/services.h"

struct ql_fold_mem {
  struct ql_memory_reservation reservation; /* release == NULL: no pool, nothing accounted */
  pthread_mutex_t lock;
  int64_t bytes; /* what this execution holds, pool or not */
};

/* Register consumer `name` with `pool` (may be NULL: no accounting). */
int ql_fold_mem_init(struct ql_fold_mem *mem, const struct ql_memory_pool *pool, const char *name,
                     struct ql_error *error);
/* Release the reservation (after every buffer was freed through the mem). */
void ql_fold_mem_destroy(struct ql_fold_mem *mem);

/* Resize `*ptr` from old_bytes to new_bytes, reserving the growth first.
 * QL_ERESOURCES (the pool's error) or QL_ENOMEM; *ptr unchanged on failure.
 * New bytes are zeroed. */
int ql_fold_mem_resize(struct ql_fold_mem *mem, void **ptr, int64_t old_bytes, int64_t new_bytes,
                       struct ql_error *error);
/* *out = a new buffer of `bytes` (not zeroed: for arrays written in full at
 * once), reserved first. QL_ERESOURCES or QL_ENOMEM with *out = NULL. */
int ql_fold_mem_alloc(struct ql_fold_mem *mem, void **out, int64_t bytes, struct ql_error *error);
/* Reserve `bytes` the fold holds without allocating them (memory a child
 * produced and the fold keeps alive); give them back with
 * ql_fold_mem_unreserve. QL_ERESOURCES when the pool says no. */
int ql_fold_mem_reserve(struct ql_fold_mem *mem, int64_t bytes, struct ql_error *error);
void ql_fold_mem_unreserve(struct ql_fold_mem *mem, int64_t bytes);
/* Free `ptr` (of `bytes`) and give the bytes back to the pool. */
void ql_fold_mem_free(struct ql_fold_mem *mem, void *ptr, int64_t bytes);

#endif /* QL_FOLD_MEM_H */
