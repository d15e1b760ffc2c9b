/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_scan's filter pushdown in the V2 build (filters.h).
 *
 * DuckDB offers each predicate over the scan's rows as a bound expression
 * tree. A tree made only of comparisons (= <> < <= > >=, IS [NOT] DISTINCT
 * FROM), BETWEEN, [NOT] IN, AND/OR, NOT, IS [NOT] NULL, constants, column
 * references and plain CASTs to a numeric, boolean or temporal type is
 * rebuilt node for node as a qlink filter (qlink/plan.h) in the bind's own
 * builder; any other node (a function call, CASE, a TRY_CAST, a constant of
 * a type qlink literals do not carry) leaves the whole predicate to DuckDB.
 * The provider's supports_filters answers each translated predicate: EXACT
 * ones are accepted (DuckDB drops its Filter), INEXACT ones go to the scan
 * to prune while DuckDB keeps filtering, UNSUPPORTED ones stay DuckDB's.
 * A BETWEEN is never accepted (its bounds may be exclusive, see qd_tr): it
 * prunes, reaching the scan as the inclusive superset.
 * What was pushed goes to DuckDB's log (type "qlink"), e.g.
 * "qlink_scan('...'): filter (latitude >= 30.0) exact, accepted".
 */
#include "v2/filters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "common/scan.h"
#include "qlink/lib/host.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"
#include "v2/bind.h"

struct qd_tr {
  struct qd_bind *b;
  duckdb_v2_table_function_filter_pushdown_info_handle info;
  int prune_only; /* set by a BETWEEN: see qd_tr */
};

/* The Arrow format of a DuckDB type qlink filters carry (literals and CAST
 * targets), or NULL. Decimals: "d:P,S" into buf. */
static const char *qd_format_of(duckdb_v2_logical_type_handle t, int casts, char *buf, size_t cap) {
  DUCKDB_V2_LOGICAL_TYPE_ID id = DUCKDB_V2_LOGICAL_TYPE_ID_INVALID;
  if (duckdb_v2_logical_type_get_id(t, &id, NULL) != DUCKDB_V2_ERROR_NONE) return NULL;
  switch (id) {
    case DUCKDB_V2_LOGICAL_TYPE_ID_SQLNULL: return casts ? NULL : "n";
    case DUCKDB_V2_LOGICAL_TYPE_ID_BOOLEAN: return "b";
    case DUCKDB_V2_LOGICAL_TYPE_ID_TINYINT: return "c";
    case DUCKDB_V2_LOGICAL_TYPE_ID_SMALLINT: return "s";
    case DUCKDB_V2_LOGICAL_TYPE_ID_INTEGER: return "i";
    case DUCKDB_V2_LOGICAL_TYPE_ID_BIGINT: return "l";
    case DUCKDB_V2_LOGICAL_TYPE_ID_UTINYINT: return "C";
    case DUCKDB_V2_LOGICAL_TYPE_ID_USMALLINT: return "S";
    case DUCKDB_V2_LOGICAL_TYPE_ID_UINTEGER: return "I";
    case DUCKDB_V2_LOGICAL_TYPE_ID_UBIGINT: return "L";
    case DUCKDB_V2_LOGICAL_TYPE_ID_FLOAT: return "f";
    case DUCKDB_V2_LOGICAL_TYPE_ID_DOUBLE: return "g";
    case DUCKDB_V2_LOGICAL_TYPE_ID_DATE: return "tdD";
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIMESTAMP_SEC: return "tss:";
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIMESTAMP_MS: return "tsm:";
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIMESTAMP: return "tsu:";
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIMESTAMP_NS: return "tsn:";
    /* a cast to text or bytes formats values DuckDB's way: no exact qlink form */
    case DUCKDB_V2_LOGICAL_TYPE_ID_VARCHAR: return casts ? NULL : "u";
    case DUCKDB_V2_LOGICAL_TYPE_ID_BLOB: return casts ? NULL : "z";
    case DUCKDB_V2_LOGICAL_TYPE_ID_DECIMAL: {
      if (casts) return NULL;
      (void)buf, (void)cap;
      return "d"; /* completed from the value (width, scale) */
    }
    default: return NULL;
  }
}

