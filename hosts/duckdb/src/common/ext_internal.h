/* The DuckDB host's shared state and the parts of a scan both builds share.
 *
 * Two extensions are built from these sources: qlink.duckdb_extension
 * against DuckDB's stable C API V1 (ext.c, catalog.c, functions.c) and,
 * with QD_CAPI_V2 defined, qlink_v2.duckdb_extension against the unstable
 * C API V2 of the pinned engine version (ext_v2.c, filters_v2.c), which
 * adds filter pushdown. scan.c and vectors.c compile into both; what they
 * share uses no DuckDB call, or one per API behind QD_CAPI_V2. */
#ifndef QLINK_DUCKDB_EXT_INTERNAL_H
#define QLINK_DUCKDB_EXT_INTERNAL_H

#ifdef QD_CAPI_V2
#define DUCKDB_EXTENSION_NAME qlink_v2
#define DUCKDB_V2_API_ALLOW_UNSTABLE 1
#include <duckdb_extension_v2.h>
typedef duckdb_v2_vector_handle qd_vector;
#else
#define DUCKDB_EXTENSION_NAME qlink
#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 5
#define DUCKDB_EXTENSION_API_VERSION_PATCH 6
#include <duckdb_extension.h>
typedef duckdb_vector qd_vector;
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"

DUCKDB_EXTENSION_EXTERN

/* The per-database state: the reference host's services, the allowed
 * plugin directories and the loaded plugins (never unloaded while DuckDB
 * lives: registered objects may still point into them). */
struct qd_plugin {
  struct ql_loaded_plugin *loaded;
  char *real_path;
  struct qd_plugin *next;
};

struct qd_loaded_fn {
  char *label; /* "PLUGIN.NAME" */
  struct qd_loaded_fn *next;
};

struct qd_db {
  struct ql_ref_host *host;
  struct ql_plugin_dirs *dirs;
  pthread_mutex_t mutex;
  struct qd_plugin *plugins;
#ifndef QD_CAPI_V2
  duckdb_connection ddl;      /* held for qlink_attach's views, qlink_load's functions and macros */
#endif
  pthread_mutex_t ddl_mutex;  /* one statement at a time on `ddl` */
  struct qd_loaded_fn *functions; /* what qlink_load registered (under mutex) */
  /* DuckDB's settings as latches (access.c): lock_configuration seen true,
   * enable_external_access seen false; then `allowed` holds
   * allowed_directories (the first n_allowed_dirs) and allowed_paths,
   * resolved, written once before no_external is set. */
  atomic_int locked;
  atomic_int no_external;
  char **allowed;
  int64_t n_allowed, n_allowed_dirs;
};

/* ---- access.c: what DuckDB's settings let qlink load and read */

/* DuckDB's settings as one bind reads them (the glue: ext.c, ext_v2.c). */
struct qd_settings {
  int64_t threads;    /* <= 0: not known */
  char *memory_limit; /* DuckDB's text ("1.5 GiB"); NULL: not known */
  int locked;         /* lock_configuration; -1: not readable */
  int external;       /* enable_external_access; -1: not readable */
  char **dirs, **paths; /* allowed_directories, allowed_paths (read when external is 0) */
  int64_t n_dirs, n_paths;
};
void qd_settings_free(struct qd_settings *s);
/* Append a copy of `text` to a settings list; -1 without memory. */
int qd_settings_add(char ***list, int64_t *n, const char *text);
/* Every bind's first step: threads and memory_limit become the host's, and
 * the latches close (lock: the plugin directories sealed; no external
 * access: sealed too, no plugin loads, reads limited to the allowed lists).
 * Refused (fail closed) when DuckDB did not give the two switches. */
int qd_follow(struct qd_db *db, struct qd_settings *s, struct ql_error *err);
/* With external access off: every `path` option must be a local path or
 * file:// URL inside the allowed lists (memory:// passes), else refused
 * naming the setting. */
int qd_check_options(struct qd_db *db, const struct ql_options *options, struct ql_error *err);
/* Serve the session's file:// store through the latches (qd_db_new). */
int qd_guard_files(struct qd_db *db, struct ql_error *err);
/* Text read from DuckDB: QL_OK, or QL_EINVAL naming `what` when it is NULL
 * or holds a NUL byte among its `len` bytes (and where). */
int qd_check_text(const char *what, const char *s, size_t len, struct ql_error *err);
/* A malloc'd formatted string (NULL without memory), and the text to show
 * for one that could not be made. */
char *qd_printf(const char *fmt, ...) QL_PRINTF_FORMAT(1, 2);
const char *qd_text_or_oom(const char *s);


/* A database's state: the reference host (its file:// store guarded, see
 * qd_guard_files) and the directories of QLINK_PLUGIN_PATH. NULL with the
 * reason in *msg (malloc'd; NULL without memory). scan.c. */
struct qd_db *qd_db_new(char **msg);

