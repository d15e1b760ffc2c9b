/* SPDX-License-Identifier: Apache-2.0 */
/* qlink ABI: the planner hook (docs/abi.md R11, section 3.8; gaps G1, G3, G7).
 *
 * A planner plugin receives a read-only view of the host's optimized logical
 * plan and answers in one of three ways:
 *  - QL_PLANNER_DECLINE: leave the plan alone (the default; costs one call);
 *  - QL_PLANNER_REWRITE: replace the subtree rooted at `node` by a logical
 *    subtree the planner built (libqlink's builder, qlink/lib/ir.h) from
 *    standard operators; its TABLE_SCAN nodes may reuse the `table` refs of
 *    the host's view;
 *  - QL_PLANNER_PHYSICAL: replace the subtree rooted at `node` by an
 *    execution plan whose children are subtrees of the view that the host
 *    planned physically on the planner's request (plan_physical), handed back
 *    as execution-plan handles. Nothing is serialized and no table data is
 *    copied.
 *
 * The host calls the planner once per query, again on subtrees it plans
 * through plan_physical (so chains fold one step at a time) and again after
 * each PHYSICAL answer (the replaced subtree opaque), until every planner
 * declines; and only when the plan contains a node whose kind is in the
 * planner's `interest` mask.
 *
 * First ABI version: 0.1.
 */
#ifndef QLINK_PLANNER_H
#define QLINK_PLANNER_H

#include "qlink/table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bit for a node kind in ql_planner.interest. */
#define QL_NODE_BIT(kind) (1u << (unsigned)(kind))

enum ql_planner_action {
  QL_PLANNER_DECLINE = 0,
  QL_PLANNER_REWRITE = 1,
  QL_PLANNER_PHYSICAL = 2
};

/* What the host hands a planner for one call. Borrowed for the call. */
struct ql_planner_context {
  uint32_t struct_size;
  int32_t reserved_;
  const struct ql_session *session;
  /* The optimized logical plan; root = plan->root. Lazy (nodes expanded on
   * demand, qlink/plan.h) when the planner set QL_PLANNER_LAZY_VIEW. */
  const struct ql_plan_view *plan;
  /* Plan the subtree of `plan` rooted at `node` with the host's own physical
   * planner (including installed planners) and return it as an execution
   * plan owned by the caller, optimized unless the planner set
   * QL_PLANNER_INPUTS_UNOPTIMIZED. Thread-safe; only valid during the call. */
  int (*plan_physical)(const struct ql_planner_context *self, ql_node_id node, struct ql_execution_plan *out,
                       struct ql_error *error);
  void *private_data;
};

/* The planner's answer; the host zero-initialises it before the call. */
struct ql_planner_result {
  uint32_t struct_size;
  int32_t action;  /* enum ql_planner_action */
  ql_node_id node; /* the subtree of ctx->plan being replaced */
  int32_t reserved_;
  struct ql_plan_view rewrite;        /* REWRITE: owned by the host after return */
  struct ql_execution_plan physical;  /* PHYSICAL: owned by the host after return */
};

enum ql_planner_flags {
  /* The planner calls ql_plan_expand() (qlink/lib/ir.h) on a node before it
   * reads the node's schema, expressions, projection or table, so the host
   * may hand it a lazy plan view (qlink/plan.h): a planner that declines
   * after a glance at the skeleton then costs almost nothing per query. */
  QL_PLANNER_LAZY_VIEW = 1,
  /* 0.2: the planner's PHYSICAL nodes take new children
   * (ql_execution_plan.with_new_children), so plan_physical may return a
   * subtree before the host's physical optimizer runs on it: the plan the
   * node joins is optimized as a whole, the node's children included. A
   * host that does not know the flag optimizes the subtree first, as in
   * 0.1. */
  QL_PLANNER_INPUTS_UNOPTIMIZED = 2
};

struct ql_planner {
  uint32_t struct_size;
  uint32_t interest; /* OR of QL_NODE_BIT(kind); 0: every plan */
  uint32_t flags;    /* OR of enum ql_planner_flags */
  int32_t reserved_;
  /* Thread-safe. Returning an error fails the query with it; to leave the
   * plan alone return QL_OK with action QL_PLANNER_DECLINE. */
  int (*plan)(const struct ql_planner *self, const struct ql_planner_context *ctx, struct ql_planner_result *out,
              struct ql_error *error);
  void (*release)(struct ql_planner *self);
  void *private_data;
};

#ifdef __cplusplus
}
#endif

#endif /* QLINK_PLANNER_H */
