/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: constraints as filters (pushdown.h). */
#include "pushdown.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cells.h"
#include "qlink/table.h"

int32_t qls_col_class(const char *f) {
  if (f[1] == '\0' && strchr("csil", f[0])) return QLS_C_INT;
  if (f[1] == '\0' && strchr("CSIL", f[0])) return QLS_C_UINT;
  if (strcmp(f, "b") == 0) return QLS_C_BOOL;
  if (strcmp(f, "f") == 0 || strcmp(f, "g") == 0) return QLS_C_FLOAT;
  if (strcmp(f, "u") == 0 || strcmp(f, "U") == 0) return QLS_C_TEXT;
  if (strcmp(f, "z") == 0 || strcmp(f, "Z") == 0) return QLS_C_BLOB;
  if (strncmp(f, "ts", 2) == 0 && f[2] && strchr("smun", f[2]) && f[3] == ':') return QLS_C_TIMESTAMP;
  if (strcmp(f, "tdD") == 0) return QLS_C_DATE;
  return QLS_C_OTHER;
}

static int is_cmp(int32_t op) {
  return op == SQLITE_INDEX_CONSTRAINT_EQ || op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_LE ||
         op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_GE;
}

int qls_op_pushable(int32_t klass, int32_t op) {
  if (klass == QLS_C_OTHER) return 0;
  int temporal = klass == QLS_C_TIMESTAMP || klass == QLS_C_DATE;
  if (is_cmp(op)) return 1;
  if (temporal) return 0; /* != and IS on ISO text have no widened form */
  if (op == SQLITE_INDEX_CONSTRAINT_ISNULL) return klass != QLS_C_FLOAT; /* NaN reads as NULL */
  return op == SQLITE_INDEX_CONSTRAINT_NE || op == SQLITE_INDEX_CONSTRAINT_IS ||
         op == SQLITE_INDEX_CONSTRAINT_ISNOT || op == SQLITE_INDEX_CONSTRAINT_ISNOTNULL;
}

int qls_op_omittable(int32_t klass, int32_t op) {
  if (klass == QLS_C_TIMESTAMP || klass == QLS_C_DATE || klass == QLS_C_OTHER) return 0;
  if (klass == QLS_C_FLOAT) return op == SQLITE_INDEX_CONSTRAINT_EQ;
  return 1;
}

static int int_range(const char *f, int64_t v) {
  switch (f[0]) {
    case 'c': return v >= INT8_MIN && v <= INT8_MAX;
    case 's': return v >= INT16_MIN && v <= INT16_MAX;
    case 'i': return v >= INT32_MIN && v <= INT32_MAX;
    case 'C': return v >= 0 && v <= UINT8_MAX;
    case 'S': return v >= 0 && v <= UINT16_MAX;
    case 'I': return v >= 0 && v <= (int64_t)UINT32_MAX;
    case 'L': return v >= 0;
    case 'b': return v == 0 || v == 1;
    default: return 1;
  }
}

int qls_literal(struct ql_ir_builder *b, const char *format, sqlite3_value *v, ql_expr_id *expr) {
  int32_t klass = qls_col_class(format);
  struct ql_scalar s;
  memset(&s, 0, sizeof s);
  s.format = format;
  int type = sqlite3_value_type(v);
  if (type == SQLITE_NULL) return QL_ENOTFOUND;
  switch (klass) {
    case QLS_C_INT:
    case QLS_C_UINT:
    case QLS_C_BOOL: {
      int t = sqlite3_value_numeric_type(v);
      int64_t i;
      if (t == SQLITE_INTEGER) {
        i = sqlite3_value_int64(v);
      } else if (t == SQLITE_FLOAT) {
        double d = sqlite3_value_double(v);
        if (!(d == floor(d) && d >= -9.2e18 && d <= 9.2e18)) return QL_ENOTFOUND;
        i = (int64_t)d;
      } else {
        return QL_ENOTFOUND;
      }
      if (!int_range(format, i)) return QL_ENOTFOUND;
      if (klass == QLS_C_UINT) s.value.u64 = (uint64_t)i;
      else s.value.i64 = i;
      break;
    }
    case QLS_C_FLOAT: {
      int t = sqlite3_value_numeric_type(v);
      if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) return QL_ENOTFOUND;
      s.value.f64 = sqlite3_value_double(v);
      break;
    }
    case QLS_C_TEXT:
      if (type == SQLITE_BLOB) return QL_ENOTFOUND;
      s.value.bytes.data = (const char *)sqlite3_value_text(v);
      s.value.bytes.size = sqlite3_value_bytes(v);
      if (!s.value.bytes.data) return QL_ENOTFOUND;
      break;
    case QLS_C_BLOB:
      if (type != SQLITE_BLOB) return QL_ENOTFOUND;
      s.value.bytes.data = sqlite3_value_blob(v);
      s.value.bytes.size = sqlite3_value_bytes(v);
      if (!s.value.bytes.data) s.value.bytes.data = "";
      break;
    case QLS_C_TIMESTAMP:
    case QLS_C_DATE: {
      if (type != SQLITE_TEXT) return QL_ENOTFOUND;
      const char *t = (const char *)sqlite3_value_text(v);
      int64_t n = sqlite3_value_bytes(v), out;
      if (qls_parse_timestamp(t, n, klass == QLS_C_DATE ? 's' : format[2], &out) != 0) return QL_ENOTFOUND;
      /* a date column holds days: the date of the text (rounded down) */
      s.value.i64 = klass == QLS_C_DATE ? (out >= 0 ? out / 86400 : -((-out + 86399) / 86400)) : out;
      break;
    }
    default: return QL_ENOTFOUND;
  }
  *expr = ql_ir_literal(b, &s);
  return QL_OK;
}

