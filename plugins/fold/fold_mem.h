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
/* As ql_fold_mem_alloc, zeroed; free with ql_fold_mem_cfree. Buffers of
 * QL_FOLD_CACHE_MIN bytes or more come from a small process-wide cache of
 * freed ones when one fits (zeroed with memset), else from the allocator
 * (fresh pages, zeroed by the kernel where first touched): on the machines
 * measured, faulting 10 MB of fresh pages in took up to 9 ms, more than the
 * dense product that uses them, while memset takes about 1 ms. The cache
 * holds at most QL_FOLD_CACHE_SLOTS buffers and QL_FOLD_CACHE_BYTES bytes
 * (the oldest make room for a newly freed one) (not counted in any memory pool: it is free memory
 * kept for reuse, as an allocator keeps it), and is given back when the
 * plugin is unloaded. Thread-safe. */
#define QL_FOLD_CACHE_MIN (INT64_C(1) << 20)
#define QL_FOLD_CACHE_SLOTS 8
#define QL_FOLD_CACHE_BYTES (INT64_C(64) << 20)
int ql_fold_mem_calloc(struct ql_fold_mem *mem, void **out, int64_t bytes, struct ql_error *error);
/* Free a ql_fold_mem_calloc buffer of `bytes` (NULL: nothing). */
void ql_fold_mem_cfree(struct ql_fold_mem *mem, void *ptr, int64_t bytes);
/* Reserve `bytes` the fold holds without allocating them (memory a child
 * produced and the fold keeps alive); give them back with
 * ql_fold_mem_unreserve. QL_ERESOURCES when the pool says no. */
int ql_fold_mem_reserve(struct ql_fold_mem *mem, int64_t bytes, struct ql_error *error);
void ql_fold_mem_unreserve(struct ql_fold_mem *mem, int64_t bytes);
/* Free `ptr` (of `bytes`) and give the bytes back to the pool. */
void ql_fold_mem_free(struct ql_fold_mem *mem, void *ptr, int64_t bytes);

#endif /* QL_FOLD_MEM_H */
