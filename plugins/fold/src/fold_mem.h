/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: memory accounted against the host's memory pool.
 *
 * Every buffer the fold operator allocates while executing is reserved from
 * the task context's memory pool first (DataFusion's MemoryReservation), so
 * the session's memory limit applies and a refusal surfaces as the host's own
 * QL_ERESOURCES error. One reservation is shared by the worker jobs of one
 * execution, hence the lock (reservations themselves are single-owner).
 */
#ifndef QLINK_FOLD_MEM_H
#define QLINK_FOLD_MEM_H

#include <pthread.h>
#include <stdint.h>

#include "qlink/arrow_c.h"
#include "qlink/services.h"

struct fd_mem {
  struct ql_memory_reservation reservation; /* release == NULL: no pool, nothing accounted */
  pthread_mutex_t lock;
  int64_t bytes; /* what this execution holds, pool or not */
};

/* Register consumer `name` with `pool` (may be NULL: no accounting). */
int fd_mem_init(struct fd_mem *mem, const struct ql_memory_pool *pool, const char *name,
                     struct ql_error *error);
/* Release the reservation (after every buffer was freed through the mem). */
void fd_mem_destroy(struct fd_mem *mem);

/* Resize `*ptr` from old_bytes to new_bytes, reserving the growth first.
 * QL_ERESOURCES (the pool's error) or QL_ENOMEM; *ptr unchanged on failure.
 * New bytes are zeroed. */
int fd_mem_resize(struct fd_mem *mem, void **ptr, int64_t old_bytes, int64_t new_bytes,
                       struct ql_error *error);
/* *out = a new buffer of `bytes` (not zeroed: for arrays written in full at
 * once), reserved first. QL_ERESOURCES or QL_ENOMEM with *out = NULL. */
int fd_mem_alloc(struct fd_mem *mem, void **out, int64_t bytes, struct ql_error *error);
/* As fd_mem_alloc, zeroed; free with fd_mem_cfree. Buffers of
 * FD_CACHE_MIN bytes (256 KiB) or more come from a small process-wide cache of
 * freed ones when one fits (zeroed with memset), else from the allocator
 * (fresh pages, zeroed by the kernel where first touched): on the machines
 * measured, faulting 10 MB of fresh pages in took up to 9 ms, more than the
 * dense product that uses them, while memset takes about 1 ms. The cache
 * holds at most FD_CACHE_SLOTS buffers and FD_CACHE_BYTES bytes
 * (the oldest make room for a newly freed one) (not counted in any memory pool: it is free memory
 * kept for reuse, as an allocator keeps it), and is given back when the
 * plugin is unloaded. Thread-safe. */
#define FD_CACHE_MIN (INT64_C(256) << 10)
#define FD_CACHE_SLOTS 8
#define FD_CACHE_BYTES (INT64_C(64) << 20)
int fd_mem_calloc(struct fd_mem *mem, void **out, int64_t bytes, struct ql_error *error);
/* As fd_mem_calloc, but a buffer taken from the cache is not zeroed
 * (for arrays written in full, or zeroed by the caller in parallel);
 * *zeroed (when not NULL) says whether it came zeroed (fresh pages). Free
 * with fd_mem_cfree. */
int fd_mem_alloc_cached(struct fd_mem *mem, void **out, int64_t bytes, int *zeroed, struct ql_error *error);
/* Free a fd_mem_calloc or fd_mem_alloc_cached buffer of `bytes`
 * (NULL: nothing). */
void fd_mem_cfree(struct fd_mem *mem, void *ptr, int64_t bytes);
/* Reserve `bytes` the fold holds without allocating them (memory a child
 * produced and the fold keeps alive); give them back with
 * fd_mem_unreserve. QL_ERESOURCES when the pool says no. */
int fd_mem_reserve(struct fd_mem *mem, int64_t bytes, struct ql_error *error);
void fd_mem_unreserve(struct fd_mem *mem, int64_t bytes);
/* Free `ptr` (of `bytes`) and give the bytes back to the pool. */
void fd_mem_free(struct fd_mem *mem, void *ptr, int64_t bytes);

/* An output column for the host: a fixed-width array of `length` values
 * of `width` bytes whose data (and, with `with_validity`, a validity bitmap
 * of (length + 7) / 8 bytes) live in one block, handed to the caller
 * uninitialised through *data and *validity to be written in full. The
 * caller then sets out->null_count and, when it is 0, may drop the bitmap
 * (out->buffers[0] = NULL). When the host releases the array the block
 * goes back to a process-wide pool of at most FD_OUT_POOL_BYTES
 * (not counted in any memory pool: free memory kept for reuse, as an
 * allocator keeps it; given back when the plugin is unloaded) and the next
 * output reuses it: a query emitting 800,000 rows otherwise faulted in
 * about 19 MB of fresh pages every run (2-3 ms). Blocks not retained
 * are freed. Thread-safe (the host may release on any thread).
 * QL_ENOMEM with *out zeroed. */
#define FD_OUT_POOL_BYTES (INT64_C(32) << 20)
int fd_out_array(struct ArrowArray *out, int64_t length, int64_t width, int with_validity, void **data,
                      uint8_t **validity, struct ql_error *error);

#endif /* QLINK_FOLD_MEM_H */
