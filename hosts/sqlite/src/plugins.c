/* qlink SQLite host: plugins shared by every connection of the process, and
 * the schema providers of one connection. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "qlink_sqlite.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qls_plugin **g_plugins;
static int g_n, g_cap;

int qls_plugin_acquire(struct qls_conn *c, const char *name, struct qls_plugin **out, struct ql_error *error) {
  char *real = NULL;
  ql_plugin_dirs_seal(c->path); /* SQL that names a plugin ends the owner's configuration */
  int rc = ql_plugin_dirs_resolve(c->path, name, &real, error);
  if (rc != QL_OK) return rc;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_n; i++) {
    if (strcmp(g_plugins[i]->real_path, real) == 0) {
      g_plugins[i]->refs++;
      *out = g_plugins[i];
      pthread_mutex_unlock(&g_lock);
      free(real);
      return QL_OK;
    }
  }
  struct qls_plugin *p = calloc(1, sizeof *p);
  if (!p || (g_n == g_cap && !(g_cap = g_cap ? g_cap * 2 : 8, g_plugins = realloc(g_plugins, sizeof *g_plugins * (size_t)g_cap)))) {
    pthread_mutex_unlock(&g_lock);
    free(p);
    free(real);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  rc = ql_plugin_load(real, &p->loaded, error);
  if (rc != QL_OK) {
    if (g_n == 0) { /* nothing loaded: drop the array grown for it */
      free(g_plugins);
      g_plugins = NULL;
      g_cap = 0;
    }
    pthread_mutex_unlock(&g_lock);
    free(p);
    free(real);
    return rc;
  }
  p->real_path = real;
  p->refs = 1;
  g_plugins[g_n++] = p;
  pthread_mutex_unlock(&g_lock);
  *out = p;
  return QL_OK;
}

void qls_plugin_ref(struct qls_plugin *p) {
  pthread_mutex_lock(&g_lock);
  p->refs++;
  pthread_mutex_unlock(&g_lock);
}

void qls_plugin_release(struct qls_plugin *p) {
  if (!p) return;
  pthread_mutex_lock(&g_lock);
  if (--p->refs == 0) {
    for (int i = 0; i < g_n; i++) {
      if (g_plugins[i] == p) {
        g_plugins[i] = g_plugins[--g_n];
        break;
      }
    }
    ql_plugin_unload(p->loaded);
    free(p->real_path);
    free(p);
    if (g_n == 0) {
      free(g_plugins);
      g_plugins = NULL;
      g_cap = 0;
    }
  }
  pthread_mutex_unlock(&g_lock);
}

int qls_spec_open(struct qls_conn *c, const char *spec, size_t len, int32_t kind, struct ql_table_spec *parsed,
                  struct qls_plugin **plugin, int32_t *kind_out, struct ql_error *error) {
  int rc = ql_table_spec_parse_n(spec, len, parsed, error);
  if (rc != QL_OK) return rc;
  rc = qls_plugin_acquire(c, parsed->plugin, plugin, error);
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

void qls_schemas_free(struct qls_conn *c) {
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
