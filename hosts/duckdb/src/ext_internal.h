/* The DuckDB host's shared state (ext.c) and its catalog functions
 * (catalog.c). */
#ifndef QLINK_DUCKDB_EXT_INTERNAL_H
#define QLINK_DUCKDB_EXT_INTERNAL_H

#define DUCKDB_EXTENSION_NAME qlink
#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 5
#define DUCKDB_EXTENSION_API_VERSION_PATCH 6
#include <duckdb_extension.h>
#include <pthread.h>

#include "qlink/lib/loader.h"

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
  duckdb_connection ddl;      /* held for qlink_attach's views, qlink_load's functions and macros */
  pthread_mutex_t ddl_mutex;  /* one statement at a time on `ddl` */
  struct qd_loaded_fn *functions; /* what qlink_load registered (under mutex) */
};


/* The loaded plugin named `name_or_path` (a loaded plugin's name, else a
 * name or path resolved through the allowed directories and loaded; the
 * first load seals the directory list). Thread-safe. */
int qd_plugin_get(struct qd_db *db, const char *name_or_path, const struct ql_plugin **out, struct ql_error *err);

/* Register qlink_plugins, qlink_tables, qlink_allow and qlink_attach. */
int qd_register_catalog(duckdb_connection con, struct qd_db *db);
/* `s` as a SQL identifier in double quotes (q '"') or a string literal in
 * single quotes (q '\''), into out[cap] (truncated to fit). catalog.c. */
void qd_quote(char *out, size_t cap, const char *s, char q);

/* Register qlink_load and the table functions behind plugin table
 * functions (functions.c). */
int qd_register_functions(duckdb_connection con, struct qd_db *db);

/* ---- one table provider as a DuckDB table function (ext.c): qlink_scan's
 * bind data, also made by plugin table functions (functions.c). */
struct qd_type;
struct qd_bind {
  struct qd_db *db;
  char *label; /* malloc'd; prefixes every error: "qlink_scan('SPEC')", "qlink_sample.sample_range(...)" */
  const struct ql_plugin *plugin;
  struct ql_table_provider provider;
  struct ArrowSchema schema;
  int64_t n_columns;
  struct qd_type *types;
};
void qd_bind_free(void *bind);
/* With b->plugin and b->provider set: the provider's schema as the result
 * columns (types.c's mapping; an unmappable column is an error naming it)
 * and its statistics as the cardinality. */
int qd_bind_provider(duckdb_bind_info info, struct qd_bind *b, struct ql_error *err);
/* DuckDB's threads and memory_limit of `ctx` as the reference host's
 * settings (NULL: nothing). */
void qd_follow_settings(struct qd_db *db, duckdb_client_context ctx);
/* init, local init and scan of a struct qd_bind: one plan per query, whole
 * partitions per DuckDB thread. */
void qd_scan_init(duckdb_init_info info);
void qd_scan_local_init(duckdb_init_info info);
void qd_scan(duckdb_function_info info, duckdb_data_chunk output);

#endif /* QLINK_DUCKDB_EXT_INTERNAL_H */
