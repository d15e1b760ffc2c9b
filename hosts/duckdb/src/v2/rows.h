/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's table functions returning their bind's struct qd_rows
 * (rows.c): the catalog functions, qlink_load_mark and the CALL forms
 * that fail. */
#ifndef QLINK_DUCKDB_V2_ROWS_H
#define QLINK_DUCKDB_V2_ROWS_H

#include "capi.h"

/* Init and exec of a table function returning its bind's struct qd_rows. */
void qd_rows_init_v2(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle context,
                     duckdb_v2_error_info_handle *err);
void qd_rows_emit_v2(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle context,
                     duckdb_v2_error_info_handle *err);

#endif /* QLINK_DUCKDB_V2_ROWS_H */
