/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's plugin functions (functions.c). */
#ifndef QLINK_DUCKDB_V2_FUNCTIONS_H
#define QLINK_DUCKDB_V2_FUNCTIONS_H

#include "capi.h"

struct qd_db;

/* Register qlink_load, the generic scalar and aggregate functions and the
 * table functions behind plugin table functions. 0 or -1. */
int qd_register_functions_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db);

#endif /* QLINK_DUCKDB_V2_FUNCTIONS_H */
