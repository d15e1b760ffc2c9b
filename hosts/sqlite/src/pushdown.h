/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: xBestIndex constraints as qlink filters.
 *
 * A usable constraint on column c becomes one filter root over the table's
 * full schema: =, <, <=, >, >=, != (QL_OP_*), IS / IS NOT (IS [NOT]
 * DISTINCT FROM; IS NULL / IS NOT NULL with a NULL right side), ISNULL,
 * ISNOTNULL, and IN (QL_EXPR_IN_LIST, all values at once through
 * sqlite3_vtab_in). The right side becomes a literal of the column's own
 * Arrow type after SQLite's affinity (numeric text to numbers for numeric
 * columns, numbers to text for TEXT columns); a value that does not convert
 * leaves the constraint to SQLite.
 *
 * `omit` (SQLite does not re-check) is set only for an EXACT answer whose
 * SQLite semantics equal the filter's: never on floating-point columns
 * except = and IN (NaN reads as NULL in SQLite but is a value to a plugin),
 * never on timestamp and date columns, whose SQLite values are ISO text
 * compared as text: those constraints are pushed as a prune only, with the
 * text parsed (YYYY-MM-DD[ HH:MM[:SS[.f...]]]) and the comparison widened
 * to its non-strict form, a superset of the rows SQLite keeps, for years
 * 0000 to 9999.
 */
#ifndef QLS_PUSHDOWN_H
#define QLS_PUSHDOWN_H

#include <stdint.h>

#include "qlink/lib/ir.h"
#include "common.h"

/* Column classes for pushdown. */
enum qls_col_class {
  QLS_C_OTHER = 0, QLS_C_INT, QLS_C_UINT, QLS_C_BOOL, QLS_C_FLOAT, QLS_C_TEXT, QLS_C_BLOB, QLS_C_TIMESTAMP,
  QLS_C_DATE
};
int32_t qls_col_class(const char *format);

/* How the right side reaches xFilter. */
enum qls_rhs { QLS_RHS_NONE = 0, QLS_RHS_VALUE = 1, QLS_RHS_IN = 2 };

/* One constraint the scan receives. */
struct qls_term {
  int32_t column; /* index into the table schema */
  int32_t op;     /* SQLITE_INDEX_CONSTRAINT_* */
  int32_t rhs;    /* enum qls_rhs */
  int32_t omit;
  int32_t argv;   /* 0-based index of its value in xFilter's argv, or -1 */
};

#define QLS_MAX_TERMS 32

/* What xBestIndex chose; xFilter gets it back by idxNum. */
struct qls_plan {
  uint64_t col_used;
  int32_t n_terms;
  struct qls_term terms[QLS_MAX_TERMS];
  int32_t limit_argv;  /* -1: none */
  int32_t offset_argv; /* -1: none */
  int32_t ordered;     /* orderByConsumed: one partition whose declared ordering is the ORDER BY */
};

/* Is constraint `op` on a column of class `klass` pushable at all? */
int qls_op_pushable(int32_t klass, int32_t op);
/* May SQLite skip its own check when the plugin answers EXACT? */
int qls_op_omittable(int32_t klass, int32_t op);

/* The literal for value `v` against a column of `format`: QL_OK and
 * `*expr` a literal id in `b`; QL_ENOTFOUND when the value does not
 * convert (the constraint stays with SQLite). */
int qls_literal(struct ql_ir_builder *b, const char *format, sqlite3_value *v, ql_expr_id *expr);
/* A placeholder literal of the column's type (the right side is not known
 * in xBestIndex): zero, the empty string, or the epoch. */
ql_expr_id qls_placeholder(struct ql_ir_builder *b, const char *format);
/* The filter root for a term: column `name` (index `column`) op `lits`
 * (1 literal for a comparison, n for IN, none for ISNULL/ISNOTNULL); a
 * NULL-valued IS / IS NOT becomes IS [NOT] NULL. The widening of
 * temporal comparisons happens here. */
ql_expr_id qls_term_expr(struct ql_ir_builder *b, const char *name, int32_t column, int32_t klass, int32_t op,
                         const ql_expr_id *lits, int32_t n_lits, int rhs_is_null);

/* "value >= ?1 [exact]"-style text of a plan for EXPLAIN's idxStr
 * (sqlite3_malloc'd). */
char *qls_plan_describe(const struct qls_plan *plan, const struct ArrowSchema *schema, const int32_t *answers);

#endif /* QLS_PUSHDOWN_H */
