/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: build, validate and print plan/expression arenas (qlink/plan.h).
 *
 * A builder accumulates nodes and expressions, copying every string, array
 * and schema it is given, and hands them over as one owned
 * `struct ql_plan_view` (ql_ir_builder_finish). Memory the builder itself
 * handed out (ql_ir_string, ql_ir_string_array, ql_ir_struct_schema) is
 * shared rather than copied again when given back, so a producer that names
 * the same column or schema many times pays for it once. Builder calls return the new
 * id, or -1 after a failure; the first failure is sticky and reported by
 * ql_ir_builder_finish / ql_ir_builder_status, so a sequence of calls needs
 * one check at the end.
 *
 * Thread-safety: a builder has one owner. Views are immutable and may be
 * read from any thread, except that expanding a node of a lazy view
 * (ql_plan_expand) writes to it: expand from one thread, then share.
 */
#ifndef QLINK_LIB_IR_H
#define QLINK_LIB_IR_H

#include "qlink/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ql_ir_builder;

int ql_ir_builder_new(struct ql_ir_builder **out, struct ql_error *error);
void ql_ir_builder_free(struct ql_ir_builder *builder); /* NULL allowed */
/* QL_OK, or the first failure so far (copied into error). */
int ql_ir_builder_status(const struct ql_ir_builder *builder, struct ql_error *error);

/* ---- memory owned by the view-to-be (valid until the view is released;
 * NULL after a failure). Give these pointers back in expressions and nodes
 * to share them: they are used as-is. */

/* A NUL-terminated copy of the `length` bytes at `s` (which need not be
 * NUL-terminated, e.g. a Rust string). A NUL byte inside becomes a space: a
 * C string cannot hold it. */
const char *ql_ir_string(struct ql_ir_builder *b, const char *s, size_t length);
/* `n` zeroed string pointers to fill (e.g. with ql_ir_string results) and
 * pass as a node's field_qualifiers: nodes given the same array share it. */
const char **ql_ir_string_array(struct ql_ir_builder *b, int64_t n);
/* A struct ("+s") schema of `n_fields` flat fields: field i has format
 * formats[i] (NUL-terminated, copied), name names[i] of name_lengths[i]
 * bytes (copied as by ql_ir_string) and ArrowSchema flags flags[i]. Nodes
 * and table references given it share it (a plan's filter, sort and limit
 * nodes have their input's schema). Nested types: build a node's schema with
 * Arrow and pass that instead (it is deep-copied). */
const struct ArrowSchema *ql_ir_struct_schema(struct ql_ir_builder *b, int64_t n_fields, const char *const *formats,
                                              const char *const *names, const size_t *name_lengths,
                                              const int64_t *flags);

/* ---- expressions */

/* Copy a whole expression described by `e`: its strings, literal (scalar,
 * schema and array), function identity strings and args array are copied;
 * arg ids must already exist in this builder. */
ql_expr_id ql_ir_expr(struct ql_ir_builder *b, const struct ql_expr *e);
ql_expr_id ql_ir_column(struct ql_ir_builder *b, const char *name, const char *qualifier, int32_t column_index);
/* Literal from a scalar (copied). */
ql_expr_id ql_ir_literal(struct ql_ir_builder *b, const struct ql_scalar *value);
ql_expr_id ql_ir_literal_i64(struct ql_ir_builder *b, int64_t v);       /* "l" */
ql_expr_id ql_ir_literal_f64(struct ql_ir_builder *b, double v);        /* "g" */
ql_expr_id ql_ir_literal_utf8(struct ql_ir_builder *b, const char *v);  /* "u" */
ql_expr_id ql_ir_literal_null(struct ql_ir_builder *b, const char *format);
ql_expr_id ql_ir_binary(struct ql_ir_builder *b, int32_t op, ql_expr_id left, ql_expr_id right);
/* NOT, NEGATIVE, IS_NULL, IS_NOT_NULL. */
ql_expr_id ql_ir_unary(struct ql_ir_builder *b, int32_t kind, ql_expr_id arg);
ql_expr_id ql_ir_cast(struct ql_ir_builder *b, ql_expr_id arg, const char *type_format, int try_cast);
ql_expr_id ql_ir_alias(struct ql_ir_builder *b, ql_expr_id arg, const char *alias);
/* kind: QL_EXPR_SCALAR_FUNCTION or QL_EXPR_AGGREGATE_FUNCTION. */
ql_expr_id ql_ir_function(struct ql_ir_builder *b, int32_t kind, const struct ql_function_id *id,
                          const ql_expr_id *args, int32_t n_args, int32_t flags, ql_expr_id filter);
