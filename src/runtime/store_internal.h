/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink internal: helpers shared by the object stores and the store
 * registry (src/runtime). Not part of the public API. */
#ifndef QLINK_SRC_RUNTIME_STORE_INTERNAL_H
#define QLINK_SRC_RUNTIME_STORE_INTERNAL_H

#include "qlink/services.h"

/* Check an object path (services.h rules: '/'-separated, no leading or
 * trailing '/', no empty, "." or ".." segments). `allow_empty`: "" is the
 * store's root (list prefixes). QL_EINVAL naming the path and the rule. */
int ql_object_path_check(const char *path, int allow_empty, struct ql_error *error);

/* Does `path` lie under `prefix` (prefix "" or NULL: everything; else
 * path == prefix + "/" + rest)? */
int ql_object_path_under(const char *path, const char *prefix);

/* Fill an owned ql_object_list from `count` metas whose paths are malloc'd
 * (ownership of items and paths moves into the list); sorts by path so
 * listings are deterministic. */
void ql_object_list_adopt(struct ql_object_list *out, struct ql_object_meta *items, int64_t count);

/* Free `count` metas' paths and the array (for error paths before adopt). */
void ql_object_metas_free(struct ql_object_meta *items, int64_t count);

/* A store handle from the reference registry wraps the registered store;
 * this returns the registered store behind a handle, or `store` itself. */
const struct ql_object_store *ql_store_handle_unwrap(const struct ql_object_store *store);

#endif /* QLINK_SRC_RUNTIME_STORE_INTERNAL_H */
