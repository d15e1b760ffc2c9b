/* The SQL text qlink_attach runs, shared by both builds: the V1 build runs
 * it on a connection of its own, the V2 build hands it to DuckDB as its
 * PRAGMA's query, which runs on the caller's connection. No DuckDB call. */
#include <stdarg.h>
#include <stdio.h>

#include "ext_internal.h"
#include "plugin_fns.h"

void qd_quote(char *out, size_t cap, const char *s, char q) {
  size_t o = 0;
  if (o + 1 < cap) out[o++] = q;
  for (; *s && o + 3 < cap; s++) {
    if (*s == q) out[o++] = q;
    out[o++] = *s;
  }
  out[o++] = q;
  out[o] = '\0';
}

/* Append to sql[cap] from `at`; the new end, or cap once it no longer fits
 * (the text then stays truncated). */
static size_t put(char *sql, size_t cap, size_t at, const char *fmt, ...) {
  if (at >= cap) return cap;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(sql + at, cap - at, fmt, ap);
  va_end(ap);
  return n < 0 || (size_t)n >= cap - at ? cap : at + (size_t)n;
}

int qd_attach_sql(const char *name, const char *spec, const struct qd_rows *tables, int with_result, char *sql,
                  size_t cap) {
  char qname[512], qspec[4096], qtable[512], qtlit[512];
  qd_quote(qname, sizeof(qname), name, '"');
  qd_quote(qspec, sizeof(qspec), spec, '\'');
  size_t at = put(sql, cap, 0, "CREATE SCHEMA IF NOT EXISTS %s;", qname);
  for (int64_t i = 0; i < tables->n_rows; i++) {
    qd_quote(qtable, sizeof(qtable), tables->cells[i], '"');
    qd_quote(qtlit, sizeof(qtlit), tables->cells[i], '\'');
    at = put(sql, cap, at, "CREATE OR REPLACE VIEW %s.%s AS SELECT * FROM qlink_scan(%s, \"table\" := %s);", qname,
             qtable, qspec, qtlit);
  }
  if (with_result) { /* the table names, in order, as the statement's rows */
    at = put(sql, cap, at, "SELECT unnest([");
    for (int64_t i = 0; i < tables->n_rows; i++) {
      qd_quote(qtlit, sizeof(qtlit), tables->cells[i], '\'');
      at = put(sql, cap, at, "%s%s", i ? ", " : "", qtlit);
    }
    at = put(sql, cap, at, "]::VARCHAR[]) AS table_name;");
  }
  return at < cap ? 0 : -1;
}

int qd_table_macro_sql(char *sql, size_t cap, const char *plugin, const char *name, int first) {
  char qname[300], qplugin[300], qfn[300];
  qd_quote(qname, sizeof(qname), name, '"');
  qd_quote(qplugin, sizeof(qplugin), plugin, '\'');
  qd_quote(qfn, sizeof(qfn), name, '\'');
  size_t at = put(sql, cap, 0, "CREATE OR REPLACE MACRO %s", qname);
  for (int k = first; k <= QD_TF_MAX_ARGS; k++) {
    at = put(sql, cap, at, "%s(", k > first ? ", " : "");
    for (int i = 0; i < k; i++) at = put(sql, cap, at, "%sa%d", i ? ", " : "", i + 1);
    at = put(sql, cap, at, ") AS TABLE (SELECT * FROM qlink_table_function_%d(%s, %s", k, qplugin, qfn);
    for (int i = 0; i < k; i++) at = put(sql, cap, at, ", a%d", i + 1);
    at = put(sql, cap, at, "))");
  }
  return at < cap ? 0 : -1;
}

int qd_function_macro_sql(char *sql, size_t cap, const char *generic, const char *plugin, const char *name,
                          int n_args) {
  char qname[300], qplugin[300], qfn[300];
  qd_quote(qname, sizeof(qname), name, '"');
  qd_quote(qplugin, sizeof(qplugin), plugin, '\'');
  qd_quote(qfn, sizeof(qfn), name, '\'');
  size_t at = put(sql, cap, 0, "CREATE OR REPLACE MACRO %s(", qname);
  for (int i = 0; i < n_args; i++) at = put(sql, cap, at, "%sa%d", i ? ", " : "", i + 1);
  at = put(sql, cap, at, ") AS %s(%s, %s", generic, qplugin, qfn);
  for (int i = 0; i < n_args; i++) at = put(sql, cap, at, ", a%d", i + 1);
  at = put(sql, cap, at, ")");
  return at < cap ? 0 : -1;
}
