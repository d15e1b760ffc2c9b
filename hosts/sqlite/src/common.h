/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: what every file of the extension shares about SQLite.
 *
 * SQLite's routines reach a loadable extension through the pointer it hands
 * the entry point (sqlite3_api, defined in common.c and set by ext.c);
 * this header declares it, so including it makes sqlite3_* calls go
 * through that pointer. The helpers below know SQLite only, nothing of a
 * connection's qlink state (conn.h).
 */
#ifndef QLS_COMMON_H
#define QLS_COMMON_H

#include <sqlite3ext.h>

#include "qlink/error.h"

SQLITE_EXTENSION_INIT3

/* Argument `i` (0-based) of SQL function `fn` as text: *out and *len (bytes)
 * on success (0). NULL, or text with a NUL byte inside (blobs too), sets
 * the function's error naming `fn`, the argument's position and `what`
 * ("qlink_allow: argument 1 (the directory) is NULL"; the NUL's offset) and
 * returns -1. */
int qls_text_arg(sqlite3_context *ctx, const char *fn, sqlite3_value **argv, int i, const char *what, const char **out,
                 int *len);
/* Non-zero once sqlite3_interrupt was called on `db` (SQLite 3.41+ only:
 * older libraries stop the statement between rows, after xNext returns). */
int qls_interrupted(sqlite3 *db);
/* Error text for the statement: "qlink: PLUGIN (SPEC): MESSAGE" (sqlite3_malloc'd). */
char *qls_errmsg(const char *plugin, const char *spec, const struct ql_error *error);

#endif /* QLS_COMMON_H */
