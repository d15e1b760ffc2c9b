/* The qlink DuckDB extension (stable C extension API, V1, target 1.5.6):
 * qlink_scan('PLUGIN/PROVIDER?k=v&...') runs one table provider of a qlink
 * plugin inside DuckDB.
 *
 * bind: parse the spec (ql_table_spec_parse), resolve the plugin through
 * the allowed directories (qlink/lib/plugin_dirs.h), open the provider,
 * map its schema (types.c) and set the cardinality from its statistics.
 * init: plan the scan once with the projection DuckDB pushed down; max
 * threads = partition count. Each DuckDB thread takes whole partitions
 * (an atomic counter) and copies their record batches into DuckDB
 * vectors, validity included. Every call into the plugin is bracketed by
 * its executor hooks; its errors carry its message and the spec.
 */
#include "ext_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/plugin_dirs.h"
#include "qlink/lib/status.h"
#include "types.h"
#include "vectors.h"

/* ---- settings and arguments */

/* Boolean option `name` of the context: 1, 0, or -1 when DuckDB gives none. */
static int qd_option_bool(duckdb_client_context ctx, const char *name) {
  duckdb_config_option_scope scope;
  duckdb_value v = duckdb_client_context_get_config_option(ctx, name, &scope);
  if (!v) return -1;
  int out = duckdb_is_null_value(v) ? -1 : duckdb_get_bool(v) ? 1 : 0;
  duckdb_destroy_value(&v);
  return out;
}

/* List option `name` (VARCHAR[]) of the context into a settings list. */
static void qd_option_list(duckdb_client_context ctx, const char *name, char ***list, int64_t *n) {
  duckdb_config_option_scope scope;
  duckdb_value v = duckdb_client_context_get_config_option(ctx, name, &scope);
  if (!v) return;
  idx_t size = duckdb_is_null_value(v) ? 0 : duckdb_get_list_size(v);
  for (idx_t i = 0; i < size; i++) {
    duckdb_value c = duckdb_get_list_child(v, i);
    char *text = c ? duckdb_get_varchar(c) : NULL;
    if (text) qd_settings_add(list, n, text);
    duckdb_free(text);
    if (c) duckdb_destroy_value(&c);
  }
  duckdb_destroy_value(&v);
}

int qd_follow_settings(struct qd_db *db, duckdb_client_context ctx, struct ql_error *err) {
  struct qd_settings s = {0};
  s.locked = s.external = -1;
  if (ctx) {
    duckdb_config_option_scope scope;
    duckdb_value v = duckdb_client_context_get_config_option(ctx, "threads", &scope);
    if (v) {
      s.threads = duckdb_get_int64(v);
      duckdb_destroy_value(&v);
    }
    v = duckdb_client_context_get_config_option(ctx, "memory_limit", &scope);
    char *text = v ? duckdb_get_varchar(v) : NULL;
    s.memory_limit = text ? strdup(text) : NULL;
    duckdb_free(text);
    if (v) duckdb_destroy_value(&v);
    s.locked = qd_option_bool(ctx, "lock_configuration");
    s.external = qd_option_bool(ctx, "enable_external_access");
    if (s.external == 0) {
      qd_option_list(ctx, "allowed_directories", &s.dirs, &s.n_dirs);
      qd_option_list(ctx, "allowed_paths", &s.paths, &s.n_paths);
    }
  }
  int rc = qd_follow(db, &s, err);
  qd_settings_free(&s);
  return rc;
}

int qd_follow_bind(struct qd_db *db, duckdb_bind_info info, struct ql_error *err) {
  duckdb_client_context ctx = NULL;
  duckdb_table_function_get_client_context(info, &ctx);
  int rc = qd_follow_settings(db, ctx, err);
  if (ctx) duckdb_destroy_client_context(&ctx);
  return rc;
}

int qd_value_text(duckdb_value v, const char *what, char **out, struct ql_error *err) {
  *out = NULL;
  if (!v || duckdb_is_null_value(v)) return qd_check_text(what, NULL, 0, err);
  char *s = duckdb_get_varchar(v);
  if (!s) return ql_error_set(err, QL_ENOMEM, "out of memory reading %s", what);
  /* duckdb_get_varchar's copy ends at the first NUL byte inside the value,
   * and V1 has no length getter: DuckDB's SQL literal of it ('...', quotes
   * doubled) ends early exactly when a NUL byte follows. */
  size_t n = strlen(s), quotes = 0;
  for (size_t i = 0; i < n; i++) quotes += s[i] == '\'';
  char *lit = duckdb_value_to_string(v);
  int cut = lit && lit[0] == '\'' && strlen(lit) == 1 + n + quotes;
  duckdb_free(lit);
  int rc = qd_check_text(what, s, cut ? n + 1 : n, err);
  if (rc != QL_OK) {
    duckdb_free(s);
    return rc;
  }
  *out = s;
  return QL_OK;
}

int qd_param_text(duckdb_bind_info info, idx_t i, const char *what, char **out, struct ql_error *err) {
  duckdb_value v = duckdb_bind_get_parameter(info, i);
  int rc = qd_value_text(v, what, out, err);
  if (v) duckdb_destroy_value(&v);
  return rc;
}

void qd_bind_fail(duckdb_bind_info info, const char *label, struct ql_error *err) {
  char *msg = qd_printf("%s: %s", label, ql_error_message(err));
  ql_error_release(err);
  duckdb_bind_set_error(info, qd_text_or_oom(msg));
  free(msg);
}

/* ---- qlink_scan */

