/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: the planner object and the plugin descriptor.
 *
 * The planner's interest is QL_NODE_BIT(QL_NODE_AGGREGATE): hosts skip it for
 * plans without an Aggregate. On each call it looks for the first Aggregate
 * (pre-order from the view's root) that folds (fold_spec.h); if one does, it
 * asks the host to plan the join's two inputs (plan_physical), checks their
 * schemas, and answers QL_PLANNER_PHYSICAL with a FoldExec over them
 * (fold_exec.h) replacing that Aggregate. Otherwise it declines. Chains fold
 * one step at a time: the host calls the planner again on each input it
 * plans, where the next contraction is found.
 */
#ifndef QLINK_FOLD_PLANNER_H
#define QLINK_FOLD_PLANNER_H

#include "qlink/plugin.h"

/* Fill `out` (the `fold` planner); no options are accepted (QL_EINVAL
 * naming the first one given). `out` is owned by the caller. */
int fd_planner_new(const struct ql_options *options, struct ql_planner *out, struct ql_error *error);

/* Fill the plugin descriptor for `abi_version` (QL_EVERSION unless 0.1). */
int fd_plugin_fill(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

#endif /* QLINK_FOLD_PLANNER_H */