ql_expr_id ql_ir_sort(struct ql_ir_builder *b, ql_expr_id arg, int32_t flags);

/* ---- nodes: `n` is copied (arrays, strings, schema deep-copied; `table`
 * copied with its name and schema, handle and provider pointers kept). */
ql_node_id ql_ir_node(struct ql_ir_builder *b, const struct ql_plan_node *n);

/* Hand over everything built as a view rooted at `root` (-1 for an
 * expression-only arena such as a filter list). `out` is owned by the
 * caller; the builder is empty afterwards and may be reused. */
int ql_ir_builder_finish(struct ql_ir_builder *b, ql_node_id root, struct ql_plan_view *out,
                         struct ql_error *error);

/* ---- lazy views (qlink/plan.h, ql_plan_view.expand): for hosts */

/* Complete node `id`, built earlier with QL_NODE_UNEXPANDED as a skeleton:
 * schema, field_qualifiers, n_exprs/exprs, n_exprs2/exprs2, condition,
 * n_projection/projection and table are taken from `n` (copied as
 * ql_ir_node copies them); the skeleton's other members are kept and the
 * flag is cleared. Expressions `n` names must already be in the builder.
 * QL_OK, or the builder's status (sticky, as for every builder call). */
int ql_ir_node_expand(struct ql_ir_builder *b, ql_node_id id, const struct ql_plan_node *n);

/* Point `out` at what the builder holds now, without handing it over:
 * n_nodes, n_exprs, root, nodes and exprs are set; struct_size, release,
 * private_data and expand are left as they are (a host keeps its own there).
 * Borrowed: valid until the builder changes or is freed. */
int ql_ir_builder_peek(const struct ql_ir_builder *b, ql_node_id root, struct ql_plan_view *out,
                       struct ql_error *error);

/* ---- lazy views: for planners */

/* Make node `node` of `view` complete: calls view->expand when the view has
 * one and the node carries QL_NODE_UNEXPANDED; QL_OK at once otherwise.
 * Afterwards re-read view->exprs (it may have moved). Not thread-safe. */
int ql_plan_expand(const struct ql_plan_view *view, ql_node_id node, struct ql_error *error);
/* Every node of `view` complete (for code that walks everything, e.g.
 * printing). */
int ql_plan_expand_all(const struct ql_plan_view *view, struct ql_error *error);

/* A lazy twin of the complete view `full`, for testing a planner that sets
 * QL_PLANNER_LAZY_VIEW the way a host will call it: the same nodes as
 * skeletons (QL_NODE_UNEXPANDED; schema, qualifiers, expressions,
 * projection and table cleared), no expressions until the first expand,
 * and an expand that copies a node back from `full`. `out` is owned by the
 * caller (release it); `full` must outlive it. Count the nodes without
 * QL_NODE_UNEXPANDED afterwards to see what the planner expanded. */
int ql_ir_lazy_twin(const struct ql_plan_view *full, struct ql_plan_view *out, struct ql_error *error);

/* ---- checking and printing */

/* QL_OK if `view` follows every rule of qlink/plan.h: ids in range, a tree
 * (nothing reachable twice from the root), arities per kind (BINARY 2,
 * BETWEEN 3, ...), known kinds and operators, schemas on nodes, scans with a
 * table. Otherwise QL_EINVAL naming the first offending node or expression. */
int ql_ir_validate(const struct ql_plan_view *view, struct ql_error *error);
/* Same, for expressions only (root may be -1): each of `exprs` a valid tree. */
int ql_ir_validate_exprs(const struct ql_plan_view *view, const ql_expr_id *exprs, int32_t n,
                         struct ql_error *error);

/* SQL-like text of an expression, e.g. "(t.a + CAST(b AS g)) > 3", into a
 * malloc'd string (*out; caller frees). */
int ql_ir_expr_to_string(const struct ql_plan_view *view, ql_expr_id expr, char **out, struct ql_error *error);
/* An indented tree, one node a line, like DataFusion's EXPLAIN:
 *   Aggregate: groupBy=[a.s], aggr=[sum(a.val * w.val)]
 *     Join: Inner a.k = w.k
 *       TableScan: a projection=[s, k, val]
 * into a malloc'd string (*out; caller frees). */
int ql_ir_plan_to_string(const struct ql_plan_view *view, ql_node_id node, char **out, struct ql_error *error);

const char *ql_expr_kind_name(int32_t kind);   /* "BINARY" */
const char *ql_node_kind_name(int32_t kind);   /* "Aggregate" */
const char *ql_binary_op_symbol(int32_t op);   /* "+", "AND", "IS DISTINCT FROM" */
const char *ql_join_type_name(int32_t type);   /* "Inner" */

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_IR_H */