/* A constant as a qlink literal, or -1. */
static ql_expr_id qd_literal(struct ql_ir_builder *fb, duckdb_v2_expression_handle e) {
  duckdb_v2_value_handle v = NULL;
  duckdb_v2_logical_type_handle t = NULL;
  if (duckdb_v2_expression_constant_get_value(e, &v, NULL) != DUCKDB_V2_ERROR_NONE) return -1;
  ql_expr_id out = -1;
  char dec[32];
  const char *f = duckdb_v2_value_get_logical_type(v, &t, NULL) == DUCKDB_V2_ERROR_NONE ? qd_format_of(t, 0, NULL, 0) : NULL;
  bool is_null = false;
  duckdb_v2_value_is_null(v, &is_null, NULL);
  struct ql_scalar s;
  memset(&s, 0, sizeof(s));
  s.format = f;
  int ok = f != NULL;
  if (ok && f[0] == 'd') {
    duckdb_v2_hugeint_t h;
    uint8_t width = 0, scale = 0;
    ok = is_null ? 0 : duckdb_v2_value_get_decimal(v, &h, &width, &scale, NULL) == DUCKDB_V2_ERROR_NONE;
    if (ok) {
      snprintf(dec, sizeof(dec), "d:%u,%u", width, scale);
      s.format = dec;
      s.value.dec128.lo = h.lower;
      s.value.dec128.hi = h.upper;
    }
  } else if (ok && is_null) {
    out = ql_ir_literal_null(fb, f);
    ok = 0;
  } else if (ok) {
    switch (f[0]) {
      case 'n': ok = 0, out = ql_ir_literal_null(fb, "n"); break;
      case 'b': {
        bool x = false;
        ok = duckdb_v2_value_get_bool(v, &x, NULL) == DUCKDB_V2_ERROR_NONE;
        s.value.i64 = x;
        break;
      }
      case 'c': case 's': case 'i': case 'l':
        ok = duckdb_v2_value_get_bigint(v, &s.value.i64, NULL) == DUCKDB_V2_ERROR_NONE;
        break;
      case 'C': case 'S': case 'I': case 'L':
        ok = duckdb_v2_value_get_ubigint(v, &s.value.u64, NULL) == DUCKDB_V2_ERROR_NONE;
        break;
      case 'f': {
        float x = 0;
        ok = duckdb_v2_value_get_float(v, &x, NULL) == DUCKDB_V2_ERROR_NONE;
        s.value.f64 = x;
        break;
      }
      case 'g': ok = duckdb_v2_value_get_double(v, &s.value.f64, NULL) == DUCKDB_V2_ERROR_NONE; break;
      case 'u': case 'z': {
        duckdb_v2_str x = {NULL, 0};
        ok = (f[0] == 'u' ? duckdb_v2_value_get_varchar(v, &x, NULL) : duckdb_v2_value_get_blob(v, &x, NULL)) ==
             DUCKDB_V2_ERROR_NONE;
        s.value.bytes.data = x.ptr ? x.ptr : "";
        s.value.bytes.size = (int64_t)x.len;
        break;
      }
      default: { /* dates and timestamps in their own unit */
        int32_t d = 0;
        if (f[1] == 'd') ok = duckdb_v2_value_get_date(v, &d, NULL) == DUCKDB_V2_ERROR_NONE, s.value.i64 = d;
        else if (f[2] == 's') ok = duckdb_v2_value_get_timestamp_sec(v, &s.value.i64, NULL) == DUCKDB_V2_ERROR_NONE;
        else if (f[2] == 'm') ok = duckdb_v2_value_get_timestamp_ms(v, &s.value.i64, NULL) == DUCKDB_V2_ERROR_NONE;
        else if (f[2] == 'u') ok = duckdb_v2_value_get_timestamp(v, &s.value.i64, NULL) == DUCKDB_V2_ERROR_NONE;
        else ok = duckdb_v2_value_get_timestamp_ns(v, &s.value.i64, NULL) == DUCKDB_V2_ERROR_NONE;
        break;
      }
    }
  }
  if (ok) out = ql_ir_literal(fb, &s); /* copies the bytes: the value may go now */
  if (t) duckdb_v2_logical_type_destroy(&t);
  duckdb_v2_value_destroy(&v);
  return out;
}

