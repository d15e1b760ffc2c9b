/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: what a provider offers, and schema providers as
 * attached databases.
 *
 *   SELECT * FROM qlink_tables('PLUGIN/PROVIDER?...');   -- direct-only (see tv_connect)
 *     -- table_name, column_name, arrow_type, sqlite_type: one row per column
 *     -- of every table of a schema provider (or of the one table of a table provider)
 *   SELECT qlink_attach('era5', 'PLUGIN/store?path=...');
 *     -- ATTACH ':memory:' AS era5 (unless attached), then era5.<table> USING
 *     -- qlink(SPEC, TABLE) for each table not there yet; returns the number of tables
 */
#include "tables.h"

#include <stdlib.h>
#include <string.h>

#include "cells.h"
#include "common.h"
#include "conn.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

enum { COL_TABLE, COL_COLUMN, COL_ARROW, COL_SQLITE, COL_SPEC };

struct tables_vtab {
  sqlite3_vtab base;
  struct qls_conn *conn;
};

struct tables_cursor {
  sqlite3_vtab_cursor base;
  int64_t n, at, cap;
  char **cells; /* n rows x 4, malloc'd strings */
};

/* Eponymous only (no xCreate): connected once per connection, on first
 * use. Direct-only unless the connection trusts its schema: a view or
 * trigger of a database file cannot make it open a spec's paths. */
static int tv_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **pz) {
  (void)argc;
  (void)argv;
  (void)pz;
  struct qls_conn *c = aux;
  int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(table_name TEXT, column_name TEXT, arrow_type TEXT, "
                                    "sqlite_type TEXT, spec HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  if (!c->trust_schema && (rc = sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY)) != SQLITE_OK) return rc;
  struct tables_vtab *vt = sqlite3_malloc(sizeof *vt);
  if (!vt) return SQLITE_NOMEM;
  memset(vt, 0, sizeof *vt);
  vt->conn = aux;
  *out = &vt->base;
  return SQLITE_OK;
}

static int tv_disconnect(sqlite3_vtab *base) {
  sqlite3_free(base->zErrMsg);
  sqlite3_free(base);
  return SQLITE_OK;
}

static int tv_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  for (int i = 0; i < info->nConstraint; i++) {
    if (info->aConstraint[i].iColumn == COL_SPEC && info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ) {
      if (!info->aConstraint[i].usable) return SQLITE_CONSTRAINT;
      info->aConstraintUsage[i].argvIndex = 1;
      info->aConstraintUsage[i].omit = 1;
      info->estimatedCost = 100;
      info->estimatedRows = 100;
      return SQLITE_OK;
    }
  }
  sqlite3_free(base->zErrMsg);
  base->zErrMsg = sqlite3_mprintf("qlink_tables takes a spec: SELECT * FROM qlink_tables('PLUGIN/PROVIDER?...')");
  return SQLITE_ERROR;
}

static void tc_clear(struct tables_cursor *c) {
  for (int64_t i = 0; i < c->n * 4; i++) free(c->cells[i]);
  free(c->cells);
  c->cells = NULL;
  c->n = c->at = c->cap = 0;
}

static int tc_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  (void)base;
  struct tables_cursor *c = calloc(1, sizeof *c);
  if (!c) return SQLITE_NOMEM;
  *out = &c->base;
  return SQLITE_OK;
}

static int tc_close(sqlite3_vtab_cursor *base) {
  tc_clear((struct tables_cursor *)base);
  free(base);
  return SQLITE_OK;
}

static int add_rows(struct tables_cursor *c, const char *table, const struct ArrowSchema *schema,
                    struct ql_error *err) {
  for (int64_t i = 0; i < schema->n_children; i++) {
    if (c->n == c->cap) {
      int64_t cap = c->cap ? c->cap * 2 : 16;
      char **cells = realloc(c->cells, sizeof *cells * (size_t)(cap * 4));
      if (!cells) return ql_error_set(err, QL_ENOMEM, "out of memory");
      c->cells = cells;
      c->cap = cap;
    }
    const struct ArrowSchema *f = schema->children[i];
    const char *t = qls_decltype(f);
    char **row = c->cells + c->n * 4;
    row[0] = strdup(table);
    row[1] = strdup(f->name ? f->name : "");
    row[2] = strdup(f->format);
    row[3] = t ? strdup(t) : NULL;
    c->n++;
    if (!row[0] || !row[1] || !row[2]) return ql_error_set(err, QL_ENOMEM, "out of memory");
  }
  return QL_OK;
}

