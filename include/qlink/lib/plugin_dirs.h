/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: the directories an engine host may load plugins from.
 *
 * Loading a plugin runs its code, so a host that takes a plugin name or path
 * from SQL text (DuckDB's qlink_scan, SQLite's virtual tables) loads only
 * from directories its owner allowed: QLINK_PLUGIN_PATH (a ':'-separated
 * list read when the host starts) and directories added by the owner before
 * the list is sealed. A name or path from SQL is resolved with realpath
 * (symlinks and ".." followed) and accepted only when the file it names lies
 * inside one allowed directory (itself resolved when added), so a symlink
 * pointing out of the directory, a "../" escape or an absolute path elsewhere
 * is refused with an error naming the rule. Whether the accepted file is a
 * plugin is the loader's question (ql_plugin_load).
 *
 * Thread-safety: every function may be called from any thread at once
 * (one mutex); resolving never blocks adding beyond that.
 */
#ifndef QLINK_LIB_PLUGIN_DIRS_H
#define QLINK_LIB_PLUGIN_DIRS_H

#include "qlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The environment variable hosts read for the allowed directories. */
#define QL_PLUGIN_PATH_ENV "QLINK_PLUGIN_PATH"

struct ql_plugin_dirs;

/* An empty, unsealed list; `*out` is freed with ql_plugin_dirs_free. */
int ql_plugin_dirs_new(struct ql_plugin_dirs **out, struct ql_error *error);
void ql_plugin_dirs_free(struct ql_plugin_dirs *dirs); /* NULL allowed */

/* Allow directory `dir` (resolved with realpath; it must exist and be a
 * directory). Adding one already listed is a no-op. QL_ESTATE once sealed;
 * QL_ENOTFOUND / QL_EINVAL naming `dir` when it is missing or no directory. */
int ql_plugin_dirs_add(struct ql_plugin_dirs *dirs, const char *dir, struct ql_error *error);
/* Allow every entry of a ':'-separated list (empty entries skipped), e.g.
 * getenv(QL_PLUGIN_PATH_ENV); NULL adds nothing. Stops at the first entry
 * that cannot be added, naming it and `what` (e.g. "QLINK_PLUGIN_PATH"). */
int ql_plugin_dirs_add_list(struct ql_plugin_dirs *dirs, const char *list, const char *what,
                            struct ql_error *error);
/* From now on, ql_plugin_dirs_add fails with QL_ESTATE. Idempotent. */
void ql_plugin_dirs_seal(struct ql_plugin_dirs *dirs);
int ql_plugin_dirs_sealed(const struct ql_plugin_dirs *dirs);
/* Number of allowed directories, and the i-th (resolved; borrowed, valid
 * while `dirs` lives, since entries are never removed). */
int64_t ql_plugin_dirs_count(const struct ql_plugin_dirs *dirs);
const char *ql_plugin_dirs_get(const struct ql_plugin_dirs *dirs, int64_t i);

/* Resolve `name_or_path` to the real path of a file inside an allowed
 * directory; `*out` is malloc'd (caller frees).
 * - With a '/': a path (relative to the working directory, or absolute).
 * - Without: a name, looked up as DIR/NAME.so then DIR/NAME in each allowed
 *   directory in order.
 * Errors (message naming the input and the rule):
 *   QL_EINVAL    no directory is allowed, or the resolved file lies outside
 *                every allowed directory (symlinks and ".." followed), or it
 *                is a directory or other non-regular file;
 *   QL_ENOTFOUND no such file (a name found in no allowed directory). */
int ql_plugin_dirs_resolve(const struct ql_plugin_dirs *dirs, const char *name_or_path, char **out,
                           struct ql_error *error);

/* Whether `dir` (resolved with realpath) is one of the allowed directories:
 * *listed 1 or 0 with QL_OK; QL_ENOTFOUND / QL_EINVAL naming `dir` when it
 * cannot be resolved. A host whose list an operator fixed (QLINK_PLUGIN_PATH)
 * uses it to accept a request that adds nothing and refuse one that would
 * widen the list. */
int ql_plugin_dirs_listed(const struct ql_plugin_dirs *dirs, const char *dir, int *listed, struct ql_error *error);
/* The allowed directories as one ':'-separated text, every one in full
 * (malloc'd, caller frees; "" when none; NULL when out of memory). */
char *ql_plugin_dirs_text(const struct ql_plugin_dirs *dirs);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_PLUGIN_DIRS_H */
