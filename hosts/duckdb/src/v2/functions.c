/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB host, C API V2: a plugin's functions as DuckDB functions.
 *
 *   PRAGMA qlink_load('PLUGIN');                  -- every function DuckDB can express
 *   PRAGMA qlink_load('PLUGIN', name = 'NAME');   -- one; an error if DuckDB cannot express it
 *
 * The same rows as the V1 build's CALL qlink_load (plugin_fns.c walks the
 * catalogue for both). C API V2 registers functions only while the
 * extension loads (through its extension handle) or through a connection,
 * and a callback's context reaches no connection: so the functions that
 * serve plugin functions are registered at load, generic over the plugin
 * and function they run, and qlink_load names each plugin function with
 * a macro over them, created by the statements its query PRAGMA returns
 * (DuckDB runs them on the caller's connection; the extension holds
 * none):
 *
 * - scalar NAME(a1..aN) AS qlink_scalar_function('PLUGIN', 'NAME', a1..aN)
 *   (qlink_volatile_scalar_function for a volatile one): parameters ANY,
 *   the return type resolved per call site from the plugin's return_type,
 *   each argument's DuckDB type checked against the declared format (the
 *   V1 build's rule and message), NULLs reaching the plugin;
 * - aggregate NAME(a1..aN) AS qlink_aggregate_function('PLUGIN', 'NAME',
 *   a1..aN): bound like the scalar (its bind checks the argument types:
 *   DuckDB casts nothing to ANY), one ql_accumulator per state;
 * - table NAME: the V1 build's table macro over qlink_table_function_0..8,
 *   whose bind calls the plugin's table function and binds the provider
 *   as qlink_scan does, filter pushdown included. The 0-argument overload
 *   exists when the function accepts no arguments (asked here first, since
 *   DuckDB binds that overload when it creates the macro).
 *
 * `CALL qlink_load` (a table function: its bind cannot run DDL) fails
 * naming the PRAGMA. */
#include "v2/functions.h"

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
#include "qlink/lib/text.h"
#include "v2/bind.h"
#include "v2/filters.h"
#include "v2/register.h"
#include "v2/rows.h"
#include "v2/scan.h"
#include "v2/vectors.h"

#define QD_GENERIC_SCALAR "qlink_scalar_function"
#define QD_GENERIC_VOLATILE "qlink_volatile_scalar_function"
#define QD_GENERIC_AGGREGATE "qlink_aggregate_function"
#define QD_LOAD_MARK "qlink_load_mark"

/* ---- binding a call of a generic function: (plugin, name, args...) */

/* The plugin function of a call site, its arguments checked; NULL with the
 * error (a binder error) set. */
static struct qd_fn *bind_fn(duckdb_v2_function_bind_info_handle info, duckdb_v2_context_handle context, int32_t kind,
                             duckdb_v2_error_info_handle *err) {
  struct qd_db *db = qd_user_data(info);
  char *plugin = NULL, *name = NULL, *label = NULL, *msg = NULL;
  struct ql_error qerr = {0};
  struct qd_fn *f = NULL;
  const char *generic = kind == QL_ITEM_SCALAR_FUNCTION ? QD_GENERIC_SCALAR : QD_GENERIC_AGGREGATE;
  int rc = qd_follow_settings_v2(db, context, &qerr);
  if (rc == QL_OK) rc = qd_arg_text(info, 0, "the plugin name", &plugin, &qerr);
  if (rc == QL_OK) rc = qd_arg_text(info, 1, "the function name", &name, &qerr);
  if (rc == QL_OK) label = qd_printf("%s.%s", plugin, name);
  if (rc == QL_OK) rc = qd_fn_find(db, plugin, name, kind, &f, &qerr);
  if (rc != QL_OK) {
    qd_fail_error_v2(err, DUCKDB_V2_ERROR_QUERY_BINDER, label ? label : generic, &qerr);
  } else {
    idx_t fixed = 0, variadic = 0;
    duckdb_v2_function_bind_get_arg_count(info, &fixed, &variadic, NULL, NULL, NULL);
    int ok = 1;
    if ((int64_t)variadic != f->n_args) {
      msg = qd_printf("%s: %llu arguments, the function takes %d", f->label, (unsigned long long)variadic,
                      (int)f->n_args);
      ok = 0;
    }
    for (idx_t a = 0; ok && a < variadic; a++) {
      duckdb_v2_logical_type_handle lt = NULL;
      int32_t id = -1;
      if (duckdb_v2_function_bind_get_arg_type(info, fixed + a, &lt, NULL) == DUCKDB_V2_ERROR_NONE) {
        id = qd_v2_type_id(lt, NULL, NULL);
        duckdb_v2_logical_type_destroy(&lt);
      }
      /* not known yet: DuckDB checks a macro's body when it creates it, its parameters untyped */
      ok = id == QD_T_ANY || qd_fn_check_arg(f, (int32_t)a, id, &msg) == 0;
    }
    if (!ok) {
      qd_v2_fail_code(err, DUCKDB_V2_ERROR_QUERY_BINDER, qd_text_or_oom(msg));
      qd_fn_free(f);
      f = NULL;
    }
  }
  free(msg);
  free(label);
  free(plugin);
  free(name);
  return f;
}

