/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: the connection's settings from SQL.
 *
 *   SELECT qlink_allow('DIR', ...);     -- allow plugin directories (all or none)
 *   SELECT qlink_allow();               -- seal the list
 *   SELECT qlink_trust_schema([0|1]);   -- read or set the schema trust
 *
 * Plugins load only from the directories of QLINK_PLUGIN_PATH and, when it
 * names none, of qlink_allow calls made before the first plugin is loaded
 * or the list is sealed (conn.h). Both functions are SQLITE_DIRECTONLY: no
 * view or trigger of a database file can call them
 * (docs/security/sqlite.md).
 */
#include "settings.h"

#include "conn.h"
#include "qlink/lib/status.h"

static void fail_with(sqlite3_context *ctx, char *message) {
  sqlite3_result_error(ctx, message ? message : "qlink: out of memory", -1);
  sqlite3_free(message);
}

/* qlink_allow('DIR', ...): allow directories, all or none (every argument
 * is checked before any is added); qlink_allow(): seal. Returns the number
 * of allowed directories. */
static void fn_allow(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  struct qls_conn *c = sqlite3_user_data(ctx);
  struct ql_error err = {0};
  if (argc == 0) ql_plugin_dirs_seal(c->path);
  for (int i = 0; i < argc; i++) {
    const char *dir = NULL;
    int len = 0;
    if (qls_text_arg(ctx, "qlink_allow", argv, i, "a plugin directory", &dir, &len) != 0) return;
    char *why = NULL;
    if (!qls_conn_may_allow(c, dir, &why)) {
      fail_with(ctx, why ? sqlite3_mprintf("qlink_allow: %s", why) : NULL);
      sqlite3_free(why);
      return;
    }
  }
  for (int i = 0; i < argc; i++) {
    const char *dir = (const char *)sqlite3_value_text(argv[i]);
    if (ql_plugin_dirs_add(c->path, dir, &err) != QL_OK) {
      fail_with(ctx, sqlite3_mprintf("qlink_allow: %s", ql_error_message(&err)));
      ql_error_release(&err);
      return;
    }
  }
  sqlite3_result_int64(ctx, ql_plugin_dirs_count(c->path));
}

/* qlink_trust_schema(): whether this connection trusts the schema of its
 * databases with qlink (0 or 1); qlink_trust_schema(1) / (0): set it,
 * returning the new setting. Takes effect for the tables SQLite connects
 * and the functions qlink_load registers from then on. */
static void fn_trust_schema(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  struct qls_conn *c = sqlite3_user_data(ctx);
  if (argc == 1) {
    int type = sqlite3_value_type(argv[0]);
    sqlite3_int64 v = type == SQLITE_INTEGER ? sqlite3_value_int64(argv[0]) : -1;
    if (type == SQLITE_NULL) {
      fail_with(ctx, sqlite3_mprintf("qlink_trust_schema: argument 1 is NULL (expected 1 to trust the schema, 0 not to)"));
      return;
    }
    if (v != 0 && v != 1) {
      fail_with(ctx, sqlite3_mprintf("qlink_trust_schema: argument 1 must be 1 (trust the schema) or 0 (do not), "
                                     "got %s '%s'", sqlite3_value_type(argv[0]) == SQLITE_INTEGER ? "the integer"
                                     : type == SQLITE_FLOAT ? "the real" : type == SQLITE_BLOB ? "a blob" : "the text",
                                     type == SQLITE_BLOB ? "..." : (const char *)sqlite3_value_text(argv[0])));
      return;
    }
    c->trust_schema = (int)v;
  }
  sqlite3_result_int(ctx, c->trust_schema);
}

int qls_register_settings(struct qls_conn *c) {
  qls_conn_ref(c);
  int rc = sqlite3_create_function_v2(c->db, "qlink_allow", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, c, fn_allow, NULL,
                                      NULL, qls_conn_unref);
  for (int nargs = 0; rc == SQLITE_OK && nargs <= 1; nargs++) {
    qls_conn_ref(c);
    rc = sqlite3_create_function_v2(c->db, "qlink_trust_schema", nargs, SQLITE_UTF8 | SQLITE_DIRECTONLY, c,
                                    fn_trust_schema, NULL, NULL, qls_conn_unref);
  }
  return rc;
}
