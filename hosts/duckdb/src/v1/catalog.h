/* SPDX-License-Identifier: Apache-2.0 */
/* The V1 build's catalog functions (catalog.c). */
#ifndef QLINK_DUCKDB_V1_CATALOG_H
#define QLINK_DUCKDB_V1_CATALOG_H

#include "capi.h"

struct qd_db;

/* Register qlink_plugins, qlink_tables, qlink_allow, qlink_seal and
 * qlink_attach. 0 or -1. */
int qd_register_catalog(duckdb_connection con, struct qd_db *db);

#endif /* QLINK_DUCKDB_V1_CATALOG_H */
