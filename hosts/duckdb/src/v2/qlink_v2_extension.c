/* The qlink DuckDB extension against DuckDB's C API V2 (unstable: built
 * for, and loaded by, the pinned engine version only): qlink_v2.duckdb_extension.
 *
 * The same host as ext.c (C API V1) for what the two share (scan.c,
 * vectors.c, types.c): qlink_scan('PLUGIN/PROVIDER?k=v&...' [, table :=
 * 'NAME']), qlink_tables('SPEC'), qlink_plugins() and qlink_allow('DIR'),
 * plus filter pushdown: DuckDB offers each predicate over qlink_scan's
 * rows to filters_v2.c, which translates it into qlink filters, asks the
 * provider, and accepts what the provider evaluates exactly.
 * qlink_attach is a query PRAGMA here (below); qlink_load and the plugin
 * functions are functions_v2.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext_internal.h"
#include "qlink/lib/host.h"
#include "qlink/lib/plugin_dirs.h"
#include "qlink/lib/status.h"
#include "types.h"
#include "vectors.h"

/* ---- small wrappers over the V2 calling convention */

void qd_v2_fail_code(duckdb_v2_error_info_handle *err, DUCKDB_V2_ERROR code, const char *msg) {
  duckdb_v2_str text = qd_str(msg);
  duckdb_v2_error_info_set_code(*err, code);
  duckdb_v2_error_info_set_text(*err, &text);
}

void qd_v2_fail(duckdb_v2_error_info_handle *err, const char *msg) {
  qd_v2_fail_code(err, DUCKDB_V2_ERROR_INPUT_INVALID, msg);
}

/* The default of every VARCHAR named parameter: one NUL byte, which no
 * argument can be (qd_check_text refuses NUL bytes), so a named argument
 * left out is told apart from one passed as NULL (refused). */
static const duckdb_v2_str qd_absent = {"", 1};

/* A VARCHAR value's text, malloc'd into *out and checked as `what`; a NULL
 * value is refused; absent (with `named`: the default above) gives QL_OK
 * and *out NULL. */
static int qd_value_text_v2(duckdb_v2_value_handle v, const char *what, int named, char **out, struct ql_error *err) {
  *out = NULL;
  bool is_null = true;
  duckdb_v2_value_is_null(v, &is_null, NULL);
  duckdb_v2_str s = {NULL, 0};
  if (is_null) return qd_check_text(what, NULL, 0, err);
  if (duckdb_v2_value_get_varchar(v, &s, NULL) != DUCKDB_V2_ERROR_NONE) {
    return ql_error_set(err, QL_EINVAL, "%s is not text", what);
  }
  if (named && s.len == qd_absent.len && s.ptr[0] == '\0') return QL_OK;
  int rc = qd_check_text(what, s.ptr, s.len, err);
  if (rc == QL_OK && !(*out = malloc(s.len + 1))) rc = ql_error_set(err, QL_ENOMEM, "out of memory reading %s", what);
  if (rc == QL_OK) {
    if (s.len) memcpy(*out, s.ptr, s.len);
    (*out)[s.len] = '\0';
  }
  return rc;
}

int qd_arg_text(duckdb_v2_function_bind_info_handle info, idx_t index, const char *what, char **out,
                struct ql_error *err) {
  duckdb_v2_value_handle v = NULL;
  *out = NULL;
  if (duckdb_v2_function_bind_get_arg_value(info, index, &v, NULL) != DUCKDB_V2_ERROR_NONE) {
    return ql_error_set(err, QL_EINVAL, "%s is not a constant", what);
  }
  int rc = qd_value_text_v2(v, what, 0, out, err);
  duckdb_v2_value_destroy(&v);
  return rc;
}

