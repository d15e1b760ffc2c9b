/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: the state of one connection (conn.h). */
#include "conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qlink/lib/status.h"

static void schemas_free(struct qls_conn *c) {
  while (c->schemas) {
    struct qls_schema *s = c->schemas;
    c->schemas = s->next;
    const struct ql_plugin *p = &s->plugin->loaded->plugin;
    void *tok = ql_plugin_enter(p);
    if (s->provider.release) s->provider.release(&s->provider);
    ql_plugin_leave(p, tok);
    qls_plugin_release(s->plugin);
    free(s->spec);
    free(s);
  }
}

int qls_conn_new(sqlite3 *db, struct qls_conn **out, struct ql_error *error) {
  *out = NULL;
  struct qls_conn *c = calloc(1, sizeof *c);
  if (!c) return ql_error_set(error, QL_ENOMEM, "out of memory");
  c->db = db;
  c->refs = 1;
  struct ql_ref_host_options o = {-1, 0, 2};
  int rc = ql_ref_host_new(&o, &c->host, error);
  if (rc == QL_OK) rc = ql_plugin_dirs_new(&c->path, error);
  if (rc == QL_OK) rc = ql_plugin_dirs_add_list(c->path, getenv(QL_PLUGIN_PATH_ENV), QL_PLUGIN_PATH_ENV, error);
  if (rc != QL_OK) {
    qls_conn_unref(c);
    return rc;
  }
  c->env_dirs = ql_plugin_dirs_count(c->path) > 0;
  *out = c;
  return QL_OK;
}

void qls_conn_ref(struct qls_conn *c) { c->refs++; }

void qls_conn_unref(void *p) {
  struct qls_conn *c = p;
  if (--c->refs > 0) return;
  schemas_free(c);
  for (int i = 0; i < c->n_created; i++) sqlite3_free(c->created[i]);
  free(c->created);
  struct ql_error err = {0};
  ql_ref_host_free(c->host, &err);
  ql_error_release(&err);
  ql_plugin_dirs_free(c->path);
  free(c);
}

/* ---- plugin directories */

int qls_conn_may_allow(const struct qls_conn *c, const char *dir, char **why) {
  *why = NULL;
  if (c->env_dirs) {
    struct ql_error err = {0};
    int listed = 0;
    int rc = ql_plugin_dirs_listed(c->path, dir, &listed, &err);
    ql_error_release(&err);
    if (rc == QL_OK && listed) return 1;
    char *dirs = ql_plugin_dirs_text(c->path);
    *why = sqlite3_mprintf("'%s' is not one of the plugin directories " QL_PLUGIN_PATH_ENV
                           " set (%s), and SQL cannot add any: add it to " QL_PLUGIN_PATH_ENV
                           " before the extension loads",
                           dir, dirs ? dirs : "(out of memory listing them)");
    free(dirs);
    return 0;
  }
  struct stat st;
  if (stat(dir, &st) != 0) {
    *why = sqlite3_mprintf("plugin directory '%s': %s", dir, strerror(errno));
    return 0;
  }
  if (!S_ISDIR(st.st_mode)) {
    *why = sqlite3_mprintf("plugin directory '%s' is not a directory", dir);
    return 0;
  }
  return 1;
}

/* ---- plugins and providers */

int qls_conn_plugin(struct qls_conn *c, const char *name, struct qls_plugin **out, struct ql_error *error) {
  char *real = NULL;
  ql_plugin_dirs_seal(c->path); /* SQL that names a plugin ends the owner's configuration */
  int rc = ql_plugin_dirs_resolve(c->path, name, &real, error);
  if (rc != QL_OK) return rc;
  rc = qls_plugin_acquire(real, out, error);
  free(real);
  return rc;
}

