/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB host's per-database state, shared by both builds.
 *
 * Two extensions are built: qlink.duckdb_extension against DuckDB's stable
 * C API V1 (src/v1) and qlink_v2.duckdb_extension against the unstable C
 * API V2 of the pinned engine version (src/v2), which adds filter
 * pushdown. The files of src/common compile into both, each time against
 * that build's capi.h; they make no DuckDB call except through vectors.h,
 * which each build implements. */
#ifndef QLINK_DUCKDB_DB_H
#define QLINK_DUCKDB_DB_H

#include <pthread.h>
#include <stdatomic.h>

#include "capi.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"

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
  qd_connection ddl;          /* V1: held for qlink_attach's views, qlink_load's functions and macros (capi.h) */
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

/* A database's state: the reference host (its file:// store guarded, see
 * qd_guard_files) and the directories of QLINK_PLUGIN_PATH. NULL with the
 * reason in *msg (malloc'd; NULL without memory). */
struct qd_db *qd_db_new(char **msg);

/* The loaded plugin named `name_or_path` (a loaded plugin's name, else a
 * name or path resolved through the allowed directories and loaded). The
 * directory list is sealed first, whether the load then succeeds or fails;
 * a plugin not loaded yet is refused once enable_external_access was seen
 * false. Thread-safe. */
int qd_plugin_get(struct qd_db *db, const char *name_or_path, const struct ql_plugin **out, struct ql_error *err);

#endif /* QLINK_DUCKDB_DB_H */
