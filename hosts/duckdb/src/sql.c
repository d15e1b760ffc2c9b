/* The SQL text qlink_attach runs, shared by both builds: the V1 build runs
 * it on a connection of its own, the V2 build hands it to DuckDB as its
 * PRAGMA's query, which runs on the caller's connection. No DuckDB call. */
#include <stdio.h>

#include "ext_internal.h"

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

int qd_attach_sql(const char *name, const char *spec, const struct qd_rows *tables, int with_result, char *sql,
                  size_t cap) {
  char qname[512], qspec[4096], qtable[512], qtlit[512];
  qd_quote(qname, sizeof(qname), name, '"');
  qd_quote(qspec, sizeof(qspec), spec, '\'');
  int n = snprintf(sql, cap, "CREATE SCHEMA IF NOT EXISTS %s;", qname);
  for (int64_t i = 0; i < tables->n_rows && n > 0 && (size_t)n < cap; i++) {
    qd_quote(qtable, sizeof(qtable), tables->cells[i], '"');
    qd_quote(qtlit, sizeof(qtlit), tables->cells[i], '\'');
    n += snprintf(sql + n, cap - (size_t)n,
                  "CREATE OR REPLACE VIEW %s.%s AS SELECT * FROM qlink_scan(%s, \"table\" := %s);", qname, qtable,
                  qspec, qtlit);
  }
  if (with_result && n > 0 && (size_t)n < cap) {
    /* the table names, in order, as the statement's rows */
    n += snprintf(sql + n, cap - (size_t)n, "SELECT unnest([");
    for (int64_t i = 0; i < tables->n_rows && n > 0 && (size_t)n < cap; i++) {
      qd_quote(qtlit, sizeof(qtlit), tables->cells[i], '\'');
      n += snprintf(sql + n, cap - (size_t)n, "%s%s", i ? ", " : "", qtlit);
    }
    if (n > 0 && (size_t)n < cap) n += snprintf(sql + n, cap - (size_t)n, "]::VARCHAR[]) AS table_name;");
  }
  return n > 0 && (size_t)n < cap ? 0 : -1;
}
