/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB C API of the V1 build, qlink.duckdb_extension: DuckDB's
 * stable C extension API (V1, target 1.5.6).
 *
 * The common sources include this as "capi.h" (the build puts src/v1 on
 * the include path; src/v2/capi.h is the V2 build's), so they compile
 * against either API without an #ifdef: what they need of DuckDB is named
 * by the types below. */
#ifndef QLINK_DUCKDB_CAPI_H
#define QLINK_DUCKDB_CAPI_H

#define DUCKDB_EXTENSION_NAME qlink
#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 5
#define DUCKDB_EXTENSION_API_VERSION_PATCH 6
#include <duckdb_extension.h>

DUCKDB_EXTENSION_EXTERN

/* A vector: scan output, function arguments and results. */
typedef duckdb_vector qd_vector;
/* DuckDB's INTERVAL value (months, days, micros). */
typedef duckdb_interval qd_interval;
/* The connection the V1 build holds for qlink_attach's views and
 * qlink_load's functions and macros. */
typedef duckdb_connection qd_connection;

#endif /* QLINK_DUCKDB_CAPI_H */
