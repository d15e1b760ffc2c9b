/* SPDX-License-Identifier: Apache-2.0 */
/* The V1 build's binds (bind.h): DuckDB's settings of a client context,
 * VARCHAR arguments checked, and a bind's error. */
#include "v1/bind.h"

#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "qlink/lib/text.h"

/* Boolean option `name` of the context: 1, 0, or -1 when DuckDB gives none. */
static int qd_option_bool(duckdb_client_context ctx, const char *name) {
  duckdb_config_option_scope scope;
  duckdb_value v = duckdb_client_context_get_config_option(ctx, name, &scope);
  if (!v) return -1;
  int out = duckdb_is_null_value(v) ? -1 : duckdb_get_bool(v) ? 1 : 0;
  duckdb_destroy_value(&v);
  return out;
}

/* List option `name` (VARCHAR[]) of the context into a settings list. */
static void qd_option_list(duckdb_client_context ctx, const char *name, char ***list, int64_t *n) {
  duckdb_config_option_scope scope;
  duckdb_value v = duckdb_client_context_get_config_option(ctx, name, &scope);
  if (!v) return;
  idx_t size = duckdb_is_null_value(v) ? 0 : duckdb_get_list_size(v);
  for (idx_t i = 0; i < size; i++) {
    duckdb_value c = duckdb_get_list_child(v, i);
    char *text = c ? duckdb_get_varchar(c) : NULL;
    if (text) qd_settings_add(list, n, text);
    duckdb_free(text);
    if (c) duckdb_destroy_value(&c);
  }
  duckdb_destroy_value(&v);
}

int qd_follow_settings(struct qd_db *db, duckdb_client_context ctx, struct ql_error *err) {
  struct qd_settings s = {0};
  s.locked = s.external = -1;
  if (ctx) {
    duckdb_config_option_scope scope;
    duckdb_value v = duckdb_client_context_get_config_option(ctx, "threads", &scope);
    if (v) {
      s.threads = duckdb_get_int64(v);
      duckdb_destroy_value(&v);
    }
    v = duckdb_client_context_get_config_option(ctx, "memory_limit", &scope);
    char *text = v ? duckdb_get_varchar(v) : NULL;
    s.memory_limit = text ? strdup(text) : NULL;
    duckdb_free(text);
    if (v) duckdb_destroy_value(&v);
    s.locked = qd_option_bool(ctx, "lock_configuration");
    s.external = qd_option_bool(ctx, "enable_external_access");
    if (s.external == 0) {
      qd_option_list(ctx, "allowed_directories", &s.dirs, &s.n_dirs);
      qd_option_list(ctx, "allowed_paths", &s.paths, &s.n_paths);
    }
  }
  int rc = qd_follow(db, &s, err);
  qd_settings_free(&s);
  return rc;
}

int qd_follow_bind(struct qd_db *db, duckdb_bind_info info, struct ql_error *err) {
  duckdb_client_context ctx = NULL;
  duckdb_table_function_get_client_context(info, &ctx);
  int rc = qd_follow_settings(db, ctx, err);
  if (ctx) duckdb_destroy_client_context(&ctx);
  return rc;
}

/* A VARCHAR value's text (*out, duckdb_free it) and the bytes of it to
 * check (*len), NUL bytes not checked yet; a NULL value (or none) is
 * refused. duckdb_get_varchar's copy ends at the first NUL byte inside the
 * value, and V1 has no length getter: DuckDB's SQL literal of it ('...',
 * quotes doubled) ends early exactly when a NUL byte follows, and then *len
 * also counts the copy's terminating NUL, so the check finds it at its
 * offset (what follows it is out of V1's sight: messages count the bytes up
 * to it). */
static int qd_value_bytes(duckdb_value v, const char *what, char **out, size_t *len, struct ql_error *err) {
  *out = NULL;
  *len = 0;
  if (!v || duckdb_is_null_value(v)) return ql_error_set(err, QL_EINVAL, "%s is NULL", what);
  char *s = duckdb_get_varchar(v);
  if (!s) return ql_error_set(err, QL_ENOMEM, "out of memory reading %s", what);
  size_t n = strlen(s), quotes = 0;
  for (size_t i = 0; i < n; i++) quotes += s[i] == '\'';
  char *lit = duckdb_value_to_string(v);
  int cut = lit && lit[0] == '\'' && strlen(lit) == 1 + n + quotes;
  duckdb_free(lit);
  *out = s;
  *len = cut ? n + 1 : n;
  return QL_OK;
}

int qd_value_text(duckdb_value v, const char *what, char **out, struct ql_error *err) {
  size_t len = 0;
  int rc = qd_value_bytes(v, what, out, &len, err);
  if (rc == QL_OK && (rc = ql_text_check_nul(*out, len, what, err)) != QL_OK) {
    duckdb_free(*out);
    *out = NULL;
  }
  return rc;
}

int qd_param_text(duckdb_bind_info info, idx_t i, const char *what, char **out, struct ql_error *err) {
  duckdb_value v = duckdb_bind_get_parameter(info, i);
  int rc = qd_value_text(v, what, out, err);
  if (v) duckdb_destroy_value(&v);
  return rc;
}

int qd_param_spec(duckdb_bind_info info, idx_t i, const char *what, char **out, size_t *len, struct ql_error *err) {
  duckdb_value v = duckdb_bind_get_parameter(info, i);
  int rc = qd_value_bytes(v, what, out, len, err);
  if (v) duckdb_destroy_value(&v);
  return rc;
}

void qd_bind_fail(duckdb_bind_info info, const char *label, struct ql_error *err) {
  char *msg = qd_printf("%s: %s", label, ql_error_message(err));
  ql_error_release(err);
  duckdb_bind_set_error(info, qd_text_or_oom(msg));
  free(msg);
}