int qd_named_text(duckdb_v2_function_bind_info_handle info, const char *name, const char *what, char **out,
                  struct ql_error *err) {
  duckdb_v2_identifier_t id = qd_str(name);
  idx_t index = 0;
  bool found = false;
  duckdb_v2_value_handle v = NULL;
  *out = NULL;
  duckdb_v2_function_bind_get_arg_index(info, &id, &index, &found, NULL);
  if (!found || duckdb_v2_function_bind_get_arg_value(info, index, &v, NULL) != DUCKDB_V2_ERROR_NONE) return QL_OK;
  int rc = qd_value_text_v2(v, what, 1, out, err);
  duckdb_v2_value_destroy(&v);
  return rc;
}

void qd_fail_error_v2(duckdb_v2_error_info_handle *err, DUCKDB_V2_ERROR code, const char *label, struct ql_error *qerr) {
  char *msg = qd_printf("%s: %s", label, ql_error_message(qerr));
  ql_error_release(qerr);
  qd_v2_fail_code(err, code, qd_text_or_oom(msg));
  free(msg);
}

/* Config option `name` of the context as a value (destroy it); NULL when DuckDB gives none. */
static duckdb_v2_value_handle qd_option(duckdb_v2_context_handle ctx, const char *name) {
  duckdb_v2_config_handle config = NULL;
  if (duckdb_v2_context_get_config(ctx, &config, NULL) != DUCKDB_V2_ERROR_NONE) return NULL;
  duckdb_v2_identifier_t id = qd_str(name);
  duckdb_v2_value_handle v = NULL;
  DUCKDB_V2_SETTING_SCOPE scope;
  if (duckdb_v2_config_get_option_value(config, &id, &v, &scope, NULL) != DUCKDB_V2_ERROR_NONE) return NULL;
  return v;
}

/* A value's text, malloc'd (NULL when it has none). */
static char *qd_value_copy(duckdb_v2_value_handle v) {
  duckdb_v2_str s = {NULL, 0};
  char *out = NULL;
  if (v && duckdb_v2_value_get_varchar(v, &s, NULL) == DUCKDB_V2_ERROR_NONE && (out = malloc(s.len + 1))) {
    if (s.len) memcpy(out, s.ptr, s.len);
    out[s.len] = '\0';
  }
  return out;
}

/* Boolean option: 1, 0, or -1 when DuckDB gives none. */
static int qd_option_bool(duckdb_v2_context_handle ctx, const char *name) {
  duckdb_v2_value_handle v = qd_option(ctx, name);
  bool b = false;
  int out = v && duckdb_v2_value_get_bool(v, &b, NULL) == DUCKDB_V2_ERROR_NONE ? (b ? 1 : 0) : -1;
  if (v) duckdb_v2_value_destroy(&v);
  return out;
}

/* List option `name` (VARCHAR[]) into a settings list. */
static void qd_option_list(duckdb_v2_context_handle ctx, const char *name, char ***list, int64_t *n) {
  duckdb_v2_value_handle v = qd_option(ctx, name);
  idx_t count = 0;
  if (v) duckdb_v2_value_get_child_count(v, &count, NULL);
  for (idx_t i = 0; i < count; i++) {
    duckdb_v2_value_handle c = NULL;
    if (duckdb_v2_value_get_child(v, i, &c, NULL) != DUCKDB_V2_ERROR_NONE) continue;
    char *text = qd_value_copy(c);
    if (text) qd_settings_add(list, n, text);
    free(text);
    duckdb_v2_value_destroy(&c);
  }
  if (v) duckdb_v2_value_destroy(&v);
}

int qd_follow_settings_v2(struct qd_db *db, duckdb_v2_context_handle ctx, struct ql_error *err) {
  struct qd_settings s = {0};
  duckdb_v2_value_handle v = qd_option(ctx, "threads");
  if (!v || duckdb_v2_value_get_bigint(v, &s.threads, NULL) != DUCKDB_V2_ERROR_NONE) s.threads = 0;
  if (v) duckdb_v2_value_destroy(&v);
  v = qd_option(ctx, "memory_limit");
  s.memory_limit = qd_value_copy(v);
  if (v) duckdb_v2_value_destroy(&v);
  s.locked = qd_option_bool(ctx, "lock_configuration");
  s.external = qd_option_bool(ctx, "enable_external_access");
  if (s.external == 0) {
    qd_option_list(ctx, "allowed_directories", &s.dirs, &s.n_dirs);
    qd_option_list(ctx, "allowed_paths", &s.paths, &s.n_paths);
  }
  int rc = qd_follow(db, &s, err);
  qd_settings_free(&s);
  return rc;
}