static int table_schema(const struct ql_plugin *p, struct ql_table_provider *tp, struct ArrowSchema *schema,
                        struct ql_error *err) {
  void *tok = ql_plugin_enter(p);
  int rc = tp->get_schema(tp, schema, err);
  tp->release(tp);
  ql_plugin_leave(p, tok);
  return rc;
}

static int tc_filter(sqlite3_vtab_cursor *base, int idx, const char *idx_str, int argc, sqlite3_value **argv) {
  (void)idx;
  (void)idx_str;
  struct tables_cursor *c = (struct tables_cursor *)base;
  struct tables_vtab *vt = (struct tables_vtab *)base->pVtab;
  tc_clear(c);
  if (argc < 1 || sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_free(base->pVtab->zErrMsg);
    base->pVtab->zErrMsg = sqlite3_mprintf("qlink_tables: the spec is NULL (expected 'PLUGIN/PROVIDER?...')");
    return SQLITE_ERROR;
  }
  const char *spec = (const char *)sqlite3_value_text(argv[0]);
  size_t spec_len = (size_t)sqlite3_value_bytes(argv[0]);
  if (!spec) return SQLITE_NOMEM;
  struct ql_error err = {0};
  struct ql_table_spec parsed = {0};
  struct qls_plugin *plugin = NULL;
  int32_t kind = 0;
  int rc = qls_spec_open(vt->conn, spec, spec_len, 0, &parsed, &plugin, &kind, &err);
  const struct ql_plugin *p = plugin ? &plugin->loaded->plugin : NULL;
  if (rc == QL_OK && kind == QL_ITEM_TABLE_PROVIDER) {
    struct ql_table_provider tp = {0};
    struct ArrowSchema schema = {0};
    void *tok = ql_plugin_enter(p);
    rc = p->table_provider_open(p, parsed.provider, &parsed.options, ql_ref_host_session(vt->conn->host), &tp, &err);
    ql_plugin_leave(p, tok);
    if (rc == QL_OK) rc = table_schema(p, &tp, &schema, &err);
    if (rc == QL_OK) rc = add_rows(c, parsed.provider, &schema, &err);
    ql_schema_release(&schema);
  } else if (rc == QL_OK) {
    struct qls_schema *s = NULL;
    rc = qls_schema_get(vt->conn, spec, &s, &err);
    void *tok = ql_plugin_enter(p);
    int64_t n = rc == QL_OK ? s->provider.table_count(&s->provider) : 0;
    ql_plugin_leave(p, tok);
    for (int64_t i = 0; rc == QL_OK && i < n; i++) {
      tok = ql_plugin_enter(p);
      const char *name = s->provider.table_name(&s->provider, i);
      struct ql_table_provider tp = {0};
      rc = s->provider.table(&s->provider, name, &tp, &err);
      ql_plugin_leave(p, tok);
      struct ArrowSchema schema = {0};
      if (rc == QL_OK) rc = table_schema(p, &tp, &schema, &err);
      if (rc == QL_OK) rc = add_rows(c, name, &schema, &err);
      ql_schema_release(&schema);
    }
  }
  if (rc != QL_OK) {
    sqlite3_free(base->pVtab->zErrMsg);
    base->pVtab->zErrMsg = p ? qls_errmsg(p->name, spec, &err) : sqlite3_mprintf("qlink_tables: %s: %s", spec, ql_error_message(&err));
    ql_error_release(&err);
  }
  ql_table_spec_free(&parsed);
  qls_plugin_release(plugin);
  return rc == QL_OK ? SQLITE_OK : SQLITE_ERROR;
}

static int tc_next(sqlite3_vtab_cursor *base) {
  ((struct tables_cursor *)base)->at++;
  return SQLITE_OK;
}

static int tc_eof(sqlite3_vtab_cursor *base) {
  struct tables_cursor *c = (struct tables_cursor *)base;
  return c->at >= c->n;
}

static int tc_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  struct tables_cursor *c = (struct tables_cursor *)base;
  if (col < 0 || col > COL_SQLITE || !c->cells[c->at * 4 + col]) {
    sqlite3_result_null(ctx);
  } else {
    sqlite3_result_text(ctx, c->cells[c->at * 4 + col], -1, SQLITE_TRANSIENT);
  }
  return SQLITE_OK;
}

