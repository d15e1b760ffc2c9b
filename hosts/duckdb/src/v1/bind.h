/* SPDX-License-Identifier: Apache-2.0 */
/* The V1 build's binds (bind.c): what every table function's bind of this
 * build does first (DuckDB's settings), reads (VARCHAR arguments) and
 * fails with. */
#ifndef QLINK_DUCKDB_V1_BIND_H
#define QLINK_DUCKDB_V1_BIND_H

#include <stddef.h>

#include "capi.h"
#include "qlink/lib/status.h"

struct qd_db;

/* DuckDB's settings of `ctx` through qd_follow (a NULL context gives none:
 * refused). */
int qd_follow_settings(struct qd_db *db, duckdb_client_context ctx, struct ql_error *err);
/* The same for a table function's bind. */
int qd_follow_bind(struct qd_db *db, duckdb_bind_info info, struct ql_error *err);
/* A VARCHAR value's text (*out, duckdb_free it), checked by
 * ql_text_check_nul as `what` (a NUL byte inside is an error naming its
 * offset); a NULL value (or none) is refused. */
int qd_value_text(duckdb_value v, const char *what, char **out, struct ql_error *err);
/* The same for a bind's positional parameter i. */
int qd_param_text(duckdb_bind_info info, idx_t i, const char *what, char **out, struct ql_error *err);
/* A spec, the bind's positional parameter i: its text (*out, duckdb_free
 * it) and byte length (*len) for ql_table_spec_parse_n, which refuses a NUL
 * byte inside; a NULL value is refused here. */
int qd_param_spec(duckdb_bind_info info, idx_t i, const char *what, char **out, size_t *len, struct ql_error *err);
/* Fail a table function's bind with "LABEL: <err's message>" (releases err). */
void qd_bind_fail(duckdb_bind_info info, const char *label, struct ql_error *err);

#endif /* QLINK_DUCKDB_V1_BIND_H */