static duckdb_v2_logical_type_handle return_type(const struct qd_fn *f, duckdb_v2_context_handle context) {
  duckdb_v2_factory_handle factory = NULL;
  if (duckdb_v2_context_get_factory(context, &factory, NULL) != DUCKDB_V2_ERROR_NONE) return NULL;
  return qd_v2_logical_type(factory, &f->ret);
}

/* The vectors args[0..n) of a call: its arguments after (plugin, name). */
#define QD_GENERIC_FIXED 2

/* ---------------------------------------------------------------- scalars */

static void scalar_resolve(duckdb_v2_function_bind_info_handle info,
                           duckdb_v2_scalar_function_resolve_types_info_handle result,
                           duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  struct qd_fn *f = bind_fn(info, context, QL_ITEM_SCALAR_FUNCTION, err);
  if (!f) return;
  duckdb_v2_logical_type_handle lt = return_type(f, context);
  if (!lt || duckdb_v2_scalar_function_resolve_types_set_return_type(result, lt, NULL) != DUCKDB_V2_ERROR_NONE) {
    char *msg = qd_printf("%s: DuckDB refused its return type %s", f->label, qd_type_name(f->ret.duckdb));
    qd_v2_fail_code(err, DUCKDB_V2_ERROR_QUERY_BINDER, qd_text_or_oom(msg));
    free(msg);
  }
  if (lt) duckdb_v2_logical_type_destroy(&lt);
  qd_fn_free(f);
}

static void scalar_bind(duckdb_v2_function_bind_info_handle info, duckdb_v2_scalar_function_bind_info_handle result,
                        duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  struct qd_fn *f = bind_fn(info, context, QL_ITEM_SCALAR_FUNCTION, err);
  if (!f) return;
  duckdb_v2_opaque data = {f, qd_fn_free, NULL};
  duckdb_v2_scalar_function_bind_set_bind_data(result, &data, NULL);
}

static void scalar_exec(duckdb_v2_scalar_function_exec_info_handle info, duckdb_v2_context_handle context,
                        duckdb_v2_error_info_handle *err) {
  (void)context;
  struct qd_fn *f = NULL;
  duckdb_v2_vector_handle result = NULL, args[QD_MAX_ARGS];
  idx_t n = 0;
  duckdb_v2_scalar_function_exec_get_bind_data(info, (void **)&f, NULL);
  duckdb_v2_scalar_function_exec_get_row_count(info, &n, NULL);
  duckdb_v2_scalar_function_exec_get_result(info, &result, NULL);
  int ok = f && result;
  for (int32_t a = 0; ok && a < f->n_args; a++) {
    ok = duckdb_v2_scalar_function_exec_get_arg(info, QD_GENERIC_FIXED + (idx_t)a, &args[a], NULL) == DUCKDB_V2_ERROR_NONE;
  }
  if (!ok) return qd_v2_fail(err, QD_GENERIC_SCALAR ": DuckDB gave no bind data, argument or result vector");
  struct ql_error qerr = {0};
  if (qd_fn_scalar(f, args, n, result, &qerr) != QL_OK) {
    char *msg = qd_fn_message(f, &qerr);
    qd_v2_fail(err, qd_text_or_oom(msg));
    free(msg);
  }
}

/* ------------------------------------------------------------- aggregates */

