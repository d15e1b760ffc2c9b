/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: plugin table functions, through a virtual table whose
 * creation makes the call.
 *
 *   CREATE VIRTUAL TABLE r USING qlink_call('PLUGIN', 'FUNCTION', 1, 2.5, 'x', NULL, TRUE);
 *   SELECT * FROM r WHERE ...;
 *
 * SQLite fixes a virtual table's columns when it connects, and a table
 * function's schema is known only once it has been called with its
 * arguments, so the call happens in xCreate/xConnect: PLUGIN (a name or a
 * path, under the connection's plugin directories, as for `qlink`) and
 * FUNCTION are 'string' literals; every further argument is a SQL literal
 * (sql_literal.h) and becomes one QL_EXPR_LITERAL root of the argument
 * list. The table provider the call returns is served exactly as a
 * `USING qlink('SPEC')` table (vtab.c: projection, filter and limit
 * pushdown, statistics). The function object is released right after the
 * call: the provider it returned is an object of its own (R1).
 *
 * A table reconnected later (a schema read again, a database file opened
 * again with the extension loaded) makes the call again.
 */
#include "call.h"

#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "qlink/lib/status.h"
#include "sql_literal.h"

#define USAGE "USING qlink_call('PLUGIN', 'FUNCTION', argument, ...)"

/* Module argument `position` (1-based) as a 'string' literal, malloc'd. */
static int string_arg(const char *text, int32_t position, const char *what, char **out, struct ql_error *error) {
  struct qls_sql_literal lit;
  const char *why = NULL;
  int rc = qls_sql_literal_parse(text, strlen(text), &lit, &why);
  if (rc == QL_ENOMEM) return ql_error_set(error, QL_ENOMEM, "out of memory");
  if (rc == QL_OK && lit.kind != QLS_LIT_TEXT) {
    qls_sql_literal_free(&lit);
    why = "not a 'string'";
    rc = QL_EINVAL;
  }
  if (rc != QL_OK)
    return ql_error_set(error, QL_EINVAL, "qlink_call argument %d `%s`: %s; %s names the %s as a 'string'",
                        (int)position, text, why, USAGE, what);
  *out = lit.text;
  return QL_OK;
}

/* "FUNCTION(ARG, ...)" with the arguments as written, for messages. */
static char *call_label(const char *function, int argc, const char *const *argv) {
  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendf(s, "%s(", function);
  for (int i = 2; i < argc; i++) sqlite3_str_appendf(s, "%s%s", i > 2 ? ", " : "", argv[i]);
  sqlite3_str_appendall(s, ")");
  char *text = sqlite3_str_finish(s);
  char *out = text ? strdup(text) : NULL;
  sqlite3_free(text);
  return out;
}

static const char *kind_phrase(int32_t kind) {
  switch (kind) {
    case QL_ITEM_TABLE_PROVIDER: return "a table provider: USING qlink('PLUGIN/NAME?...') reads it";
    case QL_ITEM_SCHEMA_PROVIDER: return "a schema provider: SELECT qlink_attach('SCHEMA', 'PLUGIN/NAME?...') reads it";
    case QL_ITEM_SCALAR_FUNCTION: return "a scalar function: SELECT qlink_load('PLUGIN', 'NAME') registers it";
    case QL_ITEM_AGGREGATE_FUNCTION: return "an aggregate function: SELECT qlink_load('PLUGIN', 'NAME') registers it";
    case QL_ITEM_WINDOW_FUNCTION: return "a window function";
    case QL_ITEM_PLANNER: return "a planner";
    case QL_ITEM_OBJECT_STORE: return "an object store";
    default: return NULL;
  }
}

/* No table function `name`: say what else the name is, if anything. */
static int no_table_function(const struct ql_plugin *p, const char *name, struct ql_error *error) {
  for (int32_t i = 0; i < p->n_items; i++) {
    const char *what = kind_phrase(p->items[i].kind);
    if (what && p->items[i].name && strcmp(p->items[i].name, name) == 0)
      return ql_error_set(error, QL_ENOTFOUND, "plugin %s has no table function '%s'; '%s' is %s", p->name, name,
                          name, what);
  }
  return ql_error_set(error, QL_ENOTFOUND, "plugin %s has no table function '%s'", p->name, name);
}

int qls_call_open(struct qls_conn *c, int argc, const char *const *argv, char **label, struct qls_plugin **plugin,
                  struct ql_table_provider *tp, struct ql_error *error) {
  if (argc < 2)
    return ql_error_set(error, QL_EINVAL, "%s takes the plugin, the function and its arguments, got %d arguments",
                        USAGE, argc);
  char *plugin_name = NULL, *function = NULL;
  int rc = string_arg(argv[0], 1, "plugin", &plugin_name, error);
  if (rc == QL_OK) rc = string_arg(argv[1], 2, "function", &function, error);
  if (rc != QL_OK) {
    free(plugin_name);
    return rc;
  }
  *label = call_label(function, argc, argv);
  if (!*label) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
  /* the arguments, before any plugin is loaded */
  struct ql_ir_builder *b = NULL;
  ql_expr_id *roots = NULL;
  int32_t n = argc - 2;
  if (rc == QL_OK) rc = ql_ir_builder_new(&b, error);
  if (rc == QL_OK && n > 0 && !(roots = malloc(sizeof *roots * (size_t)n))) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int32_t i = 0; rc == QL_OK && i < n; i++) rc = qls_sql_literal_arg(b, "qlink_call", i + 3, argv[i + 2], &roots[i], error);
  struct ql_plan_view view;
  memset(&view, 0, sizeof view);
  if (rc == QL_OK) rc = ql_ir_builder_finish(b, -1, &view, error);
  ql_ir_builder_free(b);
  if (rc == QL_OK) rc = qls_conn_plugin(c, plugin_name, plugin, error);
  const struct ql_plugin *p = rc == QL_OK ? &(*plugin)->loaded->plugin : NULL;
  if (rc == QL_OK && (!ql_plugin_find_item(p, QL_ITEM_TABLE_FUNCTION, function) || !p->table_function_open))
    rc = no_table_function(p, function, error);
  if (rc == QL_OK) {
    struct ql_table_function fn;
    memset(&fn, 0, sizeof fn);
    struct ql_expr_list args = {&view, n, 0, roots};
    void *tok = ql_plugin_enter(p);
    rc = p->table_function_open(p, function, &fn, error);
    if (rc == QL_OK && !fn.call) rc = ql_error_set(error, QL_EINTERNAL, "table function '%s' has no call", function);
    if (rc == QL_OK) rc = fn.call(&fn, ql_ref_host_session(c->host), &args, tp, error);
    if (fn.release) fn.release(&fn);
    ql_plugin_leave(p, tok);
    if (rc == QL_OK && (!tp->get_schema || !tp->scan)) {
      rc = ql_error_set(error, QL_EINTERNAL, "the table provider '%s' returned lacks get_schema or scan", function);
    }
  }
  if (view.release) view.release(&view);
  free(roots);
  free(plugin_name);
  free(function);
  return rc;
}
