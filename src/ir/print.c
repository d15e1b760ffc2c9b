/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink IR: printing expressions and plans (qlink/lib/ir.h).
 *
 * The plan layout follows DataFusion's EXPLAIN (LogicalPlan::display_indent)
 * so a plan printed by qlink reads like the host's own, e.g.
 *   Aggregate: groupBy=[[a.s, w.o]], aggr=[[sum(a.val * w.val)]]
 *     Inner Join: a.k = w.k
 *       TableScan: a projection=[s, k, val]
 * Expressions are SQL-like; a compound operand of an operator is
 * parenthesised, so the text never depends on precedence rules.
 * Printing checks ids as it goes and bounds its depth, so even a view that
 * ql_ir_validate would reject is printed or refused without a crash.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

/* ---- names */

const char *ql_expr_kind_name(int32_t kind) {
  static const char *const names[] = {
      NULL,          "COLUMN",    "LITERAL",         "BINARY",
      "NOT",         "NEGATIVE",  "IS_NULL",         "IS_NOT_NULL",
      "CAST",        "TRY_CAST",  "CASE",            "ALIAS",
      "SCALAR_FUNCTION", "AGGREGATE_FUNCTION", "WINDOW_FUNCTION", "IN_LIST",
      "BETWEEN",     "LIKE",      "SORT",            "OTHER"};
  return (kind >= QL_EXPR_COLUMN && kind <= QL_EXPR_OTHER) ? names[kind] : "UNKNOWN";
}

const char *ql_node_kind_name(int32_t kind) {
  static const char *const names[] = {
      NULL,   "TableScan", "Projection", "Filter", "Aggregate",     "Join",          "Sort", "Limit",
      "Union", "SubqueryAlias", "Values", "EmptyRelation", "WindowAggr", "Distinct", "Other"};
  return (kind >= QL_NODE_TABLE_SCAN && kind <= QL_NODE_OTHER) ? names[kind] : "Unknown";
}

const char *ql_binary_op_symbol(int32_t op) {
  static const char *const symbols[] = {
      NULL, "=", "!=", "<", "<=", ">", ">=", "AND", "OR", "+", "-", "*", "/", "%",
      "IS DISTINCT FROM", "IS NOT DISTINCT FROM", "||", "<op>"};
  return (op >= QL_OP_EQ && op <= QL_OP_OTHER) ? symbols[op] : "<unknown op>";
}

const char *ql_join_type_name(int32_t type) {
  static const char *const names[] = {NULL,        "Inner",    "Left",      "Right",    "Full",     "LeftSemi",
                                      "RightSemi", "LeftAnti", "RightAnti", "LeftMark", "Other"};
  return (type >= QL_JOIN_INNER && type <= QL_JOIN_OTHER) ? names[type] : "Unknown";
}

/* ---- a growable string with a sticky failure */

struct ql_ir_text {
  char *data;
  size_t len;
  size_t cap;
  int status;
  struct ql_error *error;
  const struct ql_plan_view *view;
  /* In a tree every entry prints once; more means shared entries or a
   * cycle, which could otherwise print exponentially much. */
  int64_t exprs_printed;
  int64_t nodes_printed;
};

static void text_fail(struct ql_ir_text *t, int status, const char *fmt, ...) QL_PRINTF_FORMAT(3, 4);

static void text_fail(struct ql_ir_text *t, int status, const char *fmt, ...) {
  if (t->status != QL_OK) {
    return;
  }
  va_list args;
  va_start(args, fmt);
  t->status = ql_error_setv(t->error, status, fmt, args);
  va_end(args);
}

static void text_append(struct ql_ir_text *t, const char *s, size_t n) {
  if (t->status != QL_OK) {
    return;
  }
  if (t->cap - t->len <= n) {
    size_t cap = t->cap ? t->cap : 64;
    while (cap - t->len <= n) {
      cap *= 2;
    }
    char *grown = realloc(t->data, cap);
    if (grown == NULL) {
      text_fail(t, QL_ENOMEM, "printing: out of memory");
      return;
    }
    t->data = grown;
    t->cap = cap;
  }
  memcpy(t->data + t->len, s, n);
  t->len += n;
  t->data[t->len] = '\0';
}

