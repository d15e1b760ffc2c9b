/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: `USING qlink_call('PLUGIN', 'FUNCTION', literal, ...)`
 * (call.c). */
#ifndef QLS_CALL_H
#define QLS_CALL_H

#include "conn.h"

/* The open step of the qlink_call module (a qls_provider_open_fn, vtab.h):
 * call the plugin's table function with the literal arguments and hand
 * back the table provider it returned. */
int qls_call_open(struct qls_conn *c, int argc, const char *const *argv, char **label, struct qls_plugin **plugin,
                  struct ql_table_provider *tp, struct ql_error *error);

#endif /* QLS_CALL_H */
