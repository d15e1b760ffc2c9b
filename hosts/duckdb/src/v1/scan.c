/* SPDX-License-Identifier: Apache-2.0 */
/* The V1 build's qlink_scan('PLUGIN/PROVIDER?k=v&...' [, table := 'NAME'])
 * (scan.h): one table provider of a qlink plugin as a DuckDB table function.
 *
 * bind: parse the spec (ql_table_spec_parse), resolve the plugin through
 * the allowed directories (qlink/lib/plugin_dirs.h), open the provider,
 * map its schema (types.c) and set the cardinality from its statistics.
 * init: plan the scan once with the projection DuckDB pushed down; max
 * threads = partition count. Each DuckDB thread takes whole partitions
 * (an atomic counter) and copies their record batches into DuckDB
 * vectors, validity included. Every call into the plugin is bracketed by
 * its executor hooks; its errors carry its message and the spec. The
 * init, local init and scan serve plugin table functions too
 * (functions.c). The engine-side work is common/scan.c's.
 */
#include "v1/scan.h"

#include <stdlib.h>

#include "common/access.h"
#include "common/scan.h"
#include "common/vectors.h"
#include "v1/bind.h"
#include "v1/vectors.h"

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
  size_t spec_len = 0;
  int rc = qd_follow_bind(db, info, &err);
  if (rc == QL_OK) rc = qd_param_spec(info, 0, "the spec", &spec, &spec_len, &err);
  duckdb_value tv = rc == QL_OK ? duckdb_bind_get_named_parameter(info, "table") : NULL;
  if (tv) rc = qd_value_text(tv, "argument \"table\"", &table, &err);
  if (tv) duckdb_destroy_value(&tv);
  struct qd_bind *b = rc == QL_OK ? qd_bind_new(db, spec) : NULL;
  if (rc == QL_OK && !b) rc = ql_error_set(&err, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_bind_open(b, spec, spec_len, table, &err);
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
      if (qd_copy(&g->bind->types[g->out_col[c]], l->batch.children[src], l->offset, n, v, 0) != 0) {
        msg = qd_printf("%s: output column %d: a string view names bytes the plugin's array does not have",
                        g->bind->label, c);
        duckdb_function_set_error(info, qd_text_or_oom(msg));
        free(msg);
        return;
      }
    }
    l->offset += (int64_t)n;
  }
  duckdb_data_chunk_set_size(output, n);
}

int qd_register_scan(duckdb_connection con, struct qd_db *db) {
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
  duckdb_state st = duckdb_register_table_function(con, f);
  duckdb_destroy_table_function(&f);
  return st == DuckDBSuccess ? 0 : -1;
}
