/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's registrations (register.c). C API V2 registers functions
 * only while the extension loads, through its extension handle. */
#ifndef QLINK_DUCKDB_V2_REGISTER_H
#define QLINK_DUCKDB_V2_REGISTER_H

#include "capi.h"

struct qd_db;

/* Register table function `name` of n_args VARCHAR arguments (and, with
 * `named`, a VARCHAR named parameter, optional: qd_named_text reads it);
 * with `pushdown` non-NULL: projection pushdown and that filter pushdown
 * callback. 0 or -1. */
int qd_register_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db,
                   const char *name, int n_args, const char *named, duckdb_v2_table_function_bind_callback_fn bind,
                   duckdb_v2_table_function_init_global_callback_fn init,
                   duckdb_v2_table_function_init_local_callback_fn local,
                   duckdb_v2_table_function_exec_callback_fn exec,
                   duckdb_v2_table_function_filter_pushdown_callback_fn pushdown);
/* Register query PRAGMA `name`, likewise. 0 or -1. */
int qd_register_pragma_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db,
                          const char *name, int n_args, const char *named,
                          duckdb_v2_pragma_function_query_callback_fn query);
/* `sql` as the PRAGMA's query (a failure into err). */
void qd_set_query(duckdb_v2_pragma_function_query_info_handle result, const char *sql,
                  duckdb_v2_error_info_handle *err);

#endif /* QLINK_DUCKDB_V2_REGISTER_H */
