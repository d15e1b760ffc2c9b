/* SPDX-License-Identifier: Apache-2.0 */
/* qlink-host-c: --where filters "column op literal", built as IR
 * expressions for the pushdown handshake and evaluated by the host on the
 * rows when the scan does not apply them exactly. */
#ifndef QLINK_TOOLS_HOST_FILTERS_H
#define QLINK_TOOLS_HOST_FILTERS_H

#include <stddef.h>

#include "qlink/lib/check.h"
#include "qlink/lib/ir.h"

struct ql_host_filter {
  int32_t column;  /* index into the table schema */
  int32_t op;      /* QL_OP_EQ ... QL_OP_GE */
  char kind;       /* literal type: 'i' int64, 'f' float64, 's' utf8 */
  int64_t i;
  double f;
  char *s;         /* malloc'd for 's' */
  ql_expr_id expr; /* root in the builder's arena */
  int32_t answer;  /* enum ql_filter_pushdown from supports_filters */
};

/* Parse "column op literal" (op: = != <> < <= > >=; literal: integer, number
 * or 'text') against `schema` and add it to `b`. QL_EINVAL naming what is
 * wrong. */
int ql_host_filter_parse(const char *text, const struct ArrowSchema *schema, struct ql_ir_builder *b,
                         struct ql_host_filter *out, struct ql_error *error);
void ql_host_filter_free(struct ql_host_filter *f);
/* Does row `row` of `batches` (whose column `column` holds the filter's
 * column) pass? A NULL never passes (SQL). */
int ql_host_filter_eval(const struct ql_host_filter *f, const struct ql_batches *batches, int64_t column, int64_t row);

#endif /* QLINK_TOOLS_HOST_FILTERS_H */