static void agg_bind(duckdb_v2_function_bind_info_handle info, duckdb_v2_aggregate_function_bind_info_handle result,
                     duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  struct qd_fn *f = bind_fn(info, context, QL_ITEM_AGGREGATE_FUNCTION, err);
  if (!f) return;
  duckdb_v2_logical_type_handle lt = return_type(f, context);
  if (!lt || duckdb_v2_aggregate_function_bind_set_return_type(result, lt, NULL) != DUCKDB_V2_ERROR_NONE) {
    char *msg = qd_printf("%s: DuckDB refused its return type %s", f->label, qd_type_name(f->ret.duckdb));
    qd_v2_fail_code(err, DUCKDB_V2_ERROR_QUERY_BINDER, qd_text_or_oom(msg));
    free(msg);
    qd_fn_free(f);
  } else {
    duckdb_v2_opaque data = {f, qd_fn_free, NULL};
    duckdb_v2_function_bind_set_bind_data(info, &data, NULL);
  }
  if (lt) duckdb_v2_logical_type_destroy(&lt);
}

static void agg_size(duckdb_v2_aggregate_function_size_info_handle info, duckdb_v2_error_info_handle *err) {
  (void)err;
  duckdb_v2_aggregate_function_size_set_state_size(info, (idx_t)qd_agg_state_size(), NULL);
}

static void agg_init(duckdb_v2_aggregate_function_init_info_handle info, duckdb_v2_error_info_handle *err) {
  struct qd_fn *f = NULL;
  void **states = NULL;
  idx_t count = 0;
  duckdb_v2_aggregate_function_init_get_bind_data(info, (void **)&f, NULL);
  duckdb_v2_aggregate_function_init_get_state_count(info, &count, NULL);
  duckdb_v2_aggregate_function_init_get_states(info, &states, NULL);
  if (!f || (count && !states)) return qd_v2_fail(err, QD_GENERIC_AGGREGATE ": DuckDB gave no bind data or states");
  for (idx_t i = 0; i < count; i++) qd_agg_init(states[i], f);
}

static void agg_fail(const struct qd_fn *f, struct ql_error *qerr, duckdb_v2_error_info_handle *err) {
  char *msg = qd_fn_message(f, qerr);
  qd_v2_fail(err, qd_text_or_oom(msg));
  free(msg);
}

static void agg_update(duckdb_v2_aggregate_function_update_info_handle info, duckdb_v2_error_info_handle *err) {
  struct qd_fn *f = NULL;
  void **states = NULL;
  idx_t n = 0;
  duckdb_v2_vector_handle args[QD_MAX_ARGS];
  duckdb_v2_aggregate_function_update_get_bind_data(info, (void **)&f, NULL);
  duckdb_v2_aggregate_function_update_get_row_count(info, &n, NULL);
  duckdb_v2_aggregate_function_update_get_states(info, &states, NULL);
  int ok = f && (n == 0 || states);
  for (int32_t a = 0; ok && a < f->n_args; a++) {
    ok = duckdb_v2_aggregate_function_update_get_arg(info, QD_GENERIC_FIXED + (idx_t)a, &args[a], NULL) ==
         DUCKDB_V2_ERROR_NONE;
  }
  if (!ok) return qd_v2_fail(err, QD_GENERIC_AGGREGATE ": DuckDB gave no bind data, states or argument vector");
  struct ql_error qerr = {0};
  if (qd_agg_update(f, args, n, states, &qerr) != QL_OK) agg_fail(f, &qerr, err);
}

static void agg_combine(duckdb_v2_aggregate_function_combine_info_handle info, duckdb_v2_error_info_handle *err) {
  struct qd_fn *f = NULL;
  void **sources = NULL, **targets = NULL;
  idx_t count = 0;
  duckdb_v2_aggregate_function_combine_get_bind_data(info, (void **)&f, NULL);
  duckdb_v2_aggregate_function_combine_get_state_count(info, &count, NULL);
  duckdb_v2_aggregate_function_combine_get_sources(info, &sources, NULL);
  duckdb_v2_aggregate_function_combine_get_targets(info, &targets, NULL);
  if (!f || (count && (!sources || !targets))) return qd_v2_fail(err, QD_GENERIC_AGGREGATE ": DuckDB gave no states");
  struct ql_error qerr = {0};
  if (qd_agg_combine(f, sources, targets, count, &qerr) != QL_OK) agg_fail(f, &qerr, err);
}

