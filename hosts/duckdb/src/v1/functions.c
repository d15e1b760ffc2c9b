/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB host, C API V1: a plugin's functions as DuckDB functions (the
 * V1 glue, functions.h; what both builds share is common/plugin_fns.c's,
 * V2's glue is v2/functions.c).
 *
 *   CALL qlink_load('PLUGIN');                   -- every function DuckDB can express
 *   CALL qlink_load('PLUGIN', name := 'NAME');   -- one; an error if DuckDB cannot express it
 *
 * One row per catalogue function: (name, kind, status), status "loaded",
 * "already loaded" or "refused: <why>" (the whole-plugin form lists what it
 * refused; the one-name form fails with that reason instead).
 *
 * Scalar functions: a DuckDB scalar function of the plugin's name with ANY
 * parameters and the return type the plugin's return_type gives for its
 * declared argument formats. Bind checks each argument's DuckDB type
 * against the declared format (an error names the function, the argument
 * and both types); each call reads DuckDB's vectors into libqlink cells,
 * builds the argument struct array with ql_args_build (the coercion the
 * SQLite host shares) and copies the result array into DuckDB's vector.
 * NULLs reach the plugin (DuckDB's special NULL handling), which decides.
 *
 * Aggregates: a DuckDB aggregate whose parameters are the declared formats'
 * DuckDB types (DuckDB casts to them; the aggregate C API has no bind), one
 * ql_accumulator per DuckDB state: update feeds each state its rows,
 * combine merges state arrays, finalize evaluates.
 *
 * Table functions: DuckDB's C API gives a table function one fixed list of
 * parameters and one name, and a plugin table function's arity is not in
 * the ABI. So qlink registers qlink_table_function_0 .. _8 (plugin, name
 * and 0..8 ANY arguments), whose bind calls ql_table_function.call with the
 * arguments as literals and binds the returned provider exactly as
 * qlink_scan does (scan.c, which also runs its scans), and qlink_load
 * creates a table macro NAME with one overload per arity 0..8 over them
 * (in the database's main schema, on the extension's own connection).
 *
 * Refused: functions that declare no argument formats (DuckDB fixes the
 * return type at registration), formats DuckDB values cannot fill, window
 * functions and planners (the C API has neither), object stores.
 */
#include "v1/functions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "common/db.h"
#include "common/plugin_fns.h"
#include "common/rows.h"
#include "common/sql.h"
#include "common/types.h"
#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"
#include "v1/bind.h"
#include "v1/scan.h"
#include "v1/vectors.h"

/* The argument vectors of a chunk. */
static void chunk_vectors(duckdb_data_chunk input, int32_t n, duckdb_vector *out) {
  for (int32_t a = 0; a < n; a++) out[a] = duckdb_data_chunk_get_vector(input, (idx_t)a);
}

/* ---------------------------------------------------------------- scalars */

static void scalar_bind(duckdb_bind_info info) {
  struct qd_fn *f = duckdb_scalar_function_bind_get_extra_info(info);
  idx_t n = duckdb_scalar_function_bind_get_argument_count(info);
  for (idx_t a = 0; a < n && a < (idx_t)f->n_args; a++) {
    duckdb_expression e = duckdb_scalar_function_bind_get_argument(info, a);
    duckdb_logical_type lt = e ? duckdb_expression_return_type(e) : NULL;
    int32_t id = lt ? (int32_t)duckdb_get_type_id(lt) : 0;
    if (lt) duckdb_destroy_logical_type(&lt);
    if (e) duckdb_destroy_expression(&e);
    char *msg = NULL;
    if (qd_fn_check_arg(f, (int32_t)a, id, &msg) != 0) {
      duckdb_scalar_function_bind_set_error(info, qd_text_or_oom(msg));
      free(msg);
      return;
    }
  }
}

static void scalar_call(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  struct qd_fn *f = duckdb_scalar_function_get_extra_info(info);
  duckdb_vector args[QD_MAX_ARGS];
  chunk_vectors(input, f->n_args, args);
  struct ql_error err = {0};
  if (qd_fn_scalar(f, args, duckdb_data_chunk_get_size(input), output, &err) != QL_OK) {
    char *msg = qd_fn_message(f, &err);
    duckdb_scalar_function_set_error(info, qd_text_or_oom(msg));
    free(msg);
  }
}

static int register_scalar(struct qd_db *db, const char *name, struct qd_fn *f, struct ql_error *err) {
  duckdb_scalar_function sf = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(sf, name);
  duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);
  for (int32_t a = 0; a < f->n_args; a++) duckdb_scalar_function_add_parameter(sf, any);
  duckdb_destroy_logical_type(&any);
  duckdb_logical_type ret = qd_logical_type(&f->ret);
  duckdb_scalar_function_set_return_type(sf, ret);
  duckdb_destroy_logical_type(&ret);
  if (f->volatile_) duckdb_scalar_function_set_volatile(sf);
  duckdb_scalar_function_set_special_handling(sf);
  duckdb_scalar_function_set_extra_info(sf, f, qd_fn_free); /* DuckDB owns f from here */
  duckdb_scalar_function_set_bind(sf, scalar_bind);
  duckdb_scalar_function_set_function(sf, scalar_call);
  pthread_mutex_lock(&db->ddl_mutex);
  duckdb_state st = duckdb_register_scalar_function(db->ddl, sf);
  pthread_mutex_unlock(&db->ddl_mutex);
  duckdb_destroy_scalar_function(&sf);
  if (st != DuckDBSuccess) return ql_error_set(err, QL_EINTERNAL, "DuckDB refused to register scalar function %s", name);
  return QL_OK;
}

