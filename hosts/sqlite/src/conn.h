/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: the state of one connection.
 *
 * One `struct qls_conn` per SQLite connection that loaded the extension:
 * its reference host (session, memory pool, object stores, executor), its
 * allowed plugin directories, whether it trusts its databases' schema, the
 * schema providers qlink_attach opened and the qlink tables it created.
 * Every module and function the entry point registers holds a reference;
 * the last one dropped (the connection closing) frees it. Plugins are
 * loaded once per process (plugins.h) and shared by connections, each
 * holding references. Everything here is used from the connection's thread
 * only.
 */
#ifndef QLS_CONN_H
#define QLS_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "plugins.h"
#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/plugin_dirs.h"

struct qls_schema {
  char *spec;
  struct qls_plugin *plugin;
  struct ql_schema_provider provider;
  struct qls_schema *next;
};

struct qls_conn {
  sqlite3 *db;
  int refs; /* the modules and functions registered with it */
  struct ql_ref_host *host;
  struct ql_plugin_dirs *path;
  int env_dirs; /* QLINK_PLUGIN_PATH named the directories: SQL cannot add any */
  /* qlink_trust_schema(1): qlink tables of a database's schema connect, and
   * qlink's tables and the functions qlink_load registers may be used from
   * views and triggers (SQLite's trusted_schema then decides, as for any
   * extension). Off: they are direct-only and such tables are refused. */
  int trust_schema;
  struct qls_schema *schemas;
  /* The qlink tables this connection created (xCreate), as qls_table_key
   * texts: SQLite connecting one of them again (a schema reloaded) is not a
   * database file naming plugins. */
  char **created;
  int n_created, cap_created;
};

/* The state of connection `db`: a reference host, and the plugin
 * directories QLINK_PLUGIN_PATH names (read now). QL_* with `error` set on
 * failure. One reference, the caller's. */
int qls_conn_new(sqlite3 *db, struct qls_conn **out, struct ql_error *error);
void qls_conn_ref(struct qls_conn *c);
void qls_conn_unref(void *c); /* a destructor for sqlite3_create_*_v2 */

/* ---- plugin directories */
/* Whether `dir` may be added to c's plugin directories: 1 when it may; 0
 * when not, with *why the reason (sqlite3_malloc'd, without the caller's
 * prefix; NULL when out of memory). It must be an existing directory, and
 * when QLINK_PLUGIN_PATH named the directories the operator chose them, so
 * only one already listed is accepted (adding it changes nothing). */
int qls_conn_may_allow(const struct qls_conn *c, const char *dir, char **why);

/* ---- plugins and providers */
/* Resolve `name` under c's plugin directories (sealing them: SQL that names
 * a plugin ends the owner's configuration), load or share the plugin.
 * QL_* status with `error` filled. */
int qls_conn_plugin(struct qls_conn *c, const char *name, struct qls_plugin **out, struct ql_error *error);
/* Parse `spec` (`len` bytes: a NUL inside is an error naming its offset),
 * acquire its plugin and check its provider is listed with `kind` (or
 * either provider kind when kind == 0); *kind_out gets the kind. */
int qls_spec_open(struct qls_conn *c, const char *spec, size_t len, int32_t kind, struct ql_table_spec *parsed,
                  struct qls_plugin **plugin, int32_t *kind_out, struct ql_error *error);
/* The schema provider for `spec` (a "PLUGIN/PROVIDER?..." C string: the
 * caller has refused text with a NUL inside), opened once per connection
 * and kept until it closes. */
int qls_schema_get(struct qls_conn *c, const char *spec, struct qls_schema **out, struct ql_error *error);

/* ---- the qlink tables this connection created */
/* The key of a qlink table: "DB\x1fTABLE\x1fARG\x1fARG..." from xCreate's or
 * xConnect's argv (module name first); sqlite3_malloc'd, NULL when out of
 * memory. */
char *qls_table_key(int argc, const char *const *argv);
/* Remember / forget / look up a table this connection created. QL_OK or
 * QL_ENOMEM for remember; forget and lookup never fail. */
int qls_created_add(struct qls_conn *c, const char *key);
void qls_created_remove(struct qls_conn *c, const char *key);
int qls_created_has(const struct qls_conn *c, const char *key);

#endif /* QLS_CONN_H */
