/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: recognising `SELECT g..., SUM(x * y) FROM a JOIN b ON keys
 * GROUP BY g...` in a plan view, and the description of the fold it yields.
 *
 * What is recognised (everything else is declined, with a reason):
 *  - an Aggregate with exactly one aggregate expression, the built-in `sum`
 *    (function identity: origin QL_ORIGIN_BUILTIN and canonical name "sum";
 *    a user function named sum is declined), without DISTINCT or FILTER,
 *    whose argument is `x * y` (through aliases, projections and casts that
 *    keep the product's type) with x from one join input and y from the other;
 *  - below it only Projection and SubqueryAlias nodes down to an Inner Join
 *    with at least one equi-key pair, no extra condition and NULL keys never
 *    equal (no QL_NODE_NULL_EQUALS_NULL);
 *  - join keys and group keys that are columns of one join input, through
 *    exact widening integer casts, of integer or temporal types; factors of
 *    one type P after exact casts: int64 or float64 (summed as is), or
 *    int8/16/32 or float32 whose product wraps (rounds) at that width before
 *    the cast to int64 (float64) that DataFusion's sum coercion adds
 *    (DataFusion's wrapping arithmetic throughout); or decimal128 factors
 *    (any precisions and scales) whose product has scale s1 + s2 and whose
 *    sum is the decimal128 the aggregate declares with that scale (unscaled
 *    values multiply with an overflow check, as arrow's decimal multiply
 *    does, and add with wrapping at 128 bits, as DataFusion's sum does).
 *
 * Thread-safety: pure functions of the view.
 */
#ifndef QLINK_FOLD_SPEC_H
#define QLINK_FOLD_SPEC_H

#include "qlink/plan.h"

#define FD_MAX_KEYS 8
#define FD_MAX_GROUPS 16
#define FD_FORMAT_MAX 32

/* How a column's values are stored (Arrow physical layout). */
enum fd_storage {
  FD_S8 = 1, FD_S16, FD_S32, FD_S64,
  FD_U8, FD_U16, FD_U32, FD_U64,
  FD_F32, FD_F64,
  FD_D128 /* decimal128 ("d:p,s"): 16-byte two's-complement unscaled values */
};

enum fd_value_type { FD_INT64 = 1, FD_FLOAT64 = 2, FD_DECIMAL128 = 3 };

/* A column of one join input, read after exact casts. */
struct fd_operand {
  int32_t side;    /* 0: the join's left input, 1: its right input */
  int32_t column;  /* index in that input's output schema */
  int32_t storage; /* enum fd_storage of the column itself */
  int32_t as_f64;  /* 1: read as float64 (a value of a float64 sum) */
  char format[FD_FORMAT_MAX]; /* the type after casts (Arrow format) */
  char name[64];   /* "qualifier.name" for EXPLAIN, truncated */
};

struct fd_spec {
  ql_node_id aggregate; /* the node replaced */
  ql_node_id join;
  ql_node_id inputs[2]; /* the join's inputs: the children the host plans */
  int32_t n_keys;
  int32_t n_groups;
  int32_t value_type; /* enum fd_value_type: the sum's type */
  int32_t product;    /* enum fd_storage: the product's type (S8..S64, F32, F64) */
  struct fd_operand keys[2][FD_MAX_KEYS]; /* keys[side][i] pairs with keys[1 - side][i] */
  struct fd_operand groups[FD_MAX_GROUPS]; /* in output order */
  struct fd_operand values[2];                  /* values[side] */
  char why[200]; /* after a decline: the reason (when want_why) */
  int32_t want_why; /* 0: leave why empty (declining then formats nothing) */
};

/* Does the subtree at `aggregate` fold? 1 with `out` filled, or 0 with
 * out->why saying why not when out->want_why is set (kept). */
int fd_match(const struct ql_plan_view *view, ql_node_id aggregate, struct fd_spec *out);

/* The first node in pre-order from the view's root that folds (subtrees of
 * QL_NODE_OTHER nodes are never entered), or -1. When none folds and
 * want_why is set, out->why gives the reason the first Aggregate seen was
 * declined (or says there is none); without want_why, declining formats no
 * message (the planner's decline path: no vsnprintf, no allocation). */
ql_node_id fd_find(const struct ql_plan_view *view, struct fd_spec *out, int want_why);

/* Storage of an Arrow format, 0 if the fold does not read that type. */
int32_t fd_format_storage(const char *format);

#endif /* QLINK_FOLD_SPEC_H */