/* ------------------------------------------------------------- aggregates */

static idx_t agg_size(duckdb_function_info info) {
  (void)info;
  return (idx_t)qd_agg_state_size();
}

static void agg_init(duckdb_function_info info, duckdb_aggregate_state state) {
  qd_agg_init(state, duckdb_aggregate_function_get_extra_info(info));
}

static void agg_fail(duckdb_function_info info, struct qd_fn *f, struct ql_error *err) {
  char *msg = qd_fn_message(f, err);
  duckdb_aggregate_function_set_error(info, qd_text_or_oom(msg));
  free(msg);
}

static void agg_update(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states) {
  struct qd_fn *f = duckdb_aggregate_function_get_extra_info(info);
  duckdb_vector args[QD_MAX_ARGS];
  chunk_vectors(input, f->n_args, args);
  struct ql_error err = {0};
  if (qd_agg_update(f, args, duckdb_data_chunk_get_size(input), (void *const *)states, &err) != QL_OK)
    agg_fail(info, f, &err);
}

static void agg_combine(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_aggregate_state *target,
                        idx_t count) {
  struct qd_fn *f = duckdb_aggregate_function_get_extra_info(info);
  struct ql_error err = {0};
  if (qd_agg_combine(f, (void *const *)source, (void *const *)target, count, &err) != QL_OK) agg_fail(info, f, &err);
}

static void agg_finalize(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_vector result,
                         idx_t count, idx_t offset) {
  struct qd_fn *f = duckdb_aggregate_function_get_extra_info(info);
  struct ql_error err = {0};
  if (qd_agg_finalize(f, (void *const *)source, count, result, offset, &err) != QL_OK) agg_fail(info, f, &err);
}

static void agg_destroy(duckdb_aggregate_state *states, idx_t count) { qd_agg_destroy((void *const *)states, count); }

static int register_aggregate(struct qd_db *db, const char *name, struct qd_fn *f, struct ql_error *err) {
  duckdb_aggregate_function af = duckdb_create_aggregate_function();
  duckdb_aggregate_function_set_name(af, name);
  for (int32_t a = 0; a < f->n_args; a++) {
    struct qd_type t;
    char why[128];
    qd_type_parse(f->formats[a], &t, why, sizeof(why)); /* a supported format: always maps */
    duckdb_logical_type lt = qd_logical_type(&t);
    duckdb_aggregate_function_add_parameter(af, lt);
    duckdb_destroy_logical_type(&lt);
  }
  duckdb_logical_type ret = qd_logical_type(&f->ret);
  duckdb_aggregate_function_set_return_type(af, ret);
  duckdb_destroy_logical_type(&ret);
  duckdb_aggregate_function_set_functions(af, agg_size, agg_init, agg_update, agg_combine, agg_finalize);
  duckdb_aggregate_function_set_destructor(af, agg_destroy);
  duckdb_aggregate_function_set_special_handling(af);
  duckdb_aggregate_function_set_extra_info(af, f, qd_fn_free); /* DuckDB owns f from here */
  pthread_mutex_lock(&db->ddl_mutex);
  duckdb_state st = duckdb_register_aggregate_function(db->ddl, af);
  pthread_mutex_unlock(&db->ddl_mutex);
  duckdb_destroy_aggregate_function(&af);
  if (st != DuckDBSuccess) {
    return ql_error_set(err, QL_EINTERNAL, "DuckDB refused to register aggregate function %s", name);
  }
  return QL_OK;
}