void *qd_user_data(duckdb_v2_function_bind_info_handle info) {
  void *data = NULL;
  duckdb_v2_function_bind_get_user_data(info, &data, NULL);
  return data;
}

/* ---- qlink_scan */

int qd_bind_columns_v2(duckdb_v2_table_function_bind_info_handle result, duckdb_v2_context_handle context,
                       struct qd_bind *b, struct ql_error *err) {
  int64_t rows = -1;
  int exact = 0;
  int rc = qd_bind_schema(b, &rows, &exact, err);
  duckdb_v2_factory_handle factory = NULL;
  if (rc == QL_OK && duckdb_v2_context_get_factory(context, &factory, NULL) != DUCKDB_V2_ERROR_NONE) {
    rc = ql_error_set(err, QL_EINTERNAL, "DuckDB gave no type factory");
  }
  for (int64_t i = 0; rc == QL_OK && i < b->n_columns; i++) {
    duckdb_v2_logical_type_handle lt = qd_v2_logical_type(factory, &b->types[i]);
    duckdb_v2_identifier_t name = qd_str(b->schema.children[i]->name);
    if (!lt || duckdb_v2_table_function_bind_add_result_column(result, &name, lt, NULL) != DUCKDB_V2_ERROR_NONE) {
      rc = ql_error_set(err, QL_EINTERNAL, "column '%s': DuckDB refused its type %s", name.ptr,
                        qd_type_name(b->types[i].duckdb));
    }
    if (lt) duckdb_v2_logical_type_destroy(&lt);
  }
  if (rc == QL_OK && rows >= 0) duckdb_v2_table_function_bind_set_cardinality(result, (idx_t)rows, exact, NULL);
  return rc;
}