/* The loaded plugin named `name_or_path` (a loaded plugin's name, else a
 * name or path resolved through the allowed directories and loaded). The
 * directory list is sealed first, whether the load then succeeds or fails;
 * a plugin not loaded yet is refused once enable_external_access was seen
 * false. Thread-safe. */
int qd_plugin_get(struct qd_db *db, const char *name_or_path, const struct ql_plugin **out, struct ql_error *err);

/* ---- one table provider as a DuckDB table function: qlink_scan's bind
 * data, also made by plugin table functions (functions.c). scan.c. */
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
/* Open the provider of `spec` ("PLUGIN/PROVIDER?k=v&..."; with `table`
 * non-NULL, that table of the schema provider PROVIDER) into b->plugin and
 * b->provider. */
int qd_bind_open(struct qd_bind *b, const char *spec, const char *table, struct ql_error *err);
/* With b->plugin and b->provider set: the provider's schema into b->schema
 * and b->types (types.c's mapping; an unmappable column is an error naming
 * it), and its row count when the statistics give one (*rows -1 if not). */
int qd_bind_schema(struct qd_bind *b, int64_t *rows, int *exact, struct ql_error *err);
/* DuckDB's `threads` and `memory_limit` (its text, e.g. "1.5 GiB"; NULL:
 * unchanged) as the reference host's settings; threads <= 0: unchanged. */
void qd_apply_settings(struct qd_db *db, int64_t threads, const char *memory_limit);

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

/* Rows of VARCHAR cells, row-major: the catalog functions' results. */
struct qd_rows {
  int32_t n_cols;
  int64_t n_rows, cap;
  char **cells;
  int64_t next; /* the next row to return (single thread) */
};
struct qd_rows *qd_rows_new(int32_t n_cols);
void qd_rows_free(void *rows);
int qd_rows_add(struct qd_rows *r, const char *const *cells);
/* One row (name, version, abi_version, path, description) per loaded plugin. */
int qd_rows_plugins(struct qd_db *db, struct qd_rows *r);
/* The table names of the schema provider SPEC, one row each. */
int qd_rows_tables(struct qd_db *db, const char *spec, struct qd_rows *r, struct ql_error *err);
/* qlink_allow's work (dir non-NULL: `dir` added) and qlink_seal's (dir
 * NULL: the list sealed), then every allowed directory, one row each.
 * Refused naming the setting once lock_configuration was seen true or
 * enable_external_access false (qd_follow), or by the list once sealed. */
int qd_rows_allow(struct qd_db *db, const char *dir, struct qd_rows *r, struct ql_error *err);

/* ---- sql.c: statement text that grows to fit (nothing is ever cut) */
struct qd_text {
  char *s;
  size_t len, cap;
  int failed; /* out of memory: later appends do nothing, qd_text_take gives NULL */
};
void qd_text_add(struct qd_text *t, const char *piece);
void qd_text_addf(struct qd_text *t, const char *fmt, ...) QL_PRINTF_FORMAT(2, 3);
/* `s` as a SQL identifier in double quotes (q '"') or a string literal in
 * single quotes (q '\''). */
void qd_text_quote(struct qd_text *t, const char *s, char q);
/* The text (malloc'd; NULL when an append ran out of memory); t is empty after. */
char *qd_text_take(struct qd_text *t);
/* qlink_attach's statements: schema NAME, then one view per table of
 * `tables` (one column: the names) over qlink_scan(SPEC, "table" := T);
 * with_result: then a SELECT returning the names as column table_name, in
 * order. Malloc'd; NULL without memory. */
char *qd_attach_sql(const char *name, const char *spec, const struct qd_rows *tables, int with_result);

#ifdef QD_CAPI_V2
/* Why `CALL qlink_attach` and `CALL qlink_load` fail in the V2 build. */
#define QD_NO_CALL_DDL                                                                                                 \
  "DuckDB's C API V2 runs statements only on a connection, and a table function's bind gets none (its context "      \
  "reaches no connection or instance); the V2 build runs it as a PRAGMA, on the caller's connection: "

static inline duckdb_v2_str qd_str(const char *s) { return (duckdb_v2_str){s, s ? strlen(s) : 0}; }
/* Fail a V2 callback: `msg` into DuckDB's error slot, as an invalid input
 * (qd_v2_fail) or with `code` (ext_v2.c). */
void qd_v2_fail(duckdb_v2_error_info_handle *err, const char *msg);
void qd_v2_fail_code(duckdb_v2_error_info_handle *err, DUCKDB_V2_ERROR code, const char *msg);
/* Argument `index` of a bind as a malloc'd string (*out), checked by
 * qd_check_text as `what` (NULL refused). */
int qd_arg_text(duckdb_v2_function_bind_info_handle info, idx_t index, const char *what, char **out,
                struct ql_error *err);
/* Named VARCHAR argument `name` likewise; left out: QL_OK and *out NULL. */
int qd_named_text(duckdb_v2_function_bind_info_handle info, const char *name, const char *what, char **out,
                  struct ql_error *err);
