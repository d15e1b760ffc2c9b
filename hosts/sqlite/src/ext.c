/* qlink SQLite host: the loadable extension's entry point and per-connection
 * state.
 *
 *   .load build/release/hosts/sqlite/qlink       (entry sqlite3_qlink_init)
 *
 * registers, on that connection: the `qlink` virtual-table module,
 * the eponymous table-valued function qlink_tables('SPEC'), and the SQL
 * functions qlink_attach('NAME','SPEC'), qlink_load('PLUGIN' [, 'NAME']) and
 * qlink_allow('DIR', ...) / qlink_allow() (seal). Plugins load only from the
 * directories of QLINK_PLUGIN_PATH (read here) and of qlink_allow calls made
 * before the first plugin is loaded or the list is sealed.
 */
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "qlink_sqlite.h"

SQLITE_EXTENSION_INIT1

void qls_conn_ref(struct qls_conn *c) { c->refs++; }

void qls_conn_unref(void *p) {
  struct qls_conn *c = p;
  if (--c->refs > 0) return;
  qls_schemas_free(c);
  struct ql_error err = {0};
  ql_ref_host_free(c->host, &err);
  ql_error_release(&err);
  ql_plugin_dirs_free(c->path);
  free(c);
}

/* sqlite3_is_interrupted arrived in SQLite 3.41.0, appended to the
 * extension routines (SQLite only appends to that struct). The extension is
 * built against 3.40's sqlite3ext.h, so it reads the member when the library
 * it was loaded into is new enough. */
struct qls_api_3_41 {
  sqlite3_api_routines base;
  int (*is_interrupted)(sqlite3 *);
};

int qls_interrupted(sqlite3 *db) {
  if (sqlite3_libversion_number() < 3041000) return 0;
  const struct qls_api_3_41 *api = (const struct qls_api_3_41 *)(const void *)sqlite3_api;
  return api->is_interrupted ? api->is_interrupted(db) : 0;
}

/* qlink_allow('DIR', ...): allow directories; qlink_allow(): seal. Returns
 * the number of allowed directories. */
static void fn_allow(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  struct qls_conn *c = sqlite3_user_data(ctx);
  struct ql_error err = {0};
  if (argc == 0) ql_plugin_dirs_seal(c->path);
  for (int i = 0; i < argc; i++) {
    const char *dir = (const char *)sqlite3_value_text(argv[i]);
    if (ql_plugin_dirs_add(c->path, dir ? dir : "", &err) != QL_OK) {
      char *m = sqlite3_mprintf("qlink_allow: %s", ql_error_message(&err));
      ql_error_release(&err);
      sqlite3_result_error(ctx, m ? m : "qlink_allow: out of memory", -1);
      sqlite3_free(m);
      return;
    }
  }
  sqlite3_result_int64(ctx, ql_plugin_dirs_count(c->path));
}

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
int sqlite3_qlink_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

int sqlite3_qlink_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  struct qls_conn *c = calloc(1, sizeof *c);
  if (!c) return SQLITE_NOMEM;
  c->db = db;
  c->refs = 1;
  struct ql_error err = {0};
  struct ql_ref_host_options o = {-1, 0, 2};
  int rc = ql_ref_host_new(&o, &c->host, &err);
  if (rc == QL_OK) rc = ql_plugin_dirs_new(&c->path, &err);
  if (rc == QL_OK) rc = ql_plugin_dirs_add_list(c->path, getenv(QL_PLUGIN_PATH_ENV), QL_PLUGIN_PATH_ENV, &err);
  if (rc != QL_OK) {
    if (pzErrMsg) *pzErrMsg = sqlite3_mprintf("qlink: %s", ql_error_message(&err));
    ql_error_release(&err);
    qls_conn_unref(c);
    return SQLITE_ERROR;
  }
  int src = qls_register_vtab(c);
  if (src == SQLITE_OK) src = qls_register_tables(c);
  if (src == SQLITE_OK) src = qls_register_functions(c);
  if (src == SQLITE_OK) {
    qls_conn_ref(c);
    src = sqlite3_create_function_v2(db, "qlink_allow", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, c, fn_allow, NULL, NULL,
                                     qls_conn_unref);
  }
  if (src != SQLITE_OK && pzErrMsg) *pzErrMsg = sqlite3_mprintf("qlink: %s", sqlite3_errmsg(db));
  qls_conn_unref(c); /* the registrations hold it now */
  return src;
}
