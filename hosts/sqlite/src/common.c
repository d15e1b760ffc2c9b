/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: the SQLite API pointer and the helpers of common.h. */
#include "common.h"

#include "qlink/lib/status.h"
#include "qlink/lib/text.h"

SQLITE_EXTENSION_INIT1

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

int qls_text_arg(sqlite3_context *ctx, const char *fn, sqlite3_value **argv, int i, const char *what, const char **out,
                 int *len) {
  *out = NULL;
  *len = 0;
  if (sqlite3_value_type(argv[i]) == SQLITE_NULL) {
    char *m = sqlite3_mprintf("%s: argument %d (%s) is NULL", fn, i + 1, what);
    sqlite3_result_error(ctx, m ? m : "qlink: out of memory", -1);
    sqlite3_free(m);
    return -1;
  }
  const char *text = (const char *)sqlite3_value_text(argv[i]);
  int n = sqlite3_value_bytes(argv[i]);
  if (!text) {
    sqlite3_result_error_nomem(ctx);
    return -1;
  }
  struct ql_error err = {0};
  char *label = sqlite3_mprintf("%s: argument %d (%s)", fn, i + 1, what);
  if (!label) {
    sqlite3_result_error_nomem(ctx);
    return -1;
  }
  int rc = ql_text_check_nul(text, (size_t)n, label, &err);
  sqlite3_free(label);
  if (rc != QL_OK) {
    sqlite3_result_error(ctx, ql_error_message(&err), -1);
    ql_error_release(&err);
    return -1;
  }
  *out = text;
  *len = n;
  return 0;
}

char *qls_errmsg(const char *plugin, const char *spec, const struct ql_error *error) {
  return sqlite3_mprintf("qlink: %s (%s): %s", plugin, spec, ql_error_message(error));
}
