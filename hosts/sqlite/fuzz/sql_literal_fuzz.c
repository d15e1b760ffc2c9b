/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the SQL literal parser of qlink_call's module arguments
 * (sql_literal.h), which reads SQL text. Whatever it accepts must print
 * back as a literal that parses to the same value (integers exactly, reals
 * bit for bit, strings byte for byte), and the argument form must build a
 * literal expression that validates, or an error naming the argument. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "sql_literal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The literal as SQL text (malloc'd). */
static char *print(const struct qls_sql_literal *lit) {
  char *out = malloc(lit->kind == QLS_LIT_TEXT ? lit->text_len * 2 + 3 : 64);
  if (!out) abort();
  switch (lit->kind) {
    case QLS_LIT_INT: snprintf(out, 64, "%lld", (long long)lit->i64); break;
    case QLS_LIT_REAL:
      snprintf(out, 64, "%.17g", lit->f64);
      if (!strpbrk(out, ".e")) strcat(out, ".0"); /* "-0" would read as an integer */
      break;
    case QLS_LIT_NULL: strcpy(out, "NULL"); break;
    case QLS_LIT_BOOL: strcpy(out, lit->i64 ? "TRUE" : "FALSE"); break;
    case QLS_LIT_TEXT: {
      size_t o = 0;
      out[o++] = '\'';
      for (size_t i = 0; i < lit->text_len; i++) {
        if (lit->text[i] == '\'') out[o++] = '\'';
        out[o++] = lit->text[i];
      }
      out[o++] = '\'';
      out[o] = '\0';
      break;
    }
    default: abort();
  }
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  struct qls_sql_literal lit;
  const char *why = NULL;
  int rc = qls_sql_literal_parse(s, size, &lit, &why);
  if (rc == QL_OK) {
    if (lit.kind == QLS_LIT_REAL && !isfinite(lit.f64)) abort();
    if (lit.kind == QLS_LIT_TEXT && (!lit.text || memchr(lit.text, '\0', lit.text_len) || lit.text[lit.text_len]))
      abort();
    char *again_text = print(&lit);
    struct qls_sql_literal again;
    if (qls_sql_literal_parse(again_text, strlen(again_text), &again, &why) != QL_OK) abort();
    if (again.kind != lit.kind) abort();
    if (lit.kind == QLS_LIT_INT || lit.kind == QLS_LIT_BOOL) {
      if (again.i64 != lit.i64) abort();
    } else if (lit.kind == QLS_LIT_REAL) {
      if (memcmp(&again.f64, &lit.f64, sizeof lit.f64) != 0) abort();
    } else if (lit.kind == QLS_LIT_TEXT) {
      if (again.text_len != lit.text_len || memcmp(again.text, lit.text, lit.text_len) != 0) abort();
    }
    qls_sql_literal_free(&again);
    free(again_text);
    qls_sql_literal_free(&lit);
  } else if (rc != QL_EINVAL || !why) {
    abort();
  }
  /* the argument form, over a NUL-terminated copy */
  char *z = malloc(size + 1);
  if (!z) return 0;
  memcpy(z, data, size);
  z[size] = '\0';
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  if (ql_ir_builder_new(&b, &err) != QL_OK) abort();
  ql_expr_id id = -1;
  int arc = qls_sql_literal_arg(b, "fuzz", 3, z, &id, &err);
  if (arc == QL_OK) {
    struct ql_plan_view view;
    memset(&view, 0, sizeof view);
    if (ql_ir_builder_finish(b, -1, &view, &err) != QL_OK) abort();
    if (ql_ir_validate_exprs(&view, &id, 1, &err) != QL_OK) abort();
    if (view.exprs[id].kind != QL_EXPR_LITERAL) abort();
    view.release(&view);
  } else if (arc != QL_EINVAL || strncmp(ql_error_message(&err), "fuzz argument 3 `", 17) != 0) {
    abort();
  }
  ql_error_release(&err);
  ql_ir_builder_free(b);
  free(z);
  return 0;
}
