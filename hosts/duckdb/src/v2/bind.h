/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's binds (bind.c): small wrappers over the V2 calling
 * convention, VARCHAR arguments and DuckDB's settings of a context. */
#ifndef QLINK_DUCKDB_V2_BIND_H
#define QLINK_DUCKDB_V2_BIND_H

#include <string.h>

#include "capi.h"
#include "qlink/lib/status.h"

struct qd_db;

/* Why `CALL qlink_attach` and `CALL qlink_load` fail in the V2 build. */
#define QD_NO_CALL_DDL                                                                                                 \
  "DuckDB's C API V2 runs statements only on a connection, and a table function's bind gets none (its context "      \
  "reaches no connection or instance); the V2 build runs it as a PRAGMA, on the caller's connection: "

static inline duckdb_v2_str qd_str(const char *s) { return (duckdb_v2_str){s, s ? strlen(s) : 0}; }
/* The default of every VARCHAR named parameter (register.c): one NUL byte,
 * which no argument can be (ql_text_check_nul refuses NUL bytes), so a named
 * argument left out is told apart from one passed as NULL (refused). */
extern const duckdb_v2_str qd_absent;
/* Fail a V2 callback: `msg` into DuckDB's error slot, as an invalid input
 * (qd_v2_fail) or with `code`. */
void qd_v2_fail(duckdb_v2_error_info_handle *err, const char *msg);
void qd_v2_fail_code(duckdb_v2_error_info_handle *err, DUCKDB_V2_ERROR code, const char *msg);
/* Argument `index` of a bind as a malloc'd string (*out), checked by
 * ql_text_check_nul as `what` (NULL refused; a NUL byte inside is an error
 * naming its offset). */
int qd_arg_text(duckdb_v2_function_bind_info_handle info, idx_t index, const char *what, char **out,
                struct ql_error *err);
/* A spec, argument `index`: its malloc'd text (*out) and byte length (*len)
 * for ql_table_spec_parse_n, which refuses a NUL byte inside; NULL is
 * refused here. */
int qd_arg_spec(duckdb_v2_function_bind_info_handle info, idx_t index, const char *what, char **out, size_t *len,
                struct ql_error *err);
/* Named VARCHAR argument `name` likewise; left out: QL_OK and *out NULL. */
int qd_named_text(duckdb_v2_function_bind_info_handle info, const char *name, const char *what, char **out,
                  struct ql_error *err);
/* Fail a V2 callback with "LABEL: <qerr's message>" and `code` (releases qerr). */
void qd_fail_error_v2(duckdb_v2_error_info_handle *err, DUCKDB_V2_ERROR code, const char *label, struct ql_error *qerr);
/* The function's user data (the struct qd_db). */
void *qd_user_data(duckdb_v2_function_bind_info_handle info);
/* DuckDB's settings of `ctx` through qd_follow. */
int qd_follow_settings_v2(struct qd_db *db, duckdb_v2_context_handle ctx, struct ql_error *err);

#endif /* QLINK_DUCKDB_V2_BIND_H */
