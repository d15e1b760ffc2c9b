/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's binds (bind.h): small wrappers over the V2 calling
 * convention (errors, VARCHAR arguments, a function's user data) and
 * DuckDB's settings of a callback's context. */
#include "v2/bind.h"

#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "qlink/lib/text.h"

void qd_v2_fail_code(duckdb_v2_error_info_handle *err, DUCKDB_V2_ERROR code, const char *msg) {
  duckdb_v2_str text = qd_str(msg);
  duckdb_v2_error_info_set_code(*err, code);
  duckdb_v2_error_info_set_text(*err, &text);
}

void qd_v2_fail(duckdb_v2_error_info_handle *err, const char *msg) {
  qd_v2_fail_code(err, DUCKDB_V2_ERROR_INPUT_INVALID, msg);
}

const duckdb_v2_str qd_absent = {"", 1};

/* A VARCHAR value's `len` bytes, malloc'd into *out (NUL-terminated) and,
 * with `check`, checked by ql_text_check_nul as `what`; a NULL value is
 * refused; absent (with `named`: the default above) gives QL_OK and *out
 * NULL. */
static int qd_value_text_v2(duckdb_v2_value_handle v, const char *what, int named, int check, char **out, size_t *len,
                            struct ql_error *err) {
  *out = NULL;
  *len = 0;
  bool is_null = true;
  duckdb_v2_value_is_null(v, &is_null, NULL);
  duckdb_v2_str s = {NULL, 0};
  if (is_null) return ql_error_set(err, QL_EINVAL, "%s is NULL", what);
  if (duckdb_v2_value_get_varchar(v, &s, NULL) != DUCKDB_V2_ERROR_NONE) {
    return ql_error_set(err, QL_EINVAL, "%s is not text", what);
  }
  if (named && s.len == qd_absent.len && s.ptr[0] == '\0') return QL_OK;
  int rc = check ? ql_text_check_nul(s.ptr, s.len, what, err) : QL_OK;
  if (rc == QL_OK && !(*out = malloc(s.len + 1))) rc = ql_error_set(err, QL_ENOMEM, "out of memory reading %s", what);
  if (rc == QL_OK) {
    if (s.len) memcpy(*out, s.ptr, s.len);
    (*out)[s.len] = '\0';
    *len = s.len;
  }
  return rc;
}

static int qd_arg_value(duckdb_v2_function_bind_info_handle info, idx_t index, const char *what, int check, char **out,
                        size_t *len, struct ql_error *err) {
  duckdb_v2_value_handle v = NULL;
  *out = NULL;
  if (duckdb_v2_function_bind_get_arg_value(info, index, &v, NULL) != DUCKDB_V2_ERROR_NONE) {
    return ql_error_set(err, QL_EINVAL, "%s is not a constant", what);
  }
  int rc = qd_value_text_v2(v, what, 0, check, out, len, err);
  duckdb_v2_value_destroy(&v);
  return rc;
}

int qd_arg_text(duckdb_v2_function_bind_info_handle info, idx_t index, const char *what, char **out,
                struct ql_error *err) {
  size_t len = 0;
  return qd_arg_value(info, index, what, 1, out, &len, err);
}

int qd_arg_spec(duckdb_v2_function_bind_info_handle info, idx_t index, const char *what, char **out, size_t *len,
                struct ql_error *err) {
  return qd_arg_value(info, index, what, 0, out, len, err);
}

int qd_named_text(duckdb_v2_function_bind_info_handle info, const char *name, const char *what, char **out,
                  struct ql_error *err) {
  duckdb_v2_identifier_t id = qd_str(name);
  idx_t index = 0;
  bool found = false;
  duckdb_v2_value_handle v = NULL;
  *out = NULL;
  duckdb_v2_function_bind_get_arg_index(info, &id, &index, &found, NULL);
  if (!found || duckdb_v2_function_bind_get_arg_value(info, index, &v, NULL) != DUCKDB_V2_ERROR_NONE) return QL_OK;
  size_t len = 0;
  int rc = qd_value_text_v2(v, what, 1, 1, out, &len, err);
  duckdb_v2_value_destroy(&v);
  return rc;
}

void qd_fail_error_v2(duckdb_v2_error_info_handle *err, DUCKDB_V2_ERROR code, const char *label, struct ql_error *qerr) {
  char *msg = qd_printf("%s: %s", label, ql_error_message(qerr));
  ql_error_release(qerr);
  qd_v2_fail_code(err, code, qd_text_or_oom(msg));
  free(msg);
}

/* Config option `name` of the context as a value (destroy it); NULL when DuckDB gives none. */
static duckdb_v2_value_handle qd_option(duckdb_v2_context_handle ctx, const char *name) {
  duckdb_v2_config_handle config = NULL;
  if (duckdb_v2_context_get_config(ctx, &config, NULL) != DUCKDB_V2_ERROR_NONE) return NULL;
  duckdb_v2_identifier_t id = qd_str(name);
  duckdb_v2_value_handle v = NULL;
  DUCKDB_V2_SETTING_SCOPE scope;
  if (duckdb_v2_config_get_option_value(config, &id, &v, &scope, NULL) != DUCKDB_V2_ERROR_NONE) return NULL;
  return v;
}

/* A value's text, malloc'd (NULL when it has none). */
static char *qd_value_copy(duckdb_v2_value_handle v) {
  duckdb_v2_str s = {NULL, 0};
  char *out = NULL;
  if (v && duckdb_v2_value_get_varchar(v, &s, NULL) == DUCKDB_V2_ERROR_NONE && (out = malloc(s.len + 1))) {
    if (s.len) memcpy(out, s.ptr, s.len);
    out[s.len] = '\0';
  }
  return out;
}

/* Boolean option: 1, 0, or -1 when DuckDB gives none. */
static int qd_option_bool(duckdb_v2_context_handle ctx, const char *name) {
  duckdb_v2_value_handle v = qd_option(ctx, name);
  bool b = false;
  int out = v && duckdb_v2_value_get_bool(v, &b, NULL) == DUCKDB_V2_ERROR_NONE ? (b ? 1 : 0) : -1;
  if (v) duckdb_v2_value_destroy(&v);
  return out;
}

/* List option `name` (VARCHAR[]) into a settings list. */
static void qd_option_list(duckdb_v2_context_handle ctx, const char *name, char ***list, int64_t *n) {
  duckdb_v2_value_handle v = qd_option(ctx, name);
  idx_t count = 0;
  if (v) duckdb_v2_value_get_child_count(v, &count, NULL);
  for (idx_t i = 0; i < count; i++) {
    duckdb_v2_value_handle c = NULL;
    if (duckdb_v2_value_get_child(v, i, &c, NULL) != DUCKDB_V2_ERROR_NONE) continue;
    char *text = qd_value_copy(c);
    if (text) qd_settings_add(list, n, text);
    free(text);
    duckdb_v2_value_destroy(&c);
  }
  if (v) duckdb_v2_value_destroy(&v);
}

int qd_follow_settings_v2(struct qd_db *db, duckdb_v2_context_handle ctx, struct ql_error *err) {
  struct qd_settings s = {0};
  duckdb_v2_value_handle v = qd_option(ctx, "threads");
  if (!v || duckdb_v2_value_get_bigint(v, &s.threads, NULL) != DUCKDB_V2_ERROR_NONE) s.threads = 0;
  if (v) duckdb_v2_value_destroy(&v);
  v = qd_option(ctx, "memory_limit");
  s.memory_limit = qd_value_copy(v);
  if (v) duckdb_v2_value_destroy(&v);
  s.locked = qd_option_bool(ctx, "lock_configuration");
  s.external = qd_option_bool(ctx, "enable_external_access");
  if (s.external == 0) {
    qd_option_list(ctx, "allowed_directories", &s.dirs, &s.n_dirs);
    qd_option_list(ctx, "allowed_paths", &s.paths, &s.n_paths);
  }
  int rc = qd_follow(db, &s, err);
  qd_settings_free(&s);
  return rc;
}

void *qd_user_data(duckdb_v2_function_bind_info_handle info) {
  void *data = NULL;
  duckdb_v2_function_bind_get_user_data(info, &data, NULL);
  return data;
}
