/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: the table function sample_range.
 *
 * sample_range(start, stop[, step]) is the table of one int64 column
 * `value`: start, start+step, ... up to stop (exclusive), step 1 when
 * omitted; like DuckDB's range(start, stop, step). It is the series
 * provider (series.c) restricted to its first column and one partition, so
 * its scans push down projection, limit and filters on `value` and report
 * exact statistics.
 *
 * Arguments are constant integers: a literal of an integer type (int8 ..
 * int64, uint8 .. uint64 up to INT64_MAX), or the negation of one (a host
 * that leaves `-3` as NEGATIVE(3)). Errors (QL_EINVAL), exactly:
 *   "sample_range takes 2 or 3 arguments (start, stop[, step]), got N"
 *   "sample_range: argument 2 (stop) must be an integer literal, got <what>"
 *      <what>: "a NULL literal", "a literal of type 'g'", "a BINARY expression", ...
 *   "sample_range: argument 'step' must not be 0"
 *   "sample_range: argument 'start' = V out of range: |start| must be <= 3037000499 ..."
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"
#include "sample_internal.h"

#define RANGE_NAME "sample_range"

static const char *const k_arg_names[3] = {"start", "stop", "step"};

/* What expression `id` is, for the error message. */
static void describe(const struct ql_plan_view *view, ql_expr_id id, char *out, size_t cap) {
  if (view == NULL || id < 0 || id >= view->n_exprs) {
    snprintf(out, cap, "expression id %d, not in the argument list", (int)id);
    return;
  }
  const struct ql_expr *e = &view->exprs[id];
  if (e->kind == QL_EXPR_LITERAL && e->literal.is_null) {
    snprintf(out, cap, "a NULL literal");
  } else if (e->kind == QL_EXPR_LITERAL) {
    snprintf(out, cap, "a literal of type '%s'", e->literal.format ? e->literal.format : "(null)");
  } else {
    snprintf(out, cap, "a %s expression", ql_expr_kind_name(e->kind));
  }
}

/* The integer value of literal `id`: 1 and *v, or 0. */
static int int_literal(const struct ql_plan_view *view, ql_expr_id id, int64_t *v) {
  if (view == NULL || id < 0 || id >= view->n_exprs) return 0;
  const struct ql_expr *e = &view->exprs[id];
  const char *f = e->literal.format;
  if (e->kind != QL_EXPR_LITERAL || e->literal.is_null || f == NULL || f[0] == '\0' || f[1] != '\0') return 0;
  if (strchr("csil", f[0])) {
    *v = e->literal.value.i64;
    return 1;
  }
  if (strchr("CSIL", f[0]) && e->literal.value.u64 <= (uint64_t)INT64_MAX) {
    *v = (int64_t)e->literal.value.u64;
    return 1;
  }
  return 0;
}

/* Argument `i` as an integer: a literal, or NEGATIVE of one. */
static int int_argument(const struct ql_expr_list *args, int32_t i, int64_t *v, struct ql_error *error) {
  const struct ql_plan_view *view = args->view;
  ql_expr_id id = args->exprs[i];
  if (int_literal(view, id, v)) return QL_OK;
  if (view && id >= 0 && id < view->n_exprs && view->exprs[id].kind == QL_EXPR_NEGATIVE &&
      view->exprs[id].n_args == 1 && int_literal(view, view->exprs[id].args[0], v) && *v != INT64_MIN) {
    *v = -*v;
    return QL_OK;
  }
  char what[96];
  describe(view, id, what, sizeof what);
  return ql_error_set(error, QL_EINVAL, RANGE_NAME ": argument %d (%s) must be an integer literal, got %s", i + 1,
                      k_arg_names[i], what);
}

static int range_call(const struct ql_table_function *self, const struct ql_session *session,
                      const struct ql_expr_list *args, struct ql_table_provider *out, struct ql_error *error) {
  (void)self;
  (void)session;
  if (out == NULL) return ql_error_set(error, QL_EINVAL, RANGE_NAME ": call: out is NULL");
  int32_t n = args ? args->n_exprs : 0;
  if (n < 2 || n > 3) {
    return ql_error_set(error, QL_EINVAL, RANGE_NAME " takes 2 or 3 arguments (start, stop[, step]), got %d", n);
  }
  if (args->exprs == NULL || args->view == NULL) {
    return ql_error_set(error, QL_EINVAL, RANGE_NAME ": %d arguments without an expression view", n);
  }
  int64_t v[3] = {0, 0, 1};
  for (int32_t i = 0; i < n; i++) QL_RETURN_NOT_OK(int_argument(args, i, &v[i], error));
  struct smp_series s = {v[0], v[1], v[2], 1, 0, 1};
  QL_RETURN_NOT_OK(smp_series_init(&s, RANGE_NAME ": argument", error));
  return smp_series_provider(&s, out, error);
}

static void range_release(struct ql_table_function *self) { self->release = NULL; }

int smp_table_function_open(const char *name, struct ql_table_function *out, struct ql_error *error) {
  if (name == NULL || strcmp(name, RANGE_NAME) != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_sample has no table function '%s'", name ? name : "(null)");
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->id.origin = QL_ORIGIN_USER;
  out->id.kind = QL_FUNCTION_TABLE;
  out->id.name = RANGE_NAME;
  out->id.library = SMP_NAME;
  out->id.uid = SMP_UID_SAMPLE_RANGE;
  out->call = range_call;
  out->release = range_release;
  return QL_OK;
}
