/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB C API of the V2 build, qlink_v2.duckdb_extension: the
 * unstable C API V2 of the pinned engine version (built for, and loaded
 * by, that version only).
 *
 * The common sources include this as "capi.h" (the build puts src/v2 on
 * the include path; src/v1/capi.h is the V1 build's), so they compile
 * against either API without an #ifdef: what they need of DuckDB is named
 * by the types below. */
#ifndef QLINK_DUCKDB_CAPI_H
#define QLINK_DUCKDB_CAPI_H

#define DUCKDB_EXTENSION_NAME qlink_v2
#define DUCKDB_V2_API_ALLOW_UNSTABLE 1
#include <duckdb_extension_v2.h>

DUCKDB_EXTENSION_EXTERN

/* A vector: scan output, function arguments and results. */
typedef duckdb_v2_vector_handle qd_vector;
/* DuckDB's INTERVAL value (months, days, micros). */
typedef duckdb_v2_interval_t qd_interval;
/* None: the V2 build holds no connection (its DDL runs as the query of a
 * PRAGMA, on the caller's connection), so struct qd_db's stays NULL. */
typedef void *qd_connection;

#endif /* QLINK_DUCKDB_CAPI_H */