static ql_expr_id qd_tr(struct qd_tr *c, duckdb_v2_expression_handle e, int depth, int monotone);

/* The children of `e`, translated, into args[0..*n); 0, or -1 when one has no form. */
static int qd_tr_children(struct qd_tr *c, duckdb_v2_expression_handle e, int depth, int monotone, ql_expr_id *args,
                          idx_t cap, idx_t *n) {
  if (duckdb_v2_expression_get_child_count(e, n, NULL) != DUCKDB_V2_ERROR_NONE || *n > cap) return -1;
  for (idx_t i = 0; i < *n; i++) {
    duckdb_v2_expression_handle child = NULL;
    if (duckdb_v2_expression_get_child(e, i, &child, NULL) != DUCKDB_V2_ERROR_NONE) return -1;
    args[i] = qd_tr(c, child, depth + 1, monotone);
    if (args[i] < 0) return -1;
  }
  return 0;
}

/* `monotone`: every node from the root down to e is AND or OR, so a
 * superset of e's rows gives a superset of the predicate's. */
static ql_expr_id qd_tr(struct qd_tr *c, duckdb_v2_expression_handle e, int depth, int monotone) {
  struct ql_ir_builder *fb = c->b->filters;
  DUCKDB_V2_EXPRESSION_TYPE type = DUCKDB_V2_EXPRESSION_TYPE_INVALID;
  if (depth > 64 || duckdb_v2_expression_get_type(e, &type, NULL) != DUCKDB_V2_ERROR_NONE) return -1;
  ql_expr_id args[256];
  idx_t n = 0;
  int32_t op = 0;
  switch (type) {
    case DUCKDB_V2_EXPRESSION_TYPE_BOUND_COLUMN_REF: {
      idx_t ref = 0, col = 0;
      if (duckdb_v2_expression_column_ref_get_index(e, &ref, NULL) != DUCKDB_V2_ERROR_NONE ||
          duckdb_v2_table_function_filter_pushdown_get_column_index(c->info, ref, &col, NULL) != DUCKDB_V2_ERROR_NONE ||
          col >= (idx_t)c->b->n_columns)
        return -1; /* DuckDB's row id, or a column qlink does not know */
      return ql_ir_column(fb, c->b->schema.children[col]->name, NULL, (int32_t)col);
    }
    case DUCKDB_V2_EXPRESSION_TYPE_VALUE_CONSTANT: return qd_literal(fb, e);
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_EQUAL: op = QL_OP_EQ; break;
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_NOTEQUAL: op = QL_OP_NE; break;
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_LESSTHAN: op = QL_OP_LT; break;
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_GREATERTHAN: op = QL_OP_GT; break;
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_LESSTHANOREQUALTO: op = QL_OP_LE; break;
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_GREATERTHANOREQUALTO: op = QL_OP_GE; break;
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_DISTINCT_FROM: op = QL_OP_IS_DISTINCT_FROM; break;
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_NOT_DISTINCT_FROM: op = QL_OP_IS_NOT_DISTINCT_FROM; break;
    case DUCKDB_V2_EXPRESSION_TYPE_CONJUNCTION_AND: op = QL_OP_AND; break;
    case DUCKDB_V2_EXPRESSION_TYPE_CONJUNCTION_OR: op = QL_OP_OR; break;
    case DUCKDB_V2_EXPRESSION_TYPE_OPERATOR_NOT:
    case DUCKDB_V2_EXPRESSION_TYPE_OPERATOR_IS_NULL:
    case DUCKDB_V2_EXPRESSION_TYPE_OPERATOR_IS_NOT_NULL: {
      if (qd_tr_children(c, e, depth, 0, args, 1, &n) != 0 || n != 1) return -1;
      int32_t kind = type == DUCKDB_V2_EXPRESSION_TYPE_OPERATOR_NOT       ? QL_EXPR_NOT
                     : type == DUCKDB_V2_EXPRESSION_TYPE_OPERATOR_IS_NULL ? QL_EXPR_IS_NULL
                                                                          : QL_EXPR_IS_NOT_NULL;
      return ql_ir_unary(fb, kind, args[0]);
    }
    case DUCKDB_V2_EXPRESSION_TYPE_OPERATOR_CAST: {
      DUCKDB_V2_CAST_MODE mode = DUCKDB_V2_CAST_MODE_TRY;
      duckdb_v2_logical_type_handle t = NULL;
      if (duckdb_v2_expression_cast_get_mode(e, &mode, NULL) != DUCKDB_V2_ERROR_NONE ||
          mode != DUCKDB_V2_CAST_MODE_NORMAL ||
          duckdb_v2_expression_get_return_type(e, &t, NULL) != DUCKDB_V2_ERROR_NONE)
        return -1;
      const char *f = qd_format_of(t, 1, NULL, 0);
      duckdb_v2_logical_type_destroy(&t);
      if (!f || qd_tr_children(c, e, depth, 0, args, 1, &n) != 0 || n != 1) return -1;
      return ql_ir_cast(fb, args[0], f, 0);
    }
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_IN:
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_NOT_IN:
    case DUCKDB_V2_EXPRESSION_TYPE_COMPARE_BETWEEN: {
      int between = type == DUCKDB_V2_EXPRESSION_TYPE_COMPARE_BETWEEN;
      /* DuckDB 2.0.1 binds `x BETWEEN a AND b`, and folds `x > a AND x < b`,
       * into the same __between node, and the C API does not say which bounds
       * are inclusive: the inclusive BETWEEN is a superset, so it may prune
       * where only AND/OR lead to it, and DuckDB checks the rows again. */
      if (between && !monotone) return -1;
      if (between) c->prune_only = 1;
      if (qd_tr_children(c, e, depth, 0, args, sizeof(args) / sizeof(args[0]), &n) != 0) return -1;
      if (between ? n != 3 : n < 2) return -1;
      struct ql_expr x;
      memset(&x, 0, sizeof(x));
      x.kind = between ? QL_EXPR_BETWEEN : QL_EXPR_IN_LIST;
      x.flags = type == DUCKDB_V2_EXPRESSION_TYPE_COMPARE_NOT_IN ? QL_EXPR_NEGATED : 0;
      x.n_args = (int32_t)n;
      x.args = args;
      x.column_index = -1;
      x.filter = -1;
      return ql_ir_expr(fb, &x);
    }
    default: return -1;
  }
  /* comparisons (two children) and conjunctions (two or more, folded left) */
  int conj = op == QL_OP_AND || op == QL_OP_OR;
  if (qd_tr_children(c, e, depth, conj && monotone, args, sizeof(args) / sizeof(args[0]), &n) != 0) return -1;
  if (conj ? n < 2 : n != 2) return -1;
  ql_expr_id acc = ql_ir_binary(fb, op, args[0], args[1]);
  for (idx_t i = 2; i < n; i++) acc = ql_ir_binary(fb, op, acc, args[i]);
  return acc;
}