static int tc_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *out) {
  *out = ((struct tables_cursor *)base)->at;
  return SQLITE_OK;
}

static sqlite3_module k_tables = {
    .iVersion = 0,
    .xConnect = tv_connect,
    .xBestIndex = tv_best_index,
    .xDisconnect = tv_disconnect,
    .xOpen = tc_open,
    .xClose = tc_close,
    .xFilter = tc_filter,
    .xNext = tc_next,
    .xEof = tc_eof,
    .xColumn = tc_column,
    .xRowid = tc_rowid,
};

/* ---------------------------------------------------------- qlink_attach */

static int ident_ok(const char *s) {
  if (!s || !s[0]) return 0;
  for (const char *p = s; *p; p++) {
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) return 0;
  }
  return !(s[0] >= '0' && s[0] <= '9');
}

static void fail(sqlite3_context *ctx, char *msg) {
  sqlite3_result_error(ctx, msg ? msg : "qlink_attach: out of memory", -1);
  sqlite3_free(msg);
}

static void fn_attach(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  struct qls_conn *c = sqlite3_user_data(ctx);
  const char *name = NULL, *spec = NULL;
  int name_len = 0, spec_len = 0;
  if (qls_text_arg(ctx, "qlink_attach", argv, 0, "the schema name", &name, &name_len) != 0) return;
  if (!ident_ok(name)) {
    fail(ctx, sqlite3_mprintf("qlink_attach: '%s' is not a schema name (letters, digits, _)", name));
    return;
  }
  /* the spec is checked for NUL here: it is also written into SQL below */
  if (qls_text_arg(ctx, "qlink_attach", argv, 1, "the spec", &spec, &spec_len) != 0) return;
  struct ql_error err = {0};
  struct qls_schema *s = NULL;
  if (qls_schema_get(c, spec, &s, &err) != QL_OK) {
    fail(ctx, sqlite3_mprintf("qlink_attach: %s: %s", spec, ql_error_message(&err)));
    ql_error_release(&err);
    return;
  }
  /* attached already (an earlier qlink_attach): add what is missing */
  sqlite3_stmt *st = NULL;
  int attached = 0;
  if (sqlite3_prepare_v2(c->db, "SELECT 1 FROM pragma_database_list WHERE name = ?1", -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    attached = sqlite3_step(st) == SQLITE_ROW;
  }
  sqlite3_finalize(st);
  char *sql = attached ? NULL : sqlite3_mprintf("ATTACH ':memory:' AS \"%w\"", name);
  char *emsg = NULL;
  int rc = attached ? SQLITE_OK : sqlite3_exec(c->db, sql, NULL, NULL, &emsg);
  sqlite3_free(sql);
  if (rc != SQLITE_OK) {
    fail(ctx, sqlite3_mprintf("qlink_attach: %s", emsg ? emsg : sqlite3_errmsg(c->db)));
    sqlite3_free(emsg);
    return;
  }
  const struct ql_plugin *p = &s->plugin->loaded->plugin;
  void *tok = ql_plugin_enter(p);
  int64_t n = s->provider.table_count(&s->provider);
  ql_plugin_leave(p, tok);
  for (int64_t i = 0; i < n; i++) {
    tok = ql_plugin_enter(p);
    const char *table = s->provider.table_name(&s->provider, i);
    ql_plugin_leave(p, tok);
    sql = sqlite3_mprintf("CREATE VIRTUAL TABLE IF NOT EXISTS \"%w\".\"%w\" USING qlink(%Q, %Q)", name, table, spec,
                          table);
    rc = sqlite3_exec(c->db, sql, NULL, NULL, &emsg);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) {
      fail(ctx, sqlite3_mprintf("qlink_attach: %s.%s: %s", name, table, emsg ? emsg : sqlite3_errmsg(c->db)));
      sqlite3_free(emsg);
      return;
    }
  }
  sqlite3_result_int64(ctx, n);
}

int qls_register_tables(struct qls_conn *c) {
  qls_conn_ref(c);
  int rc = sqlite3_create_module_v2(c->db, "qlink_tables", &k_tables, c, qls_conn_unref);
  if (rc != SQLITE_OK) return rc;
  qls_conn_ref(c);
  return sqlite3_create_function_v2(c->db, "qlink_attach", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, c, fn_attach, NULL,
                                    NULL, qls_conn_unref);
}
