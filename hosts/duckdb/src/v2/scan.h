/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's qlink_scan (scan.c), and the callbacks plugin table
 * functions share with it (functions.c). */
#ifndef QLINK_DUCKDB_V2_SCAN_H
#define QLINK_DUCKDB_V2_SCAN_H

#include "capi.h"
#include "qlink/lib/status.h"

struct qd_db;
struct qd_bind;

/* With b->plugin and b->provider set: qd_bind_schema, then the columns as
 * DuckDB's result columns and the row count as its cardinality. */
int qd_bind_columns_v2(duckdb_v2_table_function_bind_info_handle result, duckdb_v2_context_handle context,
                       struct qd_bind *b, struct ql_error *err);
/* qlink_scan's init, local init and exec, for any struct qd_bind. */
void qd_scan_init_v2(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle context,
                     duckdb_v2_error_info_handle *err);
void qd_scan_local_init_v2(duckdb_v2_table_function_init_local_info_handle info, duckdb_v2_context_handle context,
                           duckdb_v2_error_info_handle *err);
void qd_scan_v2(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle context,
                duckdb_v2_error_info_handle *err);
/* Register qlink_scan, with projection and filter pushdown. 0 or -1. */
int qd_register_scan_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db);

#endif /* QLINK_DUCKDB_V2_SCAN_H */
