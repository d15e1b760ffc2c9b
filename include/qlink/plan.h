/* SPDX-License-Identifier: Apache-2.0 */
/* qlink ABI: the read-only plan and expression views (docs/abi.md R7, R13,
 * section 3.5; gaps G1, G2).
 *
 * Plans and expressions cross the boundary as an arena: flat arrays of nodes
 * and expressions that refer to each other by index. Reading one is plain
 * memory access; nothing is serialized. A table scan carries the table's
 * handle by reference (gap G1); a function call carries the function's
 * identity (gap G2). libqlink (qlink/lib/ir.h) builds, prints and validates
 * arenas; any producer may build one by hand as long as ql_ir_validate()
 * accepts it.
 *
 * Ownership: a `struct ql_plan_view` is owned by whoever received it as an
 * out parameter (release it), and borrowed when received as `const`
 * (valid for that call). Every pointer inside is owned by the view.
 *
 * First ABI version: 0.1.
 */
#ifndef QLINK_PLAN_H
#define QLINK_PLAN_H

#include "qlink/types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ql_table_provider; /* qlink/table.h */

typedef int32_t ql_expr_id; /* index into ql_plan_view.exprs; -1 means none */
typedef int32_t ql_node_id; /* index into ql_plan_view.nodes; -1 means none */

/* Expression kinds. Values are never renumbered. */
enum ql_expr_kind {
  QL_EXPR_COLUMN = 1,     /* name, qualifier, column_index */
  QL_EXPR_LITERAL = 2,    /* literal */
  QL_EXPR_BINARY = 3,     /* op (enum ql_binary_op); args[0] op args[1] */
  QL_EXPR_NOT = 4,        /* NOT args[0] */
  QL_EXPR_NEGATIVE = 5,   /* -args[0] */
  QL_EXPR_IS_NULL = 6,    /* args[0] IS NULL */
  QL_EXPR_IS_NOT_NULL = 7,
  QL_EXPR_CAST = 8,       /* CAST(args[0] AS type_format) */
  QL_EXPR_TRY_CAST = 9,
  QL_EXPR_CASE = 10,      /* args: [operand if QL_CASE_HAS_OPERAND] when0, then0, ..., [else if QL_CASE_HAS_ELSE] */
  QL_EXPR_ALIAS = 11,     /* args[0] AS name */
  QL_EXPR_SCALAR_FUNCTION = 12,    /* function(args...) */
  QL_EXPR_AGGREGATE_FUNCTION = 13, /* function(args...) [FILTER (WHERE filter)]; flags QL_EXPR_DISTINCT */
  QL_EXPR_WINDOW_FUNCTION = 14,    /* function(args...) OVER (...): partition/order in `name`-less args after n_func_args */
  QL_EXPR_IN_LIST = 15,   /* args[0] [NOT] IN (args[1..]) ; flags QL_EXPR_NEGATED */
  QL_EXPR_BETWEEN = 16,   /* args[0] [NOT] BETWEEN args[1] AND args[2] */
  QL_EXPR_LIKE = 17,      /* args[0] [NOT] LIKE args[1]; flags NEGATED, CASE_INSENSITIVE */
  QL_EXPR_SORT = 18,      /* args[0] with flags QL_SORT_DESC, QL_SORT_NULLS_FIRST */
  QL_EXPR_OTHER = 19      /* anything else; `name` is the host's display. Leave it alone. */
};

enum ql_binary_op {
  QL_OP_EQ = 1, QL_OP_NE = 2, QL_OP_LT = 3, QL_OP_LE = 4, QL_OP_GT = 5, QL_OP_GE = 6,
  QL_OP_AND = 7, QL_OP_OR = 8,
  QL_OP_PLUS = 9, QL_OP_MINUS = 10, QL_OP_MULTIPLY = 11, QL_OP_DIVIDE = 12, QL_OP_MODULO = 13,
  QL_OP_IS_DISTINCT_FROM = 14, QL_OP_IS_NOT_DISTINCT_FROM = 15,
  QL_OP_STRING_CONCAT = 16,
  QL_OP_OTHER = 17
};

enum ql_expr_flags {
  QL_EXPR_NEGATED = 1,          /* IN_LIST, BETWEEN, LIKE */
  QL_EXPR_CASE_INSENSITIVE = 2, /* LIKE (ILIKE) */
  QL_EXPR_DISTINCT = 4,         /* aggregate over DISTINCT values */
  QL_CASE_HAS_OPERAND = 8,
  QL_CASE_HAS_ELSE = 16,
  QL_SORT_DESC = 32,
  QL_SORT_NULLS_FIRST = 64
};