ql_expr_id qls_placeholder(struct ql_ir_builder *b, const char *format) {
  struct ql_scalar s;
  memset(&s, 0, sizeof s);
  s.format = format;
  int32_t klass = qls_col_class(format);
  if (klass == QLS_C_TEXT || klass == QLS_C_BLOB) s.value.bytes.data = "";
  return ql_ir_literal(b, &s);
}

ql_expr_id qls_term_expr(struct ql_ir_builder *b, const char *name, int32_t column, int32_t klass, int32_t op,
                         const ql_expr_id *lits, int32_t n_lits, int rhs_is_null) {
  ql_expr_id col = ql_ir_column(b, name, NULL, column);
  int temporal = klass == QLS_C_TIMESTAMP || klass == QLS_C_DATE;
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_ISNULL: return ql_ir_unary(b, QL_EXPR_IS_NULL, col);
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: return ql_ir_unary(b, QL_EXPR_IS_NOT_NULL, col);
    case SQLITE_INDEX_CONSTRAINT_IS:
      if (rhs_is_null) return ql_ir_unary(b, QL_EXPR_IS_NULL, col);
      return ql_ir_binary(b, QL_OP_IS_NOT_DISTINCT_FROM, col, lits[0]);
    case SQLITE_INDEX_CONSTRAINT_ISNOT:
      if (rhs_is_null) return ql_ir_unary(b, QL_EXPR_IS_NOT_NULL, col);
      return ql_ir_binary(b, QL_OP_IS_DISTINCT_FROM, col, lits[0]);
    case SQLITE_INDEX_CONSTRAINT_NE: return ql_ir_binary(b, QL_OP_NE, col, lits[0]);
    case SQLITE_INDEX_CONSTRAINT_LT: return ql_ir_binary(b, temporal ? QL_OP_LE : QL_OP_LT, col, lits[0]);
    case SQLITE_INDEX_CONSTRAINT_LE: return ql_ir_binary(b, QL_OP_LE, col, lits[0]);
    case SQLITE_INDEX_CONSTRAINT_GT: return ql_ir_binary(b, temporal ? QL_OP_GE : QL_OP_GT, col, lits[0]);
    case SQLITE_INDEX_CONSTRAINT_GE: return ql_ir_binary(b, QL_OP_GE, col, lits[0]);
    default: break;
  }
  if (n_lits == 1) return ql_ir_binary(b, QL_OP_EQ, col, lits[0]);
  ql_expr_id args[1 + 4096];
  if (n_lits > 4096) return -1;
  args[0] = col;
  for (int32_t i = 0; i < n_lits; i++) args[1 + i] = lits[i];
  struct ql_expr e;
  memset(&e, 0, sizeof e);
  e.kind = QL_EXPR_IN_LIST;
  e.n_args = 1 + n_lits;
  e.args = args;
  e.column_index = -1;
  e.filter = -1;
  return ql_ir_expr(b, &e);
}

static const char *op_text(int32_t op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ: return "=";
    case SQLITE_INDEX_CONSTRAINT_GT: return ">";
    case SQLITE_INDEX_CONSTRAINT_LE: return "<=";
    case SQLITE_INDEX_CONSTRAINT_LT: return "<";
    case SQLITE_INDEX_CONSTRAINT_GE: return ">=";
    case SQLITE_INDEX_CONSTRAINT_NE: return "!=";
    case SQLITE_INDEX_CONSTRAINT_IS: return "IS";
    case SQLITE_INDEX_CONSTRAINT_ISNOT: return "IS NOT";
    case SQLITE_INDEX_CONSTRAINT_ISNULL: return "IS NULL";
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: return "IS NOT NULL";
    default: return "?";
  }
}

char *qls_plan_describe(const struct qls_plan *p, const struct ArrowSchema *schema, const int32_t *answers) {
  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendall(s, "qlink columns=");
  int any = 0;
  for (int64_t c = 0; c < schema->n_children; c++) {
    if (p->col_used & (1ull << (c < 63 ? c : 63))) {
      sqlite3_str_appendf(s, "%s%s", any ? "," : "", schema->children[c]->name);
      any = 1;
    }
  }
  if (!any) sqlite3_str_appendall(s, "(none)");
  for (int32_t i = 0; i < p->n_terms; i++) {
    const struct qls_term *t = &p->terms[i];
    const char *answer = answers[i] == QL_PUSHDOWN_EXACT ? "exact" : "inexact";
    sqlite3_str_appendf(s, "%s%s %s", i ? "; " : " filters=", schema->children[t->column]->name,
                        t->rhs == QLS_RHS_IN ? "IN" : op_text(t->op));
    if (t->rhs != QLS_RHS_NONE) sqlite3_str_appendf(s, " ?%d", t->argv + 1);
    sqlite3_str_appendf(s, " [%s%s]", answer, t->omit ? ", omitted" : ", rechecked");
  }
  if (p->limit_argv >= 0) sqlite3_str_appendf(s, " limit=?%d", p->limit_argv + 1);
  if (p->offset_argv >= 0) sqlite3_str_appendf(s, " offset=?%d", p->offset_argv + 1);
  if (p->ordered) sqlite3_str_appendall(s, " ordered");
  return sqlite3_str_finish(s);
}