int qd_bind_provider(duckdb_bind_info info, struct qd_bind *b, struct ql_error *err) {
  int64_t rows;
  int exact;
  int rc = qd_bind_schema(b, &rows, &exact, err);
  for (int64_t i = 0; rc == QL_OK && i < b->n_columns; i++) {
    duckdb_logical_type lt = qd_logical_type(&b->types[i]);
    duckdb_bind_add_result_column(info, b->schema.children[i]->name, lt);
    duckdb_destroy_logical_type(&lt);
  }
  if (rc == QL_OK && rows >= 0) duckdb_bind_set_cardinality(info, (idx_t)rows, exact);
  return rc;
}

static void qd_scan_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  struct ql_error err = {0};
  char *spec = NULL, *table = NULL;
  int rc = qd_follow_bind(db, info, &err);
  if (rc == QL_OK) rc = qd_param_text(info, 0, "the spec", &spec, &err);
  duckdb_value tv = rc == QL_OK ? duckdb_bind_get_named_parameter(info, "table") : NULL;
  if (tv) rc = qd_value_text(tv, "argument \"table\"", &table, &err);
  if (tv) duckdb_destroy_value(&tv);
  struct qd_bind *b = rc == QL_OK ? qd_bind_new(db, spec) : NULL;
  if (rc == QL_OK && !b) rc = ql_error_set(&err, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_bind_open(b, spec, table, &err);
  duckdb_free(spec);
  duckdb_free(table);
  if (rc == QL_OK) rc = qd_bind_provider(info, b, &err);
  if (rc != QL_OK) {
    qd_bind_fail(info, b ? b->label : "qlink_scan", &err);
    qd_bind_free(b);
    return;
  }
  duckdb_bind_set_bind_data(info, b, qd_bind_free);
}

void qd_scan_init(duckdb_init_info info) {
  struct qd_bind *b = duckdb_init_get_bind_data(info);
  idx_t n = duckdb_init_get_column_count(info);
  idx_t *cols = calloc(n ? n : 1, sizeof(*cols));
  char *msg = NULL;
  if (!cols) {
    duckdb_init_set_error(info, "qlink_scan: out of memory");
    return;
  }
  for (idx_t i = 0; i < n; i++) cols[i] = duckdb_init_get_column_index(info, i);
  struct qd_global *g = qd_global_new(b, n, cols, &msg);
  free(cols);
  if (!g) {
    duckdb_init_set_error(info, qd_text_or_oom(msg));
    free(msg);
    return;
  }
  duckdb_init_set_max_threads(info, (idx_t)(g->partitions > 0 ? g->partitions : 1));
  duckdb_init_set_init_data(info, g, qd_global_free);
}

void qd_scan_local_init(duckdb_init_info info) {
  struct qd_local *l = calloc(1, sizeof(*l));
  if (!l) {
    duckdb_init_set_error(info, "qlink_scan: out of memory");
    return;
  }
  duckdb_init_set_init_data(info, l, qd_local_free); /* the scan finds the global state on its first call */
}

void qd_scan(duckdb_function_info info, duckdb_data_chunk output) {
  struct qd_local *l = duckdb_function_get_local_init_data(info);
  if (!l->g) l->g = duckdb_function_get_init_data(info);
  struct qd_global *g = l->g;
  char *msg = NULL;
  int more = qd_local_next(l, &msg);
  if (more < 0) {
    duckdb_function_set_error(info, qd_text_or_oom(msg));
    free(msg);
    return;
  }
  idx_t n = 0;
  if (more) {
    n = (idx_t)(l->batch.length - l->offset);
    if (n > duckdb_vector_size()) n = duckdb_vector_size();
    for (int32_t c = 0; c < g->n_out; c++) {
      duckdb_vector v = duckdb_data_chunk_get_vector(output, (idx_t)c);
      int32_t src = g->out_source[c];
      if (src < 0) {
        int64_t *ids = duckdb_vector_get_data(v);
        for (idx_t r = 0; r < n; r++) ids[r] = l->offset + (int64_t)r;
        continue;
      }
      qd_copy(&g->bind->types[g->out_col[c]], l->batch.children[src], l->offset, n, v, 0);
    }
    l->offset += (int64_t)n;
  }
  duckdb_data_chunk_set_size(output, n);
}

/* ---- entry point */

DUCKDB_EXTENSION_API bool qlink_init_c_api(duckdb_extension_info info, struct duckdb_extension_access *access);

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_connection connection, duckdb_extension_info info,
                            struct duckdb_extension_access *access) {
  char *msg = NULL;
  struct qd_db *db = qd_db_new(&msg);
  if (!db) {
    access->set_error(info, qd_text_or_oom(msg));
    free(msg);
    return false;
  }
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, "qlink_scan");
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_table_function_add_parameter(f, varchar);
  duckdb_table_function_add_named_parameter(f, "table", varchar);
  duckdb_destroy_logical_type(&varchar);
  duckdb_table_function_set_extra_info(f, db, NULL);
  duckdb_table_function_set_bind(f, qd_scan_bind);
  duckdb_table_function_set_init(f, qd_scan_init);
  duckdb_table_function_set_local_init(f, qd_scan_local_init);
  duckdb_table_function_set_function(f, qd_scan);
  duckdb_table_function_supports_projection_pushdown(f, true);
  duckdb_state st = duckdb_register_table_function(connection, f);
  duckdb_destroy_table_function(&f);
  if (st != DuckDBSuccess || qd_register_catalog(connection, db) != 0 || qd_register_functions(connection, db) != 0) {
    access->set_error(info, "qlink: registering the qlink functions failed");
    return false;
  }
  /* A connection of its own for qlink_attach's DDL (held while DuckDB lives). */
  duckdb_database *database = access->get_database(info);
  if (!database || duckdb_connect(*database, &db->ddl) != DuckDBSuccess) {
    access->set_error(info, "qlink: cannot open a connection for qlink_attach");
    return false;
  }
  return true;
}