static void agg_finalize(duckdb_v2_aggregate_function_finalize_info_handle info, duckdb_v2_error_info_handle *err) {
  struct qd_fn *f = NULL;
  void **states = NULL;
  idx_t count = 0, offset = 0;
  duckdb_v2_vector_handle result = NULL;
  duckdb_v2_aggregate_function_finalize_get_bind_data(info, (void **)&f, NULL);
  duckdb_v2_aggregate_function_finalize_get_state_count(info, &count, NULL);
  duckdb_v2_aggregate_function_finalize_get_states(info, &states, NULL);
  duckdb_v2_aggregate_function_finalize_get_result(info, &result, NULL);
  duckdb_v2_aggregate_function_finalize_get_result_offset(info, &offset, NULL);
  if (!f || !result || (count && !states)) return qd_v2_fail(err, QD_GENERIC_AGGREGATE ": DuckDB gave no states");
  struct ql_error qerr = {0};
  if (qd_agg_finalize(f, states, count, result, offset, &qerr) != QL_OK) agg_fail(f, &qerr, err);
}

static void agg_destroy(duckdb_v2_aggregate_function_destroy_info_handle info, duckdb_v2_error_info_handle *err) {
  (void)err;
  void **states = NULL;
  idx_t count = 0;
  duckdb_v2_aggregate_function_destroy_get_state_count(info, &count, NULL);
  duckdb_v2_aggregate_function_destroy_get_states(info, &states, NULL);
  if (states) qd_agg_destroy(states, count);
}

/* -------------------------------------------------------- table functions */

/* A constant as a qd_const; its text malloc'd into *text, refused when it
 * holds a NUL byte (`what` names the argument). */
static int const_of(duckdb_v2_value_handle v, struct qd_const *c, char **text, const char *what, struct ql_error *err) {
  memset(c, 0, sizeof(*c));
  *text = NULL;
  bool is_null = true;
  duckdb_v2_value_is_null(v, &is_null, NULL);
  duckdb_v2_logical_type_handle lt = NULL;
  c->type = duckdb_v2_value_get_logical_type(v, &lt, NULL) == DUCKDB_V2_ERROR_NONE ? qd_v2_type_id(lt, NULL, NULL) : -1;
  if (lt) duckdb_v2_logical_type_destroy(&lt);
  if (is_null || c->type == QD_T_SQLNULL) {
    c->is_null = 1;
    return QL_OK;
  }
  switch (qd_cell_kind_of(c->type)) {
    case QL_CELL_INTEGER:
      if (c->type == QD_T_BOOLEAN) {
        bool b = false;
        duckdb_v2_value_get_bool(v, &b, NULL);
        c->i = b;
      } else if (c->type == QD_T_UBIGINT) {
        duckdb_v2_value_get_ubigint(v, &c->u, NULL);
      } else {
        duckdb_v2_value_get_bigint(v, &c->i, NULL);
      }
      break;
    case QL_CELL_REAL: duckdb_v2_value_get_double(v, &c->f, NULL); break;
    case QL_CELL_TEXT: {
      duckdb_v2_str s = {NULL, 0};
      if (duckdb_v2_value_get_varchar(v, &s, NULL) != DUCKDB_V2_ERROR_NONE) {
        return ql_error_set(err, QL_EINVAL, "%s is not text", what);
      }
      int rc = ql_text_check_nul(s.ptr, s.len, what, err);
      if (rc == QL_OK && !(*text = malloc(s.len + 1))) rc = ql_error_set(err, QL_ENOMEM, "out of memory");
      if (rc != QL_OK) return rc;
      if (s.len) memcpy(*text, s.ptr, s.len);
      (*text)[s.len] = '\0';
      c->text = *text;
      break;
    }
    default: break;
  }
  return QL_OK;
}

