/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: a reference memory pool for hosts that lack one.
 *
 * A thread-safe pool with an optional byte limit and per-consumer
 * accounting. try_grow fails with QL_ERESOURCES (SQLSTATE 53000) and a
 * message naming the consumer, the request, the pool's reservation and
 * limit, like DataFusion's ResourcesExhausted:
 *   "Resources exhausted: Failed to allocate additional N bytes for NAME
 *    with M bytes already allocated for this reservation - K bytes remain
 *    available for the total pool"
 * Reservations of one pool may live on different threads; the pool's
 * totals always equal the sum of its live reservations.
 */
#ifndef QLINK_LIB_MEMORY_POOL_H
#define QLINK_LIB_MEMORY_POOL_H

#include "qlink/services.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ql_ref_memory_pool;

/* limit: bytes, or -1 for unbounded. */
int ql_ref_memory_pool_new(int64_t limit, struct ql_ref_memory_pool **out, struct ql_error *error);
/* Free the pool. Every reservation must have been released first; returns
 * QL_ESTATE (and frees nothing) otherwise. */
int ql_ref_memory_pool_free(struct ql_ref_memory_pool *pool, struct ql_error *error);
/* Change the limit (bytes, or -1 for unbounded), e.g. when the engine's own
 * memory setting changes. Reservations already held are kept even above a
 * lowered limit; later try_grow calls see the new limit. Thread-safe. */
int ql_ref_memory_pool_set_limit(struct ql_ref_memory_pool *pool, int64_t limit, struct ql_error *error);
/* The ABI view, valid while the pool lives. */
const struct ql_memory_pool *ql_ref_memory_pool_view(struct ql_ref_memory_pool *pool);
/* Live consumers (reservations not yet released). */
int64_t ql_ref_memory_pool_consumers(const struct ql_ref_memory_pool *pool);
/* The largest total reservation seen. */
int64_t ql_ref_memory_pool_peak(const struct ql_ref_memory_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_MEMORY_POOL_H */
