/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: plugins loaded once per process and shared by every
 * connection, each holding references (the cache is locked: connections
 * may live in different threads). Which file a name may load is the
 * connection's rule (conn.h); this cache only loads resolved paths. */
#ifndef QLS_PLUGINS_H
#define QLS_PLUGINS_H

#include "qlink/error.h"
#include "qlink/lib/loader.h"

/* A loaded plugin shared by every connection of the process. */
struct qls_plugin {
  char *real_path;
  struct ql_loaded_plugin *loaded;
  int refs; /* guarded by the cache's lock */
};

/* The plugin at `real_path` (already resolved and allowed by the caller),
 * loaded on first use and shared after: a reference in *out. QL_* status
 * with `error` filled. */
int qls_plugin_acquire(const char *real_path, struct qls_plugin **out, struct ql_error *error);
void qls_plugin_ref(struct qls_plugin *p);
void qls_plugin_release(struct qls_plugin *p); /* NULL allowed */

#endif /* QLS_PLUGINS_H */