static void table_function_bind(duckdb_v2_function_bind_info_handle info, duckdb_v2_table_function_bind_info_handle result,
                                duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  struct qd_db *db = qd_user_data(info);
  char *plugin = NULL, *name = NULL;
  idx_t fixed = 0;
  duckdb_v2_function_bind_get_arg_count(info, &fixed, NULL, NULL, NULL, NULL);
  idx_t n = fixed > QD_GENERIC_FIXED ? fixed - QD_GENERIC_FIXED : 0;
  struct qd_const args[QD_TF_MAX_ARGS];
  char *texts[QD_TF_MAX_ARGS] = {0};
  struct ql_error qerr = {0};
  int rc = qd_follow_settings_v2(db, context, &qerr);
  if (rc == QL_OK) rc = qd_arg_text(info, 0, "the plugin name", &plugin, &qerr);
  if (rc == QL_OK) rc = qd_arg_text(info, 1, "the function name", &name, &qerr);
  for (idx_t i = 0; rc == QL_OK && i < n && i < QD_TF_MAX_ARGS; i++) {
    char what[32];
    snprintf(what, sizeof(what), "argument %d", (int)i + 1);
    duckdb_v2_value_handle v = NULL;
    if (duckdb_v2_function_bind_get_arg_value(info, QD_GENERIC_FIXED + i, &v, NULL) == DUCKDB_V2_ERROR_NONE) {
      rc = const_of(v, &args[i], &texts[i], what, &qerr);
      duckdb_v2_value_destroy(&v);
    } else {
      memset(&args[i], 0, sizeof(args[i]));
      args[i].is_null = 1;
    }
  }
  struct qd_bind *b = NULL;
  if (rc == QL_OK) rc = qd_tf_open(db, plugin, name, args, n, &b, &qerr);
  if (rc == QL_OK) rc = qd_bind_columns_v2(result, context, b, &qerr);
  for (idx_t i = 0; i < n && i < QD_TF_MAX_ARGS; i++) free(texts[i]);
  free(plugin);
  free(name);
  if (rc != QL_OK) {
    qd_fail_error_v2(err, DUCKDB_V2_ERROR_QUERY_BINDER, b && b->label ? b->label : "qlink table function", &qerr);
    qd_bind_free(b);
    return;
  }
  duckdb_v2_opaque data = {b, qd_bind_free, NULL};
  duckdb_v2_function_bind_set_bind_data(info, &data, NULL);
}

/* ------------------------------------------------------------ qlink_load */

/* Does table function NAME bind without arguments (as DuckDB binds a
 * macro's 0-argument overload when it creates it)? */
static int accepts_no_args(struct qd_db *db, const struct ql_plugin *p, const char *name) {
  struct qd_bind *b = NULL;
  struct ql_error err = {0};
  int64_t rows;
  int exact;
  int rc = qd_tf_open(db, p->name, name, NULL, 0, &b, &err);
  if (rc == QL_OK) rc = qd_bind_schema(b, &rows, &exact, &err);
  ql_error_release(&err);
  qd_bind_free(b);
  return rc == QL_OK;
}

/* The PRAGMA's statements, and the functions they make as a list literal
 * of labels ('PLUGIN.NAME', ...), marked loaded by the last statement. */
struct load_text {
  struct qd_text sql, labels;
};

static int load_one(void *ctx, struct qd_db *db, const struct ql_plugin *p, const struct ql_item_info *it,
                    struct ql_error *err) {
  struct load_text *lt = ctx;
  char *sql = NULL;
  if (it->kind == QL_ITEM_TABLE_FUNCTION) {
    sql = qd_table_macro_sql(p->name, it->name, accepts_no_args(db, p, it->name) ? 0 : 1);
  } else {
    struct qd_fn *f = NULL;
    int rc = qd_fn_open(p, it, &f, err);
    if (rc != QL_OK) return rc;
    const char *generic = it->kind == QL_ITEM_AGGREGATE_FUNCTION ? QD_GENERIC_AGGREGATE
                          : f->volatile_                         ? QD_GENERIC_VOLATILE
                                                                 : QD_GENERIC_SCALAR;
    sql = qd_function_macro_sql(generic, p->name, it->name, f->n_args);
    qd_fn_free(f);
  }
  qd_text_add(&lt->sql, sql);
  qd_text_add(&lt->sql, ";\n");
  free(sql);
  char *label = qd_printf("%s.%s", p->name, it->name);
  if (lt->labels.len) qd_text_add(&lt->labels, ", ");
  qd_text_quote(&lt->labels, label, '\'');
  int failed = !sql || !label || lt->sql.failed || lt->labels.failed;
  free(label);
  return failed ? ql_error_set(err, QL_ENOMEM, "out of memory") : QL_OK;
}