/* One expression. Members not used by its kind are zero / NULL / -1. */
struct ql_expr {
  int32_t kind;  /* enum ql_expr_kind */
  int32_t op;    /* QL_EXPR_BINARY: enum ql_binary_op */
  int32_t flags; /* enum ql_expr_flags */
  int32_t n_args;
  const ql_expr_id *args;
  /* COLUMN: field name; ALIAS: the alias; *_FUNCTION: the name as written;
   * OTHER: the host's display text. */
  const char *name;
  /* COLUMN: relation qualifier ("t" of t.x), or NULL. */
  const char *qualifier;
  /* COLUMN: index into the concatenation of the owning node's inputs' output
   * schemas (a join's right keys too: left width + i); for a table scan's
   * pushed filters, and in every struct ql_expr_list, into the table's full
   * schema (as DataFusion's TableProvider::scan sees them); -1 unknown. */
  int32_t column_index;
  /* WINDOW_FUNCTION: args[0..n_func_args) are the function's arguments,
   * then n_partition_by partition expressions, then SORT expressions. */
  int32_t n_func_args;
  int32_t n_partition_by;
  ql_expr_id filter; /* AGGREGATE_FUNCTION: FILTER (WHERE ...) or -1 */
  struct ql_function_id function; /* *_FUNCTION */
  struct ql_scalar literal;       /* LITERAL */
  /* Result type as an Arrow format string (CAST / TRY_CAST: the target type);
   * NULL if the producer did not compute it. */
  const char *type_format;
};

/* Plan node kinds (docs/abi.md R13: inputs per kind). Values are never
 * renumbered (R3). */
enum ql_node_kind {
  QL_NODE_TABLE_SCAN = 1,     /* table, name, projection, exprs = pushed filters, fetch */
  QL_NODE_PROJECTION = 2,     /* exprs = output expressions */
  QL_NODE_FILTER = 3,         /* exprs[0] = predicate */
  QL_NODE_AGGREGATE = 4,      /* exprs = group keys, exprs2 = aggregate expressions; output = keys then aggregates */
  QL_NODE_JOIN = 5,           /* join_type; exprs = left keys, exprs2 = right keys (equi pairs); condition = extra filter */
  QL_NODE_SORT = 6,           /* exprs = SORT expressions; fetch (top-k) or -1 */
  QL_NODE_LIMIT = 7,          /* skip, fetch (-1 none) */
  QL_NODE_UNION = 8,          /* inputs; flags QL_NODE_UNION_DISTINCT for UNION (not ALL) */
  QL_NODE_SUBQUERY_ALIAS = 9, /* name = alias */
  QL_NODE_VALUES = 10,        /* exprs = row-major literals, n_rows rows of schema's width */
  QL_NODE_EMPTY_RELATION = 11,/* flags QL_NODE_PRODUCE_ONE_ROW */
  QL_NODE_WINDOW = 12,        /* exprs = window expressions, appended to the input's columns */
  QL_NODE_DISTINCT = 13,      /* distinct rows of the input */
  QL_NODE_OTHER = 14          /* any other node (a host extension, a plugin node): leave alone; name = display */
};

enum ql_join_type {
  QL_JOIN_INNER = 1, QL_JOIN_LEFT = 2, QL_JOIN_RIGHT = 3, QL_JOIN_FULL = 4,
  QL_JOIN_LEFT_SEMI = 5, QL_JOIN_RIGHT_SEMI = 6, QL_JOIN_LEFT_ANTI = 7, QL_JOIN_RIGHT_ANTI = 8,
  QL_JOIN_LEFT_MARK = 9, QL_JOIN_OTHER = 10
};

enum ql_node_flags {
  QL_NODE_UNION_DISTINCT = 1,     /* UNION (not UNION ALL) */
  QL_NODE_PRODUCE_ONE_ROW = 2,    /* EMPTY_RELATION */
  QL_NODE_NULL_EQUALS_NULL = 4,   /* JOIN: keys compare with IS NOT DISTINCT FROM */
  QL_NODE_UNEXPANDED = 8          /* lazy view: only the skeleton is set; see ql_plan_view.expand */
};

