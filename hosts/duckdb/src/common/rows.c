/* SPDX-License-Identifier: Apache-2.0 */
/* The catalog functions' rows (rows.h): qlink_plugins, qlink_tables and
 * qlink_allow / qlink_seal compute them at bind. No DuckDB call. */
#include "common/rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "common/db.h"
#include "qlink/lib/host.h"
#include "qlink/lib/plugin_dirs.h"

struct qd_rows *qd_rows_new(int32_t n_cols) {
  struct qd_rows *r = calloc(1, sizeof(*r));
  if (r) r->n_cols = n_cols;
  return r;
}

void qd_rows_free(void *data) {
  struct qd_rows *r = data;
  if (!r) return;
  for (int64_t i = 0; i < r->n_rows * r->n_cols; i++) free(r->cells[i]);
  free(r->cells);
  free(r);
}

int qd_rows_add(struct qd_rows *r, const char *const *cells) {
  if (r->n_rows == r->cap) {
    int64_t cap = r->cap ? r->cap * 2 : 8;
    char **grown = realloc(r->cells, (size_t)(cap * r->n_cols) * sizeof(*grown));
    if (!grown) return -1;
    r->cells = grown;
    r->cap = cap;
  }
  for (int32_t c = 0; c < r->n_cols; c++) {
    r->cells[r->n_rows * r->n_cols + c] = strdup(cells[c] ? cells[c] : "");
  }
  r->n_rows++;
  return 0;
}

int qd_rows_plugins(struct qd_db *db, struct qd_rows *r) {
  int rc = 0;
  pthread_mutex_lock(&db->mutex);
  for (struct qd_plugin *p = db->plugins; p && rc == 0; p = p->next) {
    char abi[32];
    snprintf(abi, sizeof(abi), "%u.%u", QL_ABI_VERSION_MAJOR(p->loaded->abi_version),
             QL_ABI_VERSION_MINOR(p->loaded->abi_version));
    const struct ql_plugin *pl = &p->loaded->plugin;
    const char *cells[] = {pl->name, pl->version, abi, p->real_path, pl->description};
    rc = qd_rows_add(r, cells);
  }
  pthread_mutex_unlock(&db->mutex);
  return rc;
}

int qd_rows_tables(struct qd_db *db, const char *spec, size_t len, struct qd_rows *r, struct ql_error *err) {
  struct ql_table_spec ts = {0};
  const struct ql_plugin *p = NULL;
  int rc = ql_table_spec_parse_n(spec, len, &ts, err);
  if (rc == QL_OK) rc = qd_check_options(db, &ts.options, err);
  if (rc == QL_OK) rc = qd_plugin_get(db, ts.plugin, &p, err);
  if (rc == QL_OK && !p->schema_provider_open) {
    rc = ql_error_set(err, QL_ENOTFOUND, "plugin %s has no schema provider '%s'", p->name, ts.provider);
  }
  if (rc == QL_OK) {
    struct ql_schema_provider sp = {0};
    void *tok = ql_plugin_enter(p);
    rc = p->schema_provider_open(p, ts.provider, &ts.options, ql_ref_host_session(db->host), &sp, err);
    for (int64_t i = 0; rc == QL_OK && i < sp.table_count(&sp); i++) {
      const char *name = sp.table_name(&sp, i);
      if (qd_rows_add(r, &name) != 0) rc = ql_error_set(err, QL_ENOMEM, "out of memory");
    }
    if (sp.release) sp.release(&sp);
    ql_plugin_leave(p, tok);
  }
  ql_table_spec_free(&ts);
  return rc;
}

int qd_rows_allow(struct qd_db *db, const char *dir, struct qd_rows *r, struct ql_error *err) {
  int rc = QL_OK;
  if (!dir) {
    ql_plugin_dirs_seal(db->dirs); /* narrows only: never refused */
  } else if (atomic_load(&db->no_external)) {
    rc = ql_error_set(err, QL_EINVAL,
                      "refused: DuckDB's enable_external_access is false, and no plugin loads then");
  } else if (atomic_load(&db->locked)) {
    rc = ql_error_set(err, QL_EINVAL,
                      "refused: DuckDB's lock_configuration is true, and the allowed plugin directories are part of "
                      "the configuration");
  } else if (ql_plugin_dirs_sealed(db->dirs)) {
    rc = ql_error_set(err, QL_ESTATE,
                      "refused: the allowed plugin directories are sealed (SQL named a plugin, or qlink_seal() ran)");
  } else {
    rc = ql_plugin_dirs_add(db->dirs, dir, err);
  }
  for (int64_t i = 0; rc == QL_OK && i < ql_plugin_dirs_count(db->dirs); i++) {
    const char *d = ql_plugin_dirs_get(db->dirs, i);
    if (qd_rows_add(r, &d) != 0) rc = ql_error_set(err, QL_ENOMEM, "out of memory");
  }
  return rc;
}
