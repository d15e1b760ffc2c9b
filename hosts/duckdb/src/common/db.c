/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB host's per-database state (db.h): made when the extension
 * loads, and the plugins it loads through the allowed directories. No
 * DuckDB call. */
#include "common/db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "qlink/lib/host.h"
#include "qlink/lib/plugin_dirs.h"

/* ---- plugins: loaded once per database, never unloaded while DuckDB lives
 * (registered objects may still point into them). */

int qd_plugin_get(struct qd_db *db, const char *name_or_path, const struct ql_plugin **out, struct ql_error *err) {
  /* SQL that names a plugin ends the owner's configuration, whether the load
   * then succeeds or fails (a failed dlopen may have run constructors). */
  ql_plugin_dirs_seal(db->dirs);
  pthread_mutex_lock(&db->mutex);
  for (struct qd_plugin *p = db->plugins; p; p = p->next) {
    if (strcmp(p->loaded->plugin.name, name_or_path) == 0) {
      *out = &p->loaded->plugin;
      pthread_mutex_unlock(&db->mutex);
      return QL_OK;
    }
  }
  char *real = NULL;
  int rc = ql_plugin_dirs_resolve(db->dirs, name_or_path, &real, err);
  for (struct qd_plugin *p = db->plugins; rc == QL_OK && p; p = p->next) {
    if (strcmp(p->real_path, real) == 0) {
      *out = &p->loaded->plugin;
      free(real);
      pthread_mutex_unlock(&db->mutex);
      return QL_OK;
    }
  }
  if (rc == QL_OK && atomic_load(&db->no_external)) {
    rc = ql_error_set(err, QL_EINVAL,
                      "loading plugin '%s' is refused: DuckDB's enable_external_access is false (DuckDB refuses LOAD "
                      "then too)",
                      name_or_path);
  }
  struct ql_loaded_plugin *lp = NULL;
  if (rc == QL_OK) rc = ql_plugin_load(real, &lp, err);
  struct qd_plugin *p = rc == QL_OK ? calloc(1, sizeof(*p)) : NULL;
  if (rc == QL_OK && !p) rc = ql_error_set(err, QL_ENOMEM, "out of memory loading plugin %s", real);
  if (rc == QL_OK) {
    *p = (struct qd_plugin){lp, real, db->plugins};
    db->plugins = p;
    *out = &lp->plugin;
  } else {
    ql_plugin_unload(lp);
    free(real);
  }
  pthread_mutex_unlock(&db->mutex);
  return rc;
}

struct qd_db *qd_db_new(char **msg) {
  struct qd_db *db = calloc(1, sizeof(*db));
  struct ql_error err = {0};
  if (!db) {
    *msg = qd_printf("qlink: out of memory");
    return NULL;
  }
  pthread_mutex_init(&db->mutex, NULL);
  pthread_mutex_init(&db->ddl_mutex, NULL);
  int rc = ql_ref_host_new(NULL, &db->host, &err);
  if (rc == QL_OK) rc = ql_plugin_dirs_new(&db->dirs, &err);
  if (rc == QL_OK) rc = ql_plugin_dirs_add_list(db->dirs, getenv(QL_PLUGIN_PATH_ENV), QL_PLUGIN_PATH_ENV, &err);
  if (rc == QL_OK) rc = qd_guard_files(db, &err);
  if (rc != QL_OK) {
    *msg = qd_printf("qlink: %s", ql_error_message(&err));
    ql_error_release(&err);
    return NULL; /* db stays allocated: nothing registered points at it, freeing it races nothing but gains little */
  }
  return db;
}
