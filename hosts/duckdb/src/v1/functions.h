/* SPDX-License-Identifier: Apache-2.0 */
/* The V1 build's plugin functions (functions.c). */
#ifndef QLINK_DUCKDB_V1_FUNCTIONS_H
#define QLINK_DUCKDB_V1_FUNCTIONS_H

#include "capi.h"

struct qd_db;

/* Register qlink_load and the table functions behind plugin table
 * functions. 0 or -1. */
int qd_register_functions(duckdb_connection con, struct qd_db *db);

#endif /* QLINK_DUCKDB_V1_FUNCTIONS_H */
