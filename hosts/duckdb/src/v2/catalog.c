/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's catalog functions (catalog.h): qlink_plugins(),
 * qlink_tables('SPEC'), qlink_allow('DIR'), qlink_seal() and
 * qlink_attach('NAME', 'SPEC'), a query PRAGMA here (below). The first
 * four compute their rows at bind and return them from one thread
 * (rows.c). */
#include "v2/catalog.h"

#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "common/db.h"
#include "common/rows.h"
#include "common/sql.h"
#include "v2/bind.h"
#include "v2/register.h"
#include "v2/rows.h"

/* ---- catalog functions: rows of VARCHAR computed at bind, one thread */

static int qd_rows_columns(duckdb_v2_table_function_bind_info_handle result, duckdb_v2_context_handle context,
                           int32_t n, const char *const *names) {
  duckdb_v2_factory_handle factory = NULL;
  duckdb_v2_logical_type_handle varchar = NULL;
  duckdb_v2_str vt = qd_str("VARCHAR");
  if (duckdb_v2_context_get_factory(context, &factory, NULL) != DUCKDB_V2_ERROR_NONE ||
      duckdb_v2_factory_create_type_from_text(factory, &vt, &varchar, NULL) != DUCKDB_V2_ERROR_NONE)
    return -1;
  int rc = 0;
  for (int32_t c = 0; c < n && rc == 0; c++) {
    duckdb_v2_identifier_t name = qd_str(names[c]);
    if (duckdb_v2_table_function_bind_add_result_column(result, &name, varchar, NULL) != DUCKDB_V2_ERROR_NONE) rc = -1;
  }
  duckdb_v2_logical_type_destroy(&varchar);
  return rc;
}

static void qd_rows_done(duckdb_v2_function_bind_info_handle info, struct qd_rows *r, duckdb_v2_error_info_handle *err,
                         const char *label, int rc, struct ql_error *qerr) {
  if (rc != QL_OK) {
    qd_fail_error_v2(err, DUCKDB_V2_ERROR_INPUT_INVALID, label, qerr);
    qd_rows_free(r);
    return;
  }
  duckdb_v2_opaque data = {r, qd_rows_free, NULL};
  duckdb_v2_function_bind_set_bind_data(info, &data, NULL);
}

/* The rows and their VARCHAR columns, then DuckDB's settings (qd_follow). */
static int qd_rows_start(duckdb_v2_function_bind_info_handle info, duckdb_v2_table_function_bind_info_handle result,
                         duckdb_v2_context_handle context, int32_t n, const char *const *cols, struct qd_rows **r,
                         struct ql_error *qerr) {
  *r = qd_rows_new(n);
  if (!*r || qd_rows_columns(result, context, n, cols) != 0) return ql_error_set(qerr, QL_ENOMEM, "out of memory");
  return qd_follow_settings_v2(qd_user_data(info), context, qerr);
}

static void qd_plugins_bind_v2(duckdb_v2_function_bind_info_handle info, duckdb_v2_table_function_bind_info_handle result,
                               duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  static const char *const cols[] = {"name", "version", "abi_version", "path", "description"};
  struct qd_rows *r = NULL;
  struct ql_error qerr = {0};
  int rc = qd_rows_start(info, result, context, 5, cols, &r, &qerr);
  if (rc == QL_OK && qd_rows_plugins(qd_user_data(info), r) != 0) rc = ql_error_set(&qerr, QL_ENOMEM, "out of memory");
  qd_rows_done(info, r, err, "qlink_plugins()", rc, &qerr);
}

static void qd_tables_bind_v2(duckdb_v2_function_bind_info_handle info, duckdb_v2_table_function_bind_info_handle result,
                              duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  static const char *const cols[] = {"table_name"};
  struct qd_rows *r = NULL;
  char *spec = NULL, *label = NULL;
  size_t spec_len = 0;
  struct ql_error qerr = {0};
  int rc = qd_rows_start(info, result, context, 1, cols, &r, &qerr);
  if (rc == QL_OK) rc = qd_arg_spec(info, 0, "the spec", &spec, &spec_len, &qerr);
  if (rc == QL_OK) label = qd_printf("qlink_tables('%s')", spec);
  if (rc == QL_OK) rc = qd_rows_tables(qd_user_data(info), spec, spec_len, r, &qerr);
  qd_rows_done(info, r, err, label ? label : "qlink_tables", rc, &qerr);
  free(label);
  free(spec);
}

