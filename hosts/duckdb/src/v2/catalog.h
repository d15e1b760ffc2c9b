/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's catalog functions (catalog.c). */
#ifndef QLINK_DUCKDB_V2_CATALOG_H
#define QLINK_DUCKDB_V2_CATALOG_H

#include "capi.h"

struct qd_db;

/* Register qlink_plugins, qlink_tables, qlink_allow, qlink_seal and
 * qlink_attach (a query PRAGMA; its CALL form fails naming it). 0 or -1. */
int qd_register_catalog_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db);

#endif /* QLINK_DUCKDB_V2_CATALOG_H */
