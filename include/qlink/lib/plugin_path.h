/* libqlink: the allowed-directories rule for loading plugins from SQL.
 *
 * Loading a plugin runs its code, so a host that takes plugin paths from SQL
 * text (a table spec, qlink_load, qlink_attach) loads only from directories
 * its owner configured: the QLINK_PLUGIN_PATH setting (':'-separated) read
 * when the host starts, and explicit allow calls the owner makes before
 * untrusted SQL runs. Once sealed, the list cannot grow.
 *
 * A plugin is named either by a bare name ("qlink_zarr" or "qlink_zarr.so",
 * no '/'), looked up as DIR/NAME then DIR/NAME.so in each allowed directory
 * in order, or by a path, which must resolve (symlinks and ".." resolved by
 * realpath) to a file inside one allowed directory. Anything else is
 * refused with QL_EINVAL and a message naming the rule and the directories.
 * Whether the file is a plugin is the loader's question (ql_plugin_load).
 *
 * Thread-safety: one owner; ql_plugin_path_resolve may be called from
 * several threads at once while no allow/seal call runs.
 */
#ifndef QLINK_LIB_PLUGIN_PATH_H
#define QLINK_LIB_PLUGIN_PATH_H

#include "qlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QL_PLUGIN_PATH_ENV "QLINK_PLUGIN_PATH"

struct ql_plugin_path;

/* An empty, unsealed list. `*out` owned by the caller (ql_plugin_path_free). */
int ql_plugin_path_new(struct ql_plugin_path **out, struct ql_error *error);
void ql_plugin_path_free(struct ql_plugin_path *path); /* NULL allowed */

/* Allow directory `dir` (resolved with realpath; it must exist and be a
 * directory: QL_ENOTFOUND / QL_EINVAL naming it otherwise). QL_ESTATE once
 * sealed ("the plugin directories are sealed ..."). */
int ql_plugin_path_allow(struct ql_plugin_path *path, const char *dir, struct ql_error *error);
/* Allow every directory of a ':'-separated list (empty entries skipped);
 * `list` NULL or "" allows nothing. Stops at the first error. */
int ql_plugin_path_allow_list(struct ql_plugin_path *path, const char *list, struct ql_error *error);
/* No further allow call succeeds. */
void ql_plugin_path_seal(struct ql_plugin_path *path);
int ql_plugin_path_sealed(const struct ql_plugin_path *path);
/* Number of allowed directories, and directory `i` (resolved, borrowed). */
int ql_plugin_path_count(const struct ql_plugin_path *path);
const char *ql_plugin_path_dir(const struct ql_plugin_path *path, int i);

/* The real path of the plugin named `name` under the rule above, in a
 * malloc'd string (*out, caller frees). QL_EINVAL naming the rule when no
 * directory is allowed, when a path resolves outside them, or when `name`
 * is empty; QL_ENOTFOUND when no allowed directory holds a bare name or a
 * path does not exist. */
int ql_plugin_path_resolve(const struct ql_plugin_path *path, const char *name, char **out,
                           struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_PLUGIN_PATH_H */