/* -------------------------------------------------------- table functions */

/* A DuckDB constant as a qd_const; text (malloc'd by DuckDB) in *text,
 * refused when it holds a NUL byte (`what` names the argument). */
static int const_of(duckdb_value v, struct qd_const *c, char **text, const char *what, struct ql_error *err) {
  memset(c, 0, sizeof(*c));
  *text = NULL;
  if (duckdb_is_null_value(v)) {
    c->is_null = 1;
    return QL_OK;
  }
  duckdb_logical_type lt = duckdb_get_value_type(v);
  c->type = (int32_t)duckdb_get_type_id(lt);
  switch (qd_cell_kind_of(c->type)) {
    case QL_CELL_INTEGER:
      if (c->type == DUCKDB_TYPE_BOOLEAN) c->i = duckdb_get_bool(v);
      else if (c->type == DUCKDB_TYPE_UBIGINT) c->u = duckdb_get_uint64(v);
      else c->i = duckdb_get_int64(v);
      break;
    case QL_CELL_REAL: c->f = duckdb_get_double(v); break;
    case QL_CELL_TEXT: {
      int rc = qd_value_text(v, what, text, err);
      c->text = *text;
      return rc;
    }
    default: break;
  }
  return QL_OK;
}

static void table_function_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  char *plugin = NULL, *name = NULL;
  idx_t n = duckdb_bind_get_parameter_count(info) - 2;
  struct qd_const args[QD_TF_MAX_ARGS];
  char *texts[QD_TF_MAX_ARGS] = {0};
  struct ql_error err = {0};
  int rc = qd_follow_bind(db, info, &err);
  if (rc == QL_OK) rc = qd_param_text(info, 0, "the plugin name", &plugin, &err);
  if (rc == QL_OK) rc = qd_param_text(info, 1, "the function name", &name, &err);
  for (idx_t i = 0; rc == QL_OK && i < n && i < QD_TF_MAX_ARGS; i++) {
    char what[32];
    snprintf(what, sizeof(what), "argument %d", (int)i + 1);
    duckdb_value v = duckdb_bind_get_parameter(info, i + 2);
    rc = const_of(v, &args[i], &texts[i], what, &err);
    duckdb_destroy_value(&v);
  }
  struct qd_bind *b = NULL;
  if (rc == QL_OK) rc = qd_tf_open(db, plugin, name, args, n, &b, &err);
  if (rc == QL_OK) rc = qd_bind_provider(info, b, &err);
  for (idx_t i = 0; i < n && i < QD_TF_MAX_ARGS; i++) duckdb_free(texts[i]);
  duckdb_free(plugin);
  duckdb_free(name);
  if (rc != QL_OK) {
    qd_bind_fail(info, b && b->label ? b->label : "qlink table function", &err);
    qd_bind_free(b);
    return;
  }
  duckdb_bind_set_bind_data(info, b, qd_bind_free);
}

/* A table macro NAME with one overload per arity over qlink_table_function_N.
 * DuckDB binds a macro without parameters when it is created, so the
 * 0-argument overload is kept only when the function accepts no arguments
 * (then `NAME()` is DuckDB's no-matching-overload error, not the plugin's). */
static int register_table_macro(struct qd_db *db, const char *plugin, const char *name, struct ql_error *err) {
  int rc = QL_OK;
  pthread_mutex_lock(&db->ddl_mutex);
  for (int first = 0; first <= 1; first++) {
    char *sql = qd_table_macro_sql(plugin, name, first);
    if (!sql) {
      rc = ql_error_set(err, QL_ENOMEM, "out of memory for the table macro %s", name);
      break;
    }
    duckdb_result res;
    duckdb_state st = duckdb_query(db->ddl, sql, &res);
    free(sql);
    if (st != DuckDBSuccess && first == 1) {
      rc = ql_error_set(err, QL_EINTERNAL, "creating the table macro %s: %s", name, duckdb_result_error(&res));
    }
    duckdb_destroy_result(&res);
    if (st == DuckDBSuccess) break;
  }
  pthread_mutex_unlock(&db->ddl_mutex);
  return rc;
}