static void load_query(duckdb_v2_function_bind_info_handle info, duckdb_v2_pragma_function_query_info_handle result,
                       duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  struct qd_db *db = qd_user_data(info);
  char *plugin = NULL, *only = NULL, *label = NULL;
  struct qd_rows *r = qd_rows_new(3);
  struct load_text lt = {{0}, {0}};
  struct qd_text *t = &lt.sql;
  struct ql_error qerr = {0};
  int rc = r ? qd_follow_settings_v2(db, context, &qerr) : ql_error_set(&qerr, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_arg_text(info, 0, "the plugin name", &plugin, &qerr);
  if (rc == QL_OK) rc = qd_named_text(info, "name", "argument \"name\"", &only, &qerr);
  if (rc == QL_OK) label = qd_printf("qlink_load('%s')", plugin);
  if (rc == QL_OK) rc = qd_load_plugin(db, plugin, only, 0, load_one, &lt, r, &qerr);
  if (rc == QL_OK) { /* the rows (name, kind, status), in order; what loaded marked once it exists */
    static const char *const cols[] = {"name", "kind", "status"};
    qd_text_add(t, "SELECT ");
    for (int c = 0; c < 3; c++) {
      qd_text_add(t, c ? ", unnest([" : "unnest([");
      for (int64_t i = 0; i < r->n_rows; i++) {
        if (i) qd_text_add(t, ", ");
        qd_text_quote(t, r->cells[i * 3 + c], '\'');
      }
      qd_text_add(t, "]::VARCHAR[]) AS ");
      qd_text_add(t, cols[c]);
    }
    qd_text_add(t, " FROM " QD_LOAD_MARK "([");
    qd_text_add(t, lt.labels.s ? lt.labels.s : "");
    qd_text_add(t, "]::VARCHAR[])");
    if (t->failed) rc = ql_error_set(&qerr, QL_ENOMEM, "out of memory");
  }
  if (rc != QL_OK) qd_fail_error_v2(err, DUCKDB_V2_ERROR_QUERY_BINDER, label ? label : "qlink_load", &qerr);
  else qd_set_query(result, t->s, err);
  free(t->s);
  free(lt.labels.s);
  qd_rows_free(r);
  free(label);
  free(plugin);
  free(only);
}

/* qlink_load_mark(['PLUGIN.NAME', ...]): marks them loaded, one row. */
static void load_mark_bind(duckdb_v2_function_bind_info_handle info, duckdb_v2_table_function_bind_info_handle result,
                           duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  struct qd_db *db = qd_user_data(info);
  duckdb_v2_value_handle list = NULL;
  idx_t n = 0;
  if (duckdb_v2_function_bind_get_arg_value(info, 0, &list, NULL) == DUCKDB_V2_ERROR_NONE)
    duckdb_v2_value_get_child_count(list, &n, NULL);
  for (idx_t i = 0; i < n; i++) {
    duckdb_v2_value_handle v = NULL;
    duckdb_v2_str s = {NULL, 0};
    if (duckdb_v2_value_get_child(list, i, &v, NULL) != DUCKDB_V2_ERROR_NONE) continue;
    char *label = NULL;
    if (duckdb_v2_value_get_varchar(v, &s, NULL) == DUCKDB_V2_ERROR_NONE && (label = malloc(s.len + 1))) {
      if (s.len) memcpy(label, s.ptr, s.len);
      label[s.len] = '\0';
      qd_load_mark(db, label);
    }
    free(label);
    duckdb_v2_value_destroy(&v);
  }
  if (list) duckdb_v2_value_destroy(&list);
  struct qd_rows *r = qd_rows_new(1);
  static const char *const cell[] = {"marked"};
  duckdb_v2_factory_handle factory = NULL;
  duckdb_v2_logical_type_handle varchar = NULL;
  duckdb_v2_str vt = qd_str("VARCHAR");
  duckdb_v2_identifier_t col = qd_str("marked");
  int ok = r && qd_rows_add(r, cell) == 0 &&
           duckdb_v2_context_get_factory(context, &factory, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_factory_create_type_from_text(factory, &vt, &varchar, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_bind_add_result_column(result, &col, varchar, NULL) == DUCKDB_V2_ERROR_NONE;
  if (varchar) duckdb_v2_logical_type_destroy(&varchar);
  if (!ok) {
    qd_rows_free(r);
    return qd_v2_fail(err, QD_LOAD_MARK ": out of memory");
  }
  duckdb_v2_opaque data = {r, qd_rows_free, NULL};
  duckdb_v2_function_bind_set_bind_data(info, &data, NULL);
}

static void load_call(duckdb_v2_function_bind_info_handle info, duckdb_v2_table_function_bind_info_handle result,
                      duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  (void)info, (void)result, (void)context;
  qd_v2_fail(err, "CALL qlink_load: " QD_NO_CALL_DDL "PRAGMA qlink_load('PLUGIN'[, name = 'NAME'])");
}

/* ---------------------------------------------------------- registration */

/* The (plugin VARCHAR, name VARCHAR) parameters and, with `variadic`, *args
 * ANY; else `n_any` ANY parameters. The return type ANY when `ret`. */
static int generic_signature(duckdb_v2_factory_handle factory, duckdb_v2_function_signature_handle sig, int variadic,
                             int n_any, int ret) {
  duckdb_v2_logical_type_handle varchar = NULL, any = NULL;
  duckdb_v2_str vt = qd_str("VARCHAR");
  int ok = duckdb_v2_factory_create_type_from_text(factory, &vt, &varchar, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_factory_create_type_from_id(factory, DUCKDB_V2_LOGICAL_TYPE_ID_ANY, NULL, NULL, 0, &any, NULL) ==
               DUCKDB_V2_ERROR_NONE;
  static const char *const fixed[] = {"plugin", "function"};
  for (int i = 0; ok && i < 2; i++) {
    duckdb_v2_identifier_t an = qd_str(fixed[i]);
    ok = duckdb_v2_function_signature_add_parameter(sig, &an, varchar, NULL,
                                                    DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_ONLY,
                                                    NULL) == DUCKDB_V2_ERROR_NONE;
  }
  if (ok && variadic) {
    duckdb_v2_identifier_t an = qd_str("args");
    ok = duckdb_v2_function_signature_add_parameter(sig, &an, any, NULL,
                                                    DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_VARIADIC,
                                                    NULL) == DUCKDB_V2_ERROR_NONE;
  }
  for (int i = 0; ok && i < n_any; i++) {
    char name[16];
    snprintf(name, sizeof(name), "a%d", i + 1);
    duckdb_v2_identifier_t an = qd_str(name);
    ok = duckdb_v2_function_signature_add_parameter(sig, &an, any, NULL,
                                                    DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_ONLY,
                                                    NULL) == DUCKDB_V2_ERROR_NONE;
  }
  if (ok && ret) ok = duckdb_v2_function_signature_set_return_type(sig, any, NULL) == DUCKDB_V2_ERROR_NONE;
  if (varchar) duckdb_v2_logical_type_destroy(&varchar);
  if (any) duckdb_v2_logical_type_destroy(&any);
  return ok;
}

static int register_scalar(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db,
                           const char *name, int is_volatile) {
  duckdb_v2_scalar_function_handle f = NULL;
  duckdb_v2_function_signature_handle sig = NULL;
  duckdb_v2_identifier_t fname = qd_str(name);
  duckdb_v2_opaque user = {db, NULL, NULL};
  int ok = duckdb_v2_scalar_function_create(factory, &f, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_scalar_function_set_name(f, &fname, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_scalar_function_get_signature(f, &sig, NULL) == DUCKDB_V2_ERROR_NONE &&
           generic_signature(factory, sig, 1, 0, 1) &&
           duckdb_v2_scalar_function_set_user_data(f, &user, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_scalar_function_set_property(f, DUCKDB_V2_FUNCTION_PROPERTY_NULL_HANDLING,
                                                  DUCKDB_V2_FUNCTION_PROPERTY_NULL_HANDLING_SPECIAL,
                                                  NULL) == DUCKDB_V2_ERROR_NONE &&
           (!is_volatile || duckdb_v2_scalar_function_set_property(f, DUCKDB_V2_FUNCTION_PROPERTY_STABILITY,
                                                                   DUCKDB_V2_FUNCTION_PROPERTY_STABILITY_VOLATILE,
                                                                   NULL) == DUCKDB_V2_ERROR_NONE) &&
           duckdb_v2_scalar_function_set_resolve_types_callback(f, scalar_resolve, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_scalar_function_set_bind_callback(f, scalar_bind, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_scalar_function_set_exec_callback(f, scalar_exec, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_extension_register_scalar_function(extension, f, NULL) == DUCKDB_V2_ERROR_NONE;
  if (f) duckdb_v2_scalar_function_destroy(&f);
  return ok ? 0 : -1;
}

static int register_aggregate(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory,
                              struct qd_db *db) {
  duckdb_v2_aggregate_function_handle f = NULL;
  duckdb_v2_function_signature_handle sig = NULL;
  duckdb_v2_identifier_t fname = qd_str(QD_GENERIC_AGGREGATE);
  duckdb_v2_opaque user = {db, NULL, NULL};
  int ok = duckdb_v2_aggregate_function_create(factory, &f, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_set_name(f, &fname, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_get_signature(f, &sig, NULL) == DUCKDB_V2_ERROR_NONE &&
           generic_signature(factory, sig, 1, 0, 1) &&
           duckdb_v2_aggregate_function_set_user_data(f, &user, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_set_property(f, DUCKDB_V2_FUNCTION_PROPERTY_NULL_HANDLING,
                                                     DUCKDB_V2_FUNCTION_PROPERTY_NULL_HANDLING_SPECIAL,
                                                     NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_set_bind_callback(f, agg_bind, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_set_size_callback(f, agg_size, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_set_init_callback(f, agg_init, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_set_update_callback(f, agg_update, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_set_combine_callback(f, agg_combine, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_set_finalize_callback(f, agg_finalize, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_aggregate_function_set_destroy_callback(f, agg_destroy, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_extension_register_aggregate_function(extension, f, NULL) == DUCKDB_V2_ERROR_NONE;
  if (f) duckdb_v2_aggregate_function_destroy(&f);
  return ok ? 0 : -1;
}

static int register_table_function(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory,
                                   struct qd_db *db, int k) {
  duckdb_v2_table_function_handle f = NULL;
  duckdb_v2_function_signature_handle sig = NULL;
  char name[64];
  snprintf(name, sizeof(name), "qlink_table_function_%d", k);
  duckdb_v2_identifier_t fname = qd_str(name);
  duckdb_v2_opaque user = {db, NULL, NULL};
  int ok = duckdb_v2_table_function_create(factory, &f, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_name(f, &fname, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_get_signature(f, &sig, NULL) == DUCKDB_V2_ERROR_NONE &&
           generic_signature(factory, sig, 0, k, 0) &&
           duckdb_v2_table_function_set_user_data(f, &user, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_bind_callback(f, table_function_bind, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_init_global_callback(f, qd_scan_init_v2, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_init_local_callback(f, qd_scan_local_init_v2, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_exec_callback(f, qd_scan_v2, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_projection_pushdown(f, true, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_filter_pushdown_callback(f, qd_filter_pushdown, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_extension_register_table_function(extension, f, NULL) == DUCKDB_V2_ERROR_NONE;
  if (f) duckdb_v2_table_function_destroy(&f);
  return ok ? 0 : -1;
}

static int register_load_mark(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory,
                              struct qd_db *db) {
  duckdb_v2_table_function_handle f = NULL;
  duckdb_v2_function_signature_handle sig = NULL;
  duckdb_v2_logical_type_handle list = NULL;
  duckdb_v2_str lt = qd_str("VARCHAR[]");
  duckdb_v2_identifier_t fname = qd_str(QD_LOAD_MARK), an = qd_str("labels");
  duckdb_v2_opaque user = {db, NULL, NULL};
  int ok = duckdb_v2_table_function_create(factory, &f, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_name(f, &fname, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_get_signature(f, &sig, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_factory_create_type_from_text(factory, &lt, &list, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_function_signature_add_parameter(sig, &an, list, NULL,
                                                      DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_ONLY,
                                                      NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_user_data(f, &user, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_bind_callback(f, load_mark_bind, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_init_global_callback(f, qd_rows_init_v2, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_exec_callback(f, qd_rows_emit_v2, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_extension_register_table_function(extension, f, NULL) == DUCKDB_V2_ERROR_NONE;
  if (list) duckdb_v2_logical_type_destroy(&list);
  if (f) duckdb_v2_table_function_destroy(&f);
  return ok ? 0 : -1;
}

int qd_register_functions_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db) {
  int ok = register_scalar(extension, factory, db, QD_GENERIC_SCALAR, 0) == 0 &&
           register_scalar(extension, factory, db, QD_GENERIC_VOLATILE, 1) == 0 &&
           register_aggregate(extension, factory, db) == 0;
  for (int k = 0; ok && k <= QD_TF_MAX_ARGS; k++) ok = register_table_function(extension, factory, db, k) == 0;
  ok = ok && register_load_mark(extension, factory, db) == 0;
  ok = ok && qd_register_pragma_v2(extension, factory, db, "qlink_load", 1, "name", load_query) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_load", 1, "name", load_call, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, NULL) == 0;
  return ok ? 0 : -1;
}
