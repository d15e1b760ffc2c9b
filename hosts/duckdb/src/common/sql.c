/* SPDX-License-Identifier: Apache-2.0 */
/* The SQL text qlink_attach and qlink_load make, shared by both builds: the
 * V1 build runs it on a connection of its own, the V2 build hands it to
 * DuckDB as its PRAGMA's query, which runs on the caller's connection. No
 * DuckDB call. Every text grows to fit: nothing is cut. */
#include "common/sql.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/plugin_fns.h"
#include "common/rows.h"

/* Room for `n` more bytes and the terminator. */
static int qd_text_reserve(struct qd_text *t, size_t n) {
  if (t->failed) return -1;
  if (t->len + n + 1 <= t->cap) return 0;
  size_t cap = t->cap ? t->cap : 256;
  while (cap < t->len + n + 1) cap *= 2;
  char *grown = realloc(t->s, cap);
  if (!grown) {
    t->failed = 1;
    return -1;
  }
  t->s = grown, t->cap = cap;
  return 0;
}

void qd_text_add(struct qd_text *t, const char *piece) {
  if (t->failed || !piece) return;
  size_t n = strlen(piece);
  if (qd_text_reserve(t, n) != 0) return;
  memcpy(t->s + t->len, piece, n + 1);
  t->len += n;
}

void qd_text_addf(struct qd_text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) t->failed = 1;
  if (n < 0 || qd_text_reserve(t, (size_t)n) != 0) return;
  va_start(ap, fmt);
  vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

void qd_text_quote(struct qd_text *t, const char *s, char q) {
  if (t->failed || !s) return;
  size_t n = strlen(s), extra = 0;
  for (size_t i = 0; i < n; i++) extra += s[i] == q;
  if (qd_text_reserve(t, n + extra + 2) != 0) return;
  char *o = t->s + t->len;
  *o++ = q;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == q) *o++ = q;
    *o++ = s[i];
  }
  *o++ = q;
  *o = '\0';
  t->len = (size_t)(o - t->s);
}

char *qd_text_take(struct qd_text *t) {
  if (t->failed) {
    free(t->s);
    t->s = NULL;
  }
  char *s = t->s;
  *t = (struct qd_text){0};
  return s;
}

char *qd_attach_sql(const char *name, const char *spec, const struct qd_rows *tables, int with_result) {
  struct qd_text t = {0};
  /* Quoted once: a spec may hold many options (megabytes of text). */
  struct qd_text qname = {0}, qspec = {0};
  qd_text_quote(&qname, name, '"');
  qd_text_quote(&qspec, spec, '\'');
  if (qname.failed || qspec.failed) t.failed = 1;
  qd_text_add(&t, "CREATE SCHEMA IF NOT EXISTS ");
  qd_text_add(&t, qname.s);
  qd_text_add(&t, ";");
  for (int64_t i = 0; i < tables->n_rows; i++) {
    qd_text_add(&t, "CREATE OR REPLACE VIEW ");
    qd_text_add(&t, qname.s);
    qd_text_add(&t, ".");
    qd_text_quote(&t, tables->cells[i], '"');
    qd_text_add(&t, " AS SELECT * FROM qlink_scan(");
    qd_text_add(&t, qspec.s);
    qd_text_add(&t, ", \"table\" := ");
    qd_text_quote(&t, tables->cells[i], '\'');
    qd_text_add(&t, ");");
  }
  if (with_result) { /* the table names, in order, as the statement's rows */
    qd_text_add(&t, "SELECT unnest([");
    for (int64_t i = 0; i < tables->n_rows; i++) {
      if (i) qd_text_add(&t, ", ");
      qd_text_quote(&t, tables->cells[i], '\'');
    }
    qd_text_add(&t, "]::VARCHAR[]) AS table_name;");
  }
  free(qname.s);
  free(qspec.s);
  return qd_text_take(&t);
}

char *qd_table_macro_sql(const char *plugin, const char *name, int first) {
  struct qd_text t = {0};
  qd_text_add(&t, "CREATE OR REPLACE MACRO ");
  qd_text_quote(&t, name, '"');
  for (int k = first; k <= QD_TF_MAX_ARGS; k++) {
    qd_text_add(&t, k > first ? ", (" : "(");
    for (int i = 0; i < k; i++) qd_text_addf(&t, "%sa%d", i ? ", " : "", i + 1);
    qd_text_addf(&t, ") AS TABLE (SELECT * FROM qlink_table_function_%d(", k);
    qd_text_quote(&t, plugin, '\'');
    qd_text_add(&t, ", ");
    qd_text_quote(&t, name, '\'');
    for (int i = 0; i < k; i++) qd_text_addf(&t, ", a%d", i + 1);
    qd_text_add(&t, "))");
  }
  return qd_text_take(&t);
}

char *qd_function_macro_sql(const char *generic, const char *plugin, const char *name, int n_args) {
  struct qd_text t = {0};
  qd_text_add(&t, "CREATE OR REPLACE MACRO ");
  qd_text_quote(&t, name, '"');
  qd_text_add(&t, "(");
  for (int i = 0; i < n_args; i++) qd_text_addf(&t, "%sa%d", i ? ", " : "", i + 1);
  qd_text_addf(&t, ") AS %s(", generic);
  qd_text_quote(&t, plugin, '\'');
  qd_text_add(&t, ", ");
  qd_text_quote(&t, name, '\'');
  for (int i = 0; i < n_args; i++) qd_text_addf(&t, ", a%d", i + 1);
  qd_text_add(&t, ")");
  return qd_text_take(&t);
}