/* ------------------------------------------------------------ qlink_load */

static int load_one(void *ctx, struct qd_db *db, const struct ql_plugin *p, const struct ql_item_info *it,
                    struct ql_error *err) {
  (void)ctx;
  if (it->kind == QL_ITEM_TABLE_FUNCTION) return register_table_macro(db, p->name, it->name, err);
  struct qd_fn *f = NULL;
  int rc = qd_fn_open(p, it, &f, err);
  if (rc != QL_OK) return rc;
  return it->kind == QL_ITEM_SCALAR_FUNCTION ? register_scalar(db, it->name, f, err)
                                             : register_aggregate(db, it->name, f, err);
}

static void load_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"name", "kind", "status"};
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  for (int c = 0; c < 3; c++) duckdb_bind_add_result_column(info, cols[c], varchar);
  duckdb_destroy_logical_type(&varchar);
  struct qd_rows *r = qd_rows_new(3);
  char *plugin = NULL, *only = NULL, *label = NULL;
  struct ql_error err = {0};
  int rc = r ? qd_follow_bind(db, info, &err) : ql_error_set(&err, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_param_text(info, 0, "the plugin name", &plugin, &err);
  duckdb_value nv = rc == QL_OK ? duckdb_bind_get_named_parameter(info, "name") : NULL;
  if (nv) rc = qd_value_text(nv, "argument \"name\"", &only, &err);
  if (nv) duckdb_destroy_value(&nv);
  if (rc == QL_OK) label = qd_printf("qlink_load('%s')", plugin);
  if (rc == QL_OK) rc = qd_load_plugin(db, plugin, only, 1, load_one, NULL, r, &err);
  if (rc != QL_OK) {
    qd_bind_fail(info, label ? label : "qlink_load", &err);
    qd_rows_free(r);
  } else {
    duckdb_bind_set_bind_data(info, r, qd_rows_free);
  }
  free(label);
  duckdb_free(plugin);
  duckdb_free(only);
}

static void load_init(duckdb_init_info info) { duckdb_init_set_max_threads(info, 1); }

static void load_emit(duckdb_function_info info, duckdb_data_chunk out) {
  struct qd_rows *r = duckdb_function_get_bind_data(info);
  idx_t n = 0, cap = duckdb_vector_size();
  for (; r->next < r->n_rows && n < cap; r->next++, n++) {
    for (int c = 0; c < 3; c++) {
      const char *s = r->cells[r->next * 3 + c] ? r->cells[r->next * 3 + c] : "";
      duckdb_vector_assign_string_element_len(duckdb_data_chunk_get_vector(out, (idx_t)c), n, s, strlen(s));
    }
  }
  duckdb_data_chunk_set_size(out, n);
}

int qd_register_functions(duckdb_connection con, struct qd_db *db) {
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, "qlink_load");
  duckdb_table_function_add_parameter(f, varchar);
  duckdb_table_function_add_named_parameter(f, "name", varchar);
  duckdb_table_function_set_extra_info(f, db, NULL);
  duckdb_table_function_set_bind(f, load_bind);
  duckdb_table_function_set_init(f, load_init);
  duckdb_table_function_set_function(f, load_emit);
  int failed = duckdb_register_table_function(con, f) != DuckDBSuccess;
  duckdb_destroy_table_function(&f);
  for (int k = 0; !failed && k <= QD_TF_MAX_ARGS; k++) {
    char name[64];
    snprintf(name, sizeof(name), "qlink_table_function_%d", k);
    f = duckdb_create_table_function();
    duckdb_table_function_set_name(f, name);
    duckdb_table_function_add_parameter(f, varchar);
    duckdb_table_function_add_parameter(f, varchar);
    for (int i = 0; i < k; i++) duckdb_table_function_add_parameter(f, any);
    duckdb_table_function_set_extra_info(f, db, NULL);
    duckdb_table_function_set_bind(f, table_function_bind);
    duckdb_table_function_set_init(f, qd_scan_init);
    duckdb_table_function_set_local_init(f, qd_scan_local_init);
    duckdb_table_function_set_function(f, qd_scan);
    duckdb_table_function_supports_projection_pushdown(f, true);
    failed = duckdb_register_table_function(con, f) != DuckDBSuccess;
    duckdb_destroy_table_function(&f);
  }
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&any);
  return failed ? -1 : 0;
}
