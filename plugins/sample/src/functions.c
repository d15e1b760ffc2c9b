/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: the UDF add_one, the UDAF sum_sq and the UDWF running_count.
 *
 * add_one(int64) -> int64      x + 1; NULL in, NULL out; QL_EOVERFLOW at INT64_MAX.
 * sum_sq(int64) -> int64       sum of x*x over non-NULL x; NULL when there is
 *                              none (SQL's SUM); QL_EOVERFLOW if it does not fit.
 *                              State: one nullable int64 field "sum_sq".
 * running_count() -> int64     1, 2, ... over the rows of a window partition
 *                              (ROW_NUMBER), through evaluate_all.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"
#include "sample_internal.h"

static const char *const k_int64_arg[1] = {"l"};

/* ------------------------------------------------------------ helpers */

/* An int64 array of n values (copied); valid[i] == 0 marks NULL (valid may be NULL). */
static int i64_array(int64_t n, const int64_t *values, const uint8_t *valid, struct ArrowArray *out,
                     struct ql_error *error) {
  int64_t *data = malloc((size_t)(n > 0 ? n : 1) * sizeof *data);
  uint8_t *bits = NULL;
  int64_t nulls = 0;
  if (!data) return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory for %" PRId64 " values", n);
  if (n > 0) memcpy(data, values, (size_t)n * sizeof *data);
  for (int64_t i = 0; valid && i < n; i++) nulls += valid[i] == 0;
  if (nulls > 0) {
    bits = calloc((size_t)(n + 7) / 8, 1);
    if (!bits) {
      free(data);
      return ql_error_set(error, QL_ENOMEM, "qlink_sample: out of memory for a validity bitmap");
    }
    for (int64_t i = 0; i < n; i++) {
      if (valid[i]) bits[i / 8] |= (uint8_t)(1u << (i % 8));
    }
  }
  return ql_array_init_fixed(out, n, nulls, bits, data, error);
}

/* The int64 argument column `arg` of a struct array of arguments. */
static int int64_arg(const struct ArrowArray *args, int64_t arg, const char *fn, const struct ArrowArray **col,
                     struct ql_error *error) {
  if (args == NULL || args->n_children <= arg || args->children == NULL || args->children[arg] == NULL) {
    return ql_error_set(error, QL_EINVAL, "%s: expected %" PRId64 " argument column(s)", fn, arg + 1);
  }
  const struct ArrowArray *c = args->children[arg];
  if (c->n_buffers != 2 || c->buffers == NULL || (c->length > 0 && c->buffers[1] == NULL)) {
    return ql_error_set(error, QL_EINVAL, "%s: argument %" PRId64 " is not an int64 array", fn, arg + 1);
  }
  if (c->length < args->offset + args->length) {
    return ql_error_set(error, QL_EINVAL, "%s: argument %" PRId64 " has %" PRId64 " rows, expected %" PRId64, fn,
                        arg + 1, c->length, args->offset + args->length);
  }
  *col = c;
  return QL_OK;
}

/* Row i of a struct array's child (struct offset, then the child's own). */
static int64_t child_value(const struct ArrowArray *args, const struct ArrowArray *c, int64_t i) {
  return ((const int64_t *)c->buffers[1])[c->offset + args->offset + i];
}

static int child_valid(const struct ArrowArray *args, const struct ArrowArray *c, int64_t i) {
  return ql_array_is_valid(c, args->offset + i);
}

static int check_arg_types(const struct ArrowSchema *args, int64_t n, const char *fn, struct ql_error *error) {
  if (args == NULL || args->n_children != n) {
    return ql_error_set(error, QL_EINVAL, "%s takes %" PRId64 " argument(s), got %" PRId64, fn, n,
                        args ? args->n_children : -1);
  }
  for (int64_t i = 0; i < n; i++) {
    if (strcmp(args->children[i]->format, "l") != 0) {
      return ql_error_set(error, QL_EINVAL, "%s: argument %" PRId64 " must be int64 ('l'), got '%s'", fn, i + 1,
                          args->children[i]->format);
    }
  }
  return QL_OK;
}

static struct ql_function_id sample_id(int32_t kind, const char *name, uint64_t uid) {
  struct ql_function_id id = {QL_ORIGIN_USER, kind, name, SMP_NAME, uid};
  return id;
}

/* ------------------------------------------------------------- add_one */

static int add_one_return_type(const struct ql_scalar_function *self, const struct ArrowSchema *args,
                               struct ArrowSchema *out, struct ql_error *error) {
  (void)self;
  QL_RETURN_NOT_OK(check_arg_types(args, 1, "add_one", error));
  return ql_schema_init(out, "l", "add_one", ARROW_FLAG_NULLABLE, error);
}

static int add_one_invoke(const struct ql_scalar_function *self, const struct ArrowSchema *args_schema,
                          const struct ArrowArray *args, int64_t num_rows, struct ArrowArray *out,
                          struct ql_error *error) {
  (void)self;
  QL_RETURN_NOT_OK(check_arg_types(args_schema, 1, "add_one", error));
  const struct ArrowArray *c;
  QL_RETURN_NOT_OK(int64_arg(args, 0, "add_one", &c, error));
  if (num_rows != args->length) {
    return ql_error_set(error, QL_EINVAL, "add_one: num_rows %" PRId64 " but %" PRId64 " argument rows", num_rows,
                        args->length);
  }
  int64_t *values = malloc((size_t)(num_rows > 0 ? num_rows : 1) * sizeof *values);
  uint8_t *valid = malloc((size_t)(num_rows > 0 ? num_rows : 1));
  int rc = (values && valid) ? QL_OK : ql_error_set(error, QL_ENOMEM, "add_one: out of memory");
  for (int64_t i = 0; rc == QL_OK && i < num_rows; i++) {
    valid[i] = (uint8_t)child_valid(args, c, i);
    values[i] = 0;
    if (!valid[i]) continue;
    if (__builtin_add_overflow(child_value(args, c, i), 1, &values[i])) {
      rc = ql_error_set(error, QL_EOVERFLOW, "add_one: %" PRId64 " + 1 overflows int64 (row %" PRId64 ")",
                        child_value(args, c, i), i);
    }
  }
  if (rc == QL_OK) rc = i64_array(num_rows, values, valid, out, error);
  free(values);
  free(valid);
  return rc;
}

static void scalar_release(struct ql_scalar_function *self) { self->release = NULL; }

int smp_scalar_open(const char *name, struct ql_scalar_function *out, struct ql_error *error) {
  if (name == NULL || strcmp(name, "add_one") != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_sample has no scalar function '%s'", name ? name : "(null)");
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->id = sample_id(QL_FUNCTION_SCALAR, "add_one", SMP_UID_ADD_ONE);
  out->signature.n_args = 1;
  out->signature.volatility = QL_IMMUTABLE;
  out->signature.arg_formats = k_int64_arg;
  out->return_type = add_one_return_type;
  out->invoke = add_one_invoke;
  out->release = scalar_release;
  return QL_OK;
}

/* -------------------------------------------------------------- sum_sq */

/* Fold x*x into (*sum, *has); QL_EOVERFLOW if it does not fit. */
static int add_square(int64_t x, int64_t *sum, uint8_t *has, struct ql_error *error) {
  int64_t sq;
  if (__builtin_mul_overflow(x, x, &sq) || __builtin_add_overflow(*sum, sq, sum)) {
    return ql_error_set(error, QL_EOVERFLOW, "sum_sq: the sum of squares overflows int64 (at x = %" PRId64 ")", x);
  }
  *has = 1;
  return QL_OK;
}

static int add_value(int64_t v, int64_t *sum, uint8_t *has, struct ql_error *error) {
  if (__builtin_add_overflow(*sum, v, sum)) {
    return ql_error_set(error, QL_EOVERFLOW, "sum_sq: merged sum of squares overflows int64");
  }
  *has = 1;
  return QL_OK;
}

/* The state as a struct array of n rows over one nullable int64 field. */
static int state_array(int64_t n, const int64_t *sums, const uint8_t *has, struct ArrowArray *out,
                       struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_array_init_struct(out, n, 1, error));
  int rc = i64_array(n, sums, has, out->children[0], error);
  if (rc != QL_OK) ql_array_release(out);
  return rc;
}

struct sum_sq_state {
  int64_t sum;
  uint8_t has;
};

static int acc_update(struct ql_accumulator *self, const struct ArrowArray *args, struct ql_error *error) {
  struct sum_sq_state *st = self->private_data;
  const struct ArrowArray *c;
  QL_RETURN_NOT_OK(int64_arg(args, 0, "sum_sq", &c, error));
  for (int64_t i = 0; i < args->length; i++) {
    if (child_valid(args, c, i)) QL_RETURN_NOT_OK(add_square(child_value(args, c, i), &st->sum, &st->has, error));
  }
  return QL_OK;
}

static int acc_merge(struct ql_accumulator *self, const struct ArrowArray *states, struct ql_error *error) {
  struct sum_sq_state *st = self->private_data;
  const struct ArrowArray *c;
  QL_RETURN_NOT_OK(int64_arg(states, 0, "sum_sq state", &c, error));
  for (int64_t i = 0; i < states->length; i++) {
    if (child_valid(states, c, i)) QL_RETURN_NOT_OK(add_value(child_value(states, c, i), &st->sum, &st->has, error));
  }
  return QL_OK;
}

static int acc_state(struct ql_accumulator *self, struct ArrowArray *out, struct ql_error *error) {
  struct sum_sq_state *st = self->private_data;
  return state_array(1, &st->sum, &st->has, out, error);
}

static int acc_evaluate(struct ql_accumulator *self, struct ArrowArray *out, struct ql_error *error) {
  struct sum_sq_state *st = self->private_data;
  return i64_array(1, &st->sum, &st->has, out, error);
}

static int64_t acc_size(const struct ql_accumulator *self) {
  (void)self;
  return (int64_t)sizeof(struct sum_sq_state);
}

static void acc_release(struct ql_accumulator *self) {
  free(self->private_data);
  self->private_data = NULL;
  self->release = NULL;
}

/* Many groups: parallel arrays grown to total_groups. */
struct sum_sq_groups {
  int64_t n;
  int64_t *sums;
  uint8_t *has;
};

static int groups_resize(struct sum_sq_groups *g, int64_t total, struct ql_error *error) {
  if (total <= g->n) return QL_OK;
  int64_t *sums = realloc(g->sums, (size_t)total * sizeof *sums);
  if (sums) g->sums = sums;
  uint8_t *has = sums ? realloc(g->has, (size_t)total) : NULL;
  if (has) g->has = has;
  if (!sums || !has) return ql_error_set(error, QL_ENOMEM, "sum_sq: out of memory for %" PRId64 " groups", total);
  memset(g->sums + g->n, 0, (size_t)(total - g->n) * sizeof *sums);
  memset(g->has + g->n, 0, (size_t)(total - g->n));
  g->n = total;
  return QL_OK;
}

static int check_groups(const uint32_t *group_indices, int64_t rows, int64_t total, struct ql_error *error) {
  if (rows > 0 && group_indices == NULL) return ql_error_set(error, QL_EINVAL, "sum_sq: group_indices is NULL");
  for (int64_t i = 0; i < rows; i++) {
    if ((int64_t)group_indices[i] >= total) {
      return ql_error_set(error, QL_EINVAL, "sum_sq: group index %u of row %" PRId64 " >= total_groups %" PRId64,
                          group_indices[i], i, total);
    }
  }
  return QL_OK;
}

static int groups_update(struct ql_groups_accumulator *self, const struct ArrowArray *args,
                         const uint32_t *group_indices, int64_t total_groups, struct ql_error *error) {
  struct sum_sq_groups *g = self->private_data;
  const struct ArrowArray *c;
  QL_RETURN_NOT_OK(int64_arg(args, 0, "sum_sq", &c, error));
  QL_RETURN_NOT_OK(check_groups(group_indices, args->length, total_groups, error));
  QL_RETURN_NOT_OK(groups_resize(g, total_groups, error));
  for (int64_t i = 0; i < args->length; i++) {
    uint32_t grp = group_indices[i];
    if (child_valid(args, c, i)) {
      QL_RETURN_NOT_OK(add_square(child_value(args, c, i), &g->sums[grp], &g->has[grp], error));
    }
  }
  return QL_OK;
}

static int groups_merge(struct ql_groups_accumulator *self, const struct ArrowArray *states,
                        const uint32_t *group_indices, int64_t total_groups, struct ql_error *error) {
  struct sum_sq_groups *g = self->private_data;
  const struct ArrowArray *c;
  QL_RETURN_NOT_OK(int64_arg(states, 0, "sum_sq state", &c, error));
  QL_RETURN_NOT_OK(check_groups(group_indices, states->length, total_groups, error));
  QL_RETURN_NOT_OK(groups_resize(g, total_groups, error));
  for (int64_t i = 0; i < states->length; i++) {
    uint32_t grp = group_indices[i];
    if (child_valid(states, c, i)) {
      QL_RETURN_NOT_OK(add_value(child_value(states, c, i), &g->sums[grp], &g->has[grp], error));
    }
  }
  return QL_OK;
}

static int groups_state(struct ql_groups_accumulator *self, struct ArrowArray *out, struct ql_error *error) {
  struct sum_sq_groups *g = self->private_data;
  return state_array(g->n, g->sums, g->has, out, error);
}

static int groups_evaluate(struct ql_groups_accumulator *self, struct ArrowArray *out, struct ql_error *error) {
  struct sum_sq_groups *g = self->private_data;
  return i64_array(g->n, g->sums, g->has, out, error);
}

static int64_t groups_size(const struct ql_groups_accumulator *self) {
  const struct sum_sq_groups *g = self->private_data;
  return (int64_t)sizeof *g + g->n * (int64_t)(sizeof *g->sums + sizeof *g->has);
}

static void groups_release(struct ql_groups_accumulator *self) {
  struct sum_sq_groups *g = self->private_data;
  if (g) {
    free(g->sums);
    free(g->has);
    free(g);
  }
  self->private_data = NULL;
  self->release = NULL;
}

static int sum_sq_return_type(const struct ql_aggregate_function *self, const struct ArrowSchema *args,
                              struct ArrowSchema *out, struct ql_error *error) {
  (void)self;
  QL_RETURN_NOT_OK(check_arg_types(args, 1, "sum_sq", error));
  return ql_schema_init(out, "l", "sum_sq", ARROW_FLAG_NULLABLE, error);
}

static int sum_sq_state_schema(const struct ql_aggregate_function *self, const struct ArrowSchema *args,
                               struct ArrowSchema *out, struct ql_error *error) {
  (void)self;
  QL_RETURN_NOT_OK(check_arg_types(args, 1, "sum_sq", error));
  QL_RETURN_NOT_OK(ql_schema_init_struct(out, "", 1, error));
  int rc = ql_schema_init(out->children[0], "l", "sum_sq", ARROW_FLAG_NULLABLE, error);
  if (rc != QL_OK) ql_schema_release(out);
  return rc;
}

static int sum_sq_accumulator_new(const struct ql_aggregate_function *self, const struct ArrowSchema *args,
                                  struct ql_accumulator *out, struct ql_error *error) {
  (void)self;
  QL_RETURN_NOT_OK(check_arg_types(args, 1, "sum_sq", error));
  struct sum_sq_state *st = calloc(1, sizeof *st);
  if (!st) return ql_error_set(error, QL_ENOMEM, "sum_sq: out of memory");
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->update = acc_update;
  out->merge = acc_merge;
  out->state = acc_state;
  out->evaluate = acc_evaluate;
  out->size = acc_size;
  out->release = acc_release;
  out->private_data = st;
  return QL_OK;
}

static int sum_sq_groups_new(const struct ql_aggregate_function *self, const struct ArrowSchema *args,
                             struct ql_groups_accumulator *out, struct ql_error *error) {
  (void)self;
  QL_RETURN_NOT_OK(check_arg_types(args, 1, "sum_sq", error));
  struct sum_sq_groups *g = calloc(1, sizeof *g);
  if (!g) return ql_error_set(error, QL_ENOMEM, "sum_sq: out of memory");
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->update = groups_update;
  out->merge = groups_merge;
  out->state = groups_state;
  out->evaluate = groups_evaluate;
  out->size = groups_size;
  out->release = groups_release;
  out->private_data = g;
  return QL_OK;
}

static void aggregate_release(struct ql_aggregate_function *self) { self->release = NULL; }

int smp_aggregate_open(const char *name, struct ql_aggregate_function *out, struct ql_error *error) {
  if (name == NULL || strcmp(name, "sum_sq") != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_sample has no aggregate function '%s'", name ? name : "(null)");
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->id = sample_id(QL_FUNCTION_AGGREGATE, "sum_sq", SMP_UID_SUM_SQ);
  out->signature.n_args = 1;
  out->signature.volatility = QL_IMMUTABLE;
  out->signature.arg_formats = k_int64_arg;
  out->return_type = sum_sq_return_type;
  out->state_schema = sum_sq_state_schema;
  out->accumulator_new = sum_sq_accumulator_new;
  out->groups_accumulator_new = sum_sq_groups_new;
  out->release = aggregate_release;
  return QL_OK;
}

/* ------------------------------------------------------- running_count */

static int running_count_evaluate_all(struct ql_partition_evaluator *self, const struct ArrowArray *args,
                                      int64_t num_rows, struct ArrowArray *out, struct ql_error *error) {
  (void)self;
  (void)args; /* no arguments: only the row count matters */
  if (num_rows < 0) return ql_error_set(error, QL_EINVAL, "running_count: num_rows %" PRId64 " < 0", num_rows);
  int64_t *data = malloc((size_t)(num_rows > 0 ? num_rows : 1) * sizeof *data);
  if (!data) return ql_error_set(error, QL_ENOMEM, "running_count: out of memory");
  for (int64_t i = 0; i < num_rows; i++) data[i] = i + 1;
  return ql_array_init_fixed(out, num_rows, 0, NULL, data, error);
}

static void evaluator_release(struct ql_partition_evaluator *self) { self->release = NULL; }

static int running_count_return_type(const struct ql_window_function *self, const struct ArrowSchema *args,
                                     struct ArrowSchema *out, struct ql_error *error) {
  (void)self;
  QL_RETURN_NOT_OK(check_arg_types(args, 0, "running_count", error));
  return ql_schema_init(out, "l", "running_count", 0, error);
}

static int running_count_evaluator_new(const struct ql_window_function *self, const struct ArrowSchema *args,
                                       struct ql_partition_evaluator *out, struct ql_error *error) {
  (void)self;
  QL_RETURN_NOT_OK(check_arg_types(args, 0, "running_count", error));
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->evaluate_all = running_count_evaluate_all;
  out->release = evaluator_release;
  return QL_OK;
}

static void window_release(struct ql_window_function *self) { self->release = NULL; }

int smp_window_open(const char *name, struct ql_window_function *out, struct ql_error *error) {
  if (name == NULL || strcmp(name, "running_count") != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_sample has no window function '%s'", name ? name : "(null)");
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->id = sample_id(QL_FUNCTION_WINDOW, "running_count", SMP_UID_RUNNING_COUNT);
  out->signature.n_args = 0;
  out->signature.volatility = QL_IMMUTABLE;
  out->signature.arg_formats = NULL;
  out->return_type = running_count_return_type;
  out->evaluator_new = running_count_evaluator_new;
  out->release = window_release;
  return QL_OK;
}
