/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's qlink_scan('PLUGIN/PROVIDER?k=v&...' [, table := 'NAME'])
 * (scan.h): the V1 build's (v1/scan.c) over C API V2, plus filter
 * pushdown: DuckDB offers each predicate over qlink_scan's rows to
 * filters.c, which translates it into qlink filters, asks the provider,
 * and accepts what the provider evaluates exactly. The init, local init
 * and exec serve plugin table functions too (functions.c). The
 * engine-side work is common/scan.c's.
 */
#include "v2/scan.h"

#include <stdlib.h>

#include "common/access.h"
#include "common/scan.h"
#include "common/vectors.h"
#include "v2/bind.h"
#include "v2/filters.h"
#include "v2/register.h"
#include "v2/vectors.h"

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
  size_t spec_len = 0;
  int rc = qd_follow_settings_v2(db, context, &qerr);
  if (rc == QL_OK) rc = qd_arg_spec(info, 0, "the spec", &spec, &spec_len, &qerr);
  if (rc == QL_OK) rc = qd_named_text(info, "table", "argument \"table\"", &table, &qerr);
  struct qd_bind *b = rc == QL_OK ? qd_bind_new(db, spec) : NULL;
  if (rc == QL_OK && !b) rc = ql_error_set(&qerr, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) rc = qd_bind_open(b, spec, spec_len, table, &qerr);
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
        msg = rc == QD_MALFORMED ? qd_printf(
                                       "%s: output column %d: a string view names bytes the plugin's array "
                                       "does not have",
                                       g->bind->label, c)
                                 : qd_printf("%s: DuckDB refused memory for output column %d", g->bind->label, c);
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

int qd_register_scan_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db) {
  return qd_register_v2(extension, factory, db, "qlink_scan", 1, "table", qd_scan_bind_v2, qd_scan_init_v2,
                        qd_scan_local_init_v2, qd_scan_v2, qd_filter_pushdown);
}
