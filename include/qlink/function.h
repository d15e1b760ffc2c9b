/* SPDX-License-Identifier: Apache-2.0 */
/* qlink ABI: scalar, aggregate, window and table functions (UDF, UDAF, UDWF, UDTF).
 *
 * Argument passing: a function's arguments arrive as one Arrow struct array
 * (one child per argument, all of `num_rows` rows) together with its struct
 * schema. Inputs are borrowed: the callee reads them during the call and
 * must not release them. Outputs (`out`) are moved to the caller, who
 * releases them.
 *
 * Identity: every function object carries a `struct ql_function_id` whose
 * origin is QL_ORIGIN_USER, library = the plugin's name, and a uid unique in
 * the plugin; hosts expose that identity wherever the function appears in a
 * plan view (gap G2).
 *
 * First ABI version: 0.1.
 */
#ifndef QLINK_FUNCTION_H
#define QLINK_FUNCTION_H

#include "qlink/table.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ql_volatility {
  QL_IMMUTABLE = 1, /* same inputs, same output, always */
  QL_STABLE = 2,    /* same within one query */
  QL_VOLATILE = 3   /* may differ per call (random()) */
};

/* A function's accepted arguments. `n_args == -1`: variadic, any number.
 * `arg_formats`: NULL to accept any types (the function checks them in
 * return_type), else n_args Arrow format strings the host coerces to. */
struct ql_signature {
  int32_t n_args;
  int32_t volatility; /* enum ql_volatility */
  const char *const *arg_formats;
};

/* ------------------------------------------------------------- scalar UDF */

struct ql_scalar_function {
  uint32_t struct_size;
  int32_t reserved_;
  struct ql_function_id id;       /* strings owned by the function */
  struct ql_signature signature;  /* owned by the function */
  /* The result type for arguments of types `args` (a struct schema, one child
   * per argument); `out` owned by the caller. QL_EINVAL with a message naming
   * the function and the offending argument for types it does not accept. */
  int (*return_type)(const struct ql_scalar_function *self, const struct ArrowSchema *args,
                     struct ArrowSchema *out, struct ql_error *error);
  /* Evaluate over `num_rows` rows; `out` is an array of the return type with
   * num_rows rows. Thread-safe. */
  int (*invoke)(const struct ql_scalar_function *self, const struct ArrowSchema *args_schema,
                const struct ArrowArray *args, int64_t num_rows, struct ArrowArray *out, struct ql_error *error);
  void (*release)(struct ql_scalar_function *self);
  void *private_data;
};

/* ------------------------------------------------------------ aggregates */

/* One group's running state (DataFusion's Accumulator). Single owner, not
 * thread-safe; `release` frees it. */
struct ql_accumulator {
  uint32_t struct_size;
  /* Fold in a batch of argument rows (struct array, schema from creation). */
  int (*update)(struct ql_accumulator *self, const struct ArrowArray *args, struct ql_error *error);
  /* Fold in other accumulators' states: a struct array over the state fields,
   * any number of rows. */
  int (*merge)(struct ql_accumulator *self, const struct ArrowArray *states, struct ql_error *error);
  /* The intermediate state as a struct array of one row over the state fields. */
  int (*state)(struct ql_accumulator *self, struct ArrowArray *out, struct ql_error *error);
  /* The final value as an array of one row of the return type. */
  int (*evaluate)(struct ql_accumulator *self, struct ArrowArray *out, struct ql_error *error);
  /* Bytes held (for the host's memory accounting). */
  int64_t (*size)(const struct ql_accumulator *self);
  void (*release)(struct ql_accumulator *self);
  void *private_data;
};

/* Many groups' state at once (DataFusion's GroupsAccumulator): the fast
 * path for GROUP BY. `group_indices[i]` is row i's group in [0, total_groups). */
