/* SPDX-License-Identifier: Apache-2.0 */
/* qlink-host-c: --where filters (host_filters.h). */
#include "host_filters.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

static const struct {
  const char *text;
  int32_t op;
} k_ops[] = {{"<=", QL_OP_LE}, {">=", QL_OP_GE}, {"!=", QL_OP_NE}, {"<>", QL_OP_NE},
             {"=", QL_OP_EQ},  {"<", QL_OP_LT},  {">", QL_OP_GT}};

static int parse_literal(const char *lit, struct ql_host_filter *out, struct ql_error *error) {
  size_t n = strlen(lit);
  if (n >= 2 && lit[0] == '\'' && lit[n - 1] == '\'') {
    out->kind = 's';
    out->s = strndup(lit + 1, n - 2);
    return out->s ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  char *end;
  errno = 0;
  long long v = strtoll(lit, &end, 10);
  if (*lit && *end == '\0' && errno == 0) {
    out->kind = 'i';
    out->i = v;
    return QL_OK;
  }
  double d = strtod(lit, &end);
  if (*lit && *end == '\0') {
    out->kind = 'f';
    out->f = d;
    return QL_OK;
  }
  return ql_error_set(error, QL_EINVAL, "--where: '%s' is not an integer, a number or a 'quoted string'", lit);
}

int ql_host_filter_parse(const char *text, const struct ArrowSchema *schema, struct ql_ir_builder *b,
                         struct ql_host_filter *out, struct ql_error *error) {
  memset(out, 0, sizeof *out);
  const char *op_at = NULL;
  size_t op_len = 0;
  for (const char *p = text; *p && !op_at; p++) {
    for (size_t k = 0; k < sizeof k_ops / sizeof k_ops[0]; k++) {
      size_t len = strlen(k_ops[k].text);
      if (strncmp(p, k_ops[k].text, len) == 0) {
        op_at = p;
        op_len = len;
        out->op = k_ops[k].op;
        break;
      }
    }
  }
  if (!op_at) return ql_error_set(error, QL_EINVAL, "--where '%s': expected 'column op literal' (op: = != < <= > >=)", text);
  const char *cs = text, *ce = op_at;
  while (*cs == ' ') cs++;
  while (ce > cs && ce[-1] == ' ') ce--;
  char *column = strndup(cs, (size_t)(ce - cs));
  const char *ls = op_at + op_len;
  while (*ls == ' ') ls++;
  char *lit = strdup(ls);
  int rc = (column && lit) ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
  for (size_t n = lit ? strlen(lit) : 0; n > 0 && lit[n - 1] == ' '; n--) lit[n - 1] = '\0';
  int64_t index = rc == QL_OK ? ql_schema_find(schema, column) : -1;
  if (rc == QL_OK && index < 0) rc = ql_error_set(error, QL_EINVAL, "--where '%s': the table has no column '%s'", text, column);
  if (rc == QL_OK) rc = parse_literal(lit, out, error);
  if (rc == QL_OK) {
    out->column = (int32_t)index;
    ql_expr_id col = ql_ir_column(b, column, NULL, out->column);
    ql_expr_id value = out->kind == 'i' ? ql_ir_literal_i64(b, out->i)
                       : out->kind == 'f' ? ql_ir_literal_f64(b, out->f)
                                          : ql_ir_literal_utf8(b, out->s);
    out->expr = ql_ir_binary(b, out->op, col, value);
    rc = ql_ir_builder_status(b, error);
  }
  free(column);
  free(lit);
  if (rc != QL_OK) ql_host_filter_free(out);
  return rc;
}

void ql_host_filter_free(struct ql_host_filter *f) {
  free(f->s);
  f->s = NULL;
}

static int compare_result(int32_t op, int cmp) {
  switch (op) {
    case QL_OP_EQ: return cmp == 0;
    case QL_OP_NE: return cmp != 0;
    case QL_OP_LT: return cmp < 0;
    case QL_OP_LE: return cmp <= 0;
    case QL_OP_GT: return cmp > 0;
    case QL_OP_GE: return cmp >= 0;
    default: return 0;
  }
}

int ql_host_filter_eval(const struct ql_host_filter *f, const struct ql_batches *b, int64_t column, int64_t row) {
  if (f->kind == 's') {
    const char *data;
    int64_t size;
    if (!ql_batches_str(b, column, row, &data, &size)) return 0;
    size_t n = strlen(f->s);
    int cmp = memcmp(data, f->s, (size_t)size < n ? (size_t)size : n);
    if (cmp == 0) cmp = ((size_t)size > n) - ((size_t)size < n);
    return compare_result(f->op, cmp);
  }
  const char *format = b->schema.children[column]->format;
  if (f->kind == 'i' && strchr("csilCSIL", format[0])) {
    int64_t v;
    if (!ql_batches_i64(b, column, row, &v)) return 0;
    return compare_result(f->op, (v > f->i) - (v < f->i));
  }
  double v, lit = f->kind == 'i' ? (double)f->i : f->f;
  if (!ql_batches_f64(b, column, row, &v)) return 0;
  return compare_result(f->op, (v > lit) - (v < lit));
}