int qls_spec_open(struct qls_conn *c, const char *spec, size_t len, int32_t kind, struct ql_table_spec *parsed,
                  struct qls_plugin **plugin, int32_t *kind_out, struct ql_error *error) {
  int rc = ql_table_spec_parse_n(spec, len, parsed, error);
  if (rc != QL_OK) return rc;
  rc = qls_conn_plugin(c, parsed->plugin, plugin, error);
  if (rc != QL_OK) {
    ql_table_spec_free(parsed);
    return rc;
  }
  const struct ql_plugin *p = &(*plugin)->loaded->plugin;
  int32_t found = 0;
  if (kind != QL_ITEM_SCHEMA_PROVIDER && ql_plugin_find_item(p, QL_ITEM_TABLE_PROVIDER, parsed->provider))
    found = QL_ITEM_TABLE_PROVIDER;
  else if (kind != QL_ITEM_TABLE_PROVIDER && ql_plugin_find_item(p, QL_ITEM_SCHEMA_PROVIDER, parsed->provider))
    found = QL_ITEM_SCHEMA_PROVIDER;
  if (!found) {
    const char *what = kind == QL_ITEM_TABLE_PROVIDER    ? "table provider"
                       : kind == QL_ITEM_SCHEMA_PROVIDER ? "schema provider"
                                                         : "table or schema provider";
    rc = ql_error_set(error, QL_ENOTFOUND, "plugin %s has no %s '%s'", p->name, what, parsed->provider);
    qls_plugin_release(*plugin);
    *plugin = NULL;
    ql_table_spec_free(parsed);
    return rc;
  }
  if (kind_out) *kind_out = found;
  return QL_OK;
}

int qls_schema_get(struct qls_conn *c, const char *spec, struct qls_schema **out, struct ql_error *error) {
  for (struct qls_schema *s = c->schemas; s; s = s->next) {
    if (strcmp(s->spec, spec) == 0) {
      *out = s;
      return QL_OK;
    }
  }
  struct ql_table_spec parsed = {0};
  struct qls_plugin *plugin = NULL;
  int rc = qls_spec_open(c, spec, strlen(spec), QL_ITEM_SCHEMA_PROVIDER, &parsed, &plugin, NULL, error);
  if (rc != QL_OK) return rc;
  struct qls_schema *s = calloc(1, sizeof *s);
  if (s) s->spec = strdup(spec);
  if (!s || !s->spec) {
    free(s);
    ql_table_spec_free(&parsed);
    qls_plugin_release(plugin);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  const struct ql_plugin *p = &plugin->loaded->plugin;
  void *tok = ql_plugin_enter(p);
  rc = p->schema_provider_open(p, parsed.provider, &parsed.options, ql_ref_host_session(c->host), &s->provider, error);
  ql_plugin_leave(p, tok);
  ql_table_spec_free(&parsed);
  if (rc != QL_OK) {
    free(s->spec);
    free(s);
    qls_plugin_release(plugin);
    return rc;
  }
  s->plugin = plugin;
  s->next = c->schemas;
  c->schemas = s;
  *out = s;
  return QL_OK;
}

/* ---- the qlink tables this connection created */

char *qls_table_key(int argc, const char *const *argv) {
  sqlite3_str *s = sqlite3_str_new(NULL);
  for (int i = 1; i < argc; i++) sqlite3_str_appendf(s, "%s%s", i > 1 ? "\x1f" : "", argv[i]);
  if (sqlite3_str_errcode(s) != SQLITE_OK) {
    sqlite3_free(sqlite3_str_finish(s));
    return NULL;
  }
  return sqlite3_str_finish(s);
}

int qls_created_has(const struct qls_conn *c, const char *key) {
  for (int i = 0; i < c->n_created; i++) {
    if (strcmp(c->created[i], key) == 0) return 1;
  }
  return 0;
}

int qls_created_add(struct qls_conn *c, const char *key) {
  if (qls_created_has(c, key)) return QL_OK;
  if (c->n_created == c->cap_created) {
    int cap = c->cap_created ? c->cap_created * 2 : 8;
    char **grown = realloc(c->created, sizeof *grown * (size_t)cap);
    if (!grown) return QL_ENOMEM;
    c->created = grown;
    c->cap_created = cap;
  }
  char *copy = sqlite3_mprintf("%s", key);
  if (!copy) return QL_ENOMEM;
  c->created[c->n_created++] = copy;
  return QL_OK;
}

void qls_created_remove(struct qls_conn *c, const char *key) {
  for (int i = 0; i < c->n_created; i++) {
    if (strcmp(c->created[i], key) == 0) {
      sqlite3_free(c->created[i]);
      c->created[i] = c->created[--c->n_created];
      return;
    }
  }
}