struct ql_groups_accumulator {
  uint32_t struct_size;
  int (*update)(struct ql_groups_accumulator *self, const struct ArrowArray *args, const uint32_t *group_indices,
                int64_t total_groups, struct ql_error *error);
  int (*merge)(struct ql_groups_accumulator *self, const struct ArrowArray *states, const uint32_t *group_indices,
               int64_t total_groups, struct ql_error *error);
  /* State of every group, one row per group (struct array). */
  int (*state)(struct ql_groups_accumulator *self, struct ArrowArray *out, struct ql_error *error);
  /* Final value of every group, one row per group. */
  int (*evaluate)(struct ql_groups_accumulator *self, struct ArrowArray *out, struct ql_error *error);
  int64_t (*size)(const struct ql_groups_accumulator *self);
  void (*release)(struct ql_groups_accumulator *self);
  void *private_data;
};

struct ql_aggregate_function {
  uint32_t struct_size;
  int32_t reserved_;
  struct ql_function_id id;
  struct ql_signature signature;
  int (*return_type)(const struct ql_aggregate_function *self, const struct ArrowSchema *args,
                     struct ArrowSchema *out, struct ql_error *error);
  /* The intermediate state's fields (a struct schema) for these arguments. */
  int (*state_schema)(const struct ql_aggregate_function *self, const struct ArrowSchema *args,
                      struct ArrowSchema *out, struct ql_error *error);
  /* A new accumulator for arguments of types `args`. Thread-safe. */
  int (*accumulator_new)(const struct ql_aggregate_function *self, const struct ArrowSchema *args,
                         struct ql_accumulator *out, struct ql_error *error);
  /* Optional (NULL if not offered). QL_ENOTSUP for argument types it has no
   * groups accumulator for: the host then uses accumulator_new, one per
   * group. Thread-safe. */
  int (*groups_accumulator_new)(const struct ql_aggregate_function *self, const struct ArrowSchema *args,
                                struct ql_groups_accumulator *out, struct ql_error *error);
  void (*release)(struct ql_aggregate_function *self);
  void *private_data;
};

/* --------------------------------------------------------------- windows */

/* Evaluates a window function over one whole partition (DataFusion's
 * PartitionEvaluator, evaluate_all): `args` has the partition's rows in
 * window order; `out` has one value per row. Single owner. */
struct ql_partition_evaluator {
  uint32_t struct_size;
  int (*evaluate_all)(struct ql_partition_evaluator *self, const struct ArrowArray *args, int64_t num_rows,
                      struct ArrowArray *out, struct ql_error *error);
  void (*release)(struct ql_partition_evaluator *self);
  void *private_data;
};

struct ql_window_function {
  uint32_t struct_size;
  int32_t reserved_;
  struct ql_function_id id;
  struct ql_signature signature;
  int (*return_type)(const struct ql_window_function *self, const struct ArrowSchema *args,
                     struct ArrowSchema *out, struct ql_error *error);
  int (*evaluator_new)(const struct ql_window_function *self, const struct ArrowSchema *args,
                       struct ql_partition_evaluator *out, struct ql_error *error);
  void (*release)(struct ql_window_function *self);
  void *private_data;
};

/* --------------------------------------------------------- table functions */

/* A table function (UDTF): `SELECT * FROM f(1, 'x')`. Arguments are
 * literal expressions (QL_EXPR_LITERAL roots of `args`), borrowed for the
 * call. The provider `call` returns is moved to the caller and independent
 * of the function: a host may release the function right after the call
 * (the SQLite host does) and keep using the provider. Thread-safe. */
struct ql_table_function {
  uint32_t struct_size;
  int32_t reserved_;
  struct ql_function_id id;
  int (*call)(const struct ql_table_function *self, const struct ql_session *session,
              const struct ql_expr_list *args, struct ql_table_provider *out, struct ql_error *error);
  void (*release)(struct ql_table_function *self);
  void *private_data;
};

#ifdef __cplusplus
}
#endif

#endif /* QLINK_FUNCTION_H */