/* A table as a plan refers to it: by reference, never by its bytes (G1).
 * `host_handle` is the host's own table object (for DataFusion, the
 * TableProvider); only the host that made it may interpret it. `provider` is
 * set when the table is a qlink table provider, so a plugin can recognise its
 * own tables. Borrowed from the plan view (or session) that holds it. */
struct ql_table_ref {
  const char *name; /* as the query named it, possibly qualified */
  const struct ArrowSchema *schema; /* the table's full schema */
  const void *host_handle;
  const struct ql_table_provider *provider; /* NULL for host tables */
};

/* One logical plan node. Members not used by its kind are zero / NULL / -1. */
struct ql_plan_node {
  int32_t kind;  /* enum ql_node_kind */
  int32_t flags; /* enum ql_node_flags */
  int32_t n_inputs;
  int32_t join_type; /* JOIN: enum ql_join_type */
  const ql_node_id *inputs;
  /* Output schema: a struct schema, one child per output column. Field names
   * are unqualified; field_qualifiers[i] is the relation of column i or NULL. */
  const struct ArrowSchema *schema;
  const char *const *field_qualifiers;
  int32_t n_exprs;
  int32_t n_exprs2;
  const ql_expr_id *exprs;
  const ql_expr_id *exprs2;
  ql_expr_id condition; /* JOIN: non-equi part of ON, or -1 */
  int32_t n_projection; /* TABLE_SCAN: number of projected columns, -1 = all */
  const int32_t *projection; /* TABLE_SCAN: indices into the table's schema */
  int64_t skip;  /* LIMIT */
  int64_t fetch; /* LIMIT, SORT, TABLE_SCAN: row limit or -1 */
  int64_t n_rows; /* VALUES */
  /* TABLE_SCAN: table name; SUBQUERY_ALIAS: alias; OTHER: display. */
  const char *name;
  const struct ql_table_ref *table; /* TABLE_SCAN */
};

/* A plan: nodes and expressions, with a root. `nodes[i].inputs` and expression
 * arguments only point at other entries of the same view, and the graph is a
 * tree (no node or expression is reachable twice from the root).
 *
 * Lazy views. Building every node's expressions and schema costs tens of
 * microseconds per query, mostly for nodes a planner never looks at. A host
 * may therefore hand a planner that asked for it (QL_PLANNER_LAZY_VIEW in
 * qlink/planner.h) a view whose nodes start as a skeleton: such a node has
 * QL_NODE_UNEXPANDED in `flags`, and only kind, flags, n_inputs, inputs,
 * join_type, skip, fetch, n_rows and name are set; schema, field_qualifiers,
 * the expressions (exprs, exprs2, condition), projection and table are
 * zero / NULL / -1 until `expand` fills them. Every other view (filter lists,
 * builder output, views for planners that did not ask) is complete and has
 * expand == NULL. libqlink's ql_plan_expand() wraps the call. */
struct ql_plan_view {
  uint32_t struct_size;
  int32_t n_nodes;
  int32_t n_exprs;
  ql_node_id root;
  const struct ql_plan_node *nodes;
  const struct ql_expr *exprs;
  /* NULL: every node is complete.
   * Otherwise completes node `node` (clears QL_NODE_UNEXPANDED and fills the
   * members listed above); QL_OK at once for a complete node. Expanding
   * appends expressions: `exprs` may move and `n_exprs` grow, so re-read
   * them through the view after the call; ids, `nodes` and everything a node
   * points at stay valid. QL_EINVAL for an id out of range; the host's
   * message otherwise (the node is then left unexpanded). Not thread-safe:
   * call it from the thread the view was handed to, before reading the node
   * from other threads. Valid as long as the view is. */
  int (*expand)(const struct ql_plan_view *self, ql_node_id node, struct ql_error *error);
  /* NULL for a borrowed view; otherwise frees the arena and sets release to NULL. */
  void (*release)(struct ql_plan_view *self);
  void *private_data;
};

/* A list of expressions (a scan's pushed filters, a pushdown question,
 * a table function's arguments):
 * `view` holds the expressions, `exprs[i]` are the roots. Column
 * expressions index the table's full schema. Borrowed. */
struct ql_expr_list {
  const struct ql_plan_view *view;
  int32_t n_exprs;
  int32_t reserved_;
  const ql_expr_id *exprs;
};

#ifdef __cplusplus
}
#endif

#endif /* QLINK_PLAN_H */