static void text_puts(struct ql_ir_text *t, const char *s) { text_append(t, s, strlen(s)); }

static void text_printf(struct ql_ir_text *t, const char *fmt, ...) QL_PRINTF_FORMAT(2, 3);

static void text_printf(struct ql_ir_text *t, const char *fmt, ...) {
  char buf[128];
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  if (n < 0 || (size_t)n >= sizeof(buf)) {
    text_fail(t, QL_EINTERNAL, "printing: formatted piece too long");
    return;
  }
  text_append(t, buf, (size_t)n);
}

/* Hand the text over (*out), or free it and return the failure. */
static int text_finish(struct ql_ir_text *t, char **out) {
  if (t->status == QL_OK && t->data == NULL) {
    text_append(t, "", 0);
  }
  if (t->status != QL_OK) {
    free(t->data);
    return t->status;
  }
  *out = t->data;
  return QL_OK;
}

/* ---- literals */

/* Shortest %.Ng that reads back as the same value (up to %.17g), with
 * ".0" added to integral values so a float never prints like an integer. */
static void print_float(struct ql_ir_text *t, double v, int single) {
  char buf[64];
  if (isnan(v)) {
    text_puts(t, "NaN");
    return;
  }
  if (isinf(v)) {
    text_puts(t, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int precision = 1; precision <= 17; precision++) {
    snprintf(buf, sizeof(buf), "%.*g", precision, v);
    double back = strtod(buf, NULL);
    if (single ? (float)back == (float)v : back == v) {
      break;
    }
  }
  text_puts(t, buf);
  if (strpbrk(buf, ".eE") == NULL) {
    text_puts(t, ".0");
  }
}

static void print_quoted(struct ql_ir_text *t, const char *data, int64_t size) {
  text_puts(t, "'");
  for (int64_t i = 0; i < size; i++) {
    text_append(t, data[i] == '\'' ? "''" : data + i, data[i] == '\'' ? 2 : 1);
  }
  text_puts(t, "'");
}

static void print_hex(struct ql_ir_text *t, const char *data, int64_t size) {
  text_puts(t, "X'");
  for (int64_t i = 0; i < size; i++) {
    text_printf(t, "%02x", (unsigned)(unsigned char)data[i]);
  }
  text_puts(t, "'");
}

/* Days since 1970-01-01 to a civil date (H. Hinnant's days_from_civil inverse). */
static void print_date(struct ql_ir_text *t, int64_t days) {
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  int64_t y = yoe + era * 400 + (m <= 2);
  text_printf(t, "DATE '%04" PRId64 "-%02" PRId64 "-%02" PRId64 "'", y, m, d);
}

/* decimal128 "d:p,s": the unscaled two's-complement value with `scale` digits after the point. */
static void print_decimal(struct ql_ir_text *t, const char *format, uint64_t lo, int64_t hi) {
  const char *comma = strchr(format, ',');
  long scale = comma ? strtol(comma + 1, NULL, 10) : 0;
  __extension__ typedef unsigned __int128 u128;
  u128 bits = ((u128)(uint64_t)hi << 64) | lo;
  int negative = hi < 0;
  u128 mag = negative ? ~bits + 1 : bits;
  char digits[64];
  int n = 0;
  do {
    digits[n++] = (char)('0' + (int)(mag % 10));
    mag /= 10;
  } while (mag != 0 && n < 60);
  if (scale < 0 || scale > 76) {
    scale = 0;
  }
  while (n <= scale && n < 60) {
    digits[n++] = '0';
  }
  if (negative) {
    text_puts(t, "-");
  }
  for (int i = n - 1; i >= 0; i--) {
    text_append(t, &digits[i], 1);
    if (i == scale && scale > 0) {
      text_puts(t, ".");
    }
  }
}

static void print_literal(struct ql_ir_text *t, const struct ql_scalar *s) {
  const char *f = s->format;
  if (f == NULL) {
    text_puts(t, "<literal without format>");
    return;
  }
  if (s->is_null) {
    text_puts(t, "NULL");
    return;
  }
  switch (ql_ir_format_storage(f)) {
    case QL_IR_STORAGE_NULL:
      text_puts(t, "NULL");
      return;
    case QL_IR_STORAGE_BOOL:
      text_puts(t, s->value.i64 ? "true" : "false");
      return;
    case QL_IR_STORAGE_SIGNED:
      if (strcmp(f, "tdD") == 0) {
        print_date(t, s->value.i64);
      } else if (strchr("csil", f[0]) != NULL && f[1] == '\0') {
        text_printf(t, "%" PRId64, s->value.i64);
      } else {
        text_printf(t, "CAST(%" PRId64 " AS %s)", s->value.i64, f);
      }
      return;
    case QL_IR_STORAGE_UNSIGNED:
      text_printf(t, "%" PRIu64, s->value.u64);
      return;
    case QL_IR_STORAGE_FLOAT:
      print_float(t, s->value.f64, f[0] == 'f' || f[0] == 'e');
      return;
    case QL_IR_STORAGE_BYTES: {
      const char *data = s->value.bytes.data;
      int64_t size = data ? s->value.bytes.size : 0;
      if (f[0] == 'u' || f[0] == 'U' || strcmp(f, "vu") == 0) {
        print_quoted(t, data, size);
      } else {
        print_hex(t, data, size);
      }
      return;
    }
    case QL_IR_STORAGE_DECIMAL128:
      print_decimal(t, f, s->value.dec128.lo, s->value.dec128.hi);
      return;
    default:
      text_printf(t, "<%.60s literal>", f);
      return;
  }
}

/* ---- expressions */

static void print_expr(struct ql_ir_text *t, ql_expr_id id, int depth);

/* Kinds printed as infix/postfix operators: wrapped when they are an operand. */
static int expr_is_compound(const struct ql_expr *e) {
  switch (e->kind) {
    case QL_EXPR_BINARY: case QL_EXPR_BETWEEN: case QL_EXPR_LIKE: case QL_EXPR_IN_LIST:
    case QL_EXPR_IS_NULL: case QL_EXPR_IS_NOT_NULL: case QL_EXPR_NOT: case QL_EXPR_NEGATIVE:
    case QL_EXPR_ALIAS:
      return 1;
    default:
      return 0;
  }
}

static const struct ql_expr *expr_at(struct ql_ir_text *t, ql_expr_id id) {
  if (id < 0 || id >= t->view->n_exprs) {
    text_fail(t, QL_EINVAL, "printing: expr %d out of range (%d exprs)", (int)id, (int)t->view->n_exprs);
    return NULL;
  }
  return &t->view->exprs[id];
}

/* args[i] of e, or -1 (and a failure) past n_args. */
static ql_expr_id arg_at(struct ql_ir_text *t, const struct ql_expr *e, int32_t i) {
  if (i < 0 || i >= e->n_args || e->args == NULL) {
    text_fail(t, QL_EINVAL, "printing: a %s expression lacks arg %d", ql_expr_kind_name(e->kind), (int)i);
    return -1;
  }
  return e->args[i];
}

static void print_operand(struct ql_ir_text *t, const struct ql_expr *e, int32_t i, int depth) {
  ql_expr_id id = arg_at(t, e, i);
  const struct ql_expr *arg = t->status == QL_OK ? expr_at(t, id) : NULL;
  if (arg == NULL) {
    return;
  }
  int wrap = expr_is_compound(arg);
  text_puts(t, wrap ? "(" : "");
  print_expr(t, id, depth + 1);
  text_puts(t, wrap ? ")" : "");
}

/* args[from..to) separated by ", ". */
static void print_list(struct ql_ir_text *t, const struct ql_expr *e, int32_t from, int32_t to, int depth) {
  for (int32_t i = from; i < to && t->status == QL_OK; i++) {
    text_puts(t, i > from ? ", " : "");
    print_expr(t, arg_at(t, e, i), depth + 1);
  }
}

static void print_case(struct ql_ir_text *t, const struct ql_expr *e, int depth) {
  int32_t i = 0, end = e->n_args - ((e->flags & QL_CASE_HAS_ELSE) ? 1 : 0);
  text_puts(t, "CASE");
  if (e->flags & QL_CASE_HAS_OPERAND) {
    text_puts(t, " ");
    print_expr(t, arg_at(t, e, i++), depth + 1);
  }
  for (; i + 1 < end && t->status == QL_OK; i += 2) {
    text_puts(t, " WHEN ");
    print_expr(t, arg_at(t, e, i), depth + 1);
    text_puts(t, " THEN ");
    print_expr(t, arg_at(t, e, i + 1), depth + 1);
  }
  if (e->flags & QL_CASE_HAS_ELSE) {
    text_puts(t, " ELSE ");
    print_expr(t, arg_at(t, e, e->n_args - 1), depth + 1);
  }
  text_puts(t, " END");
}

static void print_function(struct ql_ir_text *t, const struct ql_expr *e, int depth) {
  const char *name = e->function.name ? e->function.name : e->name ? e->name : "<function>";
  int32_t n_func = e->kind == QL_EXPR_WINDOW_FUNCTION ? e->n_func_args : e->n_args;
  if (n_func < 0 || n_func > e->n_args) {
    text_fail(t, QL_EINVAL, "printing: window function %s has n_func_args %d of %d args", name, (int)n_func,
              (int)e->n_args);
    return;
  }
  text_printf(t, "%.100s(", name);
  text_puts(t, (e->flags & QL_EXPR_DISTINCT) ? "DISTINCT " : "");
  print_list(t, e, 0, n_func, depth);
  text_puts(t, ")");
  if (e->kind == QL_EXPR_AGGREGATE_FUNCTION && e->filter != -1) {
    text_puts(t, " FILTER (WHERE ");
    print_expr(t, e->filter, depth + 1);
    text_puts(t, ")");
  }
  if (e->kind == QL_EXPR_WINDOW_FUNCTION) {
    int32_t n_part = e->n_partition_by;
    if (n_part < 0 || n_part > e->n_args - n_func) {
      text_fail(t, QL_EINVAL, "printing: window function %s has n_partition_by %d", name, (int)n_part);
      return;
    }
    text_puts(t, " OVER (");
    if (n_part > 0) {
      text_puts(t, "PARTITION BY ");
      print_list(t, e, n_func, n_func + n_part, depth);
    }
    if (n_func + n_part < e->n_args) {
      text_puts(t, n_part > 0 ? " ORDER BY " : "ORDER BY ");
      print_list(t, e, n_func + n_part, e->n_args, depth);
    }
    text_puts(t, ")");
  }
}

static void print_expr(struct ql_ir_text *t, ql_expr_id id, int depth) {
  const struct ql_expr *e = t->status == QL_OK ? expr_at(t, id) : NULL;
  if (e == NULL) {
    return;
  }
  if (depth > QL_IR_MAX_DEPTH) {
    text_fail(t, QL_EOVERFLOW, "printing: expressions nested deeper than %d", QL_IR_MAX_DEPTH);
    return;
  }
  if (++t->exprs_printed > t->view->n_exprs) {
    text_fail(t, QL_EINVAL, "printing: expr %d is reached twice (not a tree)", (int)id);
    return;
  }
  const char *negated = (e->flags & QL_EXPR_NEGATED) ? "NOT " : "";
  switch (e->kind) {
    case QL_EXPR_COLUMN:
      if (e->qualifier != NULL) {
        text_puts(t, e->qualifier);
        text_puts(t, ".");
      }
      text_puts(t, e->name ? e->name : "<column>");
      return;
    case QL_EXPR_LITERAL:
      print_literal(t, &e->literal);
      return;
    case QL_EXPR_BINARY:
      print_operand(t, e, 0, depth);
      text_printf(t, " %s ", ql_binary_op_symbol(e->op));
      print_operand(t, e, 1, depth);
      return;
    case QL_EXPR_NOT:
      text_puts(t, "NOT ");
      print_operand(t, e, 0, depth);
      return;
    case QL_EXPR_NEGATIVE:
      text_puts(t, "-");
      print_operand(t, e, 0, depth);
      return;
    case QL_EXPR_IS_NULL:
    case QL_EXPR_IS_NOT_NULL:
      print_operand(t, e, 0, depth);
      text_puts(t, e->kind == QL_EXPR_IS_NULL ? " IS NULL" : " IS NOT NULL");
      return;
    case QL_EXPR_CAST:
    case QL_EXPR_TRY_CAST:
      text_puts(t, e->kind == QL_EXPR_CAST ? "CAST(" : "TRY_CAST(");
      print_expr(t, arg_at(t, e, 0), depth + 1);
      text_puts(t, " AS ");
      text_puts(t, e->type_format ? e->type_format : "?");
      text_puts(t, ")");
      return;
    case QL_EXPR_CASE:
      print_case(t, e, depth);
      return;
    case QL_EXPR_ALIAS:
      print_expr(t, arg_at(t, e, 0), depth + 1);
      text_puts(t, " AS ");
      text_puts(t, e->name ? e->name : "?");
      return;
    case QL_EXPR_SCALAR_FUNCTION:
    case QL_EXPR_AGGREGATE_FUNCTION:
    case QL_EXPR_WINDOW_FUNCTION:
      print_function(t, e, depth);
      return;
    case QL_EXPR_IN_LIST:
      print_operand(t, e, 0, depth);
      text_printf(t, " %sIN (", negated);
      print_list(t, e, 1, e->n_args, depth);
      text_puts(t, ")");
      return;
    case QL_EXPR_BETWEEN:
      print_operand(t, e, 0, depth);
      text_printf(t, " %sBETWEEN ", negated);
      print_operand(t, e, 1, depth);
      text_puts(t, " AND ");
      print_operand(t, e, 2, depth);
      return;
    case QL_EXPR_LIKE:
      print_operand(t, e, 0, depth);
      text_printf(t, " %s%s ", negated, (e->flags & QL_EXPR_CASE_INSENSITIVE) ? "ILIKE" : "LIKE");
      print_operand(t, e, 1, depth);
      return;
    case QL_EXPR_SORT:
      print_operand(t, e, 0, depth);
      text_puts(t, (e->flags & QL_SORT_DESC) ? " DESC" : " ASC");
      text_puts(t, (e->flags & QL_SORT_NULLS_FIRST) ? " NULLS FIRST" : " NULLS LAST");
      return;
    case QL_EXPR_OTHER:
      text_puts(t, e->name ? e->name : "<other>");
      return;
    default:
      text_fail(t, QL_EINVAL, "printing: expr %d has unknown kind %d", (int)id, (int)e->kind);
      return;
  }
}

static int view_usable(const struct ql_plan_view *view, struct ql_error *error) {
  if (view == NULL || view->n_exprs < 0 || view->n_nodes < 0 || (view->n_exprs > 0 && view->exprs == NULL) ||
      (view->n_nodes > 0 && view->nodes == NULL)) {
    return ql_error_set(error, QL_EINVAL, "printing: the plan view is NULL or malformed");
  }
  return QL_OK;
}

int ql_ir_expr_to_string(const struct ql_plan_view *view, ql_expr_id expr, char **out, struct ql_error *error) {
  if (out == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_ir_expr_to_string: out is NULL");
  }
  QL_RETURN_NOT_OK(view_usable(view, error));
  struct ql_ir_text t = {.error = error, .view = view};
  print_expr(&t, expr, 0);
  return text_finish(&t, out);
}

/* ---- plans */

/* ids[0..n) printed as expressions, separated by ", ". */
static void print_ids(struct ql_ir_text *t, const ql_expr_id *ids, int32_t n) {
  if (n > 0 && ids == NULL) {
    text_fail(t, QL_EINVAL, "printing: %d expressions in a NULL array", (int)n);
    return;
  }
  for (int32_t i = 0; i < n && t->status == QL_OK; i++) {
    text_puts(t, i > 0 ? ", " : "");
    print_expr(t, ids[i], 0);
  }
}

static void print_scan(struct ql_ir_text *t, const struct ql_plan_node *n) {
  const struct ql_table_ref *table = n->table;
  const char *name = n->name ? n->name : (table && table->name) ? table->name : "?";
  text_puts(t, name);
  const struct ArrowSchema *schema = table ? table->schema : NULL;
  if (n->n_projection >= 0 && (n->n_projection == 0 || n->projection != NULL)) {
    text_puts(t, " projection=[");
    for (int32_t i = 0; i < n->n_projection; i++) {
      int32_t col = n->projection[i];
      const char *field = NULL;
      if (schema && col >= 0 && col < schema->n_children && schema->children && schema->children[col]) {
        field = schema->children[col]->name;
      }
      text_puts(t, i > 0 ? ", " : "");
      if (field) {
        text_puts(t, field);
      } else {
        text_printf(t, "#%d", (int)col);
      }
    }
    text_puts(t, "]");
  }
  if (n->n_exprs > 0) {
    text_puts(t, n->n_projection >= 0 ? ", full_filters=[" : " full_filters=[");
    print_ids(t, n->exprs, n->n_exprs);
    text_puts(t, "]");
  }
  if (n->fetch >= 0) {
    text_printf(t, ", fetch=%" PRId64, n->fetch);
  }
}

static void print_join(struct ql_ir_text *t, const struct ql_plan_node *n) {
  if (n->n_exprs > 0 && (n->exprs == NULL || n->exprs2 == NULL || n->n_exprs2 != n->n_exprs)) {
    text_fail(t, QL_EINVAL, "printing: join has %d left and %d right keys", (int)n->n_exprs, (int)n->n_exprs2);
    return;
  }
  for (int32_t i = 0; i < n->n_exprs && t->status == QL_OK; i++) {
    text_puts(t, i > 0 ? ", " : "");
    print_expr(t, n->exprs[i], 0);
    text_puts(t, (n->flags & QL_NODE_NULL_EQUALS_NULL) ? " IS NOT DISTINCT FROM " : " = ");
    print_expr(t, n->exprs2[i], 0);
  }
  if (n->condition != -1) {
    text_puts(t, n->n_exprs > 0 ? " Filter: " : "Filter: ");
    print_expr(t, n->condition, 0);
  }
}

static void print_values(struct ql_ir_text *t, const struct ql_plan_node *n) {
  int64_t width = n->schema ? n->schema->n_children : 0;
  if (width <= 0 || width > INT32_MAX || n->n_rows < 0 || n->n_rows > INT32_MAX || n->n_rows * width != n->n_exprs ||
      n->exprs == NULL) {
    text_printf(t, "%" PRId64 " rows", n->n_rows);
    return;
  }
  for (int64_t r = 0; r < n->n_rows && t->status == QL_OK; r++) {
    text_puts(t, r > 0 ? ", (" : "(");
    print_ids(t, n->exprs + r * width, (int32_t)width);
    text_puts(t, ")");
  }
}

/* The text after "<Kind>: " on a node's line. */
static void print_node_line(struct ql_ir_text *t, const struct ql_plan_node *n) {
  switch (n->kind) {
    case QL_NODE_TABLE_SCAN:
      text_puts(t, "TableScan: ");
      print_scan(t, n);
      return;
    case QL_NODE_PROJECTION:
      text_puts(t, "Projection: ");
      print_ids(t, n->exprs, n->n_exprs);
      return;
    case QL_NODE_FILTER:
      text_puts(t, "Filter: ");
      print_ids(t, n->exprs, n->n_exprs);
      return;
    case QL_NODE_AGGREGATE:
      text_puts(t, "Aggregate: groupBy=[[");
      print_ids(t, n->exprs, n->n_exprs);
      text_puts(t, "]], aggr=[[");
      print_ids(t, n->exprs2, n->n_exprs2);
      text_puts(t, "]]");
      return;
    case QL_NODE_JOIN:
      text_printf(t, "%s Join: ", ql_join_type_name(n->join_type));
      print_join(t, n);
      return;
    case QL_NODE_SORT:
      text_puts(t, "Sort: ");
      print_ids(t, n->exprs, n->n_exprs);
      if (n->fetch >= 0) text_printf(t, ", fetch=%" PRId64, n->fetch);
      return;
    case QL_NODE_LIMIT:
      text_printf(t, "Limit: skip=%" PRId64 ", fetch=", n->skip);
      if (n->fetch >= 0) text_printf(t, "%" PRId64, n->fetch);
      else text_puts(t, "None");
      return;
    case QL_NODE_UNION:
      text_puts(t, (n->flags & QL_NODE_UNION_DISTINCT) ? "Union: distinct" : "Union");
      return;
    case QL_NODE_SUBQUERY_ALIAS:
      text_puts(t, "SubqueryAlias: ");
      text_puts(t, n->name ? n->name : "?");
      return;
    case QL_NODE_VALUES:
      text_puts(t, "Values: ");
      print_values(t, n);
      return;
    case QL_NODE_EMPTY_RELATION:
      text_puts(t, (n->flags & QL_NODE_PRODUCE_ONE_ROW) ? "EmptyRelation: rows=1" : "EmptyRelation: rows=0");
      return;
    case QL_NODE_WINDOW:
      text_puts(t, "WindowAggr: windowExpr=[[");
      print_ids(t, n->exprs, n->n_exprs);
      text_puts(t, "]]");
      return;
    case QL_NODE_DISTINCT:
      text_puts(t, "Distinct:");
      return;
    case QL_NODE_OTHER:
      text_puts(t, n->name ? n->name : "Other");
      return;
    default:
      text_printf(t, "Unknown node kind %d", (int)n->kind);
      return;
  }
}

static void print_node(struct ql_ir_text *t, ql_node_id id, int depth) {
  if (t->status != QL_OK) {
    return;
  }
  if (id < 0 || id >= t->view->n_nodes) {
    text_fail(t, QL_EINVAL, "printing: node %d out of range (%d nodes)", (int)id, (int)t->view->n_nodes);
    return;
  }
  if (depth > QL_IR_MAX_DEPTH) {
    text_fail(t, QL_EOVERFLOW, "printing: plan nested deeper than %d", QL_IR_MAX_DEPTH);
    return;
  }
  if (++t->nodes_printed > t->view->n_nodes) {
    text_fail(t, QL_EINVAL, "printing: node %d is reached twice (not a tree)", (int)id);
    return;
  }
  const struct ql_plan_node *n = &t->view->nodes[id];
  if (n->flags & QL_NODE_UNEXPANDED) {
    text_fail(t, QL_EINVAL, "printing: node %d is not expanded (a lazy view: ql_plan_expand_all first)", (int)id);
    return;
  }
  for (int i = 0; i < depth; i++) {
    text_puts(t, "  ");
  }
  print_node_line(t, n);
  text_puts(t, "\n");
  if (n->n_inputs > 0 && n->inputs == NULL) {
    text_fail(t, QL_EINVAL, "printing: node %d has %d inputs in a NULL array", (int)id, (int)n->n_inputs);
    return;
  }
  for (int32_t i = 0; i < n->n_inputs; i++) {
    print_node(t, n->inputs[i], depth + 1);
  }
}

int ql_ir_plan_to_string(const struct ql_plan_view *view, ql_node_id node, char **out, struct ql_error *error) {
  if (out == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_ir_plan_to_string: out is NULL");
  }
  QL_RETURN_NOT_OK(view_usable(view, error));
  struct ql_ir_text t = {.error = error, .view = view};
  print_node(&t, node, 0);
  return text_finish(&t, out);
}
