/* qlink SQLite host: the loadable extension's entry point and per-connection
 * state.
 *
 *   .load build/release/hosts/sqlite/qlink       (entry sqlite3_qlink_init)
 *
 * registers, on that connection: the `qlink` and `qlink_call` virtual-table
 * modules, the eponymous table-valued function qlink_tables('SPEC'), and
 * the SQL functions qlink_attach('NAME','SPEC'), qlink_load('PLUGIN' [,
 * 'NAME']), qlink_allow('DIR', ...) / qlink_allow() (seal) and
 * qlink_trust_schema([0|1]). Plugins load only from the directories of
 * QLINK_PLUGIN_PATH (read here) and, when it names none, of qlink_allow
 * calls made before the first plugin is loaded or the list is sealed.
 * Every function is SQLITE_DIRECTONLY: no view or trigger of a database
 * file can call it (docs/security/sqlite.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qlink/lib/status.h"
#include "qlink_sqlite.h"

void qls_conn_ref(struct qls_conn *c) { c->refs++; }

void qls_conn_unref(void *p) {
  struct qls_conn *c = p;
  if (--c->refs > 0) return;
  qls_schemas_free(c);
  for (int i = 0; i < c->n_created; i++) sqlite3_free(c->created[i]);
  free(c->created);
  struct ql_error err = {0};
  ql_ref_host_free(c->host, &err);
  ql_error_release(&err);
  ql_plugin_dirs_free(c->path);
  free(c);
}

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

static void fail_with(sqlite3_context *ctx, char *message) {
  sqlite3_result_error(ctx, message ? message : "qlink: out of memory", -1);
  sqlite3_free(message);
}

/* Why `dir` cannot be allowed on `c`, as a qlink_allow message
 * (sqlite3_malloc'd), or NULL when it can: it must be an existing
 * directory, and when QLINK_PLUGIN_PATH named the directories the operator
 * chose them, so only one already listed is accepted (nothing changes). */
static char *allow_refusal(struct qls_conn *c, const char *dir) {
  struct ql_error err = {0};
  char *why = NULL;
  if (c->env_dirs) {
    int listed = 0;
    int rc = ql_plugin_dirs_listed(c->path, dir, &listed, &err);
    ql_error_release(&err);
    if (rc != QL_OK || !listed) {
      char *dirs = ql_plugin_dirs_text(c->path);
      why = sqlite3_mprintf("qlink_allow: '%s' is not one of the plugin directories " QL_PLUGIN_PATH_ENV
                            " set (%s), and SQL cannot add any: add it to " QL_PLUGIN_PATH_ENV
                            " before the extension loads",
                            dir, dirs ? dirs : "(out of memory listing them)");
      free(dirs);
      return why ? why : sqlite3_mprintf("qlink_allow: out of memory");
    }
    return NULL;
  }
  struct stat st;
  if (stat(dir, &st) != 0) {
    why = sqlite3_mprintf("qlink_allow: plugin directory '%s': %s", dir, strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    why = sqlite3_mprintf("qlink_allow: plugin directory '%s' is not a directory", dir);
  } else {
    return NULL;
  }
  return why ? why : sqlite3_mprintf("qlink_allow: out of memory");
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
    char *why = allow_refusal(c, dir);
    if (why) {
      fail_with(ctx, why);
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
  if (rc == QL_OK) c->env_dirs = ql_plugin_dirs_count(c->path) > 0;
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
  for (int nargs = 0; src == SQLITE_OK && nargs <= 1; nargs++) {
    qls_conn_ref(c);
    src = sqlite3_create_function_v2(db, "qlink_trust_schema", nargs, SQLITE_UTF8 | SQLITE_DIRECTONLY, c,
                                     fn_trust_schema, NULL, NULL, qls_conn_unref);
  }
  if (src != SQLITE_OK && pzErrMsg) *pzErrMsg = sqlite3_mprintf("qlink: %s", sqlite3_errmsg(db));
  qls_conn_unref(c); /* the registrations hold it now */
  return src;
}
