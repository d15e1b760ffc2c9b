/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: the process-wide plugin cache (plugins.h). */
#include "plugins.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct qls_plugin **g_plugins;
static int g_n, g_cap;

/* Room for one more plugin in g_plugins (locked): 0, or -1 without memory
 * (the array as it was). */
static int grow(void) {
  if (g_n < g_cap) return 0;
  int cap = g_cap ? g_cap * 2 : 8;
  struct qls_plugin **grown = realloc(g_plugins, sizeof *grown * (size_t)cap);
  if (!grown) return -1;
  g_plugins = grown;
  g_cap = cap;
  return 0;
}

int qls_plugin_acquire(const char *real_path, struct qls_plugin **out, struct ql_error *error) {
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_n; i++) {
    if (strcmp(g_plugins[i]->real_path, real_path) == 0) {
      g_plugins[i]->refs++;
      *out = g_plugins[i];
      pthread_mutex_unlock(&g_lock);
      return QL_OK;
    }
  }
  struct qls_plugin *p = calloc(1, sizeof *p);
  char *real = strdup(real_path);
  if (!p || !real || grow() != 0) {
    pthread_mutex_unlock(&g_lock);
    free(p);
    free(real);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  int rc = ql_plugin_load(real, &p->loaded, error);
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
