/* SPDX-License-Identifier: Apache-2.0 */
/* The V1 build's catalog functions (catalog.h): qlink_plugins(),
 * qlink_tables('SPEC'), qlink_allow('DIR'), qlink_seal() and
 * qlink_attach('NAME', 'SPEC'). Each computes its rows at bind (a few
 * strings) and returns them from one thread. */
#include "v1/catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "common/db.h"
#include "common/rows.h"
#include "common/sql.h"
#include "qlink/lib/status.h"
#include "v1/bind.h"

static struct qd_rows *qd_rows_bind(duckdb_bind_info info, int32_t n_cols, const char *const *names) {
  struct qd_rows *r = qd_rows_new(n_cols);
  if (!r) return NULL;
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  for (int32_t c = 0; c < n_cols; c++) duckdb_bind_add_result_column(info, names[c], varchar);
  duckdb_destroy_logical_type(&varchar);
  return r;
}

static void qd_rows_init(duckdb_init_info info) { duckdb_init_set_max_threads(info, 1); }

static void qd_rows_emit(duckdb_function_info info, duckdb_data_chunk out) {
  struct qd_rows *r = duckdb_function_get_bind_data(info);
  idx_t n = 0, cap = duckdb_vector_size();
  for (; r->next < r->n_rows && n < cap; r->next++, n++) {
    for (int32_t c = 0; c < r->n_cols; c++) {
      const char *s = r->cells[r->next * r->n_cols + c];
      duckdb_vector_assign_string_element_len(duckdb_data_chunk_get_vector(out, (idx_t)c), n, s, strlen(s));
    }
  }
  duckdb_data_chunk_set_size(out, n);
}

/* Fail the bind with "LABEL: <err>" and drop the rows. */
static void qd_fail(duckdb_bind_info info, struct qd_rows *r, const char *label, struct ql_error *err) {
  qd_bind_fail(info, label, err);
  qd_rows_free(r);
}

/* ---- qlink_plugins() */

static void qd_plugins_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"name", "version", "abi_version", "path", "description"};
  struct qd_rows *r = qd_rows_bind(info, 5, cols);
  struct ql_error err = {0};
  if (!r || qd_rows_plugins(db, r) != 0) {
    ql_error_set(&err, QL_ENOMEM, "out of memory");
    return qd_fail(info, r, "qlink_plugins", &err);
  }
  duckdb_bind_set_bind_data(info, r, qd_rows_free);
}

/* ---- qlink_tables('SPEC') and qlink_attach('NAME', 'SPEC') */

static void qd_tables_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"table_name"};
  struct qd_rows *r = qd_rows_bind(info, 1, cols);
  char *spec = NULL, *label = NULL;
  size_t spec_len = 0;
  struct ql_error err = {0};
  int rc = r ? qd_follow_bind(db, info, &err) : ql_error_set(&err, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_param_spec(info, 0, "the spec", &spec, &spec_len, &err);
  if (rc == QL_OK) label = qd_printf("qlink_tables('%s')", spec);
  if (rc == QL_OK) rc = qd_rows_tables(db, spec, spec_len, r, &err);
  if (rc != QL_OK) qd_fail(info, r, label ? label : "qlink_tables", &err);
  else duckdb_bind_set_bind_data(info, r, qd_rows_free);
  free(label);
  duckdb_free(spec);
}

static void qd_attach_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"table_name"};
  struct qd_rows *r = qd_rows_bind(info, 1, cols);
  char *name = NULL, *spec = NULL, *label = NULL, *sql = NULL;
  struct ql_error err = {0};
  int rc = r ? qd_follow_bind(db, info, &err) : ql_error_set(&err, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_param_text(info, 0, "the schema name", &name, &err);
  /* the spec is checked for NUL bytes here: it is also written into SQL below */
  if (rc == QL_OK) rc = qd_param_text(info, 1, "the spec", &spec, &err);
  if (rc == QL_OK) label = qd_printf("qlink_attach('%s', ...)", name);
  if (rc == QL_OK) rc = qd_rows_tables(db, spec, strlen(spec), r, &err);
  /* A DuckDB schema NAME of views over qlink_scan(SPEC, table := T). */
  if (rc == QL_OK && !(sql = qd_attach_sql(name, spec, r, 0))) rc = ql_error_set(&err, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) {
    duckdb_result res;
    /* Not under db->mutex: CREATE VIEW binds qlink_scan, which loads plugins under it. */
    pthread_mutex_lock(&db->ddl_mutex);
    duckdb_state st = duckdb_query(db->ddl, sql, &res);
    pthread_mutex_unlock(&db->ddl_mutex);
    if (st != DuckDBSuccess) rc = ql_error_set(&err, QL_EINVAL, "%s", duckdb_result_error(&res));
    duckdb_destroy_result(&res);
  }
  if (rc != QL_OK) qd_fail(info, r, label ? label : "qlink_attach", &err);
  else duckdb_bind_set_bind_data(info, r, qd_rows_free);
  free(sql);
  free(label);
  duckdb_free(name);
  duckdb_free(spec);
}

/* ---- qlink_allow('DIR') and qlink_seal() */

static void qd_allow_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"allowed"};
  struct qd_rows *r = qd_rows_bind(info, 1, cols);
  int sealing = duckdb_bind_get_parameter_count(info) == 0;
  char *dir = NULL, *label = NULL;
  struct ql_error err = {0};
  /* The settings first: lock_configuration and enable_external_access refuse it. */
  int rc = r ? qd_follow_bind(db, info, &err) : ql_error_set(&err, QL_ENOMEM, "out of memory");
  if (rc == QL_OK && !sealing) rc = qd_param_text(info, 0, "the directory", &dir, &err);
  if (rc == QL_OK && !sealing) label = qd_printf("qlink_allow('%s')", dir);
  if (rc == QL_OK) rc = qd_rows_allow(db, dir, r, &err);
  if (rc != QL_OK) qd_fail(info, r, label ? label : sealing ? "qlink_seal()" : "qlink_allow", &err);
  else duckdb_bind_set_bind_data(info, r, qd_rows_free);
  free(label);
  duckdb_free(dir);
}

static int qd_register(duckdb_connection con, struct qd_db *db, const char *name, int n_args,
                       duckdb_table_function_bind_t bind) {
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, name);
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  for (int i = 0; i < n_args; i++) duckdb_table_function_add_parameter(f, varchar);
  duckdb_destroy_logical_type(&varchar);
  duckdb_table_function_set_extra_info(f, db, NULL);
  duckdb_table_function_set_bind(f, bind);
  duckdb_table_function_set_init(f, qd_rows_init);
  duckdb_table_function_set_function(f, qd_rows_emit);
  duckdb_state st = duckdb_register_table_function(con, f);
  duckdb_destroy_table_function(&f);
  return st == DuckDBSuccess ? 0 : -1;
}

int qd_register_catalog(duckdb_connection con, struct qd_db *db) {
  if (qd_register(con, db, "qlink_plugins", 0, qd_plugins_bind) != 0) return -1;
  if (qd_register(con, db, "qlink_tables", 1, qd_tables_bind) != 0) return -1;
  if (qd_register(con, db, "qlink_attach", 2, qd_attach_bind) != 0) return -1;
  if (qd_register(con, db, "qlink_seal", 0, qd_allow_bind) != 0) return -1;
  return qd_register(con, db, "qlink_allow", 1, qd_allow_bind);
}
