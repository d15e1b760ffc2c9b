/* SPDX-License-Identifier: Apache-2.0 */
/* One table provider as a DuckDB table function, the part both builds
 * share (scan.c): qlink_scan's bind data, also made by plugin table
 * functions (plugin_fns.h), and the scan's global and local state. Each
 * build wraps these in its own callbacks (v1/scan.c, v2/scan.c). */
#ifndef QLINK_DUCKDB_SCAN_H
#define QLINK_DUCKDB_SCAN_H

#include "common/db.h"

struct qd_type;
struct ql_ir_builder;
#define QD_MAX_FILTERS 64
struct qd_bind {
  struct qd_db *db;
  char *label; /* malloc'd; prefixes every error: "qlink_scan('SPEC')", "qlink_sample.sample_range(...)" */
  const struct ql_plugin *plugin;
  struct ql_table_provider provider;
  struct ArrowSchema schema;
  int64_t n_columns;
  struct qd_type *types;
  /* Filters for the scan (V2 build: DuckDB's pushed predicates, translated
   * into `filters`, a builder of the bind's own): answers[i] is the
   * provider's; EXACT ones were accepted (DuckDB dropped its filter), the
   * others only prune. */
  struct ql_ir_builder *filters;
  int32_t n_filters;
  ql_expr_id roots[QD_MAX_FILTERS];
  int32_t answers[QD_MAX_FILTERS];
};
/* qlink_scan's bind data for `spec`, labelled "qlink_scan('SPEC')"; NULL
 * without memory. */
struct qd_bind *qd_bind_new(struct qd_db *db, const char *spec);
void qd_bind_free(void *bind);
/* Open the provider of `spec` ("PLUGIN/PROVIDER?k=v&..." of `len` bytes,
 * parsed by ql_table_spec_parse_n: a NUL byte among them is an error naming
 * its offset; with `table` non-NULL, that table of the schema provider
 * PROVIDER) into b->plugin and b->provider. */
int qd_bind_open(struct qd_bind *b, const char *spec, size_t len, const char *table, struct ql_error *err);
/* With b->plugin and b->provider set: the provider's schema into b->schema
 * and b->types (types.c's mapping; an unmappable column is an error naming
 * it), and its row count when the statistics give one (*rows -1 if not). */
int qd_bind_schema(struct qd_bind *b, int64_t *rows, int *exact, struct ql_error *err);

/* One scan: planned once per query, whole partitions per DuckDB thread. */
struct qd_global {
  struct qd_bind *bind;
  struct ql_execution_plan plan;
  int64_t partitions;
  atomic_llong next;
  atomic_int cancelled;
  int32_t n_out;          /* output columns */
  int32_t *out_source;    /* per output column: index into the plan's schema, or -1 (row id) */
  int32_t *out_col;       /* per output column: its table column (for its type) */
};
/* Plan the scan of `b` for the `n` output columns `cols` (indices into the
 * table's columns; one past them: DuckDB's row id), with b's filters. On
 * failure *msg is the error (malloc'd, prefixed by the label; NULL without
 * memory). */
struct qd_global *qd_global_new(struct qd_bind *b, idx_t n, const idx_t *cols, char **msg);
void qd_global_free(void *global);

struct qd_local {
  struct qd_global *g;
  struct ql_task_context ctx;
  struct ArrowArrayStream stream;
  struct ArrowArray batch;
  int64_t offset; /* rows of `batch` already copied */
};
void qd_local_free(void *local);
/* Make l->batch hold rows not yet copied, taking the next partition when
 * one ends: 1 when it does, 0 when every partition is done, -1 on a plugin
 * error (in *msg as qd_global_new's; the scan is cancelled). */
int qd_local_next(struct qd_local *l, char **msg);

#endif /* QLINK_DUCKDB_SCAN_H */
