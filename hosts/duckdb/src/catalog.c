/* The DuckDB host's catalog functions: qlink_plugins(), qlink_tables('SPEC'),
 * qlink_allow('DIR') and qlink_attach('NAME', 'SPEC'). Each computes its
 * rows at bind (a few strings) and returns them from one thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext_internal.h"
#include "qlink/lib/host.h"
#include "qlink/lib/plugin_dirs.h"
#include "qlink/lib/status.h"


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

static char *qd_arg(duckdb_bind_info info, idx_t i) {
  duckdb_value v = duckdb_bind_get_parameter(info, i);
  char *s = v ? duckdb_get_varchar(v) : NULL;
  if (v) duckdb_destroy_value(&v);
  return s;
}

static void qd_fail(duckdb_bind_info info, struct qd_rows *r, const char *fmt, const char *a, const char *b) {
  char msg[1024];
  snprintf(msg, sizeof(msg), fmt, a, b);
  duckdb_bind_set_error(info, msg);
  qd_rows_free(r);
}

/* ---- qlink_plugins() */

static void qd_plugins_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"name", "version", "abi_version", "path", "description"};
  struct qd_rows *r = qd_rows_bind(info, 5, cols);
  if (!r) return duckdb_bind_set_error(info, "qlink_plugins: out of memory");
  if (qd_rows_plugins(db, r) != 0) return qd_fail(info, r, "qlink_plugins: out of memory%s%s", "", "");
  duckdb_bind_set_bind_data(info, r, qd_rows_free);
}

/* ---- qlink_tables('SPEC') and qlink_attach('NAME', 'SPEC') */

static void qd_tables_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"table_name"};
  struct qd_rows *r = qd_rows_bind(info, 1, cols);
  char *spec = qd_arg(info, 0);
  struct ql_error err = {0};
  if (!r || !spec) {
    duckdb_free(spec);
    return qd_fail(info, r, "qlink_tables: out of memory%s%s", "", "");
  }
  if (qd_rows_tables(db, spec, r, &err) != QL_OK) {
    qd_fail(info, r, "qlink_tables('%s'): %s", spec, ql_error_message(&err));
    ql_error_release(&err);
    duckdb_free(spec);
    return;
  }
  duckdb_free(spec);
  duckdb_bind_set_bind_data(info, r, qd_rows_free);
}

static void qd_attach_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"table_name"};
  struct qd_rows *r = qd_rows_bind(info, 1, cols);
  char *name = qd_arg(info, 0), *spec = qd_arg(info, 1);
  struct ql_error err = {0};
  if (!r || !name || !spec) {
    duckdb_free(name), duckdb_free(spec);
    return qd_fail(info, r, "qlink_attach: out of memory%s%s", "", "");
  }
  if (qd_rows_tables(db, spec, r, &err) != QL_OK) {
    qd_fail(info, r, "qlink_attach('%s', ...): %s", name, ql_error_message(&err));
    ql_error_release(&err);
    duckdb_free(name), duckdb_free(spec);
    return;
  }
  /* A DuckDB schema NAME of views over qlink_scan(SPEC, table := T). */
  char sql[QD_DDL_MAX];
  if (qd_attach_sql(name, spec, r, 0, sql, sizeof(sql)) != 0) {
    qd_fail(info, r, "qlink_attach('%s', '%s'): too many tables for one statement", name, spec);
    duckdb_free(name), duckdb_free(spec);
    return;
  }
  duckdb_result res;
  /* Not under db->mutex: CREATE VIEW binds qlink_scan, which loads plugins under it. */
  pthread_mutex_lock(&db->ddl_mutex);
  duckdb_state st = duckdb_query(db->ddl, sql, &res);
  pthread_mutex_unlock(&db->ddl_mutex);
  if (st != DuckDBSuccess) {
    qd_fail(info, r, "qlink_attach('%s', ...): %s", name, duckdb_result_error(&res));
  } else {
    duckdb_bind_set_bind_data(info, r, qd_rows_free);
  }
  duckdb_destroy_result(&res);
  duckdb_free(name), duckdb_free(spec);
}

/* ---- qlink_allow('DIR') */

static void qd_allow_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"allowed"};
  struct qd_rows *r = qd_rows_bind(info, 1, cols);
  char *dir = qd_arg(info, 0);
  if (!r || !dir) {
    duckdb_free(dir);
    return qd_fail(info, r, "qlink_allow: out of memory%s%s", "", "");
  }
  /* The owner hands the connection on with lock_configuration: from then on SQL cannot widen the list. */
  duckdb_client_context ctx = NULL;
  duckdb_table_function_get_client_context(info, &ctx);
  duckdb_config_option_scope scope;
  duckdb_value lock = ctx ? duckdb_client_context_get_config_option(ctx, "lock_configuration", &scope) : NULL;
  int locked = lock && duckdb_get_bool(lock);
  if (lock) duckdb_destroy_value(&lock);
  if (ctx) duckdb_destroy_client_context(&ctx);
  struct ql_error err = {0};
  if (qd_rows_allow(db, dir, locked, r, &err) != QL_OK) {
    qd_fail(info, r, "qlink_allow('%s'): %s", dir, ql_error_message(&err));
    ql_error_release(&err);
    duckdb_free(dir);
    return;
  }
  duckdb_free(dir);
  duckdb_bind_set_bind_data(info, r, qd_rows_free);
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
  return qd_register(con, db, "qlink_allow", 1, qd_allow_bind);
}
