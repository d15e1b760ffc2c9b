/* SPDX-License-Identifier: Apache-2.0 */
/* The SQL text qlink_attach and qlink_load make (sql.c): statement text
 * that grows to fit (nothing is ever cut). */
#ifndef QLINK_DUCKDB_SQL_H
#define QLINK_DUCKDB_SQL_H

#include <stddef.h>

#include "qlink/lib/status.h"

struct qd_rows;

struct qd_text {
  char *s;
  size_t len, cap;
  int failed; /* out of memory: later appends do nothing, qd_text_take gives NULL */
};
void qd_text_add(struct qd_text *t, const char *piece);
void qd_text_addf(struct qd_text *t, const char *fmt, ...) QL_PRINTF_FORMAT(2, 3);
/* `s` as a SQL identifier in double quotes (q '"') or a string literal in
 * single quotes (q '\''). */
void qd_text_quote(struct qd_text *t, const char *s, char q);
/* The text (malloc'd; NULL when an append ran out of memory); t is empty after. */
char *qd_text_take(struct qd_text *t);
/* qlink_attach's statements: schema NAME, then one view per table of
 * `tables` (one column: the names) over qlink_scan(SPEC, "table" := T);
 * with_result: then a SELECT returning the names as column table_name, in
 * order. Malloc'd; NULL without memory. */
char *qd_attach_sql(const char *name, const char *spec, const struct qd_rows *tables, int with_result);
/* The statement creating table macro NAME with overloads for arities
 * first..QD_TF_MAX_ARGS over qlink_table_function_K. Malloc'd; NULL
 * without memory. */
char *qd_table_macro_sql(const char *plugin, const char *name, int first);
/* The statement creating scalar macro NAME(a1, .., aN) over
 * GENERIC('PLUGIN', 'NAME', a1, .., aN): how the V2 build names a plugin's
 * scalar or aggregate function. Malloc'd; NULL without memory. */
char *qd_function_macro_sql(const char *generic, const char *plugin, const char *name, int n_args);

#endif /* QLINK_DUCKDB_SQL_H */