static void qd_log(duckdb_v2_context_handle context, const char *msg) {
  duckdb_v2_str type = {"qlink", 5}, text = {msg, strlen(msg)};
  duckdb_v2_context_log(context, DUCKDB_V2_LOG_LEVEL_INFO, &type, &text, NULL);
}

void qd_filter_pushdown(duckdb_v2_table_function_filter_pushdown_info_handle info, duckdb_v2_context_handle context,
                        duckdb_v2_error_info_handle *err) {
  struct qd_bind *b = NULL;
  idx_t count = 0;
  if (duckdb_v2_table_function_filter_pushdown_get_bind_data(info, (void **)&b, NULL) != DUCKDB_V2_ERROR_NONE || !b ||
      duckdb_v2_table_function_filter_pushdown_get_filter_count(info, &count, NULL) != DUCKDB_V2_ERROR_NONE ||
      !b->provider.supports_filters)
    return; /* nothing pushed: DuckDB filters every row itself */
  struct ql_error qerr = {0};
  char *msg = NULL;
  if (!b->filters && ql_ir_builder_new(&b->filters, &qerr) != QL_OK) {
    ql_error_release(&qerr);
    return;
  }
  ql_expr_id roots[QD_MAX_FILTERS];
  idx_t which[QD_MAX_FILTERS];
  int prune_only[QD_MAX_FILTERS];
  int32_t n = 0;
  for (idx_t i = 0; i < count && b->n_filters + n < QD_MAX_FILTERS; i++) {
    duckdb_v2_expression_handle e = NULL;
    if (duckdb_v2_table_function_filter_pushdown_get_filter(info, i, &e, NULL) != DUCKDB_V2_ERROR_NONE) continue;
    struct qd_tr c = {b, info, 0};
    ql_expr_id root = qd_tr(&c, e, 0, 1);
    if (root >= 0) roots[n] = root, prune_only[n] = c.prune_only, which[n++] = i;
  }
  if (ql_ir_builder_status(b->filters, &qerr) != QL_OK) {
    /* nothing accepted: DuckDB keeps every filter; a scan still sees those accepted before */
    msg = qd_printf("%s: filter pushdown skipped: %s", b->label, ql_error_message(&qerr));
    ql_error_release(&qerr);
    if (msg) qd_log(context, msg);
    free(msg);
    return;
  }
  if (n == 0) return;
  struct ql_plan_view view = {0};
  view.struct_size = sizeof(view);
  int32_t answers[QD_MAX_FILTERS];
  int rc = ql_ir_builder_peek(b->filters, -1, &view, &qerr);
  if (rc == QL_OK) rc = ql_ir_validate_exprs(&view, roots, n, &qerr);
  if (rc == QL_OK) {
    struct ql_expr_list list = {&view, n, 0, roots};
    for (int32_t i = 0; i < n; i++) answers[i] = QL_PUSHDOWN_UNSUPPORTED;
    void *tok = ql_plugin_enter(b->plugin);
    rc = b->provider.supports_filters(&b->provider, &list, answers, &qerr);
    ql_plugin_leave(b->plugin, tok);
  }
  if (rc != QL_OK) {
    msg = qd_printf("%s: supports_filters", b->label);
    qd_fail_error_v2(err, DUCKDB_V2_ERROR_INPUT_INVALID, qd_text_or_oom(msg), &qerr);
    free(msg);
    return;
  }
  for (int32_t i = 0; i < n; i++) {
    int32_t a = answers[i];
    if (a != QL_PUSHDOWN_EXACT && a != QL_PUSHDOWN_INEXACT) continue;
    char *text = NULL;
    ql_ir_expr_to_string(&view, roots[i], &text, NULL);
    /* DuckDB offers a filter it kept again: an INEXACT one is in the list already */
    int seen = 0;
    for (int32_t k = 0; k < b->n_filters && !seen && text; k++) {
      char *other = NULL;
      ql_ir_expr_to_string(&view, b->roots[k], &other, NULL);
      seen = other && strcmp(other, text) == 0;
      free(other);
    }
    int accepted = a == QL_PUSHDOWN_EXACT && !prune_only[i] &&
                   duckdb_v2_table_function_filter_pushdown_accept(info, which[i], NULL) == DUCKDB_V2_ERROR_NONE;
    if (!seen || accepted) {
      b->roots[b->n_filters] = roots[i];
      b->answers[b->n_filters++] = accepted ? QL_PUSHDOWN_EXACT : QL_PUSHDOWN_INEXACT;
    }
    msg = qd_printf("%s: filter %s %s", b->label, text ? text : "(?)",
                    accepted ? "exact, accepted" : prune_only[i] ? "to prune (BETWEEN), DuckDB filters too"
                                                 : "inexact, DuckDB filters too");
    if (msg) qd_log(context, msg);
    free(msg);
    free(text);
  }
}