/* Fail a V2 callback with "LABEL: <qerr's message>" and `code` (releases qerr). */
void qd_fail_error_v2(duckdb_v2_error_info_handle *err, DUCKDB_V2_ERROR code, const char *label, struct ql_error *qerr);
/* The function's user data (the struct qd_db). */
void *qd_user_data(duckdb_v2_function_bind_info_handle info);
/* DuckDB's settings of `ctx` through qd_follow. */
int qd_follow_settings_v2(struct qd_db *db, duckdb_v2_context_handle ctx, struct ql_error *err);
/* With b->plugin and b->provider set: qd_bind_schema, then the columns as
 * DuckDB's result columns and the row count as its cardinality. */
int qd_bind_columns_v2(duckdb_v2_table_function_bind_info_handle result, duckdb_v2_context_handle context,
                       struct qd_bind *b, struct ql_error *err);
/* qlink_scan's init, local init and exec, for any struct qd_bind. */
void qd_scan_init_v2(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle context,
                     duckdb_v2_error_info_handle *err);
void qd_scan_local_init_v2(duckdb_v2_table_function_init_local_info_handle info, duckdb_v2_context_handle context,
                           duckdb_v2_error_info_handle *err);
void qd_scan_v2(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle context,
                duckdb_v2_error_info_handle *err);
/* Init and exec of a table function returning its bind's struct qd_rows. */
void qd_rows_init_v2(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle context,
                     duckdb_v2_error_info_handle *err);
void qd_rows_emit_v2(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle context,
                     duckdb_v2_error_info_handle *err);
/* Register table function `name` of n_args VARCHAR arguments (and, with
 * `named`, a VARCHAR named parameter, optional: qd_named_text reads it); `pushdown`: with
 * projection and filter pushdown. 0 or -1. */
int qd_register_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db,
                   const char *name, int n_args, const char *named, duckdb_v2_table_function_bind_callback_fn bind,
                   duckdb_v2_table_function_init_global_callback_fn init,
                   duckdb_v2_table_function_init_local_callback_fn local,
                   duckdb_v2_table_function_exec_callback_fn exec, int pushdown);
/* Register query PRAGMA `name`, likewise. 0 or -1. */
int qd_register_pragma_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db,
                          const char *name, int n_args, const char *named,
                          duckdb_v2_pragma_function_query_callback_fn query);
/* `sql` as the PRAGMA's query (a failure into err). */
void qd_set_query(duckdb_v2_pragma_function_query_info_handle result, const char *sql, duckdb_v2_error_info_handle *err);
/* qlink_load, the generic scalar and aggregate functions and the table
 * functions behind plugin table functions (functions_v2.c). 0 or -1. */
int qd_register_functions_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db);
/* qlink_scan's filter pushdown callback (filters_v2.c): DuckDB's predicates
 * as qlink filters into the bind's `filters`; those the provider answers
 * EXACT are accepted (DuckDB drops its own filter), INEXACT ones prune. */
void qd_filter_pushdown(duckdb_v2_table_function_filter_pushdown_info_handle info, duckdb_v2_context_handle context,
                        duckdb_v2_error_info_handle *err);
#else
/* Register qlink_plugins, qlink_tables, qlink_allow and qlink_attach. */
int qd_register_catalog(duckdb_connection con, struct qd_db *db);
/* Register qlink_load and the table functions behind plugin table
 * functions (functions.c). */
int qd_register_functions(duckdb_connection con, struct qd_db *db);

/* With b->plugin and b->provider set: qd_bind_schema, then the columns as
 * DuckDB's result columns and the row count as its cardinality (ext.c). */
int qd_bind_provider(duckdb_bind_info info, struct qd_bind *b, struct ql_error *err);
/* DuckDB's settings of `ctx` through qd_follow (a NULL context gives none:
 * refused). */
int qd_follow_settings(struct qd_db *db, duckdb_client_context ctx, struct ql_error *err);
/* The same for a table function's bind. */
int qd_follow_bind(struct qd_db *db, duckdb_bind_info info, struct ql_error *err);
/* A VARCHAR value's text (*out, duckdb_free it), checked by qd_check_text
 * as `what`; a NULL value (or none) is refused. */
int qd_value_text(duckdb_value v, const char *what, char **out, struct ql_error *err);
/* The same for a bind's positional parameter i. */
int qd_param_text(duckdb_bind_info info, idx_t i, const char *what, char **out, struct ql_error *err);
/* Fail a table function's bind with "LABEL: <err's message>" (releases err). */
void qd_bind_fail(duckdb_bind_info info, const char *label, struct ql_error *err);
/* init, local init and scan of a struct qd_bind (ext.c). */
void qd_scan_init(duckdb_init_info info);
void qd_scan_local_init(duckdb_init_info info);
void qd_scan(duckdb_function_info info, duckdb_data_chunk output);
#endif

#endif /* QLINK_DUCKDB_EXT_INTERNAL_H */