static void qd_scan_bind_v2(duckdb_v2_function_bind_info_handle info, duckdb_v2_table_function_bind_info_handle result,
                            duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  struct qd_db *db = qd_user_data(info);
  struct ql_error qerr = {0};
  char *spec = NULL, *table = NULL;
  int rc = qd_follow_settings_v2(db, context, &qerr);
  if (rc == QL_OK) rc = qd_arg_text(info, 0, "the spec", &spec, &qerr);
  if (rc == QL_OK) rc = qd_named_text(info, "table", "argument \"table\"", &table, &qerr);
  struct qd_bind *b = rc == QL_OK ? qd_bind_new(db, spec) : NULL;
  if (rc == QL_OK && !b) rc = ql_error_set(&qerr, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_bind_open(b, spec, table, &qerr);
  free(spec);
  free(table);
  if (rc == QL_OK) rc = qd_bind_columns_v2(result, context, b, &qerr);
  if (rc != QL_OK) {
    qd_fail_error_v2(err, DUCKDB_V2_ERROR_INPUT_INVALID, b ? b->label : "qlink_scan", &qerr);
    qd_bind_free(b);
    return;
  }
  duckdb_v2_opaque data = {b, qd_bind_free, NULL};
  duckdb_v2_function_bind_set_bind_data(info, &data, NULL);
}

void qd_scan_init_v2(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle context,
                            duckdb_v2_error_info_handle *err) {
  (void)context;
  struct qd_bind *b = NULL;
  idx_t n = 0;
  duckdb_v2_table_function_init_global_get_bind_data(info, (void **)&b, NULL);
  duckdb_v2_table_function_init_global_get_column_count(info, &n, NULL);
  idx_t *cols = calloc(n ? n : 1, sizeof(*cols));
  char *msg = NULL;
  if (!b || !cols) {
    free(cols);
    return qd_v2_fail(err, "qlink_scan: out of memory");
  }
  for (idx_t i = 0; i < n; i++) duckdb_v2_table_function_init_global_get_column_index(info, i, &cols[i], NULL);
  struct qd_global *g = qd_global_new(b, n, cols, &msg);
  free(cols);
  if (!g) {
    qd_v2_fail(err, qd_text_or_oom(msg));
    free(msg);
    return;
  }
  duckdb_v2_table_function_init_global_set_max_threads(info, (idx_t)(g->partitions > 0 ? g->partitions : 1), NULL);
  duckdb_v2_opaque data = {g, qd_global_free, NULL};
  duckdb_v2_table_function_init_global_set_global_state(info, &data, NULL);
}

void qd_scan_local_init_v2(duckdb_v2_table_function_init_local_info_handle info,
                                  duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  (void)context;
  struct qd_local *l = calloc(1, sizeof(*l));
  if (!l) return qd_v2_fail(err, "qlink_scan: out of memory");
  duckdb_v2_table_function_init_local_get_global_state(info, (void **)&l->g, NULL);
  duckdb_v2_opaque data = {l, qd_local_free, NULL};
  duckdb_v2_table_function_init_local_set_local_state(info, &data, NULL);
}

void qd_scan_v2(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle context,
                       duckdb_v2_error_info_handle *err) {
  (void)context;
  struct qd_local *l = NULL;
  duckdb_v2_data_chunk_handle out = NULL;
  duckdb_v2_table_function_exec_get_local_state(info, (void **)&l, NULL);
  duckdb_v2_table_function_exec_get_output_chunk(info, &out, NULL);
  struct qd_global *g = l ? l->g : NULL;
  idx_t cap = 0;
  if (!g || !out || duckdb_v2_data_chunk_get_capacity(out, &cap, NULL) != DUCKDB_V2_ERROR_NONE) {
    return qd_v2_fail(err, "qlink_scan: DuckDB gave no scan state or output chunk");
  }
  char *msg = NULL;
  int more = qd_local_next(l, &msg);
  if (more < 0) {
    qd_v2_fail(err, qd_text_or_oom(msg));
    free(msg);
    return;
  }
  idx_t n = 0;
  if (more) {
    n = (idx_t)(l->batch.length - l->offset);
    if (n > cap) n = cap;
    for (int32_t c = 0; c < g->n_out; c++) {
      duckdb_v2_vector_handle v = NULL;
      duckdb_v2_data_chunk_get_vector(out, (idx_t)c, &v, NULL);
      int32_t src = g->out_source[c];
      int rc = -1;
      if (v && src < 0) {
        int64_t *ids = NULL;
        if (duckdb_v2_vector_get_data_mutable(v, (void **)&ids, NULL) == DUCKDB_V2_ERROR_NONE && ids) {
          for (idx_t r = 0; r < n; r++) ids[r] = l->offset + (int64_t)r;
          rc = 0;
        }
      } else if (v) {
        rc = qd_copy(&g->bind->types[g->out_col[c]], l->batch.children[src], l->offset, n, v, 0);
      }
      if (rc != 0) {
        atomic_store(&g->cancelled, 1);
        msg = qd_printf("%s: DuckDB refused memory for output column %d", g->bind->label, c);
        qd_v2_fail(err, qd_text_or_oom(msg));
        free(msg);
        return;
      }
    }
    l->offset += (int64_t)n;
  }
  if (g->n_out > 0) {
    duckdb_v2_vector_handle first = NULL;
    duckdb_v2_data_chunk_get_vector(out, 0, &first, NULL);
    if (first) duckdb_v2_vector_set_size(first, n, NULL);
  }
}

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
  struct ql_error qerr = {0};
  int rc = qd_rows_start(info, result, context, 1, cols, &r, &qerr);
  if (rc == QL_OK) rc = qd_arg_text(info, 0, "the spec", &spec, &qerr);
  if (rc == QL_OK) label = qd_printf("qlink_tables('%s')", spec);
  if (rc == QL_OK) rc = qd_rows_tables(qd_user_data(info), spec, r, &qerr);
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

void qd_rows_init_v2(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle context,
                            duckdb_v2_error_info_handle *err) {
  (void)context, (void)err;
  duckdb_v2_table_function_init_global_set_max_threads(info, 1, NULL);
}

void qd_rows_emit_v2(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle context,
                            duckdb_v2_error_info_handle *err) {
  (void)context;
  struct qd_rows *r = NULL;
  duckdb_v2_data_chunk_handle out = NULL;
  idx_t cap = 0, n = 0;
  duckdb_v2_table_function_exec_get_bind_data(info, (void **)&r, NULL);
  duckdb_v2_table_function_exec_get_output_chunk(info, &out, NULL);
  if (!r || !out || duckdb_v2_data_chunk_get_capacity(out, &cap, NULL) != DUCKDB_V2_ERROR_NONE)
    return qd_v2_fail(err, "qlink: DuckDB gave no rows or output chunk");
  struct qd_type varchar = {.kind = QD_STRING};
  for (int32_t c = 0; c < r->n_cols; c++) {
    /* column c of the rows left, as one Arrow utf8 array */
    int64_t start = r->next, count = r->n_rows - start < (int64_t)cap ? r->n_rows - start : (int64_t)cap;
    int32_t *offsets = malloc(sizeof(int32_t) * (size_t)(count + 1));
    size_t total = 0;
    for (int64_t i = 0; i < count; i++) total += strlen(r->cells[(start + i) * r->n_cols + c]);
    char *bytes = malloc(total ? total : 1);
    duckdb_v2_vector_handle v = NULL;
    duckdb_v2_data_chunk_get_vector(out, (idx_t)c, &v, NULL);
    int rc = offsets && bytes && v ? 0 : -1;
    if (rc == 0) {
      offsets[0] = 0;
      for (int64_t i = 0; i < count; i++) {
        const char *s = r->cells[(start + i) * r->n_cols + c];
        size_t len = strlen(s);
        memcpy(bytes + offsets[i], s, len);
        offsets[i + 1] = offsets[i] + (int32_t)len;
      }
      const void *buffers[3] = {NULL, offsets, bytes};
      struct ArrowArray a = {.length = count, .n_buffers = 3, .buffers = buffers};
      rc = qd_copy(&varchar, &a, 0, (idx_t)count, v, 0);
    }
    free(offsets);
    free(bytes);
    if (rc != 0) return qd_v2_fail(err, "qlink: out of memory");
    n = (idx_t)count;
  }
  r->next += (int64_t)n;
  duckdb_v2_vector_handle first = NULL;
  duckdb_v2_data_chunk_get_vector(out, 0, &first, NULL);
  if (first) duckdb_v2_vector_set_size(first, n, NULL);
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

void qd_set_query(duckdb_v2_pragma_function_query_info_handle result, const char *sql,
                         duckdb_v2_error_info_handle *err) {
  duckdb_v2_str q = qd_str(sql);
  if (duckdb_v2_pragma_function_query_set_query(result, &q, NULL) != DUCKDB_V2_ERROR_NONE)
    qd_v2_fail(err, "qlink: DuckDB refused the PRAGMA's query");
}

static void qd_attach_query_v2(duckdb_v2_function_bind_info_handle info, duckdb_v2_pragma_function_query_info_handle result,
                               duckdb_v2_context_handle context, duckdb_v2_error_info_handle *err) {
  struct qd_db *db = qd_user_data(info);
  char *name = NULL, *spec = NULL, *label = NULL, *sql = NULL;
  struct qd_rows *r = qd_rows_new(1);
  struct ql_error qerr = {0};
  int rc = r ? qd_follow_settings_v2(db, context, &qerr) : ql_error_set(&qerr, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_arg_text(info, 0, "the schema name", &name, &qerr);
  if (rc == QL_OK) rc = qd_arg_text(info, 1, "the spec", &spec, &qerr);
  if (rc == QL_OK) label = qd_printf("qlink_attach('%s', ...)", name);
  if (rc == QL_OK) rc = qd_rows_tables(db, spec, r, &qerr);
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

/* Add to `sig` n_args (0..2) positional VARCHAR parameters and, with
 * `named`, a VARCHAR named parameter of that name, qd_absent by default.
 * The VARCHAR type and the default go to *varchar and *none, which the
 * caller destroys (each may stay NULL). 1, or 0 on any failure. */
static int add_varchar_params(duckdb_v2_factory_handle factory, duckdb_v2_function_signature_handle sig, int n_args,
                              const char *named, duckdb_v2_logical_type_handle *varchar, duckdb_v2_value_handle *none) {
  duckdb_v2_str vt = qd_str("VARCHAR");
  int ok = duckdb_v2_factory_create_type_from_text(factory, &vt, varchar, NULL) == DUCKDB_V2_ERROR_NONE;
  static const char *const arg_names[] = {"arg0", "arg1"};
  for (int i = 0; ok && i < n_args; i++) {
    duckdb_v2_identifier_t an = qd_str(arg_names[i]);
    ok = duckdb_v2_function_signature_add_parameter(sig, &an, *varchar, NULL, DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_ONLY,
                                                    NULL) == DUCKDB_V2_ERROR_NONE;
  }
  if (ok && named) {
    duckdb_v2_identifier_t nn = qd_str(named);
    ok = duckdb_v2_value_create_varchar(factory, &qd_absent, none, NULL) == DUCKDB_V2_ERROR_NONE &&
         duckdb_v2_function_signature_add_parameter(sig, &nn, *varchar, *none, DUCKDB_V2_FUNCTION_PARAMETER_KIND_NAMED_ONLY,
                                                    NULL) == DUCKDB_V2_ERROR_NONE;
  }
  return ok;
}

/* A query PRAGMA `name` of n_args VARCHAR arguments (and, with `named`, a
 * VARCHAR named parameter of that name, NULL by default). */
int qd_register_pragma_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory,
                                 struct qd_db *db, const char *name, int n_args, const char *named,
                                 duckdb_v2_pragma_function_query_callback_fn query) {
  duckdb_v2_pragma_function_handle f = NULL;
  duckdb_v2_function_signature_handle sig = NULL;
  duckdb_v2_logical_type_handle varchar = NULL;
  duckdb_v2_value_handle none = NULL;
  duckdb_v2_identifier_t fname = qd_str(name);
  duckdb_v2_opaque user = {db, NULL, NULL};
  int ok = duckdb_v2_pragma_function_create(factory, &f, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_pragma_function_set_name(f, &fname, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_pragma_function_get_signature(f, &sig, NULL) == DUCKDB_V2_ERROR_NONE &&
           add_varchar_params(factory, sig, n_args, named, &varchar, &none);
  ok = ok && duckdb_v2_pragma_function_set_user_data(f, &user, NULL) == DUCKDB_V2_ERROR_NONE &&
       duckdb_v2_pragma_function_set_query_callback(f, query, NULL) == DUCKDB_V2_ERROR_NONE &&
       duckdb_v2_extension_register_pragma_function(extension, f, NULL) == DUCKDB_V2_ERROR_NONE;
  if (none) duckdb_v2_value_destroy(&none);
  if (varchar) duckdb_v2_logical_type_destroy(&varchar);
  if (f) duckdb_v2_pragma_function_destroy(&f);
  return ok ? 0 : -1;
}

/* ---- registration */

int qd_register_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db,
                          const char *name, int n_args, const char *named, duckdb_v2_table_function_bind_callback_fn bind,
                          duckdb_v2_table_function_init_global_callback_fn init,
                          duckdb_v2_table_function_init_local_callback_fn local,
                          duckdb_v2_table_function_exec_callback_fn exec, int pushdown) {
  duckdb_v2_table_function_handle f = NULL;
  duckdb_v2_function_signature_handle sig = NULL;
  duckdb_v2_logical_type_handle varchar = NULL;
  duckdb_v2_value_handle none = NULL;
  duckdb_v2_identifier_t fname = qd_str(name);
  duckdb_v2_opaque user = {db, NULL, NULL};
  int ok = duckdb_v2_table_function_create(factory, &f, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_name(f, &fname, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_get_signature(f, &sig, NULL) == DUCKDB_V2_ERROR_NONE &&
           add_varchar_params(factory, sig, n_args, named, &varchar, &none);
  ok = ok && duckdb_v2_table_function_set_user_data(f, &user, NULL) == DUCKDB_V2_ERROR_NONE &&
       duckdb_v2_table_function_set_bind_callback(f, bind, NULL) == DUCKDB_V2_ERROR_NONE &&
       duckdb_v2_table_function_set_init_global_callback(f, init, NULL) == DUCKDB_V2_ERROR_NONE &&
       (!local || duckdb_v2_table_function_set_init_local_callback(f, local, NULL) == DUCKDB_V2_ERROR_NONE) &&
       duckdb_v2_table_function_set_exec_callback(f, exec, NULL) == DUCKDB_V2_ERROR_NONE;
  if (ok && pushdown) {
    ok = duckdb_v2_table_function_set_projection_pushdown(f, true, NULL) == DUCKDB_V2_ERROR_NONE &&
         duckdb_v2_table_function_set_filter_pushdown_callback(f, qd_filter_pushdown, NULL) == DUCKDB_V2_ERROR_NONE;
  }
  ok = ok && duckdb_v2_extension_register_table_function(extension, f, NULL) == DUCKDB_V2_ERROR_NONE;
  if (none) duckdb_v2_value_destroy(&none);
  if (varchar) duckdb_v2_logical_type_destroy(&varchar);
  if (f) duckdb_v2_table_function_destroy(&f);
  return ok ? 0 : -1;
}

/* ---- entry point: qlink_v2_init_c_api_v2 (the file's base name, qlink_v2) */

DUCKDB_EXTENSION_API void qlink_v2_init_c_api_v2(struct duckdb_v2_extension_input *input);

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_v2_extension_handle extension, duckdb_v2_context_handle context,
                            duckdb_v2_error_info_handle *err) {
  char *msg = NULL;
  struct qd_db *db = qd_db_new(&msg);
  if (!db) {
    qd_v2_fail(err, qd_text_or_oom(msg));
    free(msg);
    return;
  }
  duckdb_v2_factory_handle factory = NULL;
  int ok = duckdb_v2_context_get_factory(context, &factory, NULL) == DUCKDB_V2_ERROR_NONE;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_scan", 1, "table", qd_scan_bind_v2, qd_scan_init_v2,
                            qd_scan_local_init_v2, qd_scan_v2, 1) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_plugins", 0, NULL, qd_plugins_bind_v2, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, 0) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_tables", 1, NULL, qd_tables_bind_v2, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, 0) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_allow", 1, NULL, qd_allow_bind_v2, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, 0) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_seal", 0, NULL, qd_allow_bind_v2, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, 0) == 0;
  ok = ok && qd_register_pragma_v2(extension, factory, db, "qlink_attach", 2, NULL, qd_attach_query_v2) == 0;
  ok = ok && qd_register_v2(extension, factory, db, "qlink_attach", 2, NULL, qd_attach_call_v2, qd_rows_init_v2, NULL,
                            qd_rows_emit_v2, 0) == 0;
  ok = ok && qd_register_functions_v2(extension, factory, db) == 0;
  if (!ok) qd_v2_fail(err, "qlink: registering the qlink functions failed");
}
