/* SPDX-License-Identifier: Apache-2.0 */
/* Rows of VARCHAR cells, row-major: the catalog functions' results
 * (rows.c), computed at bind from the database's state. */
#ifndef QLINK_DUCKDB_ROWS_H
#define QLINK_DUCKDB_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "qlink/lib/status.h"

struct qd_db;

struct qd_rows {
  int32_t n_cols;
  int64_t n_rows, cap;
  char **cells;
  int64_t next; /* the next row to return (single thread) */
};
struct qd_rows *qd_rows_new(int32_t n_cols);
void qd_rows_free(void *rows);
int qd_rows_add(struct qd_rows *r, const char *const *cells);
/* One row (name, version, abi_version, path, description) per loaded plugin. */
int qd_rows_plugins(struct qd_db *db, struct qd_rows *r);
/* The table names of the schema provider SPEC (`len` bytes, parsed by
 * ql_table_spec_parse_n: a NUL byte among them is an error), one row each. */
int qd_rows_tables(struct qd_db *db, const char *spec, size_t len, struct qd_rows *r, struct ql_error *err);
/* qlink_allow's work (dir non-NULL: `dir` added) and qlink_seal's (dir
 * NULL: the list sealed), then every allowed directory, one row each.
 * Refused naming the setting once lock_configuration was seen true or
 * enable_external_access false (qd_follow), or by the list once sealed. */
int qd_rows_allow(struct qd_db *db, const char *dir, struct qd_rows *r, struct ql_error *err);

#endif /* QLINK_DUCKDB_ROWS_H */
