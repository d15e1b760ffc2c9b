/* SPDX-License-Identifier: Apache-2.0 */
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
 * by the caller.
 * Paths breaking the object-path rules of services.h (leading '/', empty,
 * "." or ".." segments) are QL_EINVAL, so no path escapes the store's root.
 * Directories are prefixes, not objects: head/get_range on one is
 * QL_ENOTFOUND. list follows symbolic links to files but not to directories
 * (no cycles) and returns items sorted by path. Other failures are QL_EIO
 * with strerror's words. */
int ql_file_store_new(struct ql_object_store *out, struct ql_error *error);

/* Split a URL or local path into the store URL (scheme://authority) and the
 * path inside that store:
 *   "file:///data/x.zarr"    -> "file://",      "data/x.zarr"
 *   "s3://bucket/a/b"        -> "s3://bucket",  "a/b"
 *   "memory:///t/x"          -> "memory://",    "t/x"
 *   "/data/x.zarr", "rel/x"  -> "file://",      absolute path without '/'
 * Trailing '/' removed; "." and ".." segments of a local path resolved
 * lexically (a ".." above the root is QL_EINVAL). Outputs malloc'd (caller frees).
 * The scheme is lower-cased; a URL's path is percent-decoded ("%20" -> ' ';
 * a bad escape or "%00" is QL_EINVAL); empty segments collapse ("a//b" ->
 * "a/b"). "file://localhost/x" is "file://" + "x"; any other host in a
 * file URL is QL_EINVAL. A relative local path is made absolute against the
 * working directory. On failure both outputs are NULL. */
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
 * replacing any earlier one. `store_url` is normalised ("S3://b/" ->
 * "s3://b"); one with a path ("s3://b/k") or without "://" is QL_EINVAL.
 * The store is consumed even on failure (released, never leaked). */
int ql_ref_store_registry_register(struct ql_ref_store_registry *registry, const char *store_url,
                                   struct ql_object_store *store, struct ql_error *error);
/* The ABI view, valid while the registry lives. get_store hands out a
 * handle whose release drops a reference; the store lives until the
 * registry and every handle are gone. */
const struct ql_object_store_registry *ql_ref_store_registry_view(struct ql_ref_store_registry *registry);

/* A thread-safe in-memory store (URL "memory://"), for tests and hosts:
 * ql_memory_store_put copies bytes under a path (replacing any object
 * there). get_range is zero-copy: the returned bytes keep the object's
 * buffer alive, so later puts or releasing the store never invalidate them.
 * ql_memory_store_put also accepts a handle from the reference registry's
 * get_store for a registered memory store; any other store is QL_EINVAL. */
int ql_memory_store_new(struct ql_object_store *out, struct ql_error *error);
int ql_memory_store_put(const struct ql_object_store *store, const char *path, const void *data, int64_t size,
                        struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_OBJECT_STORE_H */
