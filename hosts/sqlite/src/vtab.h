/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: the `qlink` and `qlink_call` virtual-table modules
 * (vtab.c). */
#ifndef QLS_VTAB_H
#define QLS_VTAB_H

#include "conn.h"

/* What a module's xCreate/xConnect does first: open the table provider its
 * `argc` module arguments (`argv`, SQLite's raw token text) name. Fills
 * `*label` (malloc'd, names the table in messages: the spec, or the call as
 * "FUNCTION(ARGS)"), then `*plugin` (a reference) and `*tp` (owned) once it
 * has them; on failure QL_* with `error` set, and whatever was filled is
 * the caller's to release. vtab.c then serves the provider the same way for
 * every module (schema, statistics, pushdown, scan). */
typedef int (*qls_provider_open_fn)(struct qls_conn *c, int argc, const char *const *argv, char **label,
                                    struct qls_plugin **plugin, struct ql_table_provider *tp, struct ql_error *error);
/* Registers both modules on c->db; a SQLite status. */
int qls_register_vtab(struct qls_conn *c);

#endif /* QLS_VTAB_H */
