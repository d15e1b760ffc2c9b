/* libqlink: a local-file object store, a reference object-store registry,
 * and URL helpers.
 */
#ifndef QLINK_LIB_OBJECT_STORE_H
#define QLINK_LIB_OBJECT_STORE_H

#include "qlink/services.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A store over the local file system rooted at "/" (URL "file://"): paths
 * are absolute paths without the leading '/'. head/get_range/list as in
 * qlink/services.h; list skips what it cannot read. Thread-safe. `out` owned
 * by the caller. */
int ql_file_store_new(struct ql_object_store *out, struct ql_error *error);

/* Split a URL or local path into the store URL (scheme://authority) and the
 * path inside that store:
 *   "file:///data/x.zarr"    -> "file://",      "data/x.zarr"
 *   "s3://bucket/a/b"        -> "s3://bucket",  "a/b"
 *   "memory:///t/x"          -> "memory://",    "t/x"
 *   "/data/x.zarr", "rel/x"  -> "file://",      absolute path without '/'
 * Trailing '/' removed; "." and ".." segments of a local path resolved
 * lexically (a ".." above the root is QL_EINVAL). Outputs malloc'd (caller frees). */
int ql_url_split(const char *url, char **store_url, char **path, struct ql_error *error);
/* Join a store path and a relative key ("a/b" + "c/d" -> "a/b/c/d"), rejecting
 * keys that escape with ".." or are absolute (QL_EINVAL). Malloc'd. */
int ql_path_join(const char *base, const char *key, char **out, struct ql_error *error);

/* A registry mapping store URLs ("file://", "memory://", "s3://bucket") to
 * stores. Thread-safe. The reference registry serves file:// out of the box. */
struct ql_ref_store_registry;
int ql_ref_store_registry_new(struct ql_ref_store_registry **out, struct ql_error *error);
void ql_ref_store_registry_free(struct ql_ref_store_registry *registry);
/* Register `store` (moved in) for `store_url` (as ql_url_split returns it),
 * replacing any earlier one. */
int ql_ref_store_registry_register(struct ql_ref_store_registry *registry, const char *store_url,
                                   struct ql_object_store *store, struct ql_error *error);
/* The ABI view, valid while the registry lives. get_store hands out a
 * handle whose release drops a reference; the store lives until the
 * registry and every handle are gone. */
const struct ql_object_store_registry *ql_ref_store_registry_view(struct ql_ref_store_registry *registry);

/* A thread-safe in-memory store (URL "memory://"), for tests and hosts:
 * ql_memory_store_put copies bytes under a path. */
int ql_memory_store_new(struct ql_object_store *out, struct ql_error *error);
int ql_memory_store_put(const struct ql_object_store *store, const char *path, const void *data, int64_t size,
                        struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_OBJECT_STORE_H */
