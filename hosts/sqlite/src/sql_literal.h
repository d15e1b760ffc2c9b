/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: SQL literals from the raw token text of virtual-table
 * module arguments.
 *
 * SQLite hands `CREATE VIRTUAL TABLE t USING m(ARG, ...)` arguments over as
 * the text of their tokens, from the first token's start to the last one's
 * end (inner spaces and comments kept, outer ones dropped). The table
 * function module (qlink_call, call.c) turns each into a literal with this
 * parser, which accepts exactly:
 *
 *   integer  [+-] digits | [+-] 0x hex-digits (1 to 16; 64-bit two's
 *            complement, as SQLite reads them)            -> int64   "l"
 *   real     [+-] digits . [digits] [exp] | [+-] . digits [exp]
 *            | [+-] digits exp      (exp: e|E [+-] digits) -> float64 "g"
 *   string   '...' with '' for a quote, valid UTF-8        -> utf8    "u"
 *   NULL                                                   -> null    "n"
 *   TRUE, FALSE                                            -> bool    "b"
 *
 * Keywords are case-insensitive. Spaces (space, tab, CR, LF, FF, VT) may
 * separate the sign from the number. Everything else (identifiers, "double
 * quoted" names, blobs, expressions, parentheses, comments, two literals,
 * an integer outside int64, a real beyond float64's range) is rejected with
 * QL_EINVAL and a reason. Decimal conversion does not depend on the
 * process's locale. No SQLite needed: the fuzz target and the unit test
 * link this file alone with libqlink.
 *
 * Thread-safety: every function is reentrant.
 */
#ifndef QLS_SQL_LITERAL_H
#define QLS_SQL_LITERAL_H

#include <stddef.h>
#include <stdint.h>

#include "qlink/lib/ir.h"

enum qls_literal_kind { QLS_LIT_INT = 1, QLS_LIT_REAL, QLS_LIT_TEXT, QLS_LIT_NULL, QLS_LIT_BOOL };

/* One parsed literal. `text` (TEXT only: the unescaped bytes, `text_len` of
 * them, NUL-terminated, no NUL inside) is malloc'd and owned by the literal:
 * qls_sql_literal_free releases it. */
struct qls_sql_literal {
  int32_t kind;  /* enum qls_literal_kind */
  int64_t i64;   /* INT; BOOL as 0 or 1 */
  double f64;    /* REAL */
  char *text;    /* TEXT */
  size_t text_len;
};

/* Parse the `n` bytes at `s` (a NUL byte among them is rejected). QL_OK
 * with `out` filled (free it), or QL_EINVAL with `*why` a static English
 * reason ("an integer outside the int64 range") and `out` left empty;
 * QL_ENOMEM if a string cannot be copied. */
int qls_sql_literal_parse(const char *s, size_t n, struct qls_sql_literal *out, const char **why);
void qls_sql_literal_free(struct qls_sql_literal *lit); /* safe on an empty or freed literal */

/* The literal as a QL_EXPR_LITERAL expression in `b` (its id, or -1 after a
 * builder failure, which the builder reports as ever). */
ql_expr_id qls_sql_literal_expr(struct ql_ir_builder *b, const struct qls_sql_literal *lit);

/* Parse module argument `position` (1-based, as the user wrote it in
 * `what(...)`) and add it to `b`: QL_OK with `*out` its id, else QL_EINVAL
 * with `error` saying "WHAT argument POSITION <TEXT>: REASON" (the text cut
 * to 64 bytes). `s` is NUL-terminated (SQLite's argv). */
int qls_sql_literal_arg(struct ql_ir_builder *b, const char *what, int32_t position, const char *s, ql_expr_id *out,
                        struct ql_error *error);

#endif /* QLS_SQL_LITERAL_H */
