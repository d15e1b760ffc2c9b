/* qlink SQLite host: declarations shared by the extension's files.
 *
 * One `struct qls_conn` per SQLite connection that loaded the extension:
 * its reference host (session, memory pool, object stores, executor), its
 * allowed plugin directories, and the schema providers qlink_attach opened.
 * Plugins are loaded once per process (plugins.c) and shared by
 * connections, each holding references. Everything here is used from the
 * connection's thread only, except the plugin cache (locked).
 */
#ifndef QLS_QLINK_SQLITE_H
#define QLS_QLINK_SQLITE_H

#include "common.h"
#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/plugin_dirs.h"

/* A loaded plugin shared by every connection of the process. */
struct qls_plugin {
  char *real_path;
  struct ql_loaded_plugin *loaded;
  int refs; /* guarded by the cache's lock */
};

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

/* ---- ext.c */
void qls_conn_ref(struct qls_conn *c);
void qls_conn_unref(void *c); /* a destructor for sqlite3_create_*_v2 */
/* The key of a qlink table: "DB\x1fTABLE\x1fARG\x1fARG..." from xCreate's or
 * xConnect's argv (module name first); sqlite3_malloc'd, NULL when out of
 * memory. */
char *qls_table_key(int argc, const char *const *argv);
/* Remember / forget / look up a table this connection created. QL_OK or
 * QL_ENOMEM for remember; forget and lookup never fail. */
int qls_created_add(struct qls_conn *c, const char *key);
void qls_created_remove(struct qls_conn *c, const char *key);
int qls_created_has(const struct qls_conn *c, const char *key);

/* ---- plugins.c: the process-wide cache, under the connection's path rule */
/* Resolve `name` under c->path (sealing it), load or share the plugin.
 * QL_* status with `error` filled. */
int qls_plugin_acquire(struct qls_conn *c, const char *name, struct qls_plugin **out, struct ql_error *error);
void qls_plugin_ref(struct qls_plugin *p);
void qls_plugin_release(struct qls_plugin *p); /* NULL allowed */
/* The schema provider for `spec` (a "PLUGIN/PROVIDER?..." C string: the
 * caller has refused text with a NUL inside), opened once per connection
 * and kept until it closes. */
int qls_schema_get(struct qls_conn *c, const char *spec, struct qls_schema **out, struct ql_error *error);
void qls_schemas_free(struct qls_conn *c);
/* Parse `spec` (`len` bytes: a NUL inside is an error naming its offset),
 * acquire its plugin and check its provider is listed with `kind` (or
 * either provider kind when kind == 0); *kind_out gets the kind. */
int qls_spec_open(struct qls_conn *c, const char *spec, size_t len, int32_t kind, struct ql_table_spec *parsed,
                  struct qls_plugin **plugin, int32_t *kind_out, struct ql_error *error);

/* ---- vtab.c: the `qlink` and `qlink_call` modules */
/* What a module's xCreate/xConnect does first: open the table provider its
 * `argc` module arguments (`argv`, SQLite's raw token text) name. Fills
 * `*label` (malloc'd, names the table in messages: the spec, or the call as
 * "FUNCTION(ARGS)"), then `*plugin` (a reference) and `*tp` (owned) once it
 * has them; on failure QL_* with `error` set, and whatever was filled is
 * the caller's to release. vtab.c then serves the provider the same way for
 * every module (schema, statistics, pushdown, scan). */
typedef int (*qls_provider_open_fn)(struct qls_conn *c, int argc, const char *const *argv, char **label,
                                    struct qls_plugin **plugin, struct ql_table_provider *tp, struct ql_error *error);
/* Registers both modules on c->db. */
int qls_register_vtab(struct qls_conn *c);

/* ---- call.c: `USING qlink_call('PLUGIN', 'FUNCTION', literal, ...)` */
int qls_call_open(struct qls_conn *c, int argc, const char *const *argv, char **label, struct qls_plugin **plugin,
                  struct ql_table_provider *tp, struct ql_error *error);

/* ---- tables.c: qlink_tables('SPEC') and qlink_attach('NAME','SPEC') */
int qls_register_tables(struct qls_conn *c);

/* ---- functions.c: qlink_load('PLUGIN' [, 'NAME']) */
int qls_register_functions(struct qls_conn *c);

/* ---- values.c */
struct qls_cell;
/* Set the SQLite result from a cell (TEXT/BLOB copied: SQLite keeps the
 * value past the batch). */
void qls_result_cell(sqlite3_context *ctx, const struct qls_cell *cell);

#endif /* QLS_QLINK_SQLITE_H */