/* qlink_allow('DIR') and qlink_seal() (no argument). */
static void qd_allow_bind_v2(duckdb_v2_function_bind_info_handle info, duckdb_v2_table_function_bind_info_handle result,
                             duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  static const char *const cols[] = {"allowed"};
  struct qd_rows *r = NULL;
  char *dir = NULL, *label = NULL;
  struct ql_error qerr = {0};
  idx_t n_args = 0;
  duckdb_v2_function_bind_get_arg_count(info, &n_args, NULL, NULL, NULL, NULL);
  /* The settings first: lock_configuration and enable_external_access refuse it. */
  int rc = qd_rows_start(info, result, context, 1, cols, &r, &qerr);
  if (rc == QL_OK && n_args) rc = qd_arg_text(info, 0, "the directory", &dir, &qerr);
  if (rc == QL_OK && n_args) label = qd_printf("qlink_allow('%s')", dir);
  if (rc == QL_OK) rc = qd_rows_allow(qd_user_data(info), dir, r, &qerr);
  qd_rows_done(info, r, err, label ? label : n_args ? "qlink_allow" : "qlink_seal()", rc, &qerr);
  free(label);
  free(dir);
}

/* ---- qlink_attach('NAME', 'SPEC'): a query PRAGMA
 *
 * C API V2 runs statements only on a connection (duckdb_v2_statement_execute),
 * and a callback's context reaches no connection or instance (only its
 * factory, config, file system and log); registration after load needs a
 * connection too. A query PRAGMA is the one way V2 gives an extension to
 * run SQL: DuckDB runs the query it returns in place of the PRAGMA, on the
 * caller's connection and in its transaction. So the V2 build holds no
 * connection; `CALL qlink_attach` (a table function, whose bind cannot run
 * DDL) says to use the PRAGMA. */

static void qd_attach_query_v2(duckdb_v2_function_bind_info_handle info, duckdb_v2_pragma_function_query_info_handle result,
                               duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  struct qd_db *db = qd_user_data(info);
  char *name = NULL, *spec = NULL, *label = NULL, *sql = NULL;
  struct qd_rows *r = qd_rows_new(1);
  struct ql_error qerr = {0};
  int rc = r ? qd_follow_settings_v2(db, context, &qerr) : ql_error_set(&qerr, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_arg_text(info, 0, "the schema name", &name, &qerr);
  /* the spec is checked for NUL bytes here: it is also written into SQL below */
  if (rc == QL_OK) rc = qd_arg_text(info, 1, "the spec", &spec, &qerr);
  if (rc == QL_OK) label = qd_printf("qlink_attach('%s', ...)", name);
  if (rc == QL_OK) rc = qd_rows_tables(db, spec, strlen(spec), r, &qerr);
  if (rc == QL_OK && !(sql = qd_attach_sql(name, spec, r, 1))) rc = ql_error_set(&qerr, QL_ENOMEM, "out of memory");
  if (rc != QL_OK) qd_fail_error_v2(err, DUCKDB_V2_ERROR_INPUT_INVALID, label ? label : "qlink_attach", &qerr);
  else qd_set_query(result, sql, err);
  free(sql);
  free(label);
  qd_rows_free(r);
  free(name);
  free(spec);
}

static void qd_attach_call_v2(duckdb_v2_function_bind_info_handle info, duckdb_v2_table_function_bind_info_handle result,
                              duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  (void)info, (void)result, (void)context;
  qd_v2_fail(err, "CALL qlink_attach: " QD_NO_CALL_DDL "PRAGMA qlink_attach('NAME', 'SPEC')");
}

int qd_register_catalog_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db) {
  int ok = qd_register_v2(extension, factory, db, "qlink_plugins", 0, NULL, qd_plugins_bind_v2, qd_rows_init_v2, NULL,
                          qd_rows_emit_v2, NULL) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_tables", 1, NULL, qd_tables_bind_v2, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, NULL) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_allow", 1, NULL, qd_allow_bind_v2, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, NULL) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_seal", 0, NULL, qd_allow_bind_v2, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, NULL) == 0;
  ok = ok && qd_register_pragma_v2(extension, factory, db, "qlink_attach", 2, NULL, qd_attach_query_v2) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_attach", 2, NULL, qd_attach_call_v2, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, NULL) == 0;
  return ok ? 0 : -1;
}
