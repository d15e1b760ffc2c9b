/* SPDX-License-Identifier: Apache-2.0 */
/* The V1 build's qlink_scan (scan.c), and the callbacks plugin table
 * functions share with it (functions.c). */
#ifndef QLINK_DUCKDB_V1_SCAN_H
#define QLINK_DUCKDB_V1_SCAN_H

#include "capi.h"
#include "qlink/lib/status.h"

struct qd_db;
struct qd_bind;

/* With b->plugin and b->provider set: qd_bind_schema, then the columns as
 * DuckDB's result columns and the row count as its cardinality. */
int qd_bind_provider(duckdb_bind_info info, struct qd_bind *b, struct ql_error *err);
/* init, local init and scan of a struct qd_bind. */
void qd_scan_init(duckdb_init_info info);
void qd_scan_local_init(duckdb_init_info info);
void qd_scan(duckdb_function_info info, duckdb_data_chunk output);
/* Register qlink_scan. 0 or -1. */
int qd_register_scan(duckdb_connection con, struct qd_db *db);

#endif /* QLINK_DUCKDB_V1_SCAN_H */
