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

struct qd_db {
  struct ql_ref_host *host;
  struct ql_plugin_dirs *dirs;
  pthread_mutex_t mutex;
  struct qd_plugin *plugins;
  duckdb_connection ddl;      /* held for qlink_attach's CREATE VIEW statements */
  pthread_mutex_t ddl_mutex;  /* one statement at a time on `ddl` */
};


/* The loaded plugin named `name_or_path` (a loaded plugin's name, else a
 * name or path resolved through the allowed directories and loaded; the
 * first load seals the directory list). Thread-safe. */
int qd_plugin_get(struct qd_db *db, const char *name_or_path, const struct ql_plugin **out, struct ql_error *err);

/* Register qlink_plugins, qlink_tables, qlink_allow and qlink_attach. */
int qd_register_catalog(duckdb_connection con, struct qd_db *db);

#endif /* QLINK_DUCKDB_EXT_INTERNAL_H */
