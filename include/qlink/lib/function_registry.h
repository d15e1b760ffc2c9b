/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: a reference function registry with O(1) lookup and a
 * generation counter that bumps on every change (gap G6).
 *
 * Thread-safe (readers share a lock; writers exclude). Lookups cost one hash
 * probe whatever the number of registered functions.
 */
#ifndef QLINK_LIB_FUNCTION_REGISTRY_H
#define QLINK_LIB_FUNCTION_REGISTRY_H

#include "qlink/services.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ql_function_registry;

int ql_function_registry_new(struct ql_function_registry **out, struct ql_error *error);
/* Frees entries; `payload_free` (may be NULL) is called on each payload. */
void ql_function_registry_free(struct ql_function_registry *registry, void (*payload_free)(void *payload));
/* Register `info` under (lower-cased name, kind), replacing an earlier entry
 * (whose payload is returned in *replaced, or freed by nobody if replaced is
 * NULL). Strings of info are copied; a NULL info->id.name becomes `name` as
 * given. QL_EINVAL for an empty name or a kind outside enum
 * ql_function_kind. Bumps the generation (failed calls do not). */
int ql_function_registry_put(struct ql_function_registry *registry, const char *name,
                             const struct ql_function_info *info, void *payload, void **replaced,
                             struct ql_error *error);
/* Remove; QL_ENOTFOUND if absent. Bumps the generation. *payload receives the
 * entry's payload. */
int ql_function_registry_remove(struct ql_function_registry *registry, const char *name, int32_t kind,
                                void **payload, struct ql_error *error);
/* Look up (name case-insensitive). `out` strings stay valid until the entry
 * is replaced or removed. QL_ENOTFOUND if absent. payload may be NULL. */
int ql_function_registry_lookup(const struct ql_function_registry *registry, const char *name, int32_t kind,
                                struct ql_function_info *out, void **payload);
uint64_t ql_function_registry_generation(const struct ql_function_registry *registry);
int64_t ql_function_registry_count(const struct ql_function_registry *registry);

/* Register the canonical built-ins a C host offers (docs/functions.md) with
 * origin QL_ORIGIN_BUILTIN, library NULL and uid 0. Aliases are registered
 * under their own spelling with the canonical identity: looking up "mean"
 * (aggregate) gives id.name "avg". Payloads are NULL. */
int ql_function_registry_add_builtins(struct ql_function_registry *registry, struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_FUNCTION_REGISTRY_H */
