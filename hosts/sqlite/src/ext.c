/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: the loadable extension's entry point.
 *
 *   .load build/release/hosts/sqlite/qlink       (entry sqlite3_qlink_init)
 *
 * makes the connection's qlink state (conn.h) and registers, on that
 * connection: the `qlink` and `qlink_call` virtual-table modules (vtab.c,
 * call.c), the eponymous table-valued function qlink_tables('SPEC') and
 * qlink_attach('NAME','SPEC') (tables.c), qlink_load('PLUGIN' [, 'NAME'])
 * (functions.c), qlink_allow('DIR', ...) / qlink_allow() (seal) and
 * qlink_trust_schema([0|1]) (settings.c). Plugins load only from the
 * directories of QLINK_PLUGIN_PATH (read when the extension loads) and,
 * when it names none, of qlink_allow calls made before the first plugin is
 * loaded or the list is sealed. Every function is SQLITE_DIRECTONLY: no
 * view or trigger of a database file can call it (docs/security/sqlite.md).
 */
#include "conn.h"
#include "functions.h"
#include "qlink/lib/status.h"
#include "settings.h"
#include "tables.h"
#include "vtab.h"

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
int sqlite3_qlink_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

int sqlite3_qlink_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  struct qls_conn *c = NULL;
  struct ql_error err = {0};
  int rc = qls_conn_new(db, &c, &err);
  if (rc != QL_OK) {
    if (pzErrMsg) *pzErrMsg = sqlite3_mprintf("qlink: %s", ql_error_message(&err));
    ql_error_release(&err);
    return rc == QL_ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
  }
  int src = qls_register_vtab(c);
  if (src == SQLITE_OK) src = qls_register_tables(c);
  if (src == SQLITE_OK) src = qls_register_functions(c);
  if (src == SQLITE_OK) src = qls_register_settings(c);
  if (src != SQLITE_OK && pzErrMsg) *pzErrMsg = sqlite3_mprintf("qlink: %s", sqlite3_errmsg(db));
  qls_conn_unref(c); /* the registrations hold it now */
  return src;
}
